"""Seed 003 (Zhang et al.): the CAEncoder, the conditional-GRU decoder with its readout layer, the
attention regulariser, and a tiny Our+AttReg row trained through the one training loop."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from qgen.checkpoint import load_checkpoint
from qgen.data import Pair
from qgen.decode import beam_search, greedy
from qgen.model import VARIANTS, ModelConfig, Vocab, build_model, make_batch
from qgen.model.caencoder import CAEncoder
from qgen.model.config import PartsConfig
from qgen.model.generator import ReadoutGenerator
from qgen.model.losses import attention_regulariser
from qgen.model.vocab import BOS_ID, EOS, PAD_ID
from qgen.train import TrainConfig, train

torch.set_num_threads(1)
ROWS = ["zhang_baseline", "zhang_caencoder", "zhang_caencoder_attreg"]
SLOTS = [("name", "Aromi"), ("eatType", "pub"), ("food", "Thai"), ("area", "riverside"), ("near", "Café Rouge")]


def mr_pair(k: int) -> Pair:
    """An E2E-like pair: a two-slot MR (tokens as Moses writes them, EOS appended) and its sentence."""
    (a, x), (b, y) = SLOTS[k % 5], SLOTS[(k + 1 + k // 5) % 5]
    src = [a, "[", *x.split(), "]", ",", b, "[", *y.split(), "]", EOS]
    return Pair(str(k), src, f"it has {a} {x} and {b} {y} .".split(), str(k))


PAIRS = [mr_pair(k) for k in range(8)]


def tiny(name: str, **sizes) -> PartsConfig:
    src, tgt = Vocab.build(p.src for p in PAIRS), Vocab.build(p.tgt for p in PAIRS)
    return replace(VARIANTS[name].model, embedding_dim=12, hidden_size=16, **sizes).with_vocab(len(src), len(tgt))


def test_the_rows_are_the_papers() -> None:
    base, ours, reg = (VARIANTS[n].model for n in ROWS)
    assert (base.encoder, ours.encoder, reg.encoder) == ("bigru_concat", "caencoder", "caencoder")
    assert (base.terms, ours.terms, reg.terms) == ((), (), ("attreg",))
    assert all(VARIANTS[n].beam == 10 and not VARIANTS[n].entity_replacement for n in ROWS)
    assert (reg.embedding_dim, reg.hidden_size, reg.dropout, reg.init_uniform) == (620, 1000, 0.2, 0.08)
    assert ModelConfig.from_dict(reg.as_dict()) == reg  # a checkpoint's dict gives the row back
    params = sum(p.numel() for p in build_model(reg.with_vocab(1064, 1064)).parameters())
    assert 32e6 < params < 34e6  # the spec's ~33M


def test_caencoder_annotations_and_their_backward_dependence() -> None:
    torch.manual_seed(0)
    encoder = CAEncoder(tiny("zhang_caencoder"))
    src = torch.tensor([[4, 5, 6, 7], [4, 5, 6, 0]])  # the second row is padded after three tokens
    out, first = encoder(src, torch.tensor([4, 3]))
    assert out.shape == (2, 4, 16) and first.shape == (1, 2, 16)
    assert torch.equal(out[1, 3], torch.zeros(16))  # padding gets no annotation
    # The backward pass starts at each row's last real token: row 2's annotations are those of the
    # unpadded three-token source.
    alone, _ = encoder(src[1:, :3], torch.tensor([3]))
    torch.testing.assert_close(out[1, :3], alone[0])
    # h^a_1 depends on the last token through the backward cells, h^c_1 could not: change x_4 only.
    changed, _ = encoder(torch.tensor([[4, 5, 6, 8]]), torch.tensor([4]))
    assert not torch.allclose(changed[0, 0], out[0, 0])
    # The annotation is the higher cell's state alone: recompute h^a_n by hand.
    embedded = encoder.embedding(src[:1])
    context, _ = encoder.forward_gru(embedded)
    lower = encoder.lower(embedded[:, 3], torch.zeros(1, 16))
    torch.testing.assert_close(out[0, 3], encoder.higher(context[:, 3], lower)[0])


def test_attention_regulariser_by_hand_and_masked() -> None:
    alpha = torch.tensor([[[0.5, 0.3, 0.2, 0.0], [0.1, 0.6, 0.3, 0.0], [0.9, 0.05, 0.05, 0.0]]])  # (1, m=3, n=4)
    src_mask = torch.tensor([[True, True, True, False]])
    both = attention_regulariser({"read": alpha}, src_mask, torch.tensor([[True, True, True]]))
    expected = -(math.log(0.5 + 0.1 + 0.9) + math.log(0.3 + 0.6 + 0.05) + math.log(0.2 + 0.3 + 0.05))
    assert float(both) == pytest.approx(expected)
    # the third target step is padding: it adds nothing
    two = attention_regulariser({"read": alpha}, src_mask, torch.tensor([[True, True, False]]))
    assert float(two) == pytest.approx(-(math.log(0.6) + math.log(0.9) + math.log(0.5)))
    # uniform coverage m / n is the optimum for a given m, n
    uniform = torch.full((1, 3, 3), 1 / 3)
    assert float(attention_regulariser({"read": uniform}, src_mask[:, :3], torch.ones(1, 3, dtype=torch.bool))) \
        == pytest.approx(-3 * math.log(1.0))


def test_readout_generator_gives_a_distribution() -> None:
    torch.manual_seed(0)
    readout = ReadoutGenerator(16, 12, 20, 30, dropout=0.2).eval()
    log_probs = readout(torch.randn(5, 16), torch.randn(5, 12), torch.randn(5, 20))
    assert log_probs.shape == (5, 30)
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(5))
    assert bool((log_probs[:, :2] == float("-inf")).all())  # PAD and BOS are never generated


@pytest.mark.parametrize("name", ROWS)
def test_rows_step_and_decode(name: str) -> None:
    torch.manual_seed(0)
    cfg = tiny(name)
    model = build_model(cfg)
    src, tgt = Vocab.build(p.src for p in PAIRS), Vocab.build(p.tgt for p in PAIRS)
    batch = make_batch([p.src for p in PAIRS], [p.tgt for p in PAIRS], src, tgt, "none")
    loss, count = model(batch)
    (loss / count).backward()
    assert all(p.grad is not None for p in model.parameters())
    assert max(float(p.detach().abs().max()) for p in model.parameters()) <= 0.08  # U(-0.08, 0.08)
    model.eval()
    with torch.no_grad():
        nll, tokens = model(batch)  # evaluation: the NLL alone, whatever the row's loss terms
        state, prev, gold_nll = model.start(batch), torch.full((len(PAIRS),), BOS_ID), 0.0
        for t in range(batch.tgt.size(1)):  # teacher-forced steps: -log p(gold) over the real target tokens
            log_probs, state, _ = model.step(prev, state)
            gold = batch.tgt[:, t]
            gold_nll -= float(log_probs.gather(1, gold.unsqueeze(1)).squeeze(1).masked_select(gold != PAD_ID).sum())
            prev = gold
    assert int(tokens) == int((batch.tgt != PAD_ID).sum())
    assert float(nll) == pytest.approx(gold_nll, rel=1e-5)  # no regulariser term in evaluation
    greedy_ids = [h.ids for h in greedy(model, batch, max_len=8)]
    assert [r[0].ids for r in beam_search(model, batch, beam=1, max_len=8, alpha=0.0)] == greedy_ids
    assert all(len(r) == 3 for r in beam_search(model, batch, beam=3, max_len=8, alpha=0.0, num_return=3))


@torch.no_grad()
def test_the_regulariser_is_added_in_training_only() -> None:
    """Without dropout, training loss - validation loss = L_att of the teacher-forced attentions."""
    src, tgt = Vocab.build(p.src for p in PAIRS), Vocab.build(p.tgt for p in PAIRS)
    batch = make_batch([p.src for p in PAIRS], [p.tgt for p in PAIRS], src, tgt, "none")
    for name in ("zhang_caencoder", "zhang_caencoder_attreg"):
        torch.manual_seed(0)
        model = build_model(tiny(name, dropout=0.0))
        training, _ = model.train()(batch)
        nll, _ = model.eval()(batch)
        state, steps = model.start(batch), []
        prev = torch.full((len(PAIRS),), 1)
        for t in range(batch.tgt.size(1)):
            _, state, attns = model.step(prev, state)
            steps.append(attns["read"])
            prev = batch.tgt[:, t]
        term = attention_regulariser({"read": torch.stack(steps, 1)}, batch.src_mask, batch.tgt != 0)
        expected = float(nll + term) if name.endswith("attreg") else float(nll)
        assert float(training) == pytest.approx(expected, rel=1e-5)


def test_tiny_attreg_row_overfits_through_the_training_loop(tmp_path: Path) -> None:
    cfg = TrainConfig(epochs=100, batch_size=8, learning_rate=2e-2, teacher_forcing=1.0, seed=3)
    result = train(PAIRS, PAIRS[:2], replace(VARIANTS["zhang_caencoder_attreg"].model, embedding_dim=16,
                                            hidden_size=32, dropout=0.0), cfg, tmp_path, log=lambda _: None)
    assert result.best_valid_loss < 0.05, result.history[-1]
    model, src_vocab, tgt_vocab, _ = load_checkpoint(tmp_path / "best.pt")
    assert isinstance(model.cfg, PartsConfig) and model.cfg.terms == ("attreg",)
    batch = make_batch([p.src for p in PAIRS], None, src_vocab, tgt_vocab, "none")
    decoded = [tgt_vocab.decode(r[0].ids) for r in beam_search(model, batch, beam=3, max_len=20, alpha=0.0)]
    assert decoded == [p.tgt for p in PAIRS]


def test_learning_rate_halves_every_epoch_and_resumes_so(tmp_path: Path) -> None:
    """Seed 003's schedule (lr_decay 0.5): epoch e trains at lr / 2^(e-1), a resumed run as well."""
    model_cfg = tiny("zhang_caencoder")
    base = dict(batch_size=8, learning_rate=1e-2, teacher_forcing=1.0, lr_decay=0.5)
    train(PAIRS, PAIRS[:2], model_cfg, TrainConfig(epochs=2, **base), tmp_path, log=lambda _: None)
    first = torch.load(tmp_path / "last.pt", weights_only=True)["optimizer"]["param_groups"][0]["lr"]
    train(PAIRS, PAIRS[:2], model_cfg, TrainConfig(epochs=3, **base), tmp_path, log=lambda _: None)
    then = torch.load(tmp_path / "last.pt", weights_only=True)["optimizer"]["param_groups"][0]["lr"]
    assert (first, then) == (pytest.approx(5e-3), pytest.approx(2.5e-3))
    with pytest.raises(ValueError):
        TrainConfig(lr_decay=0.0)


