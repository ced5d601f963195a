"""ROUGE-L sentence mean and corpus level (qgen/metrics/rouge.py)."""
from __future__ import annotations

import pytest

from qgen.metrics.rouge import WhitespaceTokenizer, corpus_f, rouge_l


def test_identical_corpus_scores_100() -> None:
    refs = [["what", "is", "it", "?"], ["who", "won"]]
    result = rouge_l(refs, refs)
    assert result.corpus == pytest.approx(100.0)
    assert result.sentence_mean == pytest.approx(100.0)


def test_hand_computed_corpus_and_sentence_values() -> None:
    # s1: LCS("a b c d", "a c d") = 3, |hyp| 4, |ref| 3 -> P 3/4, R 1, F 6/7
    # s2: LCS("x y", "x z w q") = 1, |hyp| 2, |ref| 4 -> P 1/2, R 1/4, F 1/3
    # corpus: P = 4/6, R = 4/7 -> F = 2PR/(P+R) = 8/13; sentence mean = (6/7 + 1/3) / 2 = 25/42
    hyps = [["a", "b", "c", "d"], ["x", "y"]]
    refs = [["a", "c", "d"], ["x", "z", "w", "q"]]
    result = rouge_l(hyps, refs)
    assert result.sentence_scores == pytest.approx((600 / 7, 100 / 3))
    assert result.sentence_mean == pytest.approx(100 * 25 / 42)
    assert result.corpus == pytest.approx(100 * 8 / 13)


def test_punctuation_tokens_count_like_words() -> None:
    # rouge-score's default tokenizer would drop "?" and "'s" and score these 0 (no tokens left).
    assert rouge_l([["?"]], [["?"]]).corpus == pytest.approx(100.0)
    assert WhitespaceTokenizer().tokenize("who 's  there ?") == ["who", "'s", "there", "?"]


def test_multi_reference_takes_the_best_reference() -> None:
    hyps = [["a", "b", "c"]]
    result = rouge_l(hyps, [[["x"], ["a", "b", "c"], ["a"]]])
    assert result.sentence_mean == pytest.approx(100.0)
    assert result.corpus == pytest.approx(100.0)  # corpus sums use the chosen reference's LCS and length


def test_empty_hypothesis_or_reference_scores_zero() -> None:
    result = rouge_l([[], ["a"]], [["a"], []])
    assert result.sentence_scores == (0.0, 0.0)
    assert result.corpus == 0.0
    assert corpus_f(0, 0, 0) == 0.0


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError):
        rouge_l([["a"]], [["a"], ["b"]])
