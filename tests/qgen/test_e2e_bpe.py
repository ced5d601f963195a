"""Seed 003's E2E preparation: flattened MR, Moses tokens (sacremoses, no escaping), joint BPE."""
from __future__ import annotations

from pathlib import Path

from qgen.datasets.e2e_bpe import (Segmenter, codes_for, flatten_mr, learn_codes, moses_tokens, read_split,
                                   remove_bpe, to_pairs)
from qgen.model.vocab import EOS

FIXTURE = Path(__file__).parents[1] / "fixtures" / "datasets" / "e2e"
TEXTS = ["The Eagle is a coffee shop near Burger King in the city centre. It's kid-friendly.",
         "Close to Café Brazil, The Cambridge Blue pub serves Tuscan Beef for £10.50.",
         "name[The Eagle], eatType[coffee shop], customer rating[5 out of 5], near[Burger King]"]


def test_flatten_and_moses_tokens() -> None:
    assert flatten_mr("name[The Eagle],eatType[coffee shop] ,  near[Café Rouge]") == \
        "name[The Eagle], eatType[coffee shop], near[Café Rouge]"
    assert moses_tokens("It's kid-friendly, near the city centre.") == \
        ["It", "'s", "kid-friendly", ",", "near", "the", "city", "centre", "."]  # no &apos; entities
    assert moses_tokens("name[The Eagle], near[Café Rouge]") == \
        ["name", "[", "The", "Eagle", "]", ",", "near", "[", "Café", "Rouge", "]"]


def test_bpe_round_trips_moses_tokens() -> None:
    tokens = [moses_tokens(t) for t in TEXTS]
    segment = Segmenter(learn_codes(tokens[:2], merges=20))  # few merges: most words are split
    for sequence in tokens:
        units = segment(sequence)
        assert any(u.endswith("@@") for u in units) and len(units) > len(sequence)
        assert remove_bpe(units) == " ".join(sequence)


def test_pairs_from_the_fixture_split() -> None:
    train = read_split(FIXTURE, "train")
    segment = Segmenter(codes_for(train, merges=50))
    pairs = to_pairs(train, segment, max_tokens=100)
    assert len(pairs) == len(train) > 0
    assert all(p.src[-1] == EOS and EOS not in p.tgt for p in pairs)  # the source's appended EOS
    assert all(remove_bpe(p.tgt) == " ".join(e.ref_tokens) for p, e in zip(pairs, train))
    assert pairs[0].group == train[0].mr  # references of one MR stay in one group
    assert to_pairs(train, segment, max_tokens=3) == []  # longer pairs are dropped
