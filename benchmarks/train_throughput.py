"""Training and decoding throughput of every Table 1 model at the paper's size, on this machine.

    python benchmarks/train_throughput.py [--steps 8] [--threads N] [--checkpoint best.pt] [--models a,b]

Per model, at batch 32 and at batch 128: seconds per training step (teacher forcing 0.5,
length-bucketed WebQSP train batches, the training loop's own step: bf16 autocast, fused Adam and
the step captured as CUDA graphs on a GPU with QGEN_CUDA_GRAPHS=on, every timed batch shape
warmed up and captured before the clock starts; ``batchN_eager`` and ``captured_over_eager``: the
same step uncaptured, timed in the same run), target tokens per second and the implied seconds
per WebQSP epoch. The timed steps run back to back and the device is synchronised once before and
once after them, as in training. Then the time to decode the 1,639 WebQSP test questions with beam
4 (with a trained checkpoint when given: an untrained model rarely stops early, so its decoding time
is an upper bound). Prints the figures and writes benchmarks/results/throughput-<device>.json (its
``synthesis`` entry, written by synth_bench.py, is kept, and so are the models of an earlier run on the
same device that this run did not time, each with the commit and command that timed it under ``timed_by``).
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
from qgen.cuda_graphs import graphs_setting  # noqa: E402
from qgen.data import bucketed_batches, sequential_batches  # noqa: E402
from qgen.decode import beam_search  # noqa: E402
from qgen.model import BENCHMARK_MODELS, VARIANTS, build_model, make_batch  # noqa: E402
from qgen.captured_training import WARMUP_STEPS  # noqa: E402
from qgen.train import (TrainConfig, build_vocabularies, captured_training, make_optimizer,  # noqa: E402
                        resolve_device, training_step)
from qgen.version import code_version  # noqa: E402

BATCH_SIZES = (32, 128)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8, help="timed training steps per model (after 2 warm-up)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--checkpoint", default=None, help="a trained checkpoint for the decoding figure")
    parser.add_argument("--models", default=",".join(BENCHMARK_MODELS))
    parser.add_argument("--decode-only", action="store_true", help="print the decoding figure only (no file written)")
    parser.add_argument("--prep", default=str(REPO / "out" / "benchmarks" / "prep" / "webqsp"))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    prep = Path(args.prep)
    if not (prep / "train.parquet").exists():
        from qgen.preprocess import preprocess_dataset

        preprocess_dataset("webqsp", prep)
    if args.decode_only:
        print("decode:", decode_timing(args.checkpoint, prep, device), flush=True)
        return
    out = REPO / "benchmarks" / "results" / f"throughput-{device.type}.json"
    previous = json.loads(out.read_text()) if out.exists() else {}
    results: dict = {"command": "python benchmarks/train_throughput.py " + " ".join(sys.argv[1:]),
                     "commit": code_version(), "device": str(device), "threads": torch.get_num_threads(),
                     "machine": platform.machine(), "models": {}}
    if device.type == "cuda":
        results["gpu"] = torch.cuda.get_device_name(device)
    for name in args.models.split(","):
        figures = {f"batch{size}": time_training(name, size, args.steps, prep, device) for size in BATCH_SIZES}
        if device.type == "cuda":  # the eager step beside the captured one: their ratio is the capture's gain
            for size in BATCH_SIZES:
                figures[f"batch{size}_eager"] = time_training(name, size, args.steps, prep, device, eager=True)
                captured, uncaptured = figures[f"batch{size}"], figures[f"batch{size}_eager"]
                captured["captured_over_eager"] = round(captured["target_tokens_per_s"]
                                                        / uncaptured["target_tokens_per_s"], 2)
        results["models"][name] = {**figures["batch32"], **figures}  # today's keys: batch 32
        print(f"{name:20s} {figures}", flush=True)
    results["decode"] = decode_timing(args.checkpoint, prep, device)
    print("decode:", results["decode"])
    results.update(kept_records(previous))
    results["models"].update(untimed_models(previous, results))
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


# Records of the file that other commands wrote (synth_bench.py's synthesis entry) or that an earlier
# run measured on purpose (an A/B of two commits): a new timing of the models leaves them as they are.
KEPT_RECORDS = ("synthesis", "training_same_model_before_and_after")


def kept_records(previous: dict) -> dict:
    """The entries of ``KEPT_RECORDS`` that the file held."""
    return {key: previous[key] for key in KEPT_RECORDS if key in previous}


def untimed_models(previous: dict, results: dict) -> dict:
    """The models of an earlier run on the same device that this run did not time, each tagged with
    the commit and command that timed it (a run with --models a,b would otherwise drop the others)."""
    same_device = all(previous.get(key) == results.get(key) for key in ("device", "gpu", "machine"))
    if not same_device:
        return {}
    origin = {"commit": previous.get("commit"), "command": previous.get("command")}
    return {name: {"timed_by": origin, **figures} for name, figures in previous.get("models", {}).items()
            if name not in results["models"]}


def time_training(name: str, batch_size: int, steps: int, prep: Path, device: torch.device,
                  eager: bool = False) -> dict:
    variant = VARIANTS[name]
    train_pairs = dataset_pairs("webqsp", prep, variant.entity_replacement)[0]
    src_vocab, tgt_vocab = build_vocabularies(train_pairs)
    torch.manual_seed(0)
    model = build_model(variant.model.with_vocab(len(src_vocab), len(tgt_vocab))).to(device).train()
    cfg = TrainConfig(batch_size=batch_size)
    optimizer = make_optimizer(model, cfg, device)
    forcing = torch.Generator(device=device).manual_seed(0)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    groups = list(bucketed_batches(train_pairs, batch_size, random.Random(0)))
    batches = [make_batch([p.src for p in pairs], [p.tgt[: cfg.max_tgt_len] for p in pairs], src_vocab, tgt_vocab,
                          variant.model.copy, cfg.max_src_len) for pairs in groups[: steps + 2]]
    captured = None if eager else captured_training(model, optimizer, cfg, device, log=lambda line: None)
    if captured is not None:  # the loop's recorded steps: every timed shape warmed up and captured first
        step = captured.step
        warm_up = batches[2:] * (WARMUP_STEPS + 1)
    else:
        step = lambda batch: training_step(model, optimizer, batch.to(device), cfg, forcing, autocast)  # noqa: E731
        warm_up = batches[:2]
    for batch in warm_up:  # not timed
        step(batch)
    _sync(device)
    started = time.perf_counter()
    tokens = 0
    for batch in batches[2:]:
        tokens += step(batch)[1]
    _sync(device)
    seconds = time.perf_counter() - started
    per_step = seconds / len(batches[2:])
    return {"s_per_step": round(per_step, 4), "target_tokens_per_s": round(tokens / seconds),
            "captured": captured is not None,
            "s_per_epoch": round(per_step * len(groups), 1), "steps_per_epoch": len(groups)}


def decode_timing(checkpoint: str | None, prep: Path, device: torch.device) -> dict:
    """Beam-4 decoding of the WebQSP test questions (Copy + Scratchpad)."""
    _, _, test_pairs = dataset_pairs("webqsp", prep, True)
    if checkpoint:
        from qgen.checkpoint import load_checkpoint

        model, src_vocab, tgt_vocab, _ = load_checkpoint(checkpoint, device)
    else:
        train_pairs = dataset_pairs("webqsp", prep, True)[0]
        src_vocab, tgt_vocab = build_vocabularies(train_pairs)
        model = build_model(VARIANTS["scratchpad"].model.with_vocab(len(src_vocab), len(tgt_vocab))).to(device).eval()
    started = time.perf_counter()
    for pairs in sequential_batches(test_pairs, 64):
        batch = make_batch([p.src for p in pairs], None, src_vocab, tgt_vocab, model.cfg.copy).to(device)
        beam_search(model, batch, beam=4)
    _sync(device)
    seconds = time.perf_counter() - started
    return {"questions": len(test_pairs), "beam": 4, "seconds": round(seconds, 2), "batch": 64,
            "cuda_graphs": graphs_setting() if device.type == "cuda" else "off",
            "questions_per_s": round(len(test_pairs) / seconds, 1), "trained_checkpoint": bool(checkpoint)}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
