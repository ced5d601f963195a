"""Does reranking by items used help Kiddon's checklist on Wen's dialogue acts? A probe of a finished run.

    python benchmarks/wen_rerank_probe.py --domain hotel [--run-dir out/benchmarks/wen/hotel/kiddon_checklist_seed1]

``qgen benchmark wen-hotel|wen-restaurant`` decodes the checklist with beam 10 and, as the paper does,
writes of the finished beams the first of those that use the most agenda items (the steps whose
ref-type probability f_new is above one half, capped at the agenda's length: the spec's choice 15).
This decodes the run's dev-BLEU-selected checkpoint (``best_bleu.pt``) on dev and test three ways:
- ``steps``: the benchmark's reranking;
- ``distinct``: reranking by the distinct agenda items those steps attend to most (a step that names
  one item again counts once), an alternative reading;
- ``none``: the beam's best by total log-probability, no reranking;
and scores each with the RNNLG protocol's BLEU (``qgen.metrics.wen``). It prints the figures and writes
them to benchmarks/results/wen-<domain>/experiments/rerank-probe.json. Nothing here changes the results
tables: they keep the paper's decoding.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

import qgen.model.checklist as checklist  # noqa: E402
import qgen.wen_benchmark as wen_benchmark  # noqa: E402
from qgen.checkpoint import load_checkpoint  # noqa: E402
from qgen.dev_selection import BEST  # noqa: E402
from qgen.metrics import wen  # noqa: E402
from qgen.model.vocab import BOS_ID, PAD_ID  # noqa: E402
from qgen.version import code_version  # noqa: E402


@torch.inference_mode()
def distinct_items_used(model: torch.nn.Module, batch) -> torch.Tensor:
    """Per hypothesis, the distinct agenda items that its f_new > 0.5 steps attend to most (teacher-forced)."""
    state = model.start(batch)
    tgt = batch.tgt
    prev = torch.full((tgt.size(0),), BOS_ID, dtype=torch.long, device=tgt.device)
    seen = torch.zeros_like(state["src_mask"], dtype=torch.bool)
    rows = torch.arange(tgt.size(0), device=tgt.device)
    for t in range(tgt.size(1)):
        _, state, attns = model.step(prev, state)
        naming = (attns["f_new"] > 0.5) & (tgt[:, t] != PAD_ID)
        seen[rows[naming], attns["read"].argmax(dim=1)[naming]] = True
        prev = tgt[:, t]
    return (seen & state["src_mask"]).sum(dim=1).float()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--domain", choices=("hotel", "restaurant"), required=True)
    parser.add_argument("--run-dir", type=Path, default=None, help="a finished kiddon_checklist run (default: "
                        "out/benchmarks/wen/<domain>/kiddon_checklist_seed1)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    run_dir = args.run_dir or REPO / "out" / "benchmarks" / "wen" / args.domain / "kiddon_checklist_seed1"
    data_dir = Path(args.data_dir) if args.data_dir else None
    splits = {s: wen_benchmark.agenda_examples(args.domain, s, data_dir) for s in ("dev", "test")}
    folder = wen_benchmark._domain_folder(data_dir, args.domain)
    references = {s: wen.load_test_set(args.domain, folder / name).references
                  for s, name in (("dev", "valid.json"), ("test", "test.json"))}
    model, src_vocab, tgt_vocab, _ = load_checkpoint(run_dir / BEST, torch.device("cpu"))
    model.eval()
    counts = {"steps": checklist.items_used, "distinct": distinct_items_used, "none": checklist.items_used}
    figures = {}
    for rule, count in counts.items():
        checklist.items_used = count  # wen_benchmark.decode looks it up at each call
        try:
            figures[rule] = {}
            for split, examples in splits.items():
                tokens = wen_benchmark.decode(model, src_vocab, tgt_vocab, examples, 10, rerank=rule != "none")
                texts = wen_benchmark._texts(tokens, examples, args.domain)
                figures[rule][split] = round(wen.bleu(texts, references[split]), 2)
        finally:
            checklist.items_used = counts["steps"]
        print(f"{args.domain} {rule:8s} BLEU dev {figures[rule]['dev']}  test {figures[rule]['test']}", flush=True)
    selection = json.loads((run_dir / "metrics.json").read_text())
    out = REPO / "benchmarks" / "results" / f"wen-{args.domain}" / "experiments" / "rerank-probe.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "command": "python benchmarks/wen_rerank_probe.py " + " ".join(sys.argv[1:]), "commit": code_version(),
        "run": {"checkpoint": BEST, "selected_epoch": selection["selected_epoch"],
                "epochs_run": selection["epochs_run"], "commit": selection["commit"], "config": selection["config"]},
        "split": f"RNNLG {args.domain}: dev {len(splits['dev'])}, test {len(splits['test'])}",
        "device": "cpu", "beam": 10, "bleu": figures}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
