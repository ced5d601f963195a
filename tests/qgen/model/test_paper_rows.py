"""Table 1's rows as seed 001 writes them (issue 19): MLP scores, the copy softmax over every position,
MLP p_gen / update / write gate, coverage inside the copy score; and the first models, unchanged."""
from __future__ import annotations

import importlib.util
import json
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
import torch

from qgen.decode import beam_search, greedy
from qgen.model import BENCHMARK_MODELS, VARIANTS, ModelConfig, Vocab, build_model, make_batch
from qgen.model.attention import MLPAttention
from qgen.model.generator import CopyGenerator
from qgen.model.memory import Scratchpad
from qgen.model.vocab import BOS_ID, PAD_ID

torch.set_num_threads(1)
FIXTURE = Path(__file__).with_name("fixtures") / "luong_outputs.npz"  # written by fixtures/make_luong_outputs.py


def _writer():
    """The fixture's writer, whose ``outputs`` routine (greedy steps, then a training loss) the test reruns."""
    spec = importlib.util.spec_from_file_location("make_luong_outputs", FIXTURE.with_name("make_luong_outputs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


WRITER = _writer()
SRC, TGT = WRITER.SRC, WRITER.TGT  # three logical forms and their questions, one source word never a question word
SRC_VOCAB = Vocab.build(SRC)
TGT_VOCAB = Vocab.build([TGT[0], TGT[2]])
TINY = dict(embedding_dim=8, hidden_size=16, num_layers=2, dropout=0.0)
PAPER_ROWS = ["seq2seq", "seq2seq_priors", "copynet", "coverage", "scratchpad"]
LUONG_ROWS = ["seq2seq_luong", "seq2seq_priors_luong", "copynet_luong", "coverage_luong", "scratchpad_luong"]
NEW_FIELDS = ("attention", "copy_softmax", "gates", "mlp_hidden")


def model_and_batch(name: str, **sizes):
    torch.manual_seed(0)
    cfg = replace(VARIANTS[name].model, **{**TINY, **sizes}).with_vocab(len(SRC_VOCAB), len(TGT_VOCAB))
    return build_model(cfg), make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, cfg.copy)


def run_steps(model, batch, steps: int):
    state = model.start(batch)
    prev = torch.full((len(batch),), BOS_ID)
    for _ in range(steps):
        log_probs, state, attns = model.step(prev, state)
        yield log_probs, state, attns
        prev = log_probs.argmax(dim=1)


def test_registry_rows() -> None:
    assert BENCHMARK_MODELS == ("seq2seq", "seq2seq_priors", "copynet", "coverage", "scratchpad",
                                "scratchpad_extended")
    for name in PAPER_ROWS:
        assert VARIANTS[name].name == name and VARIANTS[name].model.attention == "bahdanau"
    for name in LUONG_ROWS:
        assert VARIANTS[name].model.attention == "luong"
    for name in ("copynet", "coverage", "scratchpad", "copynet_luong", "coverage_luong", "scratchpad_luong"):
        cfg = VARIANTS[name].model
        assert (cfg.copy, cfg.copy_softmax, cfg.gates) == ("intersection", "all", "mlp")
    assert VARIANTS["scratchpad"].model.coverage_dim == 0 and VARIANTS["scratchpad_luong"].model.coverage_dim == 0
    assert VARIANTS["coverage"].model.coverage_dim == 10
    # the first models, exactly as before (checkpoints, the demo and the parser use them)
    assert VARIANTS["seq2seq_luong"].model == ModelConfig()
    assert VARIANTS["copynet_masked"].model == ModelConfig(copy="intersection")
    assert VARIANTS["coverage_masked"].model == ModelConfig(copy="intersection", coverage_dim=10)
    assert VARIANTS["scratchpad_masked"].model == ModelConfig(copy="intersection", coverage_dim=10, memory="scratchpad")
    assert VARIANTS["scratchpad_extended"].model == ModelConfig(copy="extended", coverage_dim=10, memory="scratchpad")
    assert VARIANTS["copynet_extended"].model == ModelConfig(copy="extended")
    assert VARIANTS["scratchpad_focus"].model == ModelConfig(copy="intersection", coverage_dim=10,
                                                             memory="scratchpad_focus")
    assert all(v.name == k for k, v in VARIANTS.items())


def test_new_fields_refuse_nonsense() -> None:
    for bad in (dict(attention="dot"), dict(copy_softmax="some"), dict(gates="deep"), dict(mlp_hidden=-1)):
        with pytest.raises(ValueError):
            ModelConfig(**bad)
    assert ModelConfig(hidden_size=16).mlp_units == 16 and ModelConfig(mlp_hidden=512).mlp_units == 512


@pytest.mark.parametrize("name", PAPER_ROWS + LUONG_ROWS)
@torch.no_grad()
def test_step_shapes_and_attentions(name: str) -> None:
    model, batch = model_and_batch(name, mlp_hidden=12)
    model.eval()
    cfg = model.cfg
    for log_probs, state, attns in run_steps(model, batch, 3):
        assert log_probs.shape == (3, len(TGT_VOCAB))
        probs = log_probs.exp()
        assert float(probs.sum(dim=1).max()) <= 1 + 1e-5
        assert float(probs[:, PAD_ID].max()) < 1e-6 and float(probs[:, BOS_ID].max()) < 1e-6
        assert attns["read"].shape == batch.src_mask.shape
        assert float(attns["read"].masked_select(~batch.src_mask).abs().max()) == 0.0
        expected = {"read"} | ({"copy", "p_gen"} if cfg.copy != "none" else set()) | (
            {"coverage"} if cfg.coverage_dim else set()) | ({"write_gate"} if cfg.memory != "none" else set())
        assert set(attns) == expected
        if cfg.copy != "none":
            assert attns["copy"].shape == batch.src_mask.shape and attns["p_gen"].shape == (3,)
            assert float(attns["copy"].masked_select(~batch.src_mask).abs().max()) == 0.0  # padding: no copy mass
        if cfg.coverage_dim:
            assert attns["coverage"].shape == (3, batch.src_mask.size(1), 10)
        for key, value in state.items():
            assert value.size(0) == 3, key  # batch-first, so beams can reorder any state
        assert ("feed" in state) == (cfg.attention == "luong")  # input feeding only in Luong's form
        widths = {"keys_read": 12, "keys_copy": 12, "keys_gate": 12 if cfg.gates == "mlp" else 1, "keys_coverage": 30}
        for key, width in widths.items():
            if key in state:
                assert state[key].shape == (3, batch.src_mask.size(1), width), key


@pytest.mark.parametrize("name", ["scratchpad", "scratchpad_luong"])
def test_scratchpad_never_writes_padding(name: str) -> None:
    model, batch = model_and_batch(name)
    state = model.start(batch)
    before = {k: v.clone() for k, v in state.items() if k == "memory" or k.startswith("keys_")}
    _, after, attns = model.step(torch.full((3,), BOS_ID), state)
    for key, old in before.items():
        changed = (after[key] - old).abs().sum(dim=-1) > 0  # (batch, src_len)
        assert bool(changed[batch.src_mask].all()), key
        assert not bool(changed[~batch.src_mask].any()), key
    assert attns["write_gate"].shape == batch.src_mask.shape


def _gate_logits(pad: Scratchpad, memory: torch.Tensor, state: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    alpha, update = pad.gate(state, context, pad.project(memory))
    assert alpha.shape == memory.shape[:2] + (1,) and update.shape == (memory.size(0), 1, memory.size(2))
    assert float(update.abs().max()) <= 1.0  # u = tanh(...)
    return torch.logit(alpha.squeeze(-1).double())  # (batch, src_len)


def test_mlp_write_gate_step_term_differs_by_position_the_linear_one_does_not() -> None:
    torch.manual_seed(0)
    linear, mlp = Scratchpad(16), Scratchpad(16, gate_hidden=32)
    memory = torch.randn(2, 6, 16)
    steps = [(torch.randn(2, 16), torch.randn(2, 16)) for _ in range(2)]
    with torch.no_grad():
        for pad in (linear, mlp):
            first, second = (_gate_logits(pad, memory, *step) for step in steps)
            assert float((first - first[:, :1]).abs().max()) > 1e-4  # a fixed step's gate differs by position
            shift = second - first  # what the step changes, per position
            spread = float((shift - shift[:, :1]).abs().max())
            if pad is linear:  # the step's term is the same at every position (Eq. 13 linear)
                assert spread < 1e-5
            else:  # through the ReLU it is not: a step can write some positions more than others
                assert spread > 1e-2


def test_mlp_write_gate_alone_matches_its_equation() -> None:
    torch.manual_seed(0)
    pad = Scratchpad(16, gate_hidden=32)
    memory, state, context = torch.randn(2, 5, 16), torch.randn(2, 16), torch.randn(2, 16)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    with torch.no_grad():
        written, gate = pad(memory, state, context, mask)
        step = torch.cat([state, context], dim=-1)
        for b in range(2):
            for i in range(5):
                hidden = torch.relu(pad.gate_step(step[b]) + pad.gate_memory(memory[b, i]))
                alpha = torch.sigmoid(pad.gate_out(hidden))
                u = torch.tanh(pad.update(step[b]))
                expected = alpha * memory[b, i] + (1 - alpha) * u if mask[b, i] else memory[b, i]
                torch.testing.assert_close(gate[b, i], alpha.squeeze())
                torch.testing.assert_close(written[b, i], expected)


@torch.no_grad()
def test_copy_mass_on_an_uncopyable_position_is_lost() -> None:
    model, batch = model_and_batch("copynet")
    model.eval()
    uncopyable = batch.src_mask & (batch.copy_ids < 0)  # "select", "?", "atlantis" ... no question word
    assert bool(uncopyable.any(dim=1).all())
    log_probs, _, attns = next(run_steps(model, batch, 1))
    beta, p_gen = attns["copy"], attns["p_gen"]
    lost = (1 - p_gen) * beta.masked_fill(~uncopyable, 0.0).sum(dim=1)  # (batch,)
    assert float(lost.min()) > 1e-3
    torch.testing.assert_close(beta.sum(dim=1), torch.ones(3))  # Eq. 9: a softmax over all positions
    total = log_probs.double().exp().sum(dim=1)
    assert float(total.max()) < 1.0
    torch.testing.assert_close(total, (1 - lost).double(), atol=1e-5, rtol=0)
    # the masked form renormalises onto copyable positions: a distribution
    masked, batch = model_and_batch("copynet_masked")
    masked_log_probs, _, masked_attns = next(run_steps(masked.eval(), batch, 1))
    assert float(masked_attns["copy"].masked_select(uncopyable).abs().max()) == 0.0
    torch.testing.assert_close(masked_log_probs.exp().sum(dim=1), torch.ones(3), atol=1e-5, rtol=0)


def test_copy_generator_all_positions_scatter() -> None:
    """One row, hand-set: beta over two copyable positions and one that is not; its mass vanishes."""
    gen = CopyGenerator(4, 3, 6, copy_all=True, gate_hidden=5)
    memory = torch.zeros(1, 4, 4)  # equal keys: beta uniform over the three real positions
    src_mask = torch.tensor([[True, True, True, False]])
    copy_mask = torch.tensor([[True, False, True, False]])
    copy_ids = torch.tensor([[4, 0, 5, 0]])
    with torch.no_grad():
        log_probs, attns, _ = gen(torch.zeros(1, 4), torch.zeros(1, 3), memory, copy_mask, copy_ids, 6,
                                  src_mask=src_mask)
    beta, p_gen = attns["copy"][0], float(attns["p_gen"][0])
    torch.testing.assert_close(beta, torch.tensor([1 / 3, 1 / 3, 1 / 3, 0.0]))
    torch.testing.assert_close(float(log_probs.exp().sum()), 1 - (1 - p_gen) / 3, atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["scratchpad", "scratchpad_luong", "coverage"])
@torch.no_grad()
def test_projected_memory_in_the_state_stays_exact(name: str) -> None:
    model, batch = model_and_batch(name)
    model.eval()
    maps = model.decoder.projections()
    assert set(maps) == ({"keys_read", "keys_copy"} if model.cfg.attention == "bahdanau" else set()) | (
        {"keys_gate"} if model.cfg.memory != "none" else set()) | ({"keys_coverage"} if model.cfg.coverage_dim else set())
    for _, state, _ in run_steps(model, batch, 6):
        pass
    if model.cfg.memory != "none":
        assert float((state["memory"] - model.start(batch)["memory"]).abs().max()) > 1e-3  # it was rewritten
    for key, projection in maps.items():
        torch.testing.assert_close(state[key], projection(state["memory"]), atol=1e-5, rtol=1e-4)


def test_mlp_attention_with_kept_keys_equals_recomputed() -> None:
    torch.manual_seed(0)
    attention = MLPAttention(6, 8, 5, coverage_dim=3)
    query, memory, coverage = torch.randn(2, 6), torch.randn(2, 4, 8), torch.randn(2, 4, 3)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    weights, context = attention(query, memory, mask, coverage)
    kept = attention(query, memory, mask, coverage, keys=attention.project(memory))
    torch.testing.assert_close((weights, context), kept)
    assert float(weights[1, 2:].detach().abs().max()) == 0.0
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(2))
    # coverage enters inside the tanh (Eq. 16): it changes the weights, not by a per-position constant
    plain, _ = attention(query, memory, mask)
    assert not torch.allclose(plain, weights)


@pytest.mark.parametrize("name", PAPER_ROWS + LUONG_ROWS + ["copynet_masked", "coverage_masked", "scratchpad_masked"])
def test_gradients_reach_every_parameter(name: str) -> None:
    model, batch = model_and_batch(name)
    loss, tokens = model(batch)
    (loss / tokens).backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or float(p.grad.abs().sum()) == 0]
    assert missing == []


