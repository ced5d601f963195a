"""The captured decoder step: off on a CPU (plain eager code), the switch checked, and on a GPU the
same hypotheses and scores as eager decoding."""
from __future__ import annotations

import pytest
import torch

from qgen.cuda_graphs import CapturedStep, graphs_setting, step_function
from qgen.decode import beam_search
from qgen.model import ModelConfig, Vocab, build_model, make_batch

SRC = [["select", "?", "x", "where", "ent:", "bali", "ns", "capital"], ["ask", "ent:", "paris"],
       ["count", "?", "y", "ns", "capital"]]
VOCAB = Vocab.build(SRC)


def model_on(device: str, **parts: object) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(embedding_dim=8, hidden_size=16, dropout=0.0, **parts).with_vocab(len(VOCAB), len(VOCAB))
    return build_model(cfg).to(device).eval()


def test_a_cpu_decodes_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    model = model_on("cpu", copy="extended", coverage_dim=10, memory="scratchpad")
    for setting in ("auto", "on", "off"):
        monkeypatch.setenv("QGEN_CUDA_GRAPHS", setting)
        assert step_function(model, torch.device("cpu"), 4, 8) == model.step


def test_the_switch_refuses_nonsense(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QGEN_CUDA_GRAPHS", "sometimes")
    with pytest.raises(ValueError, match="QGEN_CUDA_GRAPHS"):
        graphs_setting()


def test_a_model_in_training_mode_is_never_captured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QGEN_CUDA_GRAPHS", "on")
    model = model_on("cpu").train()
    assert step_function(model, torch.device("cuda"), 4, 8) == model.step


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("parts", [{}, {"copy": "extended", "coverage_dim": 10, "memory": "scratchpad"},
                                   {"copy": "intersection", "memory": "scratchpad", "attention": "bahdanau",
                                    "copy_softmax": "all", "gates": "mlp"}])
def test_captured_decoding_equals_eager_decoding(parts: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    model = model_on("cuda", **parts)
    batch = make_batch(SRC, None, VOCAB, VOCAB, model.cfg.copy).to("cuda")
    monkeypatch.setenv("QGEN_CUDA_GRAPHS", "off")
    eager = beam_search(model, batch, beam=3, max_len=12, num_return=2)
    monkeypatch.setenv("QGEN_CUDA_GRAPHS", "on")
    captured = beam_search(model, batch, beam=3, max_len=12, num_return=2)
    again = beam_search(model, batch, beam=3, max_len=12, num_return=2)  # the kept graph, replayed
    assert isinstance(step_function(model, torch.device("cuda"), 9, batch.src.size(1)), CapturedStep)
    for got in (captured, again):
        assert [[h.ids for h in row] for row in got] == [[h.ids for h in row] for row in eager]
        for row_got, row_eager in zip(got, eager):
            for a, b in zip(row_got, row_eager):
                assert a.score == pytest.approx(b.score, abs=1e-5)
