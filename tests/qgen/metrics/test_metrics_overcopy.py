"""OverCopy, Eq. 17-19 of the Scratchpad Encoder paper, and repetition counts (qgen/metrics/overcopy.py)."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qgen.metrics.overcopy import (
    overcopy,
    overcopy_against_source,
    overcopy_duplicates,
    overcopy_duplicates_scores,
    overcopy_literal,
    overcopy_literal_scores,
    overcopy_scores,
    overcopy_sentence,
    overcopy_source,
    overcopy_source_scores,
    repeated_ngrams,
)

words = st.lists(st.sampled_from(["the", "cat", "a", "?", "of", "x"]), max_size=12)


def test_direction_counts_excess_generated_words() -> None:
    assert overcopy_sentence("the the the cat".split(), "the cat".split()) == 2
    # the other way round nothing was over-copied (the paper's literal ref - gen would give 2 here)
    assert overcopy_sentence("the cat".split(), "the the the cat".split()) == 0


def test_corpus_value_is_the_mean_of_sentence_values() -> None:
    hyps = ["the the the cat".split(), "a b b".split(), "x".split()]
    refs = ["the cat".split(), "a b".split(), "x".split()]
    assert overcopy_scores(hyps, refs) == [2, 1, 0]
    assert overcopy(hyps, refs) == pytest.approx(1.0)


def test_identical_corpus_is_zero() -> None:
    refs = ["what is the name of the river ?".split()]
    assert overcopy(refs, refs) == 0.0


def test_multi_reference_clips_by_the_largest_reference_count() -> None:
    refs = [["the cat".split(), "the the dog".split()]]
    assert overcopy_scores(["the the the cat".split()], refs) == [1]


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError):
        overcopy([["a"]], [])


def test_against_source_counts_excess_copies() -> None:
    source = "ent: barack obama . people.person.spouse ?x".split()
    question = "who is barack obama barack obama 's wife ?".split()
    assert overcopy_against_source(question, source) == 2  # "barack" and "obama" once too often
    assert overcopy_against_source(question, source, copyable={"obama"}) == 1
    assert overcopy_against_source("who is barack obama 's wife ?".split(), source) == 0


def test_overcopy_source_counts_only_source_words() -> None:
    source = "select ?x where { ent: james k polk people person profession ?x }".split()
    hyps = ["what is is james james polk polk ?".split(), "what did james k polk do ?".split()]
    refs = ["what did james k polk do before he was president ?".split(), "what did james k polk do ?".split()]
    # "is" (a rewording, not in the source) and "?" (syntax in the source) are not counted.
    assert overcopy_source_scores(hyps, refs, [source, source]) == [2, 0]
    assert overcopy_source(hyps, refs, [source, source]) == pytest.approx(1.0)
    assert overcopy_scores(hyps, refs) == [4, 0]  # the paper's sum counts the extra "is" twice too
    with pytest.raises(ValueError, match="sources"):
        overcopy_source(hyps, refs, [source])


def test_repeated_ngrams() -> None:
    assert repeated_ngrams("who is barack obama barack obama wife".split()) == 1  # "barack obama"
    assert repeated_ngrams("a b c a b c".split()) == 3  # "a b", "b c", "a b c"
    assert repeated_ngrams("the the the".split()) == 1  # overlapping "the the"
    assert repeated_ngrams("a b c".split()) == 0
    assert repeated_ngrams("a b c a b c".split(), n_min=3) == 1
    assert repeated_ngrams("a b c a b c".split(), n_max=2) == 2
    assert repeated_ngrams([]) == 0
    with pytest.raises(ValueError):
        repeated_ngrams(["a"], n_min=0)


@given(gen=words, ref=words)
def test_overcopy_is_non_negative_and_counts_unmatched_tokens(gen: list[str], ref: list[str]) -> None:
    value = overcopy_sentence(gen, ref)
    assert value >= 0
    assert value == len(gen) - sum((Counter(gen) & Counter(ref)).values())


@given(ref=words)
def test_overcopy_is_zero_when_generated_equals_reference(ref: list[str]) -> None:
    assert overcopy_sentence(ref, ref) == 0


@given(ref=words, data=st.data())
def test_overcopy_is_zero_for_a_sub_multiset_of_the_reference(ref: list[str], data: st.DataObject) -> None:
    kept = data.draw(st.lists(st.booleans(), min_size=len(ref), max_size=len(ref)))
    gen = data.draw(st.permutations([w for w, keep in zip(ref, kept) if keep]))
    assert overcopy_sentence(gen, ref) == 0


def test_immediate_repeat_share_counts_questions_with_a_word_twice_in_a_row() -> None:
    from qgen.metrics import immediate_repeat_share

    questions = [["who", "is", "is", "?"], ["who", "is", "he", "is", "?"], "where is paris paris ?".split(), []]
    assert immediate_repeat_share(questions) == 0.5  # not a word met again further on, nor an empty one
    assert immediate_repeat_share([]) == 0.0


def test_both_readings_of_eq_17_19_on_one_corpus() -> None:
    source = "select ?x where { ent: james k polk people person profession ?x }".split()
    hyps = ["what is is james james polk polk ?".split(),  # surplus copies and a repeated rewording
            "what did james k polk do ?".split(),  # the reference itself
            "what was polk 's job ?".split(),  # a copied name the reference words otherwise
            "who who was james polk ?".split()]
    refs = ["what did james k polk do before he was president ?".split(), "what did james k polk do ?".split(),
            "what did james k polk do ?".split(), "what was the job of james k. polk ?".split()]
    sources = [source] * 4
    # Eq. 17-19 over every word type: "is" x2, "james" +1, "polk" +1; nothing; "was", "'s", "job";
    # "who" x2, "was" is in the reference
    assert overcopy_scores(hyps, refs) == [4, 0, 3, 2]
    # the copy-specific reading: logical-form words beyond max(reference count, 1) only
    assert overcopy_duplicates_scores(hyps, refs, sources) == [2, 0, 0, 0]
    assert overcopy_duplicates(hyps, refs, sources) == pytest.approx(0.5)
    # a copy the reference lacks counts in overcopy_source (its first occurrence too), not as a duplicate
    assert overcopy_source_scores(["what is polk polk ?".split()], ["what is his job ?".split()], [source]) == [2]
    assert overcopy_duplicates_scores(["what is polk polk ?".split()], ["what is his job ?".split()], [source]) == [1]
    with pytest.raises(ValueError, match="sources"):
        overcopy_duplicates(hyps, refs, sources[:1])


def test_literal_order_counts_missing_words() -> None:
    assert overcopy_literal_scores(["the cat".split()], ["the the the cat".split()]) == [2]
    assert overcopy_literal_scores(["the the the cat".split()], ["the cat".split()]) == [0]
    hyps, refs = ["a b b".split(), "x".split()], ["a b c".split(), "x y".split()]
    # sum_w max(ref - gen, 0) - sum_w max(gen - ref, 0) = len(ref) - len(gen), sentence by sentence
    for lit, exc, h, r in zip(overcopy_literal_scores(hyps, refs), overcopy_scores(hyps, refs), hyps, refs):
        assert lit - exc == len(r) - len(h)
    assert overcopy_literal(hyps, refs) == pytest.approx(1.0)