# Every row but the checklist's, which reads a goal and slot-value items, not a token sequence
# (trained in tests/qgen/model/test_checklist.py on such inputs).
SEQUENCE_ROWS = [name for name, v in VARIANTS.items() if getattr(v.model, "encoder", "bigru") != "agenda"]


@pytest.mark.parametrize("name", SEQUENCE_ROWS)
def test_every_row_trains_a_step(name: str) -> None:
    model, batch = model_and_batch(name, dropout=0.1)
    batch = make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, model.cfg.copy)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss, tokens = model(batch, teacher_forcing=0.5, generator=torch.Generator().manual_seed(0))
        (loss / tokens).backward()
        optimizer.step()
        losses.append(float(loss.detach() / tokens))
    assert all(torch.isfinite(torch.tensor(losses)))
    params = dict(model.named_parameters())
    assert params and params.keys() == before.keys()
    assert [n for n, p in params.items() if not torch.isfinite(p).all()] == []
    assert [n for n, p in params.items() if torch.equal(p, before[n])] == []  # the step moved every parameter


@pytest.mark.parametrize("name", ["scratchpad", "coverage"])
def test_paper_rows_under_bf16_autocast(name: str) -> None:
    model, batch = model_and_batch(name)
    loss32, tokens = model(batch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss16, _ = model(batch)
    assert loss16.dtype == torch.float32
    torch.testing.assert_close(loss16, loss32, rtol=0.02, atol=0.0)
    (loss16 / tokens).backward()
    assert all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in model.parameters())


