"""The scratchpad's factored memory (decoding on a CPU) against the explicit one: the same numbers up to
float rounding, for the memory itself, the attentions and every decoding algorithm."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from qgen.decode import _expand, beam_search, greedy, sample, unexpanded_keys
from qgen.model import VARIANTS, Vocab, build_model, make_batch
from qgen.model.factored_memory import FactoredMemory
from qgen.model.memory import write

SRC = [["select", "?", "x", "where", "ent:", "bali", "ns", "capital", "limit", "1", "offset", "2"],
       ["ask", "ent:", "paris"], ["count", "?", "y", "where", "ent:", "atlantis"]]
VOCAB = Vocab.build(SRC)


def test_writes_scores_and_contexts_equal_the_explicit_memory() -> None:
    """Writes with beams reordered between them (within their example, as a beam search does)."""
    gen = torch.Generator().manual_seed(0)
    examples, beam, src_len, h = 3, 2, 7, 5
    base = torch.randn(examples, src_len, h, generator=gen)
    mask = torch.ones(examples * beam, src_len, dtype=torch.bool)
    mask[2:4, 5:] = False  # the second example is shorter: its padding is never written
    explicit = base.repeat_interleave(beam, dim=0)
    factored = FactoredMemory.start(base)
    factored = replace(factored, scale=factored.scale.repeat_interleave(beam, dim=0),
                       mix=factored.mix.repeat_interleave(beam, dim=0),
                       slots=factored.slots.repeat_interleave(beam, dim=0))
    assert factored.beam == beam
    for _ in range(6):
        alpha = torch.rand(examples * beam, src_len, 1, generator=gen)
        update = torch.randn(examples * beam, 1, h, generator=gen)
        explicit = write(explicit, alpha, update, mask)
        factored = factored.write(alpha, update, mask)
        order = (torch.arange(examples).repeat_interleave(beam) * beam
                 + torch.randint(0, beam, (examples * beam,), generator=gen))
        explicit = explicit.index_select(0, order)
        factored = replace(factored, **{k: getattr(factored, k).index_select(0, order) for k in ("scale", "mix", "slots")})
        assert torch.allclose(factored.materialise(), explicit, atol=1e-5)
        query = torch.randn(examples * beam, h, generator=gen)
        assert torch.allclose(factored.scores(query), torch.bmm(explicit, query.unsqueeze(2)).squeeze(2), atol=1e-5)
        weights = torch.softmax(torch.randn(examples * beam, src_len, generator=gen), dim=-1)
        assert torch.allclose(factored.context(weights), torch.bmm(weights.unsqueeze(1), explicit).squeeze(1), atol=1e-5)
    assert torch.equal(explicit[2:4, 5:], base[1, 5:].expand(2, -1, -1))  # padding kept exactly
    assert factored.writes == 6


def test_a_memory_written_twice_gives_two_memories() -> None:
    """Writes append to the updates in place; a second write from the same memory (two branches of one
    state) must leave the first branch's memory as it was."""
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(2, 6, 4, generator=gen)
    mask = torch.ones(4, 6, dtype=torch.bool)
    memory = FactoredMemory.start(base)
    memory = replace(memory, scale=memory.scale.repeat_interleave(2, dim=0), mix=memory.mix.repeat_interleave(2, dim=0),
                     slots=memory.slots.repeat_interleave(2, dim=0))
    for _ in range(3):
        memory = memory.write(torch.rand(4, 6, 1, generator=gen), torch.randn(4, 1, 4, generator=gen), mask)
    alpha = torch.rand(4, 6, 1, generator=gen)
    before = memory.materialise().clone()
    first = memory.write(alpha, torch.randn(4, 1, 4, generator=gen), mask)
    expected = first.materialise().clone()
    second = memory.write(alpha, torch.randn(4, 1, 4, generator=gen), mask)
    assert torch.equal(first.materialise(), expected)
    assert not torch.allclose(second.materialise(), expected)
    assert torch.equal(memory.materialise(), before)  # the memory written from is unchanged


def test_it_is_kept_while_cheaper_and_written_out_after() -> None:
    memory = FactoredMemory.start(torch.zeros(2, 40, 8))
    memory = replace(memory, scale=memory.scale.repeat_interleave(4, dim=0),
                     mix=memory.mix.repeat_interleave(4, dim=0), slots=memory.slots.repeat_interleave(4, dim=0))
    kept = []
    for _ in range(80):
        kept.append(memory.worth_keeping(reads=4))
        memory = memory.write(torch.full((8, 40, 1), 0.5), torch.ones(8, 1, 8), torch.ones(8, 40, dtype=torch.bool))
    # Explicit: 8 passes of 40 states a step; factored: 4 reads of 10 + t, and the update appended.
    assert kept == [True] * 69 + [False] * 11


