"""How often the audit's superlative (or comparison) check fails real and generated pairs (``qgen/synth/audit.py``).

    python benchmarks/audit_superlatives.py --pairs out/wikisql/test.parquet \
        --pairs out/benchmarks/prep/webqsp/train.parquet --pairs out/benchmarks/prep/webqsp/test.parquet \
        --candidates out/downstream/wikisql-t07-r2/synthetic.jsonl

``--pairs``: preprocessed Parquet (``qgen preprocess``), the real questions; ``--candidates``: a downstream
work folder's ``synthetic.jsonl``, the generated ones. For each file it prints how many pairs order
something (SQL MAX / MIN, SPARQL ``ORDER BY ... LIMIT 1``), how many of those fail the superlative check,
and a few of them. ``--check comparison`` does the same for the comparison check, over the pairs
whose query compares (``<``, ``>``, ``<=``, ``>=``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from qgen.synth.audit import _facts, audit_pair  # noqa: E402


def _compares(lf_type: str, logical_form: str, lf_tokens: list[str]) -> bool:
    facts = _facts(lf_type, logical_form, lf_tokens)
    return bool(facts and facts[1])


def _orders(lf_type: str, logical_form: str, lf_tokens: list[str]) -> bool:
    if lf_type == "sql":
        upper = logical_form.upper()
        return "MAX(" in upper or "MIN(" in upper
    tokens = [t.lower() for t in lf_tokens]
    return "order" in tokens and "limit" in tokens


def measure(rows, label: str, check: str = "superlative", shown: int = 5) -> None:
    selected = _orders if check == "superlative" else _compares
    ordering = failing = 0
    examples = []
    for lf_type, logical_form, lf_tokens, question in rows:
        if not selected(lf_type, logical_form, lf_tokens):
            continue
        ordering += 1
        failures = [f for f in audit_pair(lf_type, logical_form, lf_tokens, question).failures
                    if f.startswith(check)]
        if failures:
            failing += 1
            if len(examples) < shown:
                examples.append(f"  {question!r} for {logical_form.split(chr(10))[0][:100]}: {failures[0]}")
    what = "order something" if check == "superlative" else "compare"
    print(f"{label}: {ordering} pairs {what}, {failing} fail the {check} check")
    print("\n".join(examples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", action="append", default=[], help="preprocessed Parquet of real pairs")
    parser.add_argument("--candidates", action="append", default=[], help="a downstream synthetic.jsonl")
    parser.add_argument("--check", choices=("superlative", "comparison"), default="superlative")
    args = parser.parse_args()
    import pandas as pd

    for path in args.pairs:
        frame = pd.read_parquet(path, columns=["lf_type", "logical_form", "lf_tokens", "question"])
        measure(((r.lf_type, r.logical_form, list(r.lf_tokens), r.question) for r in frame.itertuples()), path,
                args.check)
    for path in args.candidates:
        lines = Path(path).read_text().splitlines()
        rows = (json.loads(line) for line in lines)
        measure((("sql", c["logical_form"], c["lf_tokens"], c["question"]) for c in rows), path, args.check)
    print("command: python benchmarks/audit_superlatives.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
