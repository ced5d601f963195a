"""The over-copy filter for synthetic questions, and its statistics.

Seed appendix B (Eq. 17-19) measures over-copying against a reference question. A synthetic pair
has none, so the logical form stands in for it (issue 4): a question over-copies when

- a *copyable* token appears in it more often than in the logical form:
  ``overcopy = sum_{w in C} max(count_q(w) - count_lf(w), 0)`` (``qgen.metrics.overcopy
  .overcopy_against_source``), where ``C`` is the LF's word tokens (a letter or digit in them) minus
  ``ignore_tokens`` (function words such as "of", which a question may hold more often than the
  LF's entity names do, and the ``ent:`` marker); punctuation never counts;
- or an n-gram with ``n >= min_ngram`` (default 2) occurs more than once
  (``qgen.metrics.overcopy.repeated_ngrams``: the number of distinct repeated n-grams).

Defaults (``FilterThresholds``): ``max_overcopy`` 0 and ``max_repeated_ngrams`` 0 (any excess
copy or repeated n-gram rejects the pair), no score floor (``min_score`` None), and a question
holding ``<unk>`` is rejected (``allow_unknown`` False). A filtered pair becomes a reject row whose
reason starts with its code: ``overcopy``, ``repeated_ngram``, ``low_score`` or ``unknown_token``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Collection, Iterable, Sequence

from qgen.metrics.overcopy import overcopy_against_source, repeated_ngrams
from qgen.model.vocab import UNK
from qgen.synth.schema import PairRow

# Words a question may repeat beyond the logical form without having copied them: articles,
# prepositions, conjunctions, the possessive and forms of "be"; plus the entity marker.
DEFAULT_IGNORED_TOKENS: tuple[str, ...] = tuple(sorted({
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "by", "with", "from", "into", "as",
    "and", "or", "'s", "is", "are", "was", "were", "be", "ent:",
}))

REASON_CODES = ("overcopy", "repeated_ngram", "low_score", "unknown_token")


@dataclass(frozen=True)
class FilterThresholds:
    """The filter's options; the defaults are documented in the module docstring."""

    max_overcopy: int = 0  # excess copies of copyable tokens allowed per question
    max_repeated_ngrams: int = 0  # distinct repeated n-grams (n >= min_ngram) allowed per question
    min_ngram: int = 2
    min_score: float | None = None  # floor on the length-normalised log-probability; None = off
    allow_unknown: bool = False  # keep questions holding <unk>
    ignore_tokens: tuple[str, ...] = field(default=DEFAULT_IGNORED_TOKENS)

    def __post_init__(self) -> None:
        if self.max_overcopy < 0 or self.max_repeated_ngrams < 0:
            raise ValueError("max_overcopy and max_repeated_ngrams must be >= 0")
        if self.min_ngram < 2:
            raise ValueError(f"min_ngram must be >= 2 (a repeated word is over-copying, not an n-gram), got {self.min_ngram}")
        object.__setattr__(self, "ignore_tokens", tuple(sorted(set(self.ignore_tokens))))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ignore_tokens": list(self.ignore_tokens)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "FilterThresholds":
        return cls(**{**values, "ignore_tokens": tuple(values.get("ignore_tokens", DEFAULT_IGNORED_TOKENS))})


def copyable_tokens(lf_tokens: Sequence[str], ignore: Collection[str] = DEFAULT_IGNORED_TOKENS) -> set[str]:
    """The LF's word tokens (holding a letter or digit) that are not in ``ignore``."""
    return {t for t in lf_tokens if t not in ignore and any(c.isalnum() for c in t)}


def overcopy_score(question_tokens: Sequence[str], lf_tokens: Sequence[str],
                   ignore: Collection[str] = DEFAULT_IGNORED_TOKENS) -> int:
    """Excess copies of the LF's copyable tokens in the question (appendix B adapted, see above)."""
    return overcopy_against_source(list(question_tokens), list(lf_tokens), copyable_tokens(lf_tokens, ignore))


