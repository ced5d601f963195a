"""Seed 004 (Kiddon et al.): the agenda encoder, the checklist decoder's state and loss term, the
item-use reranking, and a tiny checklist trained through the one training loop with SGD."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from qgen.checkpoint import load_checkpoint
from qgen.data import Pair
from qgen.decode import beam_search
from qgen.model import VARIANTS, Vocab, build_model, make_batch
from qgen.model.checklist import checklist_loss, items_used
from qgen.model.config import PartsConfig
from qgen.datasets.wen_agenda import AgendaExample
from qgen.train import TrainConfig, train
from qgen.wen_benchmark import decode

torch.set_num_threads(1)
# goal, then slot-value items (qgen.datasets.wen_agenda's layout); two agendas of different sizes
PAIRS = [Pair("0", ["inform", "name", "SLOT_NAME", "area", "SLOT_AREA"], "SLOT_NAME is in SLOT_AREA".split(), "0"),
         Pair("1", ["?request", "area", "?"], "which area do you like".split(), "1"),
         Pair("2", ["goodbye", "null", "null"], "thank you goodbye".split(), "2"),
         Pair("3", ["inform", "name", "SLOT_NAME", "pricerange", "SLOT_PRICERANGE"],
              "SLOT_NAME is SLOT_PRICERANGE".split(), "3")]
SRC, TGT = Vocab.build(p.src for p in PAIRS), Vocab.build(p.tgt for p in PAIRS)


def tiny(**changes) -> PartsConfig:
    return replace(VARIANTS["kiddon_checklist"].model, embedding_dim=12, hidden_size=16, **changes).with_vocab(
        len(SRC), len(TGT))


def batch(pairs=PAIRS):
    return make_batch([p.src for p in pairs], [p.tgt for p in pairs], SRC, TGT, "none")


def test_items_are_slot_value_pairs_after_the_goal_and_padded_items_are_masked() -> None:
    torch.manual_seed(0)
    model = build_model(tiny())
    b = batch()
    items, goal, mask = model.encoder(b.src, b.src_lengths)
    assert items.shape == (4, 2, 12) and goal.shape == (4, 12)
    assert mask.tolist() == [[True, True], [True, False], [True, False], [True, True]]
    emb = model.encoder.item_embedding
    assert torch.allclose(items[0, 1], emb(b.src[0, 3]) + emb(b.src[0, 4]))  # area + SLOT_AREA
    assert torch.equal(items[1, 1], torch.zeros(12))  # PAD embeds as zeros


def test_the_checklist_only_grows_stays_in_0_1_and_never_marks_a_padded_item() -> None:
    torch.manual_seed(0)
    model = build_model(tiny()).eval()
    b = batch()
    state = model.start(b)
    prev = torch.full((4,), 1, dtype=torch.long)
    before = state["checklist"]
    assert torch.equal(before, torch.zeros(4, 2))
    for t in range(b.tgt.size(1)):
        log_probs, state, attns = model.step(prev, state)
        assert torch.allclose(log_probs.exp().sum(1), torch.ones(4), atol=1e-5)
        after = attns["checklist"]
        assert torch.all(after >= before - 1e-7) and torch.all(after <= 1.0)
        assert torch.all(after[1:3, 1] == 0.0) and torch.all(attns["read"][1:3, 1] == 0.0)
        before, prev = after, b.tgt[:, t]


def test_one_step_follows_the_equations() -> None:
    """K1-K14 written out by hand from the module's weights, for one step from a half-used checklist."""
    torch.manual_seed(1)
    model = build_model(tiny(checklist_beta=1.0, checklist_gamma=10.0)).eval()
    b = batch()
    dec = model.decoder
    state = model.start(b)
    items, mask = state["items"], state["src_mask"]
    checklist = torch.tensor([[0.7, 0.0], [0.2, 0.0], [0.0, 0.0], [1.0, 0.4]]) * mask
    state = {**state, "checklist": checklist}
    prev = b.tgt[:, 0]
    log_probs, after, attns = dec.step(prev, state)

    x, h0, g = dec.embedding(prev), state["hidden"], model.encoder.goal_embedding(b.src[:, 0])
    e_new = (1 - checklist).unsqueeze(-1) * items  # K4
    e_used = checklist.unsqueeze(-1) * items  # K8
    wz, wr, wh, ws, wq = dec.input_gates(x).chunk(5, -1)
    uz, ur, uh, us, uq = dec.state_gates(h0).chunk(5, -1)
    z, r, s, q = (torch.sigmoid(a + c) for a, c in ((wz, uz), (wr, ur), (ws, us), (wq, uq)))  # K10, K12
    h = (1 - z) * h0 + z * torch.tanh(wh + r * uh + s * dec.goal_in(g) + q * dec.items_in(e_new.sum(1)))  # K11
    f = torch.softmax(1.0 * dec.ref_type(h), -1)  # K3
    ph = dec.project(h)  # P h_t
    def attend(e):  # K5 / K9 over the real items
        scores = (10.0 * (e @ ph.unsqueeze(-1)).squeeze(-1)).masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, -1)
    a_new, a_used = attend(e_new), attend(e_used)
    o = f[:, :1] * ph + f[:, 1:2] * (a_new.unsqueeze(1) @ items).squeeze(1) + f[:, 2:] * (a_used.unsqueeze(1) @ items).squeeze(1)
    assert torch.allclose(after["hidden"], h, atol=1e-6)
    assert torch.allclose(log_probs, torch.log_softmax(dec.out(o), -1), atol=1e-5)  # K1, K2, K6, K14
    assert torch.allclose(attns["checklist"], torch.clamp(checklist + f[:, 1:2] * a_new, max=1.0), atol=1e-6)  # K7
    assert torch.allclose(attns["f_new"], f[:, 1], atol=1e-6)