@pytest.mark.parametrize("name", ["seq2seq", "scratchpad", "coverage"])
def test_beam_search_reorders_the_paper_rows_state(name: str) -> None:
    model, batch = model_and_batch(name)
    model.eval()
    greedy_ids = [h.ids for h in greedy(model, batch, max_len=10)]
    assert [row[0].ids for row in beam_search(model, batch, beam=1, max_len=10)] == greedy_ids
    rows = beam_search(model, batch, beam=3, max_len=10, num_return=3)
    assert all(len(row) == 3 for row in rows)


def _fixture() -> dict:
    return WRITER.read(FIXTURE)


def test_old_config_dicts_load_as_the_first_models() -> None:
    old_keys = {f.name for f in fields(ModelConfig)} - set(NEW_FIELDS)
    for name in ("scratchpad_masked", "coverage_masked", "copynet_masked", "seq2seq_luong", "scratchpad_extended",
                 "copynet_extended", "scratchpad_focus"):
        cfg = VARIANTS[name].model
        old = {k: v for k, v in cfg.as_dict().items() if k in old_keys}
        assert ModelConfig.from_dict(old) == cfg
    assert {k for m in _fixture().values() for k in m["config"]} == old_keys


@pytest.mark.parametrize("name", ["seq2seq", "copynet", "coverage", "scratchpad", "scratchpad_extended",
                                  "scratchpad_focus"])
