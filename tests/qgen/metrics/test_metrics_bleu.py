"""Corpus and sentence BLEU through sacrebleu (qgen/metrics/bleu.py)."""
from __future__ import annotations

import math
import warnings

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU

from qgen.metrics.bleu import (
    corpus_bleu,
    sentence_bleu_mean,
    sentence_bleu_scores,
    sentence_bleu_unsmoothed_mean,
    sentence_bleu_unsmoothed_scores,
)

HYPS = [
    "what is the capital city of france ?".split(),
    "who was the director of titanic ?".split(),
    "what river goes through paris ?".split(),
    "which team did he play for in 1998 ?".split(),
]
REFS = [
    "what is the capital of france ?".split(),
    "who directed the film titanic ?".split(),
    "which river flows through paris ?".split(),
    "what team did he play for in 1998 ?".split(),
]


def test_identical_corpus_scores_100() -> None:
    assert corpus_bleu(REFS, REFS).score == pytest.approx(100.0)
    assert sentence_bleu_mean(REFS, REFS).score == pytest.approx(100.0)


def test_corpus_score_equals_sacrebleu_on_joined_strings() -> None:
    expected = BLEU(tokenize="none").corpus_score([" ".join(h) for h in HYPS], [[" ".join(r) for r in REFS]])
    result = corpus_bleu(HYPS, REFS)
    assert result.score == pytest.approx(expected.score)
    assert 0 < result.score < 100


def test_sentence_scores_equal_sacrebleu_sentence_bleu() -> None:
    scores = sentence_bleu_scores(HYPS, REFS)
    expected = [sacrebleu.sentence_bleu(" ".join(h), [" ".join(r)], tokenize="none").score for h, r in zip(HYPS, REFS)]
    assert scores == pytest.approx(expected)
    assert sentence_bleu_mean(HYPS, REFS).score == pytest.approx(sum(expected) / len(expected))


def test_signatures_record_tokenization_and_effective_order() -> None:
    corpus = corpus_bleu(HYPS, REFS)
    sentence = sentence_bleu_mean(HYPS, REFS)
    assert corpus.level == "corpus" and sentence.level == "sentence-mean"
    assert "tok:none" in corpus.signature and "nrefs:1" in corpus.signature and "eff:no" in corpus.signature
    assert sentence.signature.startswith("sentence-mean|")
    assert "eff:yes" in sentence.signature and "nrefs:1" in sentence.signature


def test_variable_multi_reference_matches_sacrebleu_with_none_padding() -> None:
    refs = [[REFS[0], "what is france 's capital ?".split()], [REFS[1]], [REFS[2]], [REFS[3]]]
    result = corpus_bleu(HYPS, refs)
    streams = [[" ".join(r) for r in REFS], ["what is france 's capital ?", None, None, None]]
    expected = BLEU(tokenize="none").corpus_score([" ".join(h) for h in HYPS], streams)
    assert result.score == pytest.approx(expected.score)
    assert "nrefs:var" in result.signature
    assert "nrefs:var" in sentence_bleu_mean(HYPS, refs).signature


def test_punctuation_tokens_are_not_retokenized() -> None:
    # 'tok:none': "u.s" stays one token, so it cannot match "u" "." "s" split by a tokenizer.
    assert corpus_bleu([["u.s", "?"]], [["u", ".", "s", "?"]]).score == pytest.approx(0.0)


def test_empty_hypothesis_scores_zero() -> None:
    assert sentence_bleu_scores([[], HYPS[0]], [REFS[0], REFS[0]])[0] == 0.0
    assert corpus_bleu([[]], [REFS[0]]).score == 0.0


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError):
        corpus_bleu(HYPS, REFS[:2])
    with pytest.raises(ValueError):
        sentence_bleu_mean(HYPS[:1], REFS)


def test_unsmoothed_sentence_bleu_on_a_hand_checked_example() -> None:
    # hypothesis a b c d e f against reference a b c d x f g: matched n-grams 5/6, 3/5, 2/4, 1/3;
    # brevity penalty exp(1 - 7/6); BLEU = exp(-1/6) * (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = 45.4802
    score = sentence_bleu_unsmoothed_scores(["a b c d e f".split()], ["a b c d x f g".split()])[0]
    assert score == pytest.approx(100 * math.exp(-1 / 6) * (1 / 12) ** 0.25)
    assert score == pytest.approx(45.4802, abs=1e-4)


def test_unsmoothed_sentence_bleu_is_zero_without_a_four_gram_match() -> None:
    # a perfect three-word question has no 4-gram at all: 0 unsmoothed (as NLTK's default), 100 smoothed
    short, near = "who is obama".split(), "who was obama 's wife ?".split()
    assert sentence_bleu_unsmoothed_scores([short, near], [short, "who is the wife of obama ?".split()]) == [0.0, 0.0]
    assert sentence_bleu_scores([short], [short]) == [pytest.approx(100.0)]
    result = sentence_bleu_unsmoothed_mean(REFS, REFS)
    assert result.score == pytest.approx(100.0) and "smooth:none" in result.signature and "eff:no" in result.signature


def test_unsmoothed_sentence_bleu_equals_nltk_default() -> None:
    nltk_bleu = pytest.importorskip("nltk.translate.bleu_score")
    hyps = HYPS + ["a b c d e f".split()]
    refs = REFS + ["a b c d x f g".split()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns on each zero 4-gram count
        expected = [100 * nltk_bleu.sentence_bleu([r], h) for h, r in zip(hyps, refs)]
    assert sentence_bleu_unsmoothed_scores(hyps, refs) == pytest.approx(expected, abs=1e-9)
    assert sentence_bleu_unsmoothed_mean(hyps, refs).score < sentence_bleu_mean(hyps, refs).score
