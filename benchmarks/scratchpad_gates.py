"""What a trained Scratchpad writes: its gates per decoding step on WebQSP test questions.

    python benchmarks/scratchpad_gates.py --checkpoint out/benchmarks/webqsp/scratchpad/best.pt [--examples 128]

The write is h_i <- alpha_i h_i + (1 - alpha_i) u (seed Eq. 12-14). Per greedy decoding step this
prints the mean, 10th percentile and minimum of alpha over the real (unpadded) source positions and
the mean alpha at the position the copy attention weighs most. A gate that marks what was copied
would be low there and near 1 elsewhere; about equal values mean every state is blurred alike.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.benchmark import dataset_pairs  # noqa: E402
from qgen.checkpoint import load_checkpoint  # noqa: E402
from qgen.model import make_batch  # noqa: E402
from qgen.model.vocab import BOS_ID  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a scratchpad model's best.pt")
    parser.add_argument("--prep", default=str(REPO / "out" / "benchmarks" / "prep" / "webqsp"),
                        help="preprocessed WebQSP (written by qgen_bench.py)")
    parser.add_argument("--examples", type=int, default=128, help="the first N test questions")
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, src_vocab, tgt_vocab, _ = load_checkpoint(Path(args.checkpoint), torch.device("cpu"))
    if model.cfg.memory == "none":
        sys.exit(f"{args.checkpoint}: not a scratchpad model (memory={model.cfg.memory!r})")
    model.eval()
    pairs = dataset_pairs("webqsp", Path(args.prep), True)[2][: args.examples]
    batch = make_batch([p.src for p in pairs], None, src_vocab, tgt_vocab, model.cfg.copy)
    state, prev = model.start(batch), torch.full((len(pairs),), BOS_ID)
    print(f"{len(pairs)} WebQSP test questions, greedy, {args.checkpoint}")
    with torch.no_grad():
        for step in range(args.steps):
            log_probs, state, attns = model.step(prev, state)
            gate = attns["write_gate"]
            real = gate[batch.src_mask]
            focus = attns.get("copy", attns["read"]).argmax(dim=1, keepdim=True)
            at_focus = gate.gather(1, focus).mean()
            print(f"step {step}: alpha mean {real.mean():.3f}  p10 {real.quantile(0.1):.3f}  min {real.min():.3f}"
                  f"  at the most-attended copy position {at_focus:.3f}")
            prev = log_probs.argmax(dim=1)


if __name__ == "__main__":
    main()
