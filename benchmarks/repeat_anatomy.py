"""Where a copy model's immediate repeats ("farrah farrah", "who is is") come from, on WebQSP test.

    python benchmarks/repeat_anatomy.py --checkpoint out/benchmarks/webqsp/scratchpad/best.pt [--examples 1639]

Greedy-decodes the test questions keeping each step's copy attention and p_gen, then compares the
steps that repeat the previous word with the steps that do not: how often the word was written with
p_gen < 0.5 (the copy distribution weighted above the vocabulary's), how often the copy attention's top source position is the
previous step's again, and the copy weight left on that previous position. If repeats are copies
from an unmoved copy attention, the memory of what was copied (coverage, scratchpad) is what fails;
if they are generated, the decoder's own state is.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import mean

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.benchmark import dataset_pairs  # noqa: E402
from qgen.checkpoint import load_checkpoint  # noqa: E402
from qgen.decode import greedy  # noqa: E402
from qgen.model import make_batch  # noqa: E402


def step_facts(hypothesis) -> list[dict]:
    """Per decoding step after the first: repeat?, copied?, same copy focus?, weight on the last focus."""
    copy, p_gen = hypothesis.attns["copy"], hypothesis.attns["p_gen"]
    facts = []
    for t in range(1, len(hypothesis.ids)):
        previous_focus = int(copy[t - 1].argmax())
        facts.append({"repeat": hypothesis.ids[t] == hypothesis.ids[t - 1], "copied": float(p_gen[t]) < 0.5,
                      "same_focus": int(copy[t].argmax()) == previous_focus,
                      "weight_on_last_focus": float(copy[t][previous_focus])})
    return facts


def summary(steps: list[dict]) -> str:
    if not steps:
        return "none"
    share = lambda key: 100 * mean(float(s[key]) for s in steps)  # noqa: E731
    return (f"{len(steps):6d} steps  copied {share('copied'):5.1f}%  same copy focus {share('same_focus'):5.1f}%  "
            f"copy weight on the last focus {mean(s['weight_on_last_focus'] for s in steps):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a copy model's best.pt (copynet, coverage, scratchpad)")
    parser.add_argument("--prep", default=str(REPO / "out" / "benchmarks" / "prep" / "webqsp"),
                        help="preprocessed WebQSP (written by qgen_bench.py)")
    parser.add_argument("--examples", type=int, default=1639, help="the first N test questions")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, src_vocab, tgt_vocab, _ = load_checkpoint(Path(args.checkpoint), torch.device("cpu"))
    if model.cfg.copy == "none":
        sys.exit(f"{args.checkpoint}: not a copy model")
    model.eval()
    pairs = dataset_pairs("webqsp", Path(args.prep), True)[2][: args.examples]
    steps = []
    for start in range(0, len(pairs), 64):
        chunk = pairs[start: start + 64]
        batch = make_batch([p.src for p in chunk], None, src_vocab, tgt_vocab, model.cfg.copy)
        for hypothesis in greedy(model, batch, keep_attention=True):
            steps += step_facts(hypothesis)
    repeats = [s for s in steps if s["repeat"]]
    print(f"{len(pairs)} WebQSP test questions, greedy, {args.checkpoint}")
    print(f"repeat steps: {summary(repeats)}")
    print(f"other steps:  {summary([s for s in steps if not s['repeat']])}")
    print(f"other steps that copied: {summary([s for s in steps if not s['repeat'] and s['copied']])}")


if __name__ == "__main__":
    main()