def _model(name: str, **sizes):
    torch.manual_seed(0)
    cfg = replace(VARIANTS[name].model, embedding_dim=8, hidden_size=16, dropout=0.0, mlp_hidden=12, **sizes)
    return build_model(cfg.with_vocab(len(VOCAB), len(VOCAB))).eval(), make_batch(SRC, None, VOCAB, VOCAB, cfg.copy)


def _decode(model, batch, monkeypatch, setting: str):
    monkeypatch.setenv("QGEN_FACTORED_MEMORY", setting)
    return (beam_search(model, batch, 4, 14, 1.0, 3), [greedy(model, batch, 14)],
            sample(model, batch, 3, 14, generator=torch.Generator().manual_seed(1)))


@pytest.mark.parametrize("name", ["scratchpad_extended", "scratchpad_masked", "scratchpad", "scratchpad_luong",
                                  "scratchpad_focus"])
def test_decoding_gives_the_explicit_memorys_results(name: str, monkeypatch) -> None:
    """Every scratchpad row (Luong's and the MLP score, linear and MLP gates, coverage, the focus gate).
    The batch's 12 positions are written out after a few steps (beam 4: 10, greedy: 4), so both forms
    and the switch between them are in the comparison."""
    model, batch = _model(name)
    for factored, explicit in zip(_decode(model, batch, monkeypatch, "auto"), _decode(model, batch, monkeypatch, "off")):
        for got_row, want_row in zip(factored, explicit):
            assert [h.ids for h in got_row] == [h.ids for h in want_row]
            assert [h.log_prob for h in got_row] == pytest.approx([h.log_prob for h in want_row], abs=1e-4)


def test_the_state_shares_the_encoder_states_across_beams_and_switches_to_explicit(monkeypatch) -> None:
    monkeypatch.setenv("QGEN_FACTORED_MEMORY", "auto")
    model, batch = _model("scratchpad_extended")
    with torch.inference_mode():
        state = _expand(model.start(batch), len(batch), 4, batch.src.device, unexpanded_keys(model))
        assert "memory" not in state and state["memory_base"].size(0) == len(batch)
        assert state["memory_scale"].size(0) == 4 * len(batch)
        prev = torch.full((4 * len(batch),), 1)
        for _ in range(20):
            _, state, _ = model.step(prev, state)
        assert "memory" in state and "memory_base" not in state  # 12 positions: written out within 20 steps


def test_training_and_the_off_switch_keep_the_explicit_memory(monkeypatch) -> None:
    model, batch = _model("scratchpad_extended")
    assert "memory" in model.start(batch)  # not in inference mode: training and the validation loss
    monkeypatch.setenv("QGEN_FACTORED_MEMORY", "off")
    with torch.inference_mode():
        assert "memory" in model.start(batch)


def test_written_out_under_autocast_it_keeps_the_encoders_dtype() -> None:
    memory = FactoredMemory.start(torch.randn(2, 6, 4))
    memory = memory.write(torch.rand(2, 6, 1), torch.randn(2, 1, 4), torch.ones(2, 6, dtype=torch.bool))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert memory.materialise().dtype == torch.float32


def test_a_written_memory_expanded_to_more_hypotheses_is_refused() -> None:
    """Its updates are laid out by the hypotheses an example had when written: reading them with more
    would mix them up, so it is refused in one line (expand before the first step, as decoding does)."""
    from qgen.model.factored_memory import KEYS, PER_EXAMPLE_KEYS

    memory = FactoredMemory.start(torch.randn(2, 6, 4))
    memory = memory.write(torch.rand(2, 6, 1), torch.randn(2, 1, 4), torch.ones(2, 6, dtype=torch.bool))
    state = _expand(memory.to_state(), 2, 3, torch.device("cpu"), PER_EXAMPLE_KEYS)
    expanded = FactoredMemory.from_state({k: state[k] for k in KEYS})
    with pytest.raises(ValueError, match="written with 1 hypotheses an example cannot be read with 3"):
        expanded.scores(torch.randn(6, 4))
    with pytest.raises(ValueError, match="expand the decoder state before its first step"):
        expanded.write(torch.rand(6, 6, 1), torch.randn(6, 1, 4), torch.ones(6, 6, dtype=torch.bool))
