"""Selection on a dev score, epoch by epoch: the best epoch's checkpoint and outputs are kept, patience
and budgets stop it, and a run started again continues after its last scored epoch."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from qgen.dev_selection import BEST, STATE, seconds_left, train_selecting_on_dev

SCORES = {1: 0.1, 2: 0.3, 3: 0.2, 4: 0.25, 5: 0.5, 6: 0.4}


def fake_training(run_dir: Path, calls: list[int], cut_at: int | None = None):
    """``train_to`` writing last.pt as its epoch number; ``dev_score`` reading it back."""
    def train_to(epoch: int):
        calls.append(epoch)
        done = epoch - 1 if epoch == cut_at else epoch
        (run_dir / "last.pt").write_text(str(done))
        return SimpleNamespace(history=[SimpleNamespace(valid_loss=1.0 / e) for e in range(1, done + 1)])

    def dev_score(checkpoint: Path):
        epoch = int(checkpoint.read_text())
        return SCORES[epoch], [f"output of epoch {epoch}"]
    return train_to, dev_score


def test_the_best_epoch_is_kept_and_patience_stops_the_run(tmp_path: Path) -> None:
    calls: list[int] = []
    state = train_selecting_on_dev(tmp_path, 6, *fake_training(tmp_path, calls), patience=2, log=lambda _: None)
    assert calls == [1, 2, 3, 4]  # epochs 3 and 4 do not beat epoch 2: patience 2 stops before 5
    assert state["best"]["epoch"] == 2 and state["best"]["valid_nll"] == pytest.approx(0.5)
    assert state["best_outputs"] == ["output of epoch 2"] and (tmp_path / BEST).read_text() == "2"
    assert [h["epoch"] for h in state["history"]] == [1, 2, 3, 4]


def test_a_run_started_again_continues_after_its_last_scored_epoch(tmp_path: Path) -> None:
    calls: list[int] = []
    train_selecting_on_dev(tmp_path, 3, *fake_training(tmp_path, calls), log=lambda _: None)
    again = train_selecting_on_dev(tmp_path, 6, *fake_training(tmp_path, calls), log=lambda _: None)
    assert calls == [1, 2, 3, 4, 5, 6]  # no epoch trained or scored twice
    assert again["best"]["epoch"] == 5 and (tmp_path / BEST).read_text() == "5"
    assert len(again["history"]) == 6
    assert train_selecting_on_dev(tmp_path, 6, *fake_training(tmp_path, calls), log=lambda _: None)["best"] == again["best"]
    assert calls == [1, 2, 3, 4, 5, 6]  # finished: nothing runs


def test_an_epoch_cut_short_by_the_time_budget_is_not_scored(tmp_path: Path) -> None:
    calls: list[int] = []
    state = train_selecting_on_dev(tmp_path, 4, *fake_training(tmp_path, calls, cut_at=3), log=lambda _: None)
    assert state["stopped_within_epoch"] and [h["epoch"] for h in state["history"]] == [1, 2]
    # the cut epoch's training time is kept for a run started again (its budget counts every start)
    assert json.loads((tmp_path / STATE).read_text())["train_seconds"] == state["train_seconds"]
    assert seconds_left(tmp_path, 100.0) == pytest.approx(100.0 - state["train_seconds"])
    assert seconds_left(tmp_path, 0.0) == 0.0 and seconds_left(tmp_path, None) is None
    assert seconds_left(tmp_path / "fresh", 5.0) == 5.0  # nothing trained yet
    with pytest.raises(RuntimeError, match="no epoch was scored"):
        train_selecting_on_dev(tmp_path / "fresh", 2, *fake_training(tmp_path / "fresh", [], cut_at=1),
                               log=lambda _: None)


def test_greedy_bleu_keeps_each_output_beside_its_own_pair(tiny_checkpoint: Path) -> None:
    # pairs of several lengths, not in length order: batches are formed by length, outputs come back in order
    from qgen.data import Pair
    from qgen.dev_selection import greedy_bleu
    from qgen.metrics.bleu import corpus_bleu

    words = ["porto", "bali", "new york", "lyon", "rio de janeiro", "oslo"]
    pairs = [Pair(str(i), ["select", "?", "x", "where", "{", "ent:", *w.split(), "}"], ["what", "is", *w.split(), "?"],
                  str(i)) for i, w in enumerate(words)]
    score, outputs = greedy_bleu(pairs, batch_size=4)(tiny_checkpoint)
    alone = [greedy_bleu([p])(tiny_checkpoint)[1][0] for p in pairs]
    assert outputs == alone and len({tuple(o) for o in alone}) > 1  # the model tells the pairs apart
    assert score == corpus_bleu(outputs, [[p.tgt] for p in pairs]).score
