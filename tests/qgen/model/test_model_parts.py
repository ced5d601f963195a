"""Module tests on CPU over a small grid of sizes and every variant of the skeleton."""
from __future__ import annotations

import itertools

import pytest
import torch

from qgen.decode import beam_search, greedy
from qgen.model import ModelConfig, Vocab, build_model, make_batch
from qgen.model.memory import Scratchpad
from qgen.model.vocab import BOS_ID, PAD_ID

SRC = [["select", "?", "x", "where", "ent:", "bali", "ns", "capital"],
       ["select", "?", "x", "where", "ent:", "atlantis", "ns", "capital", "limit", "1"],
       ["ask", "ent:", "paris"]]
TGT = [["what", "is", "the", "capital", "of", "bali", "?"],
       ["what", "is", "the", "capital", "of", "atlantis", "?"],
       ["is", "it", "paris", "?"]]
SRC_VOCAB = Vocab.build(SRC)
TGT_VOCAB = Vocab.build([TGT[0], TGT[2]])  # "atlantis" is never in a training question
PARTS = [("none", 0, "none"), ("intersection", 0, "none"), ("intersection", 10, "none"),
         ("intersection", 10, "scratchpad"), ("extended", 10, "scratchpad"), ("none", 0, "scratchpad"),
         ("intersection", 10, "scratchpad_focus")]
SIZES = [(8, 16, 1), (12, 32, 2)]


def model_and_batch(copy: str, coverage: int, memory: str, emb: int = 8, hidden: int = 16, layers: int = 2):
    torch.manual_seed(0)
    cfg = ModelConfig(embedding_dim=emb, hidden_size=hidden, num_layers=layers, dropout=0.0, copy=copy,
                      coverage_dim=coverage, memory=memory).with_vocab(len(SRC_VOCAB), len(TGT_VOCAB))
    return build_model(cfg), make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, copy)


@pytest.mark.parametrize(("parts", "size"), list(itertools.product(PARTS, SIZES)))
@torch.no_grad()
def test_step_shapes_and_distribution(parts: tuple, size: tuple) -> None:
    model, batch = model_and_batch(*parts, *size)
    model.eval()
    state = model.start(batch)
    width = batch.extended_size if parts[0] == "extended" else len(TGT_VOCAB)
    prev = torch.full((len(batch),), BOS_ID)
    for _ in range(3):
        log_probs, state, attns = model.step(prev, state)
        assert log_probs.shape == (3, width)
        probs = log_probs.exp()
        # the copy mixture is a distribution over the (extended) vocabulary
        torch.testing.assert_close(probs.sum(dim=1), torch.ones(3), atol=1e-5, rtol=0)
        assert float(probs[:, PAD_ID].max()) < 1e-6 and float(probs[:, BOS_ID].max()) < 1e-6
        read = attns["read"]
        assert read.shape == batch.src_mask.shape
        assert float(read.masked_select(~batch.src_mask).abs().max()) == 0.0  # padding gets no attention
        torch.testing.assert_close(read.sum(dim=1), torch.ones(3))
        for key, value in state.items():
            assert value.size(0) == 3, key  # batch-first, so beams can reorder any state
        prev = log_probs.argmax(dim=1)


def test_paper_copy_mode_cannot_copy_what_the_output_vocabulary_lacks() -> None:
    model, batch = model_and_batch("intersection", 0, "none")
    _, _, attns = model.step(torch.full((3,), BOS_ID), model.start(batch))
    uncopyable = batch.copy_ids < 0  # "atlantis", "select", "?" ... are not question words
    assert float(attns["copy"].detach().masked_select(uncopyable).abs().max()) == 0.0


