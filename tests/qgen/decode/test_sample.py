"""Sampling: draws follow the model's distribution, log-probabilities are the model's own, a seed repeats them."""
from __future__ import annotations

import pytest
import torch
from test_beam_search import SRC, VOCAB, ToyModel, toy_batch

from qgen.decode import forced_token_log_probs, greedy, sample
from qgen.model import ModelConfig, Vocab, build_model, make_batch
from qgen.model.vocab import EOS_ID


def test_a_cold_temperature_draws_the_greedy_question() -> None:
    model, batch = ToyModel(1, eos_bias=3.0), toy_batch()
    drawn = sample(model, batch, num=3, max_len=30, temperature=1e-4, generator=torch.Generator().manual_seed(0))
    for row, best in zip(drawn, greedy(model, batch, max_len=30)):
        assert len(row) == 3 and all(h.ids == best.ids for h in row)
        if len(best.ids) < 30:
            assert all(h.log_prob == pytest.approx(best.log_prob, abs=1e-5) for h in row)


def test_the_same_seed_draws_the_same_questions_and_another_seed_others() -> None:
    model, batch = ToyModel(2, eos_bias=1.0), toy_batch()

    def draw(seed: int) -> list[list[list[int]]]:
        rows = sample(model, batch, num=4, max_len=12, generator=torch.Generator().manual_seed(seed))
        return [[h.ids for h in row] for row in rows]

    assert draw(5) == draw(5) and draw(5) != draw(6)


def test_first_tokens_follow_the_model_distribution() -> None:
    model = ToyModel(3, eos_bias=0.5)
    batch = make_batch([["ask", "ent:", "paris"]], None, VOCAB, VOCAB, "none")
    expected = model.step(torch.full((1,), 1), model.start(batch))[0][0].exp()
    drawn = sample(model, batch, num=4000, max_len=1, generator=torch.Generator().manual_seed(0))[0]
    counts = torch.bincount(torch.tensor([h.ids[0] if h.ids else 2 for h in drawn]), minlength=len(expected))
    assert torch.allclose(counts.float() / 4000, expected, atol=0.03)


def test_log_probs_are_the_models_own_with_copy_and_scratchpad() -> None:
    src = [["select", "?", "x", "where", "ent:", "bali"], ["ask", "ent:", "paris", "ns", "capital"]]
    vocab = Vocab.build(src)
    torch.manual_seed(0)
    model = build_model(ModelConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), embedding_dim=8,
                                    hidden_size=8, copy="extended", coverage_dim=4, memory="scratchpad")).eval()
    batch = make_batch(src, None, vocab, vocab, "extended")
    drawn = sample(model, batch, num=8, max_len=6, temperature=1.5, generator=torch.Generator().manual_seed(1))
    finished = [(row, h) for row, hyps in enumerate(drawn) for h in hyps if len(h.ids) < 6]
    assert finished, "some draws end within max_len"
    for row, h in finished:  # its log-probability is the forced decoding's, EOS included
        forced = make_batch([src[row]], [vocab.decode(h.ids, batch.oovs[row])], vocab, vocab, "extended")
        assert h.log_prob == pytest.approx(sum(forced_token_log_probs(model, forced)[0]), abs=1e-4)


def test_examples_that_have_ended_leave_the_batch_and_the_draws_stay_the_same() -> None:
    src = [["select", "?", "x", "where", "ent:", "bali"], ["ask", "ent:", "paris", "ns", "capital"],
           ["ask", "ent:", "bali"], ["select", "?", "y", "where", "ent:", "paris", "ns", "capital", "?", "y"]]
    vocab = Vocab.build(src)
    torch.manual_seed(0)
    model = build_model(ModelConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), embedding_dim=8,
                                    hidden_size=8, copy="extended", coverage_dim=4, memory="scratchpad")).eval()
    batch = make_batch(src * 4, None, vocab, vocab, "extended")
    rows_per_step: list[int] = []
    step = model.step

    def counting_step(prev, state):
        rows_per_step.append(len(prev))
        return step(prev, state)

    def draw(compact: bool) -> list[list[tuple[list[int], float]]]:
        rows_per_step.clear()
        drawn = sample(model, batch, num=2, max_len=12, generator=torch.Generator().manual_seed(3), compact=compact)
        return [[(h.ids, h.log_prob) for h in row] for row in drawn]

    model.step = counting_step
    whole = draw(compact=False)
    assert len(set(rows_per_step)) == 1, "without compaction every step decodes every row"
    compacted = draw(compact=True)
    assert rows_per_step[-1] < rows_per_step[0], "ended examples left the batch"
    assert [[ids for ids, _ in row] for row in compacted] == [[ids for ids, _ in row] for row in whole]
    for row_c, row_w in zip(compacted, whole):
        assert [lp for _, lp in row_c] == pytest.approx([lp for _, lp in row_w], abs=1e-5)


def test_the_copy_shares_recorded_while_drawing_are_those_of_a_second_pass() -> None:
    """As in the beam search: each drawn token's copy share, read off the step that drew it, equals
    what teacher-forcing the drawn question through the decoder again gives."""
    from dataclasses import replace

    from qgen.model import VARIANTS
    from qgen.synth.generator import copy_shares

    torch.manual_seed(0)
    cfg = replace(VARIANTS["scratchpad_extended"].model, embedding_dim=8, hidden_size=16, dropout=0.0)
    model = build_model(cfg.with_vocab(len(VOCAB), len(VOCAB))).eval()
    with torch.no_grad():  # a likely end, so that draws end at several lengths and examples leave the batch
        model.decoder.generator.out.bias[EOS_ID] += 2.0
    batch = make_batch(SRC, None, VOCAB, VOCAB, cfg.copy)
    drawn = sample(model, batch, num=3, max_len=10, generator=torch.Generator().manual_seed(1), copy_shares=True)
    plain = sample(model, batch, num=3, max_len=10, generator=torch.Generator().manual_seed(1))
    assert [[h.ids for h in row] for row in drawn] == [[h.ids for h in row] for row in plain]
    copied = 0
    for k in range(3):
        hyps = [row[k] for row in drawn]
        for hyp, expected in zip(hyps, copy_shares(model, batch, hyps)):
            assert hyp.copy_shares == pytest.approx(expected, abs=1e-5)
            copied += sum(s > 0.5 for s in expected)
    assert copied > 0 and len({len(h.ids) for row in drawn for h in row}) >= 3
