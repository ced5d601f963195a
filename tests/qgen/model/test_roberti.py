"""Seed 002's character decoder (qgen/model/roberti.py): the shifted copy, p_gen kept in the state,
a distribution that sums to one, and the two registry rows on the skeleton."""
from __future__ import annotations

import pytest
import torch

from qgen.decode import greedy
from qgen.datasets.char_d2t import source_chars
from qgen.model import VARIANTS, build_model, make_batch
from qgen.model.roberti import shifted_copy_ids
from qgen.train import build_vocabularies


def small(row: str):
    from dataclasses import replace

    cfg = replace(VARIANTS[row].model, hidden_size=32, num_layers=2, mlp_hidden=16)
    src_vocab, tgt_vocab = build_vocabularies([], cfg.alphabet)
    torch.manual_seed(0)
    return build_model(cfg.with_vocab(len(src_vocab), len(tgt_vocab))), src_vocab, tgt_vocab


def test_shifted_ids_copy_the_next_character_and_the_last_position_copies_nothing() -> None:
    ids = torch.tensor([[1, 10, 11, 2], [1, 12, 2, -1]])  # <s> a b </s> ; <s> c </s> <pad>
    assert shifted_copy_ids(ids).tolist() == [[10, 11, 2, -1], [12, 2, -1, -1]]


def test_both_vocabularies_are_the_alphabet_whatever_the_data() -> None:
    src_vocab, tgt_vocab = build_vocabularies([], VARIANTS["roberti_eda_c"].model.alphabet)
    assert src_vocab.itos == tgt_vocab.itos and len(src_vocab) == 4 + 100  # specials + string.printable


@pytest.mark.parametrize("row", ["roberti_eda", "roberti_eda_c"])
def test_a_step_is_a_distribution_over_the_alphabet(row: str) -> None:
    model, src_vocab, tgt_vocab = small(row)
    model.eval()
    batch = make_batch([source_chars("name[Aromi]"), source_chars("near[X]")], None, src_vocab, tgt_vocab,
                       model.cfg.copy)
    state = model.start(batch)
    log_probs, state, attns = model.step(torch.tensor([1, 1]), state)
    assert log_probs.shape == (2, len(tgt_vocab))
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(2), atol=1e-5)
    assert ("p_gen" in attns) == (row == "roberti_eda_c")
    if row == "roberti_eda_c":
        assert state["p_gen"].shape == (2, 1) and not torch.equal(state["p_gen"], torch.full((2, 1), 0.5))


def test_the_copy_puts_each_positions_attention_on_the_next_character() -> None:
    model, src_vocab, tgt_vocab = small("roberti_eda_c")
    model.eval()
    batch = make_batch([source_chars("ab")], None, src_vocab, tgt_vocab, "intersection")
    state = model.start(batch)
    with torch.no_grad():  # a switch that only copies, and an attention all on "<s>": the copy writes "a"
        model.decoder.p_gen.bias.fill_(-50.0)
        model.decoder.attention.score.weight.fill_(1.0)
    state["keys"] = torch.full_like(state["keys"], -100.0)
    state["keys"][0, 0] = 100.0
    log_probs, _, attns = model.step(torch.tensor([1]), state)
    assert attns["read"][0].argmax().item() == 0
    assert log_probs[0].argmax().item() == tgt_vocab.stoi["a"]


def test_training_lowers_the_loss_and_greedy_decodes_characters() -> None:
    model, src_vocab, tgt_vocab = small("roberti_eda_c")
    sources = [source_chars(f"name[{n}]") for n in ("Aromi", "Zizzi", "Loch")]
    targets = [list(f"{n} is here.") for n in ("Aromi", "Zizzi", "Loch")]
    batch = make_batch(sources, targets, src_vocab, tgt_vocab, "intersection")
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss, tokens = model(batch)
        optimiser.zero_grad()
        (loss / tokens).backward()
        optimiser.step()
        losses.append(loss.item() / tokens)
    assert losses[-1] < 0.5 * losses[0]
    model.eval()
    hyps = greedy(model, make_batch(sources, None, src_vocab, tgt_vocab, "intersection"), max_len=20)
    texts = ["".join(tgt_vocab.decode(h.ids)) for h in hyps]
    assert len(texts) == len(sources)
    # After 30 steps each greedy question is non-empty, stops with EOS before max_len, ends as the targets
    # do with ".", and writes only characters the targets taught (the untrained model repeats one letter
    # up to max_len, or stops at once).
    seen = set("".join("".join(t) for t in targets))
    for hyp, text in zip(hyps, texts):
        assert 0 < len(hyp.ids) < 20 and min(hyp.ids) >= 4, text  # no special id inside the question
        assert text.endswith("."), text
        assert set(text) <= seen, text


def test_the_roberti_decoder_refuses_another_encoder_or_copy() -> None:
    from dataclasses import replace

    with pytest.raises(ValueError, match="roberti decoder"):
        replace(VARIANTS["roberti_eda"].model, copy="extended")


