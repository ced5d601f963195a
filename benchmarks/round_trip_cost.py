"""What the round-trip filter costs beside generation: seconds to write N questions (beam search)
and to judge them by each round-trip rule, on the same device and threads.

The logical forms are drawn from WikiSQL's training split with the downstream benchmark's value
pool; the generator and the parser are checkpoints of a ``qgen downstream`` work folder.

    python benchmarks/round_trip_cost.py --work out/downstream/wikisql --count 1000 --threads 1
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from qgen.benchmark import dataset_pairs
from qgen.datasets.registry import load_dataset
from qgen.datasets.wikisql import wikisql_headers
from qgen.samplers.wikisql_pool import ValuePool, sample_queries
from qgen.synth.generator import QuestionWriter
from qgen.synth.round_trip import RULES, RoundTripFilter
from qgen.synth.schema import PairRow
from qgen.version import code_version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("out/downstream/wikisql"))
    parser.add_argument("--prep", type=Path, default=Path("out/wikisql"))
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7, help="Another draw than the benchmark's (seed 1).")
    parser.add_argument("--k", type=int, default=1, help="Rule exact: a match among the parser's K best parses "
                        "(round_trip_cost.json was measured with 1; synthesis reads 4).")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/downstream/wikisql/round_trip_cost.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train, _, _ = dataset_pairs("wikisql", args.prep, True)
    ids = {p.id for p in train}
    pool = ValuePool.from_examples([r for r in load_dataset("wikisql", None, "test") if r.id in ids], wikisql_headers())
    records = list(sample_queries(pool, args.count, seed=args.seed))
    writer = QuestionWriter(args.work / "generator" / "best.pt", beam=4, device="cpu", batch_size=64)
    started = time.perf_counter()
    pairs = [r for r in writer.write(records) if isinstance(r, PairRow)]
    seconds = {"generate_beam4": round(time.perf_counter() - started, 2)}
    questions, lfs = [p.question.split() for p in pairs], [p.lf_tokens for p in pairs]
    for rule in RULES:
        judge = RoundTripFilter(args.work / "rows" / "low" / "best.pt", rules={"sql": rule}, k=args.k, batch_size=64)
        started = time.perf_counter()
        judge.judge("sql", questions, lfs)
        seconds[f"round_trip_{rule}"] = round(time.perf_counter() - started, 2)
    result = {"logical_forms": len(records), "questions": len(pairs), "seconds": seconds, "threads": args.threads,
              "device": "cpu", "commit": code_version(),
              "k": args.k, "work": str(args.work),
              "command": "python benchmarks/round_trip_cost.py " + " ".join(sys.argv[1:])}
    for name, value in seconds.items():
        print(f"{name}: {value} s ({len(pairs) / value:.0f} pairs/s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
