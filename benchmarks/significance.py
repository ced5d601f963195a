"""Which differences between the results table's rows could the test set's sampling explain?

    python benchmarks/significance.py [--dataset webqsp] [--pairs scratchpad:coverage,...] [--trials 10000]

Reads the committed predictions of two results folders (benchmarks/results/<dataset>/<run>/) at a
time and tests their corpus BLEU difference with sacrebleu's paired approximate randomization (a
two-sided p), with each run's 95% bootstrap interval (qgen.metrics.significance). The
default pairs are the seed paper's orderings (Scratchpad > Coverage > Copynet > Seq2Seq, extended
copy > the paper's copy) among the runs of each setting (seed 1 at the full epochs; <model>_epoch35;
<model>_seed<N>[_epoch35]), and every run with another seed against its seed-1 run, which shows the
spread that training alone causes. Prints a table and writes it, with the
configuration and the commit, to significance.md and significance.json beside the dataset's README.
No training, no checkpoint.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from qgen.metrics import PairedSignificance, paired_significance  # noqa: E402
from qgen.version import code_version  # noqa: E402

# (system, baseline): the paper reports the first above the second. The test is two-sided, so a small
# p with a negative difference is evidence against the paper's order.
PAPER_ORDER = [("scratchpad", "coverage"), ("coverage", "copynet"), ("scratchpad", "copynet"),
               ("copynet", "seq2seq"), ("scratchpad_extended", "scratchpad")]


# Run-name suffixes under which the paper's orderings are compared too: another seed, an earlier epoch.
SETTING = re.compile(r"(_seed\d+)?(_epoch\d+)?")


def default_pairs(results: Path) -> list[tuple[str, str]]:
    """The paper's orderings among runs of one setting (seed 1 at 75 epochs, then e.g. ``_epoch35``,
    ``_seed2``), where both runs are there; then each ``_seed<N>`` run against its seed-1 run."""
    present = {p.parent.name for p in results.glob("*/predictions.txt")}
    settings = sorted({run[len(a):] for run in present for a, _ in PAPER_ORDER
                       if run.startswith(a) and SETTING.fullmatch(run[len(a):])}, key=lambda s: (s != "", s))
    pairs = [(a + setting, b + setting) for setting in settings for a, b in PAPER_ORDER
             if {a + setting, b + setting} <= present]
    for run in sorted(present):
        match = re.fullmatch(r"(.+)_seed\d+(.*)", run)
        if match and match.group(1) + match.group(2) in present:
            pairs.append((run, match.group(1) + match.group(2)))
    return pairs


def read_run(folder: Path) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """ids, predictions and references of a results folder, one line per test example."""
    lines = {name: (folder / f"{name}.txt").read_text().splitlines() for name in ("ids", "predictions", "references")}
    if not len(lines["ids"]) == len(lines["predictions"]) == len(lines["references"]):
        raise ValueError(f"{folder}: ids, predictions and references differ in length "
                         f"({', '.join(f'{k} {len(v)}' for k, v in lines.items())})")
    return lines["ids"], [p.split() for p in lines["predictions"]], [r.split() for r in lines["references"]]


def compare(results: Path, system: str, baseline: str, trials: int) -> PairedSignificance:
    ids, hyps, refs = read_run(results / system)
    base_ids, base_hyps, base_refs = read_run(results / baseline)
    if ids != base_ids or refs != base_refs:
        raise ValueError(f"{system} and {baseline} were not evaluated on the same test examples")
    return paired_significance((system, hyps), (baseline, base_hyps), refs, trials=trials)


def markdown(dataset: str, rows: list[PairedSignificance], command: str) -> str:
    lines = [f"# Paired significance on {dataset}: corpus BLEU, full test set", "",
             f"Written by `{command}` at commit {code_version()}. p: sacrebleu's paired approximate "
             "randomization, two-sided (each question's two outputs swapped at random, "
             f"{rows[0].trials if rows else 0:,} trials): the chance of a difference at least this large were the two "
             "runs alike; a small p with a negative difference goes against the paper's order. ±: half-width of "
             "each run's 95% bootstrap interval (resampled test questions). Both cover the test set's sampling "
             "only; the spread between training seeds is in the `_seed<N>` rows.", "",
             "| system | baseline | system BLEU | baseline BLEU | difference | p |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        floor = 1 / (r.trials + 1)  # no trial as extreme: the smallest p the test can give
        p = f"≤ {floor:.4f}" if r.p_value <= floor * (1 + 1e-9) else f"{r.p_value:.3f}"
        lines.append(f"| {r.system} | {r.baseline} | {r.system_bleu:.2f} ± {r.system_ci:.2f} | "
                     f"{r.baseline_bleu:.2f} ± {r.baseline_ci:.2f} | {r.difference:+.2f} | {p} |")
    if rows:
        lines += ["", f"sacrebleu signature: `{rows[0].signature}`"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="webqsp", choices=["webqsp", "wikisql"])
    parser.add_argument("--results", default=str(REPO / "benchmarks" / "results"))
    parser.add_argument("--pairs", default=None,
                        help="comma-separated system:baseline run names (default: the paper's orderings and seeds)")
    parser.add_argument("--trials", type=int, default=10_000, help="approximate-randomization trials")
    args = parser.parse_args()
    if args.trials < 1:
        parser.error(f"--trials must be at least 1, got {args.trials}")
    results = Path(args.results) / args.dataset
    if args.pairs:
        pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
        bad = [":".join(p) for p in pairs if len(p) != 2]
        if bad:
            parser.error(f"--pairs takes system:baseline, not {', '.join(bad)}")
    else:
        pairs = default_pairs(results)
    missing = sorted({run for pair in pairs for run in pair if not (results / run / "predictions.txt").is_file()})
    if missing:
        parser.error(f"no predictions.txt under {results} for: {', '.join(missing)}")
    if not pairs:
        parser.error(f"no pair of runs to compare under {results}")
    rows = [compare(results, system, baseline, args.trials) for system, baseline in pairs]
    command = "python benchmarks/significance.py --dataset " + args.dataset + (
        f" --results {args.results}" if Path(args.results).resolve() != REPO / "benchmarks" / "results" else "") + (
        f" --pairs {args.pairs}" if args.pairs else "") + (f" --trials {args.trials}" if args.trials != 10_000 else "")
    text = markdown(args.dataset, rows, command)
    print(text)
    (results / "significance.md").write_text(text)
    (results / "significance.json").write_text(json.dumps(
        {"dataset": args.dataset, "test_set": "full", "metric": "corpus BLEU",
         "test": "paired approximate randomization (p, two-sided) + bootstrap (95% intervals)", "trials": args.trials,
         "command": command, "commit": code_version(),
         "rows": [{**asdict(r), "difference": r.difference} for r in rows]}, indent=2) + "\n")
    print(f"wrote {results / 'significance.md'} and significance.json")


if __name__ == "__main__":
    main()