def test_the_switch_swaps_which_gru_encodes_and_the_decoder_owns_no_gru() -> None:
    model, src_vocab, tgt_vocab = small("roberti_eda_cs")
    names = [n for n, _ in model.named_parameters()]
    assert not any(n.startswith("decoder.gru") or n.startswith("decoder.embedding") for n in names)
    assert sum(n.startswith("encoder.grus.") for n in names) > 0
    batch = make_batch([source_chars("name[Aromi]")], None, src_vocab, tgt_vocab, "intersection")
    encoder = model.encoder
    assert encoder.roles() == (encoder.grus[0], encoder.grus[1])
    forward, _ = encoder(batch.src, batch.src_lengths)
    encoder.reverse = True
    assert encoder.roles() == (encoder.grus[1], encoder.grus[0])
    backward, final = encoder(batch.src, batch.src_lengths)
    encoder.reverse = False
    assert forward.shape == backward.shape == (1, len("name[Aromi]") + 2, 32) and not torch.allclose(forward, backward)
    assert final.shape == (2 * 2, 1, 16)  # (directions x layers, batch, H): the decoder GRU's initial state


def test_a_switching_step_trains_both_directions_and_reports_the_forward_loss() -> None:
    from qgen.data import Pair
    from qgen.train import TrainConfig, _batch, make_optimizer, switching_step

    model, src_vocab, tgt_vocab = small("roberti_eda_cs")
    cfg = TrainConfig(batch_size=2, learning_rate=1e-2, teacher_forcing=1.0, max_src_len=400, max_tgt_len=400)
    pairs = [Pair(str(i), source_chars(f"name[{n}]"), list(f"{n} is here."), str(i)) for i, n in enumerate(["Aromi", "Loch"])]
    batch = _batch(pairs, src_vocab, tgt_vocab, "intersection", cfg)
    model.train()
    torch.manual_seed(3)
    expected, _ = model(batch, teacher_forcing=1.0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = make_optimizer(model, cfg, torch.device("cpu"))
    torch.manual_seed(3)
    loss, count, taken = switching_step(model, optimizer, batch, pairs, src_vocab, tgt_vocab, cfg,
                                        torch.autocast("cpu", enabled=False))
    assert bool(taken) and count == batch.target_tokens and loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert model.encoder.reverse is False
    changed = {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}
    assert any(k.startswith("encoder.grus.0.") for k in changed) and any(k.startswith("encoder.grus.1.") for k in changed)
    assert optimizer.state[next(iter(model.encoder.grus[0].parameters()))]["step"].item() == 2  # two updates


@pytest.mark.parametrize("row", ["roberti_eda_s", "roberti_eda_cs"])
def test_the_training_loop_runs_the_switch(row: str, tmp_path) -> None:
    from dataclasses import replace

    from qgen.data import Pair
    from qgen.train import TrainConfig, train

    cfg = replace(VARIANTS[row].model, hidden_size=16, num_layers=1, mlp_hidden=8)
    pairs = [Pair(str(i), source_chars(f"name[{n}]"), list(f"{n} is here."), str(i))
             for i, n in enumerate(["Aromi", "Loch", "Zizzi", "Fig"])]
    result = train(pairs, pairs[:2], cfg, TrainConfig(epochs=3, batch_size=2, learning_rate=1e-2, teacher_forcing=1.0,
                                                      max_src_len=400, max_tgt_len=400), tmp_path, log=lambda _: None)
    assert result.history[-1].train_loss < result.history[0].train_loss


@pytest.mark.parametrize("reverse", [False, True])
def test_the_switching_encoder_gives_the_packed_numbers_without_packing(reverse: bool,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Length-agnostic (CPU training's default, qgen/model/rnn.py) and packed: the same outputs, final states and
    gradients, for either GRU of the switch."""
    import qgen.model.roberti as roberti_module

    packed_calls: list[int] = []
    real_pack = roberti_module.pack_padded_sequence
    monkeypatch.setattr(roberti_module, "pack_padded_sequence",
                        lambda *a, **k: packed_calls.append(1) or real_pack(*a, **k))
    model, src_vocab, tgt_vocab = small("roberti_eda_cs")
    encoder = model.encoder.eval()  # no dropout between layers: both paths see the same inputs
    encoder.reverse = reverse
    batch = make_batch([source_chars("name[Aromi], food[Thai]"), source_chars("near[X]")], None, src_vocab,
                       tgt_vocab, model.cfg.copy)
    results = []
    for agnostic in (False, True):
        encoder.zero_grad()
        encoder.length_agnostic = agnostic
        outputs, final = encoder(batch.src, batch.src_lengths)
        (outputs.square().sum() + final.sin().sum()).backward()
        results.append((outputs.detach(), final.detach(),
                        [p.grad.clone() for p in encoder.parameters() if p.grad is not None]))
    (packed_out, packed_final, packed_grads), (out, final, grads) = results
    assert packed_calls == [1]  # packed when told, not when length-agnostic
    assert out.shape == packed_out.shape and final.shape == packed_final.shape
    torch.testing.assert_close(out, packed_out, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(final, packed_final, atol=1e-6, rtol=1e-5)
    assert len(grads) == len(packed_grads) > 0
    for a, b in zip(grads, packed_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