def test_the_loss_term_is_the_squared_distance_of_the_final_checklist_to_one() -> None:
    checklist = torch.tensor([[[0.2, 0.0], [0.5, 0.4], [0.9, 1.0]],
                              [[0.3, 0.0], [0.6, 0.0], [0.6, 0.0]]])  # (batch 2, steps 3, items 2)
    tgt_mask = torch.tensor([[True, True, True], [True, True, False]])  # the second ends at step 2
    src_mask = torch.tensor([[True, True], [True, False]])
    expected = (1 - 0.9) ** 2 + (1 - 1.0) ** 2 + (1 - 0.6) ** 2
    assert checklist_loss({"checklist": checklist}, src_mask, tgt_mask).item() == pytest.approx(expected)


def test_training_adds_the_checklist_term_and_validation_does_not() -> None:
    torch.manual_seed(0)
    model = build_model(tiny())
    b = batch()
    model.train()
    with_term, _ = model(b)
    model.eval()
    nll, count = model(b)
    assert count == b.target_tokens and with_term.item() > nll.item()
    plain = build_model(tiny(loss_terms=""))
    plain.load_state_dict(model.state_dict())
    plain.train()
    assert plain(b)[0].item() == pytest.approx(nll.item(), rel=1e-5)


def test_parts_go_together() -> None:
    with pytest.raises(ValueError, match="go together"):
        PartsConfig(encoder="agenda")
    with pytest.raises(ValueError, match="reads the checklist decoder's state"):
        PartsConfig(loss_terms="checklist")
    with pytest.raises(ValueError, match="source lengths must be odd"):
        model = build_model(tiny())
        b = make_batch([["inform", "name"]], None, SRC, TGT, "none")  # a slot without its value
        model.encoder(b.src, b.src_lengths)
    with pytest.raises(ValueError, match="no copy generator"):
        PartsConfig(encoder="agenda", decoder="checklist", copy="extended")


def test_a_tiny_checklist_learns_with_sgd_and_its_beams_rank_by_items_used(tmp_path: Path) -> None:
    cfg = TrainConfig(epochs=60, batch_size=4, learning_rate=1.0, optimizer="sgd", teacher_forcing=1.0, seed=3)
    result = train(PAIRS, PAIRS, tiny(init_uniform=0.0), cfg, tmp_path, log=lambda _: None)
    assert result.history[-1].train_loss < 0.5 * result.history[0].train_loss
    model, src_vocab, tgt_vocab, _ = load_checkpoint(tmp_path / "best.pt")
    assert [tgt_vocab.decode(h.ids) for (h,) in beam_search(model, make_batch([p.src for p in PAIRS], None, src_vocab,
                                                                              tgt_vocab, "none"), beam=3, max_len=8)] \
        == [p.tgt for p in PAIRS]  # it learnt the four sentences
    # the reranking picks, among the beams, the first (most probable) of those using the most items
    examples = [AgendaExample(p, None) for p in PAIRS]
    chosen = decode(model, src_vocab, tgt_vocab, examples, beam=3, rerank=True)
    for pair, picked in zip(PAIRS, chosen):
        b = make_batch([pair.src], None, src_vocab, tgt_vocab, "none")
        texts = [tgt_vocab.decode(h.ids) for h in beam_search(model, b, beam=3, max_len=60, alpha=0.0, num_return=3)[0]]
        used = items_used(model, make_batch([pair.src] * len(texts), texts, src_vocab, tgt_vocab, "none")).tolist()
        assert all(0 <= u <= (len(pair.src) - 1) // 2 for u in used)  # capped at the agenda's size
        assert picked == texts[used.index(max(used))]
