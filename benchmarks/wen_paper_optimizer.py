"""Seed 004's own optimiser on Wen's dialogue acts: does it close the gap to Kiddon et al.'s Table 3?

    python benchmarks/wen_paper_optimizer.py --domain hotel --row kiddon_checklist [--seed 1] [--lr 0.1]

``qgen benchmark wen-hotel|wen-restaurant`` trains with Adam at 1e-3 (qgen/wen_benchmark.py says why).
The paper trains with mini-batch SGD at 0.1, batch 10, clip norm 5, in Torch7, whose sequence losses
are each sentence's summed NLL averaged over the batch. This runs one row that way
(``WenBenchConfig(optimizer="sgd", learning_rate=0.1, loss_per="sentence")``), everything else as the
benchmark (dev-BLEU selection with patience 10, at most 50 epochs, beam 10, RNNLG scoring), and writes
the row's metrics.json and test outputs under
benchmarks/results/wen-<domain>/experiments/sgd-sentence-loss/<row>_seed<n>/ (work files under --work-dir).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", choices=("hotel", "restaurant"), required=True)
    parser.add_argument("--row", default="kiddon_checklist")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data-dir", default=str(REPO.parent / "shared" / "datasets"))
    parser.add_argument("--work-dir", default=str(REPO / "out" / "wen-paper-optimizer"))
    args = parser.parse_args()

    import torch

    from qgen.wen_benchmark import WenBenchConfig, run_wen_benchmark

    torch.set_num_threads(args.threads)
    cfg = WenBenchConfig(optimizer="sgd", learning_rate=args.lr, loss_per="sentence", seed=args.seed)
    work = Path(args.work_dir)
    run_wen_benchmark(args.domain, [args.row], cfg, work / "runs", work / "results", Path(args.data_dir), log=print)
    finished = work / "runs" / args.domain / f"{args.row}_seed{args.seed}"
    out = REPO / "benchmarks" / "results" / f"wen-{args.domain}" / "experiments" / "sgd-sentence-loss" / finished.name
    out.mkdir(parents=True, exist_ok=True)
    metrics = json.loads((finished / "metrics.json").read_text())
    metrics["command"] = "python benchmarks/wen_paper_optimizer.py " + " ".join(sys.argv[1:])
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    shutil.copyfile(finished / "test_outputs.txt", out / "test_outputs.txt")
    test = metrics["test"]
    print(f"{args.domain} {args.row} seed {args.seed}: test BLEU {test['BLEU']:.2f} METEOR {test.get('METEOR', float('nan')):.2f}"
          f" (dev BLEU {metrics['dev_bleu']}, epoch {metrics['selected_epoch']} of {metrics['epochs_run']}); wrote {out}")


if __name__ == "__main__":
    main()
