"""Evaluation figures: each writes a real PNG; a tiny trained copy model gives every figure."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("matplotlib")

from qgen.data import Pair  # noqa: E402
from qgen.model import ModelConfig  # noqa: E402
from qgen.plots import (  # noqa: E402
    attention_heatmap,
    cumulative_entropy_plot,
    loss_curves,
    mean_cumulative_entropy,
    write_evaluation_plots,
)
from qgen.train import TrainConfig, train  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels from the IHDR chunk, after checking the file is a PNG."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, f"{path} is not a PNG"
    assert len(data) > 5_000, f"{path} is only {len(data)} bytes"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def rows(n_tgt: int, n_src: int, seed: int = 0) -> np.ndarray:
    logits = np.random.default_rng(seed).normal(size=(n_tgt, n_src)) * 3
    attn = np.exp(logits)
    return attn / attn.sum(axis=1, keepdims=True)  # (tgt_len, src_len), rows sum to 1


def test_attention_heatmap_with_p_gen_and_eighty_source_tokens(tmp_path: Path) -> None:
    src = [f"tok{i}" for i in range(80)]
    tgt = "what is the capital of france ? </s>".split()
    path = attention_heatmap(src, tgt, rows(len(tgt), len(src)), np.linspace(0, 1, len(tgt)),
                             tmp_path / "a.png", title="example")
    width, height = png_size(path)
    assert width > height  # 80 source columns against 8 generated rows: a wide figure
    assert width > 1500  # room for 80 rotated labels


def test_attention_heatmap_without_p_gen_accepts_tensors(tmp_path: Path) -> None:
    path = attention_heatmap(["a", "b", "c"], ["x", "y"], torch.tensor(rows(2, 3)), None, tmp_path / "b.png")
    assert png_size(path)[0] > 0


@pytest.mark.parametrize("read, p_gen, message", [
    (rows(3, 4), None, r"shape \(3, 4\).*expected \(2, 3\)"),
    (rows(2, 3)[0], None, "must be 2-D"),
    (rows(2, 3), [0.5, 0.5, 0.5], "p_gen has 3 values but there are 2 generated"),
])
def test_attention_heatmap_rejects_mismatched_shapes(read, p_gen, message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message):
        attention_heatmap(["a", "b", "c"], ["x", "y"], read, p_gen, tmp_path / "bad.png")
    assert not (tmp_path / "bad.png").exists()


def test_loss_curves_from_rows_and_from_history_json(tmp_path: Path) -> None:
    history = [{"epoch": e, "train_loss": 3 / e, "valid_loss": 3.5 / e, "seconds": 1.0, "target_tokens_per_s": 9.0,
                "valid_bleu": 10.0 * e} for e in range(1, 8)]
    width, height = png_size(loss_curves(history, tmp_path / "with_bleu.png"))
    assert width > height
    (tmp_path / "history.json").write_text(json.dumps([{k: v for k, v in h.items() if k != "valid_bleu"}
                                                       for h in history]))
    assert png_size(loss_curves(tmp_path / "history.json", tmp_path / "loss.png"))[0] > 0
    with pytest.raises(ValueError, match="lacks valid_loss"):
        loss_curves([{"epoch": 1, "train_loss": 1.0}], tmp_path / "bad.png")
    with pytest.raises(ValueError, match="empty"):
        loss_curves([], tmp_path / "bad.png")


def test_mean_cumulative_entropy_averages_over_sentences_that_reach_a_step() -> None:
    uniform4 = np.full((3, 4), 0.25)  # log 4 per step
    peaked = np.eye(2, 4)  # 0 per step
    means, counts = mean_cumulative_entropy([uniform4, peaked])
    assert counts.tolist() == [2, 2, 1]
    np.testing.assert_allclose(means, [np.log(4) / 2, np.log(4), 3 * np.log(4)])


def test_cumulative_entropy_plot_one_line_per_model(tmp_path: Path) -> None:
    curves = {"seq2seq": [rows(5, 12, s) for s in range(4)], "scratchpad": [rows(7, 12, s) for s in range(4)]}
    width, height = png_size(cumulative_entropy_plot(curves, tmp_path / "entropy.png"))
    assert width > height
    with pytest.raises(ValueError, match="no sentence attention"):
        cumulative_entropy_plot({"empty": []}, tmp_path / "bad.png")
    with pytest.raises(ValueError, match="sums to"):
        cumulative_entropy_plot({"leaky": [np.full((2, 3), 0.2)]}, tmp_path / "bad.png")


CITIES = ["bali", "paris", "lyon", "porto", "cologne"]
PAIRS = [Pair(f"{c}-capital", ["select", "?", "x", "where", "{", "ent:", c, "ns", "capital", "?", "x", "}"],
              f"what is the capital of {c} ?".split(), c) for c in CITIES]
PAIRS += [Pair(f"{c}/mayor", ["select", "?", "x", "where", "{", "ent:", c, "ns", "mayor", "?", "x", "}"],
               f"who is the mayor of {c} ?".split(), c) for c in CITIES]


def test_write_evaluation_plots_from_a_tiny_trained_copy_model(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    model_cfg = ModelConfig(embedding_dim=16, hidden_size=32, num_layers=1, dropout=0.0, copy="intersection")
    cfg = TrainConfig(epochs=3, batch_size=10, learning_rate=1e-2, teacher_forcing=1.0, seed=3, device="cpu")
    train(PAIRS, PAIRS[:3], model_cfg, cfg, tmp_path / "run", log=lambda _: None)
    unseen = Pair("rome-capital", PAIRS[0].src[:6] + ["rome"] + PAIRS[0].src[7:], PAIRS[0].tgt, "rome")
    written = write_evaluation_plots(tmp_path / "run" / "best.pt", [PAIRS[5], unseen] + PAIRS, tmp_path / "plots",
                                     n_examples=2, device="cpu")
    names = [p.name for p in written]
    # history.json beside the checkpoint is found; ids become safe file names ("/" -> "_")
    assert names == ["attention_bali_mayor.png", "attention_rome-capital.png", "cumulative_entropy.png",
                     "loss_curves.png"]
    for path in written:
        assert png_size(path)[0] > 0
    history = [{"epoch": 1, "train_loss": 2.0, "valid_loss": 2.5}]
    again = write_evaluation_plots(tmp_path / "run" / "best.pt", PAIRS[:2], tmp_path / "plots2", n_examples=0,
                                   history=history, device="cpu")
    assert [p.name for p in again] == ["cumulative_entropy.png", "loss_curves.png"]
