"""OverCopyFilter: over-copying against the logical form, repeated n-grams, thresholds, statistics."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qgen.synth.filter import (
    DEFAULT_IGNORED_TOKENS,
    FilterThresholds,
    OverCopyFilter,
    copyable_tokens,
    filter_statistics,
    merge_statistics,
    overcopy_score,
)
from qgen.synth.schema import PairRow

LF = "select ? x where { ent: bank of america ns organization . headquarters ? x }".split()


def judge(question: str, score: float = -0.1, **thresholds: object):  # noqa: ANN201
    return OverCopyFilter(FilterThresholds(**thresholds)).judge(question.split(), LF, score)  # type: ignore[arg-type]


def test_a_faithful_question_is_kept() -> None:
    verdict = judge("where is the headquarters of bank of america ?")
    assert verdict.keep and verdict.reason is None and verdict.overcopy == 0 and verdict.repeated == 0


def test_copyable_tokens_are_the_lf_words_minus_function_words() -> None:
    assert copyable_tokens(LF) == {"select", "x", "where", "bank", "america", "ns", "organization", "headquarters"}
    # "of" twice and "?" twice: a question may hold function words and punctuation more often than the LF.
    assert overcopy_score("what is the headquarters of bank of america ? ?".split(), LF) == 0


def test_a_copied_name_beyond_its_count_in_the_lf_is_over_copying() -> None:
    verdict = judge("where is the headquarters of bank of america america ?")
    assert not verdict.keep and verdict.codes == ("overcopy",) and verdict.overcopy == 1
    assert verdict.reason == "overcopy: 1 excess copies (max 0): 'america' 2x vs 1x"
    assert judge("where is the headquarters of bank of america america ?", max_overcopy=1).keep


def test_a_repeated_ngram_is_rejected_unless_allowed() -> None:
    question = "what is the headquarters of the headquarters of bank of america ?"
    verdict = judge(question)
    # "the headquarters", "headquarters of", "the headquarters of": 3 distinct repeated n-grams, and
    # "headquarters" twice against once in the LF.
    assert verdict.codes == ("overcopy", "repeated_ngram") and verdict.repeated == 3
    assert verdict.reason is not None and verdict.reason.startswith("overcopy: ") and "; repeated_ngram: 3" in verdict.reason
    assert judge(question, max_overcopy=1, max_repeated_ngrams=3).keep
    assert judge(question, max_overcopy=1, max_repeated_ngrams=3, min_ngram=3).repeated == 1


def test_score_floor_and_unknown_tokens() -> None:
    assert judge("where is bank of america ?", score=-2.5).keep  # no floor by default
    low = judge("where is bank of america ?", score=-2.5, min_score=-1.0)
    assert low.codes == ("low_score",) and "below -1.0" in (low.reason or "")
    assert judge("where is <unk> ?").codes == ("unknown_token",)
    assert judge("where is <unk> ?", allow_unknown=True).keep


def test_ignored_tokens_are_an_option() -> None:
    question = "where is the headquarters of bank of america ?"
    verdict = judge(question, ignore_tokens=("the",))  # "of" now copyable: 2x against 1x
    assert not verdict.keep and verdict.overcopy == 1 and "'of' 2x vs 1x" in (verdict.reason or "")


def test_thresholds_validate_and_round_trip() -> None:
    t = FilterThresholds(max_overcopy=2, min_score=-3.0, ignore_tokens=("b", "a", "b"))
    assert t.ignore_tokens == ("a", "b") and FilterThresholds.from_dict(t.as_dict()) == t
    assert FilterThresholds().ignore_tokens == DEFAULT_IGNORED_TOKENS
    for bad in ({"max_overcopy": -1}, {"max_repeated_ngrams": -1}, {"min_ngram": 1}):
        with pytest.raises(ValueError):
            FilterThresholds(**bad)  # type: ignore[arg-type]


def test_judge_pair_reads_a_generated_row() -> None:
    row = PairRow("p1", "sparql", "...", LF, "where is bank of america america ?", -0.2, 1, 0.4)
    assert OverCopyFilter().judge_pair(row).codes == ("overcopy",)


def test_statistics_count_and_merge() -> None:
    f = OverCopyFilter()
    first = filter_statistics([f.judge("where is bank of america ?".split(), LF, -0.5),
                               f.judge("where is america america ?".split(), LF, -1.5)])
    second = filter_statistics([f.judge("the x of the x of ?".split(), LF, -1.0)])  # x 2x, as in the LF
    assert first["judged"] == 2 and first["kept"] == 1 and first["by_reason"] == {"overcopy": 1}
    assert first["overcopy"] == {"0": 1, "1": 1}
    total = merge_statistics([first, second])
    assert total["judged"] == 3 and total["filtered"] == 2 and total["mean_score"] == pytest.approx(-1.0)
    assert total["by_reason"] == {"overcopy": 1, "repeated_ngram": 1} and total["repeated_ngrams"] == {"0": 2, "3": 1}
    assert merge_statistics([total]) == total  # merging a merged total is a no-op
    assert merge_statistics([])["mean_score"] is None


@given(st.lists(st.sampled_from(LF + ["the", "what", "america", "bank"]), max_size=20))
def test_overcopy_is_zero_for_a_sub_multiset_of_the_lf_and_never_negative(question: list[str]) -> None:
    assert overcopy_score(question, LF) >= 0
    remaining = list(LF)
    subset = [t for t in question if t in remaining and not remaining.remove(t)]  # type: ignore[func-returns-value]
    assert overcopy_score(subset, LF) == 0
