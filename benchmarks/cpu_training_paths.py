"""Training throughput on a CPU along the paths that compute the same loss: the encoder packed or
length-agnostic (qgen/model/rnn.py) and, with teacher forcing 1, the output layer step by step or
once over all the steps (QuestionGenerator._output_layer_at_the_end; the step-by-step rows call
_step_by_step). Alternated rounds in one process, so the paths share the machine's state.

    python benchmarks/cpu_training_paths.py [--model coverage_masked] [--threads 1] [--batches 20] [--rounds 3]

Prints target tokens/s per path and round, and the command, and writes them to
benchmarks/results/cpu-training-paths.json (one entry per model). WebQSP train batches (length-bucketed,
batch 32, paper-size model, untrained, Adam steps), from ``--prep`` (made if missing).
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.benchmark import dataset_pairs  # noqa: E402
from qgen.data import bucketed_batches  # noqa: E402
from qgen.model import VARIANTS, build_model, make_batch  # noqa: E402
from qgen.train import build_vocabularies  # noqa: E402
from qgen.version import code_version  # noqa: E402

# path name -> (encoder's length_agnostic, output layer step by step)
PATHS = {"packed, step by step": (False, True), "length-agnostic, step by step": (True, True),
         "length-agnostic, all steps at once (default)": (True, False)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="coverage_masked")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batches", type=int, default=20, help="timed batches per path and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prep", default=str(REPO / "out" / "benchmarks" / "prep" / "webqsp"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    prep = Path(args.prep)
    if not (prep / "train.parquet").exists():
        from qgen.preprocess import preprocess_dataset

        preprocess_dataset("webqsp", prep)
    variant = VARIANTS[args.model]
    pairs = dataset_pairs("webqsp", prep, variant.entity_replacement)[0]
    src_vocab, tgt_vocab = build_vocabularies(pairs)
    torch.manual_seed(0)
    model = build_model(variant.model.with_vocab(len(src_vocab), len(tgt_vocab))).train()
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    groups = list(bucketed_batches(pairs, 32, random.Random(0)))[: args.batches + 2]
    batches = [make_batch([p.src for p in g], [p.tgt[:40] for p in g], src_vocab, tgt_vocab, variant.model.copy, 200)
               for g in groups]

    def tokens_per_s(length_agnostic: bool, step_by_step: bool, timed: list) -> float:
        model.encoder.length_agnostic = length_agnostic
        tokens, started = 0, time.perf_counter()
        for batch in timed:
            optimizer.zero_grad()
            forward = model._step_by_step if step_by_step else model  # forward: the output layer at the end
            loss, count = forward(batch, teacher_forcing=1.0)
            loss.backward()
            optimizer.step()
            tokens += count
        return tokens / (time.perf_counter() - started)

    for path in PATHS.values():  # warm-up, not timed
        tokens_per_s(*path, batches[:2])
    command = (f"python benchmarks/cpu_training_paths.py --model {args.model} --threads {args.threads} "
               f"--batches {args.batches} --rounds {args.rounds}")
    print(command)
    rounds = []
    for round_ in range(1, args.rounds + 1):
        figures = {name: round(tokens_per_s(*path, batches[2:])) for name, path in PATHS.items()}
        rounds.append(figures)
        print(f"round {round_}: " + "; ".join(f"{name} {value}" for name, value in figures.items())
              + " target tokens/s", flush=True)
    out = REPO / "benchmarks" / "results" / "cpu-training-paths.json"
    results = json.loads(out.read_text()) if out.exists() else {}
    results[args.model] = {"command": command, "commit": code_version(), "threads": args.threads,
                           "machine": platform.machine(), "batch": 32, "teacher_forcing": 1.0,
                           "target_tokens_per_s_by_round": rounds}
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
