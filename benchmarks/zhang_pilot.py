"""A CPU pilot of seed 003 (Zhang et al.): the three rows of their Table 1 at toy size, end to end.

    python benchmarks/zhang_pilot.py --train-size 2000 --hidden 128 --embedding 64 --epochs 2 [--no-java]

Data as the paper prepared it (qgen.datasets.e2e_bpe: Moses tokens, 1000 joint BPE merges learnt on
the whole E2E train split); ``--train-size`` rows of train drawn at random (seed) for training, 500
dev rows for the validation loss (best.pt). Each row (zhang_baseline, zhang_caencoder,
zhang_caencoder_attreg) is its registry configuration with the sizes shrunk, trained by qgen.train
(Adam, learning rate halved every epoch, teacher forcing 1, clip 5, batch 80), and decodes every dev MR with beam 10 and no length
normalisation (alpha 0); outputs lose "@@ " and are scored against the dev references by the official
metrics (qgen.metrics.e2e_official). It prints the figures and writes them, with the command, to
benchmarks/results/e2e-zhang/experiments/pilot.json and the outputs beside it (pilot/<row>.tsv).

The full rows on a CUDA machine (about 33M parameters, 526 updates an epoch), once per seed (1, 2),
each writing dev.json and dev/<row>.tsv under --out and keeping best_bleu.pt under --runs:

    python benchmarks/zhang_pilot.py --train-size 0 --hidden 1000 --embedding 620 --epochs 5 \
        --batch-size 80 --lr 5e-4 --lr-decay 0.5 --select bleu --device cuda --seed 1 \
        --runs out/zhang --out benchmarks/results/e2e-zhang/seed1

then the test rows, each row's two seeds decoded as one ensemble: ``python benchmarks/zhang_test.py
--runs out/zhang --seeds 1,2`` (note: ``--train-size`` below the whole split draws another subset per
seed, whose vocabularies differ; such models cannot be ensembled).

A pilot, not the paper's table: a twentieth of the data, toy sizes, few epochs and selection on
validation NLL (the paper: dev BLEU).
"""
from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.datasets import e2e_bpe  # noqa: E402
from qgen.e2e_benchmark import ROWS, train_selecting_on_bleu  # noqa: E402
from qgen.metrics import e2e_official  # noqa: E402
from qgen.model import VARIANTS  # noqa: E402
from qgen.train import TrainConfig, resolve_device  # noqa: E402
from qgen.version import code_version  # noqa: E402

OUT = REPO / "benchmarks" / "results" / "e2e-zhang" / "experiments"


