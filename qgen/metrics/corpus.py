"""Input checks shared by every metric: hypotheses and references as token lists.

A corpus is ``hypotheses`` (one token list per generated sentence) and ``references`` in one of two
shapes: one token list per hypothesis (single reference), or a list of token lists per hypothesis
(multi-reference datasets such as E2E). Every metric normalises to the second shape with
:func:`align`, so each one handles both the same way.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Union

Tokens = Sequence[str]
References = Union[Sequence[Tokens], Sequence[Sequence[Tokens]]]


def _is_multi(references: Sequence[object]) -> bool:
    """True when references hold a list of token lists per hypothesis (decided on the first non-empty one)."""
    for item in references:
        if isinstance(item, str):
            raise TypeError("a reference must be a list of tokens, not a string: tokenize it first")
        if len(item) > 0:  # type: ignore[arg-type]
            return not isinstance(item[0], str)  # type: ignore[index]
    return False


def token_list(tokens: object, what: str) -> list[str]:
    """``tokens`` as a list, or ``TypeError`` when it is a string or holds a non-string."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(f"{what} must be a list of tokens, got {type(tokens).__name__}: tokenize it first")
    out = list(tokens)
    for token in out:
        if not isinstance(token, str):
            raise TypeError(f"{what} holds a {type(token).__name__} token; mixed single/multi references?")
    return out


def align(hypotheses: Sequence[Tokens], references: References) -> tuple[list[list[str]], list[list[list[str]]]]:
    """Check a corpus and return ``(hypotheses, references per hypothesis)`` as plain lists.

    Raises ``ValueError`` for an empty corpus, a length mismatch or a hypothesis without any reference,
    and ``TypeError`` for a string where a token list belongs.
    """
    if isinstance(hypotheses, str) or isinstance(references, str):
        raise TypeError("hypotheses and references must be lists of token lists")
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references: one entry per hypothesis")
    if len(hypotheses) == 0:
        raise ValueError("empty corpus: nothing to score")
    hyps = [token_list(h, f"hypothesis {i}") for i, h in enumerate(hypotheses)]
    if _is_multi(references):
        refs: list[list[list[str]]] = []
        for i, group in enumerate(references):
            if isinstance(group, str) or len(group) == 0:
                raise ValueError(f"hypothesis {i} has no reference (multi-reference input needs at least one)")
            refs.append([token_list(r, f"reference {i}") for r in group])  # type: ignore[union-attr]
    else:
        refs = [[token_list(r, f"reference {i}")] for i, r in enumerate(references)]
    return hyps, refs


def join(tokens: Sequence[str]) -> str:
    """Tokens joined by single spaces: the pre-tokenized string the text-based libraries receive."""
    return " ".join(tokens)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean of a non-empty sequence (the per-sentence averages of every metric)."""
    if not values:
        raise ValueError("mean of an empty sequence")
    return float(sum(values) / len(values))
