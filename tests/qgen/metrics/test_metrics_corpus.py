"""Input checks shared by the metrics (qgen/metrics/corpus.py)."""
from __future__ import annotations

import pytest

from qgen.metrics.corpus import align, join, mean, token_list


def test_single_references_become_one_element_groups() -> None:
    hyps, refs = align([["a", "b"], []], [["a"], []])
    assert hyps == [["a", "b"], []]
    assert refs == [[["a"]], [[]]]


def test_multi_references_are_kept_per_hypothesis() -> None:
    _, refs = align([["a"], ["b"]], [[["a"], ["a", "b"]], [["b"]]])
    assert refs == [[["a"], ["a", "b"]], [["b"]]]


def test_multi_reference_detection_skips_leading_empty_single_reference() -> None:
    _, refs = align([["a"], ["b"]], [[], ["b"]])
    assert refs == [[[]], [["b"]]]


@pytest.mark.parametrize(
    ("hyps", "refs"),
    [([["a"]], []), ([["a"], ["b"]], [["a"]]), ([], [])],
    ids=["no-refs", "one-short", "empty-corpus"],
)
def test_bad_lengths_raise_value_error(hyps: list, refs: list) -> None:
    with pytest.raises(ValueError):
        align(hyps, refs)


def test_multi_reference_without_any_reference_raises() -> None:
    with pytest.raises(ValueError, match="no reference"):
        align([["a"], ["b"]], [[["a"]], []])


@pytest.mark.parametrize(
    ("hyps", "refs"),
    [(["a b"], [["a"]]), ([["a"]], ["a b"]), ([["a"]], [[["a"], "a"]])],
    ids=["string-hypothesis", "string-reference", "mixed-multi"],
)
def test_strings_where_token_lists_belong_raise_type_error(hyps: list, refs: list) -> None:
    with pytest.raises(TypeError):
        align(hyps, refs)


def test_helpers() -> None:
    assert join(["what", "is", "?"]) == "what is ?"
    assert mean([1.0, 2.0, 6.0]) == 3.0
    assert token_list(("a", "b"), "x") == ["a", "b"]
    with pytest.raises(ValueError):
        mean([])