def test_two_seed_ensemble_averages_probabilities_per_step() -> None:
    from qgen.model.ensemble import Ensemble

    src, tgt = Vocab.build(p.src for p in PAIRS), Vocab.build(p.tgt for p in PAIRS)
    batch = make_batch([p.src for p in PAIRS], None, src, tgt, "none")
    members = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        members.append(build_model(tiny("zhang_caencoder_attreg")).eval())
    ensemble = Ensemble(members).eval()
    prev = torch.full((len(PAIRS),), 1)
    with torch.no_grad():
        mixed, _, _ = ensemble.step(prev, ensemble.start(batch))
        one, _, _ = members[0].step(prev, members[0].start(batch))
        two, _, _ = members[1].step(prev, members[1].start(batch))
    torch.testing.assert_close(mixed.exp(), (one.exp() + two.exp()) / 2)
    alone = Ensemble(members[:1]).eval()  # one member: the model itself, through beam search too
    assert [r[0].ids for r in beam_search(alone, batch, beam=3, max_len=8, alpha=0.0)] == \
        [r[0].ids for r in beam_search(members[0], batch, beam=3, max_len=8, alpha=0.0)]
    assert all(len(r) == 2 for r in beam_search(ensemble, batch, beam=3, max_len=8, alpha=0.0, num_return=2))
