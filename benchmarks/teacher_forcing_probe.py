"""Does teacher forcing at 0.5 teach the model to repeat its input word? A fine-tuning probe.

    python benchmarks/teacher_forcing_probe.py --checkpoint out/benchmarks/webqsp/scratchpad/last.pt \
        --teacher-forcing 1.0 --epochs 2 [--threads 1]

Why it might: with a coin per step, the model is sometimes fed its own word; when that word was
the gold word of the *next* step (it skipped one), the loss still asks for that next gold word,
which is the word it was just fed: "repeat your input" is rewarded. This continues training a
finished run (its last.pt: weights and Adam state) for a few epochs with the given forcing and,
before and after each epoch, decodes the WebQSP test set greedily and prints the share of
questions with a word twice in a row ("who is is ?") and the corpus BLEU (qgen.metrics, the
benchmark's BLEU). Run it once with 1.0 and once with 0.5 (the control: the same extra epochs
with the paper's forcing). Nothing is written; the checkpoint is only read.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.benchmark import dataset_pairs  # noqa: E402
from qgen.checkpoint import load_checkpoint  # noqa: E402
from qgen.data import Pair, sequential_batches  # noqa: E402
from qgen.decode import greedy  # noqa: E402
from qgen.metrics import corpus_bleu, immediate_repeat_share  # noqa: E402
from qgen.model import make_batch  # noqa: E402
from qgen.train import TrainConfig, run_epoch  # noqa: E402


def decode_all(model: torch.nn.Module, pairs: list[Pair], src_vocab, tgt_vocab) -> list[list[str]]:
    model.eval()
    by_id: dict[str, list[str]] = {}
    for chunk in sequential_batches(pairs, 64):  # sorted by length: keep the questions by id
        batch = make_batch([p.src for p in chunk], None, src_vocab, tgt_vocab, model.cfg.copy)
        for pair, hyp, oovs in zip(chunk, greedy(model, batch), batch.oovs):
            by_id[pair.id] = tgt_vocab.decode(hyp.ids, oovs)
    return [by_id[p.id] for p in pairs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a WebQSP run's last.pt (with its optimizer state)")
    parser.add_argument("--teacher-forcing", type=float, required=True)
    parser.add_argument("--teacher-forcing-per", default="step", choices=["step", "sequence"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--prep", default=str(REPO / "out" / "benchmarks" / "prep" / "webqsp"))
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print("command: python benchmarks/teacher_forcing_probe.py " + " ".join(sys.argv[1:]), flush=True)
    model, src_vocab, tgt_vocab, payload = load_checkpoint(args.checkpoint)
    train_pairs, valid_pairs, test_pairs = dataset_pairs("webqsp", Path(args.prep), entity_replacement=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=payload["train_config"]["learning_rate"])
    if "optimizer" in payload:
        optimizer.load_state_dict(payload["optimizer"])
    saved = {k: v for k, v in payload["train_config"].items() if k in TrainConfig.__dataclass_fields__}
    cfg = TrainConfig(**{**saved, "device": "cpu", "teacher_forcing": args.teacher_forcing,
                         "teacher_forcing_per": args.teacher_forcing_per})
    references = [p.tgt for p in test_pairs]

    def report(tag: str) -> None:
        questions = decode_all(model, test_pairs, src_vocab, tgt_vocab)
        print(f"{tag}: questions with a word twice in a row {immediate_repeat_share(questions):.1%}, "
              f"corpus BLEU {corpus_bleu(questions, references).score:.2f} (n={len(questions)})", flush=True)

    start_epoch = int(payload.get("epoch", 0))
    report(f"after epoch {start_epoch} ({args.checkpoint})")
    for epoch in range(start_epoch + 1, start_epoch + args.epochs + 1):
        started = time.perf_counter()
        stats = run_epoch(model, optimizer, train_pairs, valid_pairs, src_vocab, tgt_vocab, cfg, epoch,
                          torch.device("cpu"))
        print(f"epoch {epoch} with teacher forcing {args.teacher_forcing:g} per {args.teacher_forcing_per}: "
              f"train {stats.train_loss:.3f}  valid {stats.valid_loss:.3f}  {time.perf_counter() - started:.0f} s",
              flush=True)
        report(f"after epoch {epoch}")


if __name__ == "__main__":
    main()
