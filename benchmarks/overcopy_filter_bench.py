"""The over-copy filter on the WebQSP test set: what each threshold rejects, and what it does to
BLEU/METEOR of the questions it keeps (the reference questions are known here, not in synthesis).

    python benchmarks/overcopy_filter_bench.py --checkpoint out/benchmarks/webqsp/scratchpad/best.pt

Generates one question per test question (first parse, beam 4) with ``QuestionWriter``, judges each
with several ``FilterThresholds``, and prints a table; writes benchmarks/results/overcopy_filter.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from qgen.datasets.registry import load_dataset  # noqa: E402
from qgen.datasets.webqsp import question_id  # noqa: E402
from qgen.metrics import evaluate_corpus  # noqa: E402
from qgen.synth.filter import FilterThresholds, OverCopyFilter  # noqa: E402
from qgen.synth.generator import QuestionWriter  # noqa: E402
from qgen.synth.schema import PairRow  # noqa: E402
from qgen.version import code_version  # noqa: E402
from parsers.tokens import nl_tokens  # noqa: E402

SETTINGS = {
    "no filter": None,
    "overcopy<=0, repeats<=0 (default)": FilterThresholds(),
    "overcopy<=1, repeats<=0": FilterThresholds(max_overcopy=1),
    "overcopy<=0, repeats<=1": FilterThresholds(max_repeated_ngrams=1),
    "overcopy<=2, repeats<=2": FilterThresholds(max_overcopy=2, max_repeated_ngrams=2),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--beam", type=int, default=4)
    args = parser.parse_args()
    seen: set[str] = set()
    records = []
    for record in load_dataset("webqsp", args.data_dir, "test"):
        group = question_id(record.id)
        if group not in seen and not record.load_error:
            seen.add(group)
            records.append(record)
    references = {r.id: nl_tokens(r.question or "") for r in records}
    started = time.perf_counter()
    writer = QuestionWriter(args.checkpoint, beam=args.beam)
    results = writer.write(records)
    seconds = time.perf_counter() - started
    pairs = [r for r in results if isinstance(r, PairRow)]
    print(f"{len(pairs)} questions generated for {len(records)} test questions in {seconds:.0f} s "
          f"({len(records) - len(pairs)} rejected before the filter)")
    report: dict = {"command": "python benchmarks/overcopy_filter_bench.py " + " ".join(sys.argv[1:]),
                    "commit": code_version(), "checkpoint": args.checkpoint, "inputs": len(records),
                    "generated": len(pairs), "settings": {}}
    print(f"| thresholds | rejected | kept | BLEU corpus (kept) | METEOR corpus (kept) | OverCopy vs reference (kept) |")
    print("|---|---|---|---|---|---|")
    for name, thresholds in SETTINGS.items():
        judge = OverCopyFilter(thresholds) if thresholds else None
        kept = [p for p in pairs if judge is None or judge.judge_pair(p).keep]
        metrics = evaluate_corpus([p.question.split() for p in kept], [references[p.id] for p in kept])
        row = {"rejected": len(pairs) - len(kept), "kept": len(kept), "bleu_corpus": metrics["bleu_corpus"],
               "meteor_corpus": metrics["meteor_corpus"], "overcopy": metrics["overcopy"],
               "thresholds": thresholds.as_dict() if thresholds else None}
        report["settings"][name] = row
        print(f"| {name} | {row['rejected']} | {row['kept']} | {row['bleu_corpus']:.2f} | "
              f"{row['meteor_corpus'] if row['meteor_corpus'] is None else round(row['meteor_corpus'], 2)} | "
              f"{row['overcopy']:.3f} |", flush=True)
    out = REPO / "benchmarks" / "results" / "overcopy_filter.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
