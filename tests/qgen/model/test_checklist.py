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
from qgen.model.vocab import PAD_ID
from qgen.train import TrainConfig, train

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
    with pytest.raises(ValueError, match="no copy generator"):
        PartsConfig(encoder="agenda", decoder="checklist", copy="extended")


def test_a_tiny_checklist_learns_with_sgd_and_its_beams_rank_by_items_used(tmp_path: Path) -> None:
    cfg = TrainConfig(epochs=60, batch_size=4, learning_rate=1.0, optimizer="sgd", teacher_forcing=1.0, seed=3)
    result = train(PAIRS, PAIRS, tiny(init_uniform=0.0), cfg, tmp_path, log=lambda _: None)
    assert result.history[-1].train_loss < 0.5 * result.history[0].train_loss
    model, src_vocab, tgt_vocab, _ = load_checkpoint(tmp_path / "best.pt")
    b = make_batch([p.src for p in PAIRS], None, src_vocab, tgt_vocab, "none")
    hyps = beam_search(model, b, beam=3, max_len=8, alpha=0.0, num_return=3)
    assert all(len(h) == 3 for h in hyps)
    ranked = make_batch([PAIRS[0].src] * 3, [tgt_vocab.decode(h.ids) for h in hyps[0]], src_vocab, tgt_vocab, "none")
    used = items_used(model, ranked)
    assert used.shape == (3,) and torch.all((used >= 0) & (used <= 2))
    assert (ranked.tgt != PAD_ID).any()
