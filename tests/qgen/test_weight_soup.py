"""A uniform model soup: the averaged checkpoint of several fine-tunings of one model."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from qgen.checkpoint import load_checkpoint, save_checkpoint
from qgen.model import ModelConfig, Vocab, build_model
from qgen.weight_soup import average_checkpoints

TINY = dict(embedding_dim=8, hidden_size=8, num_layers=1, dropout=0.0)


def _checkpoint(path: Path, seed: int, hidden: int = 8, optimizer: bool = False) -> Path:
    torch.manual_seed(seed)
    model = build_model(ModelConfig(src_vocab_size=10, tgt_vocab_size=9, **{**TINY, "hidden_size": hidden}))
    src, tgt = Vocab(["a", "b", "c", "d", "e", "f"]), Vocab(["x", "y", "z", "w", "v"])
    opt = torch.optim.Adam(model.parameters()) if optimizer else None
    return save_checkpoint(path, model, src, tgt, extra={"task": "parse", "round_trip": {"threshold": -1.0}},
                           optimizer=opt)


def test_the_soup_is_the_mean_of_the_weights_and_loads_as_a_model(tmp_path: Path) -> None:
    paths = [_checkpoint(tmp_path / f"{seed}.pt", seed, optimizer=True) for seed in (1, 2, 3)]
    out = average_checkpoints(paths, tmp_path / "soup" / "best.pt")
    states = [torch.load(p, weights_only=True)["model"] for p in paths]
    payload = torch.load(out, weights_only=True)
    for name, value in payload["model"].items():
        assert torch.allclose(value, sum(s[name] for s in states) / 3, atol=1e-7)
    assert payload["soup_of"] == [str(p) for p in paths] and payload["task"] == "parse"
    # no optimizer, RNG state or round-trip calibration of one ingredient rides along
    assert not {"optimizer", "torch_rng", "round_trip"} & set(payload)
    model, _, _, _ = load_checkpoint(out)
    assert model.cfg.hidden_size == 8


def test_it_refuses_fewer_than_two_or_different_models(tmp_path: Path) -> None:
    one = _checkpoint(tmp_path / "1.pt", 1)
    with pytest.raises(ValueError, match="at least two"):
        average_checkpoints([one], tmp_path / "soup.pt")
    wider = _checkpoint(tmp_path / "wide.pt", 2, hidden=16)
    with pytest.raises(ValueError, match="wide.pt is not the same model"):
        average_checkpoints([one, wider], tmp_path / "soup.pt")
    assert not (tmp_path / "soup.pt").exists()
