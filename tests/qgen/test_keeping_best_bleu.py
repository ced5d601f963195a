"""train_keeping_best_bleu: the best epoch by held-out BLEU, or the average of it and the later epochs."""
from pathlib import Path

import pytest
import torch

from qgen.checkpoint import read_payload
from qgen.data import Pair
from qgen.model import ModelConfig
from qgen.train import TrainConfig
from qgen.train_job import train_keeping_best_bleu

PAIRS = [Pair(str(i), ["select", "?", "x", "where", "{", "ent:", w, "}"], ["what", "is", w, "?"], str(i))
         for i, w in enumerate(["bali", "lyon", "porto", "oslo", "riga", "kyiv"])]
MODEL = ModelConfig(embedding_dim=8, hidden_size=16, num_layers=1, dropout=0.0, copy="extended", memory="scratchpad")


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scores: list[float]) -> tuple[Path, list[str]]:
    """Train 3 epochs with the held-out BLEU of each scoring call taken from ``scores`` in turn."""
    import qgen.dev_selection

    calls: list[str] = []

    def fake_greedy_bleu(pairs, device="cpu", batch_size=64):
        def score(checkpoint: Path):
            calls.append(checkpoint.name)
            return scores[len(calls) - 1], [["what"]] * len(pairs)
        return score

    monkeypatch.setattr(qgen.dev_selection, "greedy_bleu", fake_greedy_bleu)
    out = tmp_path / "run"
    train_keeping_best_bleu(PAIRS, PAIRS[:2], MODEL, TrainConfig(epochs=3, batch_size=6, learning_rate=1e-2), out,
                            lambda _: None, {})
    return out, calls


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return read_payload(path)["model"]


def _is_best_epoch(out: Path) -> bool:
    """best.pt holds best_bleu.pt's model, without what only resuming needs."""
    best, selected = read_payload(out / "best.pt"), read_payload(out / "best_bleu.pt")
    assert "optimizer" in selected and "optimizer" not in best and "training_weights" not in best
    return best["epoch"] == selected["epoch"] and all(torch.equal(best["model"][k], v)
                                                      for k, v in selected["model"].items())


def test_the_average_from_the_best_epoch_on_is_kept_when_it_scores_higher(tmp_path, monkeypatch) -> None:
    out, calls = _run(tmp_path, monkeypatch, [10.0, 20.0, 15.0, 25.0])
    assert calls == ["last.pt", "last.pt", "last.pt", "averaged.pt"]
    epoch2, epoch3 = _weights(out / "best_bleu.pt"), _weights(out / "last.pt")
    kept = _weights(out / "best.pt")
    name = next(iter(kept))
    assert torch.allclose(kept[name], (epoch2[name].double() + epoch3[name].double()).div(2).float())
    assert not torch.equal(kept[name], epoch2[name])
    assert read_payload(out / "best.pt")["epoch"] == 2  # the best epoch's record, its weights averaged
    assert not (out / "epochs").exists() and not (out / "averaged.pt").exists()


def test_the_best_epoch_stays_when_the_average_scores_lower_or_no_epoch_follows_it(tmp_path, monkeypatch) -> None:
    out, calls = _run(tmp_path / "lower", monkeypatch, [10.0, 20.0, 15.0, 19.0])
    assert calls[-1] == "averaged.pt"
    assert _is_best_epoch(out)
    assert read_payload(out / "best.pt")["epoch"] == 2
    out, calls = _run(tmp_path / "last", monkeypatch, [10.0, 15.0, 20.0])
    assert calls == ["last.pt"] * 3  # the best epoch is the last: nothing to average
    assert _is_best_epoch(out)
    assert read_payload(out / "best.pt")["epoch"] == 3


def test_a_run_extended_after_it_was_complete_does_not_look_for_removed_epochs(tmp_path, monkeypatch) -> None:
    import qgen.dev_selection

    scores = iter([10.0, 20.0, 15.0, 30.0])
    monkeypatch.setattr(qgen.dev_selection, "greedy_bleu",
                        lambda pairs, device="cpu", batch_size=64: lambda checkpoint: (next(scores), [["what"]] * 2))
    out = tmp_path / "run"
    for epochs in (2, 3):  # complete at 2 (its best is its last: no average, epochs/ removed), then one more
        train_keeping_best_bleu(PAIRS, PAIRS[:2], MODEL, TrainConfig(epochs=epochs, batch_size=6, learning_rate=1e-2),
                                out, lambda _: None, {})
    assert read_payload(out / "best.pt")["epoch"] == 2 and "averaged" not in (out / "selection.json").read_text()
    assert next(scores) == 30.0  # epoch 3 was scored (15.0) and no average was