def run_row(name: str, model_cfg, train_cfg: TrainConfig, train_pairs, valid_pairs, references,
            segment: e2e_bpe.Segmenter, args: argparse.Namespace, run_dir: Path) -> dict:
    """One row through ``qgen.e2e_benchmark.train_selecting_on_bleu`` with this script's options."""
    return train_selecting_on_bleu(name, model_cfg, train_cfg, train_pairs, valid_pairs, references, segment,
                                   args.beam, run_dir, args.select, not args.no_java,
                                   log=lambda line: print(line, flush=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "datasets" / "e2e"))
    parser.add_argument("--train-size", type=int, default=2000, help="train rows drawn at random; 0 = all")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--embedding", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=80)
    parser.add_argument("--lr", type=float, default=5e-4, help="Adam's learning rate (the paper's 5e-4)")
    parser.add_argument("--lr-decay", type=float, default=0.5, help="per-epoch factor (the paper halves it: 0.5)")
    parser.add_argument("--init-uniform", type=float, default=None,
                        help="U(-a, a) initialisation (default: the row's, 0.08); 0 = torch's defaults")
    parser.add_argument("--beam", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=ROWS)
    parser.add_argument("--no-java", action="store_true", help="BLEU and NIST only (METEOR, ROUGE_L, CIDEr need Java)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--select", choices=("nll", "bleu"), default="nll",
                        help="model selection: validation NLL (best.pt) or dev BLEU after every epoch (the paper's)")
    parser.add_argument("--runs", default="", help="keep the checkpoints here (resumable); default: a temporary folder")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started = time.perf_counter()

    train_rows = e2e_bpe.read_split(args.data, "train")
    codes = e2e_bpe.codes_for(train_rows)  # on the whole train split, as the full runs will
    segment = e2e_bpe.Segmenter(codes)
    size = args.train_size or len(train_rows)  # 0: the whole train split
    subset = train_rows if size >= len(train_rows) else random.Random(args.seed).sample(train_rows, size)
    train_pairs = e2e_bpe.to_pairs(subset, segment, e2e_bpe.MAX_TOKENS)
    dev_rows = e2e_bpe.read_split(args.data, "dev")
    valid_pairs = e2e_bpe.to_pairs(random.Random(args.seed).sample(dev_rows, 500), segment)
    references = e2e_official.read_references(Path(args.data) / "devset.csv")
    prepared = time.perf_counter() - started
    print(f"data: {len(train_pairs)} train pairs, {len(valid_pairs)} validation pairs, "
          f"{len(references.mrs)} dev MRs ({prepared:.0f} s)", flush=True)

    out = Path(args.out)
    full = (size >= len(train_rows) and (args.hidden, args.embedding) == (1000, 620) and args.epochs >= 5
            and args.init_uniform in (None, 0.08))
    label = "dev" if full else "pilot"  # a full-size run's figures are not filed as a pilot's
    (out / label).mkdir(parents=True, exist_ok=True)
    train_cfg = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr,
                            lr_decay=args.lr_decay, teacher_forcing=1.0, clip_norm=5.0, seed=args.seed,
                            device=args.device, max_src_len=200, max_tgt_len=e2e_bpe.MAX_TOKENS)
    results = {}
    for name in args.rows:
        model_cfg = replace(VARIANTS[name].model, hidden_size=args.hidden, embedding_dim=args.embedding)
        if args.init_uniform is not None:
            model_cfg = replace(model_cfg, init_uniform=args.init_uniform)
        with tempfile.TemporaryDirectory() as scratch:
            run_dir = Path(args.runs) / f"{name}_seed{args.seed}" if args.runs else Path(scratch)
            result = run_row(name, model_cfg, train_cfg, train_pairs, valid_pairs, references, segment, args, run_dir)
        (out / label / f"{name}.tsv").write_text(
            "MR\toutput\n" + "".join(f"{mr}\t{text}\n" for mr, text in zip(references.mrs, result.pop("outputs"))))
        results[name] = {**result, "model": model_cfg.as_dict()}
        shown = "  ".join(f"{k} {v:.4f}" for k, v in result["figures"].items() if v is not None)
        print(f"{name}: {shown}  (epoch {result['selected_epoch']}; train {result['train_seconds']:.0f} s, "
              f"decode {result['decode_seconds']:.0f} s)", flush=True)

    command = "python benchmarks/zhang_pilot.py " + shlex.join(sys.argv[1:])
    report = {
        "what": ("full size, whole train split; " if full else "PILOT, not the paper's Table 1: toy sizes or a train "
                 "subset, few epochs; ") + f"selection on {'dev BLEU' if args.select == 'bleu' else 'validation NLL'}; "
                "dev set (547 MRs), beam search without length normalisation, single models (no ensemble)",
        "command": command, "commit": code_version(), "device": str(resolve_device(args.device)), "threads": args.threads,
        "train_pairs": len(train_pairs), "validation_pairs": len(valid_pairs), "dev_mrs": len(references.mrs),
        "epochs": args.epochs, "batch_size": args.batch_size, "learning_rate": args.lr, "lr_decay": args.lr_decay,
        "beam": args.beam,
        "length_normalisation": "none (alpha 0)", "seed": args.seed, "bpe_merges": e2e_bpe.MERGES,
        "seconds": round(time.perf_counter() - started, 1), "rows": results,
        "paper_dev": {"zhang_baseline": {"BLEU": 0.6925, "NIST": 8.4781}, "zhang_caencoder": {"BLEU": 0.7157, "NIST": 8.6367},
                      "zhang_caencoder_attreg": {"BLEU": 0.7409, "NIST": 8.7964}},
    }
    (out / f"{label}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"{command}\nwrote {out / f'{label}.json'} ({report['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
