"""Training one epoch at a time with model selection on a dev-set score (the data-to-text seeds' way:
dev BLEU after every epoch, the best epoch's checkpoint kept), resumable.

The selection state lives beside the checkpoints (``selection.json``: every epoch's dev score and
validation loss, the best epoch, the training time so far; ``best_outputs.json``: the best epoch's
dev outputs), so a run started again continues after its last scored epoch and never takes an
already-scored checkpoint for a new one. The best epoch's checkpoint is ``best_bleu.pt``.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from qgen.data import Pair


class BudgetSpent(RuntimeError):
    """A run's time budget ended before its last epoch: it is saved, and goes on when started again."""


class NoEpochScored(BudgetSpent):
    """The time budget ended the first epoch before it could be scored."""


STATE = "selection.json"
OUTPUTS = "best_outputs.json"
BEST = "best_bleu.pt"


def train_selecting_on_dev(run_dir: Path, epochs: int, train_to: Callable[[int], Any],
                           dev_score: Callable[[Path], tuple[float, list]], patience: int | None = None,
                           max_seconds: float | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """``train_to(epoch)`` trains (resuming) up to ``epoch`` and returns qgen.train's result;
    ``dev_score(checkpoint)`` decodes dev and returns (score, outputs). Stops after ``epochs``, after
    ``patience`` epochs without a better score, once the training time passes ``max_seconds``, or
    when an epoch was cut short by the training loop's own time budget (``stopped_within_epoch``).
    Returns the state: ``history``, ``best`` (epoch, score, valid loss), ``best_outputs``, seconds."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / STATE
    fresh = {"history": [], "best": None, "train_seconds": 0.0, "decode_seconds": 0.0}
    state = json.loads(path.read_text(encoding="utf-8")) if path.exists() else fresh
    state["stopped_within_epoch"] = False
    for epoch in range(len(state["history"]) + 1, epochs + 1):
        best = state["best"]
        if patience is not None and best is not None and epoch - 1 - best["epoch"] >= patience:
            break
        if max_seconds is not None and state["train_seconds"] >= max_seconds:
            break
        began = time.perf_counter()
        run = train_to(epoch)
        state["train_seconds"] += time.perf_counter() - began
        if len(run.history) < epoch:  # the loop's time budget ended the epoch early: resumable, not scored
            state["stopped_within_epoch"] = True
            log(f"epoch {epoch} stopped early by the time budget; start the run again to finish it")
            _write(path, state)  # its training time counts against the budget of a run started again
            break
        began = time.perf_counter()
        score, outputs = dev_score(run_dir / "last.pt")
        state["decode_seconds"] += time.perf_counter() - began
        entry = {"epoch": epoch, "dev_score": score, "valid_nll": run.history[epoch - 1].valid_loss}
        state["history"].append(entry)
        log(f"epoch {epoch}: dev score {score:.4f}")
        if best is None or score > best["dev_score"]:
            shutil.copyfile(run_dir / "last.pt", run_dir / BEST)
            (run_dir / OUTPUTS).write_text(json.dumps(outputs))
            state["best"] = entry
        _write(path, state)
    if state["best"] is None:
        raise NoEpochScored(f"{run_dir}: no epoch was scored on dev (the time budget ended the first epoch); "
                           "start the run again with more time")
    return {**state, "best_outputs": json.loads((run_dir / OUTPUTS).read_text())}


def _write(path: Path, state: dict[str, Any]) -> None:
    from qgen.io.output_folder import write_file

    write_file(path, json.dumps(state, indent=2))  # whole or not at all: a killed run never leaves half a state


def seconds_left(run_dir: Path, max_seconds: float | None) -> float | None:
    """What is left of a run's training-time budget (``train_selecting_on_dev``'s ``max_seconds``, over
    every start of the run), for ``train_to`` to stop within an epoch when it is spent; None: no budget."""
    if max_seconds is None:
        return None
    path = run_dir / STATE
    spent = json.loads(path.read_text(encoding="utf-8"))["train_seconds"] if path.exists() else 0.0
    return max(max_seconds - spent, 0.0)


def greedy_questions(checkpoint: Path, pairs: Sequence[Pair], device: Any = "cpu",
                     batch_size: int = 64) -> list[list[str]]:
    """The checkpoint's greedy question for each pair's logical form, in the pairs' order."""
    import torch

    from qgen.checkpoint import load_checkpoint
    from qgen.decode import greedy
    from qgen.model.batch import make_batch

    model, src_vocab, tgt_vocab, _ = load_checkpoint(checkpoint, device)
    by_length = sorted(range(len(pairs)), key=lambda i: len(pairs[i].src))  # batches of alike lengths, for speed
    outputs: list[list[str]] = [[] for _ in pairs]
    with torch.inference_mode():
        for start in range(0, len(by_length), batch_size):
            rows = by_length[start:start + batch_size]
            batch = make_batch([pairs[i].src for i in rows], None, src_vocab, tgt_vocab, model.cfg.copy).to(device)
            for i, hyp, oovs in zip(rows, greedy(model, batch), batch.oovs):
                outputs[i] = tgt_vocab.decode(hyp.ids, oovs)
    return outputs


def greedy_bleu(pairs: Sequence[Pair], device: Any = "cpu", batch_size: int = 64) -> Callable[[Path], tuple[float, list]]:
    """A ``dev_score`` for held-out pairs: the checkpoint's greedy questions and their corpus BLEU."""
    def score(checkpoint: Path) -> tuple[float, list]:
        from qgen.metrics.bleu import corpus_bleu

        outputs = greedy_questions(checkpoint, pairs, device, batch_size)
        return corpus_bleu(outputs, [[p.tgt] for p in pairs]).score, outputs
    return score