def test_extended_mode_can_copy_an_unseen_word() -> None:
    model, batch = model_and_batch("extended", 0, "none")
    assert batch.oovs[1] and "atlantis" in batch.oovs[1]
    with torch.no_grad():
        log_probs, _, attns = model.step(torch.full((3,), BOS_ID), model.start(batch))
    slot = len(TGT_VOCAB) + batch.oovs[1].index("atlantis")
    holds = batch.copy_ids[1] == slot  # the source positions of "atlantis"
    assert int(holds.sum()) == 1 and SRC[1][int(holds.nonzero())] == "atlantis"
    # its extended slot gets exactly the copy mass (1 - p_gen) * beta on the positions holding it
    copied = (1 - attns["p_gen"][1]) * attns["copy"][1].masked_select(holds).sum()
    assert float(copied) > 1e-3
    torch.testing.assert_close(log_probs[1, slot].exp(), copied, atol=1e-6, rtol=1e-5)
    # a row without "atlantis" (its OOV list is shorter) gives that slot, and every slot past its own OOVs, ~0
    assert "atlantis" not in batch.oovs[2] and len(TGT_VOCAB) + len(batch.oovs[2]) <= slot
    assert float(log_probs[2, len(TGT_VOCAB) + len(batch.oovs[2]):].exp().sum()) < 1e-6


def test_scratchpad_rewrites_the_encoder_states_but_not_padding() -> None:
    model, batch = model_and_batch("intersection", 10, "scratchpad")
    state = model.start(batch)
    before = state["memory"].clone()
    _, after, attns = model.step(torch.full((3,), BOS_ID), state)
    changed = (after["memory"] - before).abs().sum(dim=-1) > 0  # (batch, src_len)
    assert bool(changed[batch.src_mask].all())
    assert not bool(changed[~batch.src_mask].any())
    assert attns["write_gate"].shape == batch.src_mask.shape


def test_focus_gate_starts_as_eq13_and_can_single_out_the_copied_position() -> None:
    torch.manual_seed(0)
    paper, focused = Scratchpad(6), Scratchpad(6, focus_gate=True)
    focused.load_state_dict(paper.state_dict(), strict=False)  # same W_a, W_u; W_beta, b_beta stay 0
    memory, state, context = torch.randn(2, 4, 6), torch.randn(2, 6), torch.randn(2, 6)
    mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    focus = torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0]])
    written, gate = paper(memory, state, context, mask)
    torch.testing.assert_close(focused(memory, state, context, mask, focus), (written, gate))
    with torch.no_grad():
        focused.gate_focus.bias.fill_(-50.0)  # a strongly learned b_beta: overwrite where the copy looked
        _, focus_gate = focused(memory, state, context, mask, focus)
    assert float(focus_gate[0, 1]) < 1e-6  # the copied position is rewritten wholly with u_t ...
    torch.testing.assert_close(focus_gate[0, [0, 2, 3]], gate[0, [0, 2, 3]])  # ... the others as Eq. 13
    with pytest.raises(ValueError, match="focus"):
        focused(memory, state, context, mask)


@pytest.mark.parametrize("parts", PARTS)
def test_gradients_reach_every_parameter(parts: tuple) -> None:
    model, batch = model_and_batch(*parts)
    loss, tokens = model(batch)
    (loss / tokens).backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or float(p.grad.abs().sum()) == 0]
    assert missing == []


@pytest.mark.parametrize("parts", PARTS)
def test_bf16_autocast_matches_float32(parts: tuple) -> None:
    """Training on a GPU runs under bf16 autocast; CPU autocast stands in for it here: every variant
    must run (no dtype clash in the copy scatter or the scratchpad write) and give about the same loss."""
    model, batch = model_and_batch(*parts)
    loss32, tokens = model(batch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss16, _ = model(batch)
    assert loss16.dtype == torch.float32  # the loss is summed in float32
    torch.testing.assert_close(loss16, loss32, rtol=0.01, atol=0.0)
    (loss16 / tokens).backward()
    assert all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in model.parameters())


@pytest.mark.parametrize("parts", PARTS[:2] + PARTS[-2:])
def test_beam_of_one_equals_greedy(parts: tuple) -> None:
    model, batch = model_and_batch(*parts)
    model.eval()
    greedy_ids = [h.ids for h in greedy(model, batch, max_len=12)]
    beam_ids = [row[0].ids for row in beam_search(model, batch, beam=1, max_len=12)]
    assert beam_ids == greedy_ids


def _has_immediate_repeat(ids: list[int]) -> bool:
    return any(a == b for a, b in zip(ids, ids[1:]))