@dataclass(frozen=True)
class Verdict:
    """The filter's decision on one pair: ``reason`` is None when it is kept."""

    overcopy: int
    repeated: int
    score: float
    reason: str | None = None
    codes: tuple[str, ...] = ()  # every failed check, the first one leads the reason

    @property
    def keep(self) -> bool:
        return self.reason is None


class OverCopyFilter:
    """Judge generated pairs against ``FilterThresholds``."""

    def __init__(self, thresholds: FilterThresholds | None = None) -> None:
        self.thresholds = thresholds or FilterThresholds()

    def judge(self, question_tokens: Sequence[str], lf_tokens: Sequence[str], score: float) -> Verdict:
        t = self.thresholds
        excess = overcopy_score(question_tokens, lf_tokens, t.ignore_tokens)
        repeated = repeated_ngrams(list(question_tokens), t.min_ngram)
        failures: list[tuple[str, str]] = []
        if excess > t.max_overcopy:
            counts, source = Counter(question_tokens), Counter(lf_tokens)
            words = sorted(w for w in copyable_tokens(lf_tokens, t.ignore_tokens) if counts[w] > source[w])
            detail = ", ".join(f"{w!r} {counts[w]}x vs {source[w]}x" for w in words)
            failures.append(("overcopy", f"{excess} excess copies (max {t.max_overcopy}): {detail}"))
        if repeated > t.max_repeated_ngrams:
            failures.append(("repeated_ngram", f"{repeated} repeated n-grams, n >= {t.min_ngram} "
                                               f"(max {t.max_repeated_ngrams})"))
        if t.min_score is not None and score < t.min_score:
            failures.append(("low_score", f"score {score:.4f} below {t.min_score}"))
        if not t.allow_unknown and UNK in question_tokens:
            failures.append(("unknown_token", f"the question holds {UNK}"))
        reason = "; ".join(f"{code}: {text}" for code, text in failures) or None
        return Verdict(excess, repeated, score, reason, tuple(code for code, _ in failures))

    def judge_pair(self, pair: PairRow) -> Verdict:
        """Judge a generated row (its question is space-joined tokens)."""
        return self.judge(pair.question.split(), pair.lf_tokens, pair.score)


def filter_statistics(verdicts: Iterable[Verdict]) -> dict[str, Any]:
    """Counts for the manifest and the dataset card: kept/filtered, the leading reason and every
    failed check, histograms of the over-copy and repeated-n-gram measures, the score sum."""
    stats: dict[str, Any] = {"judged": 0, "kept": 0, "filtered": 0, "by_reason": {}, "failed_checks": {},
                             "overcopy": {}, "repeated_ngrams": {}, "score_sum": 0.0}
    for v in verdicts:
        stats["judged"] += 1
        stats["kept" if v.keep else "filtered"] += 1
        if v.codes:
            _bump(stats["by_reason"], v.codes[0])
        for code in v.codes:
            _bump(stats["failed_checks"], code)
        _bump(stats["overcopy"], str(v.overcopy))
        _bump(stats["repeated_ngrams"], str(v.repeated))
        stats["score_sum"] += v.score
    return stats


def merge_statistics(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sum per-shard statistics (in shard order, so float sums are reproducible)."""
    total = filter_statistics(())
    for part in parts:
        for key, value in part.items():
            if key == "mean_score":  # derived: recomputed below
                continue
            if isinstance(value, dict):
                for k, n in value.items():
                    _bump(total[key], k, n)
            else:
                total[key] += value
    for key in ("overcopy", "repeated_ngrams"):
        total[key] = dict(sorted(total[key].items(), key=lambda kv: int(kv[0])))
    total["mean_score"] = total["score_sum"] / total["judged"] if total["judged"] else None
    return total


def _bump(counts: dict[str, int], key: str, by: int = 1) -> None:
    counts[key] = counts.get(key, 0) + by
