"""How strict the faithfulness audit is with people's own questions (``qgen/synth/audit.py``).

    python benchmarks/audit_gold.py [--data-dir DIR] [--splits webqsp:test,cwq:test,wikisql:dev] [--out FILE]

For each dataset split: its pairs whose logical form tokenizes, how many of their human-written questions
pass the audit, and the commonest kinds of failure ("value", "comparison", "aggregate", ...). The audit is
meant to bound generation errors from below, so a rule that fails many human questions is too strict for
those queries (ComplexWebQuestions' questions paraphrase much of their queries: few pass). Datasets default
to ``$QGEN_DATASETS`` or ``../shared/datasets``; a missing one is skipped with the reason. Prints the report
(command, commit, per split) and writes it to ``benchmarks/results/audit-gold.json`` (``--out``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from parsers import LogicalFormError, tokenize_lf  # noqa: E402
from qgen.datasets.records import RawExample  # noqa: E402
from qgen.datasets.registry import load_dataset  # noqa: E402
from qgen.synth.audit import audit_pair  # noqa: E402
from qgen.version import code_version  # noqa: E402


def tokenized_pairs(name: str, split: str, data_dir: Path) -> Iterator[tuple[RawExample, list[str]]]:
    """The split's pairs that have a question and whose logical form tokenizes, with its tokens."""
    for record in load_dataset(name, data_dir, split):
        if record.load_error or not record.question:
            continue
        try:
            yield record, list(tokenize_lf(record.logical_form, record.lf_type, names=dict(record.names)).tokens)
        except LogicalFormError:
            continue


def audit_split(name: str, split: str, data_dir: Path) -> dict:
    pairs = passed = 0
    kinds: Counter[str] = Counter()
    for record, tokens in tokenized_pairs(name, split, data_dir):
        pairs += 1
        failures = audit_pair(record.lf_type, record.logical_form, tokens, record.question).failures
        passed += not failures
        kinds.update({failure.split()[0] for failure in failures})  # "value", "comparison", "aggregate", ...
    return {"pairs": pairs, "passed": passed, "pass_rate": round(passed / pairs, 4) if pairs else None,
            "failing_pairs_by_kind": dict(kinds.most_common())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path,
                        default=Path(os.environ.get("QGEN_DATASETS", REPO.parent / "shared" / "datasets")))
    parser.add_argument("--splits", default="webqsp:test,cwq:test,wikisql:dev")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "audit-gold.json"),
                        help="where to write the report too ('' for nowhere)")
    args = parser.parse_args()
    report = {"command": "python benchmarks/audit_gold.py " + " ".join(sys.argv[1:]), "commit": code_version(),
              "splits": {}}
    for item in args.splits.split(","):
        name, _, split = item.partition(":")
        if not (args.data_dir / name).is_dir():
            print(f"skipped {name}: no {args.data_dir / name} (give --data-dir or $QGEN_DATASETS)", file=sys.stderr)
            continue
        report["splits"][item] = audit_split(name, split, args.data_dir)
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