@pytest.mark.parametrize("parts", [PARTS[0], PARTS[3], PARTS[4]])
def test_no_repeat_forbids_a_token_right_after_itself(parts: tuple) -> None:
    model, batch = model_and_batch(*parts)
    model.eval()
    plain = [h.ids for h in greedy(model, batch, max_len=12)]
    assert any(_has_immediate_repeat(ids) for ids in plain)  # the untrained model repeats: the test bites
    blocked = [h.ids for h in greedy(model, batch, max_len=12, no_repeat=True)]
    assert not any(_has_immediate_repeat(ids) for ids in blocked)
    beams = beam_search(model, batch, beam=3, max_len=12, num_return=3, no_repeat=True)
    assert not any(_has_immediate_repeat(h.ids) for row in beams for h in row)
    assert [row[0].ids for row in beam_search(model, batch, beam=1, max_len=12, no_repeat=True)] == blocked


def test_beam_returns_sorted_hypotheses() -> None:
    model, batch = model_and_batch("intersection", 10, "scratchpad")
    model.eval()
    rows = beam_search(model, batch, beam=3, max_len=10, num_return=3)
    for row in rows:
        assert len(row) == 3
        assert [h.score for h in row] == sorted((h.score for h in row), reverse=True)


def test_config_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        ModelConfig(copy="sometimes")
    with pytest.raises(ValueError):
        ModelConfig(coverage_dim=10)  # coverage feeds the copy score
    with pytest.raises(ValueError):
        build_model(ModelConfig())  # no vocabulary sizes


def _fed_inputs(per_sequence: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(inputs fed at steps 1.., gold words of steps 0.., argmax of steps 0..) of a 0.5-forced pass."""
    model, _ = model_and_batch("intersection", 10, "scratchpad")
    batch = make_batch(SRC * 8, TGT * 8, SRC_VOCAB, TGT_VOCAB, "intersection")
    fed: list[torch.Tensor] = []
    argmax: list[torch.Tensor] = []
    step = model.decoder.step

    def recording_step(prev, state, **options):
        fed.append(prev)
        return step(prev, state, **options)

    model.decoder.step = recording_step
    with torch.no_grad():
        model(batch, teacher_forcing=0.5, generator=torch.Generator().manual_seed(0), per_sequence=per_sequence,
              predictions=argmax)
    return torch.stack(fed[1:], 1), batch.tgt[:, :-1], torch.stack(argmax[:-1], 1)


@pytest.mark.parametrize("per_sequence", [False, True])
def test_teacher_forcing_coin_per_step_or_per_question(per_sequence: bool) -> None:
    fed, gold, own = _fed_inputs(per_sequence)
    decided = gold != own  # steps where gold and the model's own word differ, so the input tells the coin
    from_gold = (fed == gold) & decided
    from_model = (fed == own) & decided
    assert bool(((fed == gold) | (fed == own)).all())
    mixed_rows = int((from_gold.any(1) & from_model.any(1)).sum())
    if per_sequence:  # one coin per question: every row is all gold or all its own words
        assert mixed_rows == 0 and bool(from_gold.any()) and bool(from_model.any())
    else:
        assert mixed_rows > 0


def test_coverage_update_is_the_gru_cell_on_the_whole_input() -> None:
    """The split input projection computes torch.nn.GRUCell's equations on [beta; s; h_i]."""
    from qgen.model.coverage import CoverageUpdater

    torch.manual_seed(0)
    updater = CoverageUpdater(hidden_size=6, coverage_dim=4)
    coverage, weights = torch.randn(2, 5, 4), torch.softmax(torch.randn(2, 5), dim=-1)
    state, memory = torch.randn(2, 6), torch.randn(2, 5, 6)
    inputs = torch.cat([weights.unsqueeze(-1), state.unsqueeze(1).expand(-1, 5, -1), memory], dim=-1)
    expected = updater.cell(inputs.reshape(10, -1), coverage.reshape(10, 4)).view(2, 5, 4)
    torch.testing.assert_close(updater(coverage, weights, state, updater.project(memory)), expected, rtol=1e-5, atol=1e-6)


def test_scratchpad_write_is_eq12_and_leaves_padding_exactly() -> None:
    from qgen.model.memory import write

    torch.manual_seed(0)
    values, alpha, update = torch.randn(2, 4, 3), torch.rand(2, 4, 1), torch.randn(2, 1, 3)
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    written = write(values, alpha, update, mask)
    expected = alpha * values + (1 - alpha) * update
    torch.testing.assert_close(written[mask], expected[mask])
    assert torch.equal(written[~mask], values[~mask])