def test_first_models_compute_exactly_what_they_did(name: str) -> None:
    """Config dicts without the new fields (as in every checkpoint written before them): the same
    parameters (names, shapes, initial values from the same seed) and the same outputs.

    Names and shapes are compared exactly: they decide whether an old checkpoint loads strictly. Values
    are compared with a tight tolerance, not bit for bit: the fixture was written on one machine's CPU,
    and float results are not bit-identical across BLAS / oneDNN builds, CPU instruction sets or torch
    versions (another x86 machine with torch 2.11 differed in the last bits for every row). A changed
    equation moves the outputs by far more than rtol 1e-5 / atol 1e-6."""
    record = _fixture()[name]
    cfg = ModelConfig.from_dict(record["config"])
    torch.manual_seed(0)
    model = build_model(cfg)
    described, sums = WRITER.parameters(model)
    assert json.loads(described) == record["parameters"]  # the same names and shapes: old weights load strictly
    # the same initial values from the same seed (sums and sums of squares, float64)
    np.testing.assert_allclose(sums, record["parameter_sums"], rtol=1e-9, atol=1e-9)
    # The fixture's encoder packed its rows. The length-agnostic path (CPU training's default since) computes the
    # same numbers (test_captured_training.py) but draws the dropout between layers over other shapes,
    # so the training loss, whose dropout is seeded, is compared on the packed path.
    model.encoder.length_agnostic = False
    got = WRITER.outputs(model, make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, cfg.copy))
    # state keys added since: projections of the memory kept in the state (caches of what the step
    # computed before, checked against the memory by test_projected_memory_in_the_state_stays_exact)
    added = set(got) - set(record["outputs"])
    assert set(record["outputs"]) <= set(got) and all(k.startswith("state_keys_") for k in added), added
    for key in sorted(record["outputs"]):
        expected = torch.as_tensor(record["outputs"][key])
        assert got[key].shape == expected.shape and got[key].dtype == expected.dtype, key
        if got[key].dtype.is_floating_point:
            torch.testing.assert_close(got[key], expected, rtol=1e-5, atol=1e-6, msg=lambda m: f"{key}: {m}")
        else:  # token ids chosen by the greedy steps
            assert torch.equal(got[key], expected), key
