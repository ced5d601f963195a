"""The tensor beam search against the row-by-row search it replaced: the same hypotheses, the same
scores (bit for bit), for every beam width, number returned, length penalty and repeat rule."""
from __future__ import annotations

import itertools

import pytest
import torch
from reference_beam import reference_beam_search

from qgen.decode import beam_search, greedy
from qgen.model import ModelConfig, Vocab, build_model, make_batch
from qgen.model.batch import Batch
from qgen.model.vocab import EOS_ID

SRC = [["select", "?", "x", "where", "ent:", "bali", "ns", "capital"],
       ["select", "?", "x", "where", "ent:", "atlantis", "ns", "capital", "limit", "1"],
       ["ask", "ent:", "paris"], ["count", "?", "y"], ["ask", "ent:", "bali", "ns", "capital", "ent:", "paris"]]
VOCAB = Vocab.build(SRC)


class ToyModel(torch.nn.Module):
    """A recurrent toy with the decoder's contract, a small vocabulary and a likely EOS, so that
    hypotheses finish at many lengths, ties are rare but finishing and running out both happen."""

    def __init__(self, seed: int, vocab: int = 9, hidden: int = 6, eos_bias: float = 0.0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.embed = torch.randn(vocab, hidden, generator=gen)
        self.mix = torch.randn(hidden, hidden, generator=gen) * 0.8
        self.out = torch.randn(hidden, vocab, generator=gen) * 1.5
        self.out_bias = torch.zeros(vocab)
        self.out_bias[EOS_ID] = eos_bias
        self.out_bias[:2] = float("-inf")  # PAD and BOS are never generated

    def start(self, batch: Batch) -> dict[str, torch.Tensor]:
        return {"h": self.embed[batch.src % self.embed.size(0)].mean(dim=1)}

    def step(self, prev: torch.Tensor, state: dict[str, torch.Tensor]):
        h = torch.tanh(state["h"] @ self.mix + self.embed[prev.clamp_max(self.embed.size(0) - 1)])
        return torch.log_softmax(h @ self.out + self.out_bias, dim=-1), {"h": h}, {}


def toy_batch() -> Batch:
    return make_batch(SRC, None, VOCAB, VOCAB, "none")


def same(left: list[list], right: list[list]) -> None:
    assert [[(h.ids, h.score, h.log_prob) for h in row] for row in left] == \
           [[(h.ids, h.score, h.log_prob) for h in row] for row in right]


GRID = list(itertools.product([1, 2, 4], [0.0, 0.6, 1.0], [False, True], [3, 12]))


@pytest.mark.parametrize(("beam", "alpha", "no_repeat", "max_len"), GRID)
def test_the_same_hypotheses_and_scores_as_the_row_by_row_search(beam, alpha, no_repeat, max_len) -> None:
    batch = toy_batch()
    for seed, eos_bias in [(0, 0.0), (1, 1.0), (2, -1.0), (3, 2.0)]:
        model = ToyModel(seed, eos_bias=eos_bias)
        for num_return in sorted({1, beam}):
            want = reference_beam_search(model, batch, beam, max_len, alpha, num_return, no_repeat)
            for check_every in (1, 3):
                got = beam_search(model, batch, beam, max_len, alpha, num_return, no_repeat, check_every=check_every)
                same(got, want)


@pytest.mark.parametrize("num_return", [0, -1, 4])
def test_a_number_returned_outside_one_to_the_beam_is_refused(num_return) -> None:
    with pytest.raises(ValueError, match=f"num_return must be between 1 and the beam size 3, got {num_return}"):
        beam_search(ToyModel(0), toy_batch(), beam=3, max_len=5, num_return=num_return)


def test_the_grid_covers_finished_and_unfinished_hypotheses() -> None:
    """The comparison above bites: some hypotheses end with EOS, some run out of steps."""
    lengths = set()
    for seed, eos_bias in [(0, 0.0), (1, 1.0), (2, -1.0), (3, 2.0)]:
        for row in beam_search(ToyModel(seed, eos_bias=eos_bias), toy_batch(), 4, 12, 1.0, 4):
            lengths.update(len(h.ids) for h in row)
    assert 12 in lengths and len(lengths - {12}) >= 3


@pytest.mark.parametrize(("copy", "coverage", "memory"),
                         [("none", 0, "none"), ("intersection", 10, "scratchpad"), ("extended", 10, "scratchpad"),
                          ("extended", 0, "none"), ("intersection", 10, "none")])
def test_the_same_results_on_real_models(copy, coverage, memory) -> None:
    torch.manual_seed(0)
    cfg = ModelConfig(embedding_dim=8, hidden_size=16, dropout=0.0, copy=copy, coverage_dim=coverage,
                      memory=memory).with_vocab(len(VOCAB), len(VOCAB))
    model = build_model(cfg).eval()
    batch = make_batch(SRC, None, VOCAB, VOCAB, copy)
    for beam, num_return in [(1, 1), (3, 1), (4, 3)]:
        same(beam_search(model, batch, beam, 10, 1.0, num_return, check_every=2),
             reference_beam_search(model, batch, beam, 10, 1.0, num_return))


def test_beam_of_one_is_greedy() -> None:
    batch = toy_batch()
    for seed in range(4):
        model = ToyModel(seed, eos_bias=3.0)
        greedy_rows = greedy(model, batch, max_len=30)
        beam_rows = [row[0] for row in beam_search(model, batch, beam=1, max_len=30)]
        finished = [g for g in greedy_rows if len(g.ids) < 30]
        assert finished, "the toy finishes some questions"
        assert [h.ids for h in beam_rows] == [g.ids for g in greedy_rows]
        for g, b in zip(greedy_rows, beam_rows):
            if len(g.ids) < 30:  # greedy scores an unfinished one over one token more
                assert b.score == pytest.approx(g.score) and b.log_prob == pytest.approx(g.log_prob)


class CountingToy(ToyModel):
    """The toy, recording how many rows each step was given."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rows: list[int] = []

    def step(self, prev: torch.Tensor, state: dict[str, torch.Tensor]):
        self.rows.append(prev.size(0))
        return super().step(prev, state)


def test_finished_rows_leave_the_batch_and_the_results_stay() -> None:
    """Greedy and beam search drop what is done from the batch; greedy with ``keep_attention`` does not
    (it keeps every row's attentions), the reference beam search never does."""
    batch = toy_batch()
    model = CountingToy(0, eos_bias=2.0)
    compacted = greedy(model, batch, max_len=30)
    assert model.rows[-1] < model.rows[0] == len(batch)
    model.rows.clear()
    kept = greedy(model, batch, max_len=30, keep_attention=True)
    assert set(model.rows) == {len(batch)}
    assert [(h.ids, h.score, h.log_prob) for h in compacted] == [(h.ids, h.score, h.log_prob) for h in kept]
    model.rows.clear()
    got = beam_search(model, batch, beam=3, max_len=30, num_return=2)
    assert model.rows[-1] < model.rows[0] == 3 * len(batch)
    same(got, reference_beam_search(model, batch, 3, 30, 1.0, 2))


@pytest.mark.parametrize("name", ["copynet", "coverage", "scratchpad", "copynet_extended"])
def test_the_same_results_on_the_registry_rows(name: str) -> None:
    """Rows whose encoder states (and their kept projections) the step never rewrites pass them on
    without a reorder; the results stay those of the row-by-row search."""
    from dataclasses import replace

    from qgen.model import VARIANTS

    torch.manual_seed(0)
    cfg = replace(VARIANTS[name].model, embedding_dim=8, hidden_size=16, dropout=0.0, mlp_hidden=12)
    model = build_model(cfg.with_vocab(len(VOCAB), len(VOCAB))).eval()
    batch = make_batch(SRC, None, VOCAB, VOCAB, cfg.copy)
    for beam, num_return in [(3, 1), (4, 3)]:
        same(beam_search(model, batch, beam, 10, 1.0, num_return), reference_beam_search(model, batch, beam, 10, 1.0, num_return))


def test_a_beam_wider_than_the_limit_is_refused() -> None:
    from qgen.decode import MAX_BEAM

    with pytest.raises(ValueError, match=f"between 1 and {MAX_BEAM}, got {MAX_BEAM + 1}"):
        beam_search(ToyModel(1), toy_batch(), beam=MAX_BEAM + 1)


@pytest.mark.parametrize(("name", "no_repeat"), [("scratchpad_extended", False), ("scratchpad_extended", True),
                                                 ("copynet", False), ("scratchpad", False)])
def test_the_copy_shares_the_search_records_are_those_of_a_second_pass(name: str, no_repeat: bool) -> None:
    """Each hypothesis's per-token copy shares, read off the steps that chose its tokens, equal what
    teacher-forcing its tokens through the decoder again gives (the pass they replace), for every
    hypothesis returned, finished or not, with examples leaving the batch on the way."""
    from dataclasses import replace

    from qgen.model import VARIANTS
    from qgen.synth.generator import copy_shares

    torch.manual_seed(0)
    cfg = replace(VARIANTS[name].model, embedding_dim=8, hidden_size=16, dropout=0.0)
    model = build_model(cfg.with_vocab(len(VOCAB), len(VOCAB))).eval()
    with torch.no_grad():  # a likely end, so that hypotheses finish at several lengths
        model.decoder.generator.out.bias[EOS_ID] += 2.0
    batch = make_batch(SRC, None, VOCAB, VOCAB, cfg.copy)
    rows = beam_search(model, batch, 4, 10, 1.0, num_return=3, no_repeat=no_repeat, copy_shares=True)
    same(rows, beam_search(model, batch, 4, 10, 1.0, num_return=3, no_repeat=no_repeat))  # the same search
    copied = 0
    for rank in range(3):
        hyps = [row[rank] for row in rows]
        again = copy_shares(model, batch, hyps)
        for hyp, expected in zip(hyps, again):
            assert hyp.copy_shares == pytest.approx(expected, abs=1e-5)
            copied += sum(s > 0.5 for s in expected)
    assert copied > 0, "some tokens are copied, so the shares are not all zero"
    assert len({len(h.ids) for row in rows for h in row}) >= 3, "hypotheses of several lengths"
