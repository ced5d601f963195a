"""ROUGE-L (Lin 2004, LCS-based F-measure, beta = 1) with the rouge-score package, 0-100 scale.

rouge-score's default tokenizer lowercases, drops every non-alphanumeric character and can stem;
our tokens are already final (``parsers.tokens.nl_tokens``), so the scorer gets a tokenizer that only
splits on whitespace and punctuation tokens count like words.

Two aggregates, as the seed paper's Table 2 reports both:

- sentence mean: the mean over hypotheses of each sentence's ROUGE-L F-measure;
- corpus level: one F-measure from LCS lengths summed over the corpus,
  ``R = sum LCS / sum |ref|``, ``P = sum LCS / sum |hyp|``, ``F = 2PR / (P + R)`` (0 when P + R = 0).

Multi-reference: per sentence the reference with the highest F-measure is used (first on ties, as
rouge-score's ``score_multi``); the corpus sums take that reference's LCS and length.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rouge_score import rouge_scorer

from qgen.metrics.corpus import References, Tokens, align, join, mean


class WhitespaceTokenizer:
    """A rouge-score tokenizer that keeps our tokenization: split on whitespace, nothing else."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()


@dataclass(frozen=True)
class RougeLResult:
    """ROUGE-L F-measures (0-100): corpus level, sentence mean, and each sentence's value."""

    corpus: float
    sentence_mean: float
    sentence_scores: tuple[float, ...]


@dataclass(frozen=True)
class _Best:
    fmeasure: float  # 0-1
    lcs: int
    hyp_len: int
    ref_len: int


def _best(scorer: rouge_scorer.RougeScorer, hyp: list[str], group: list[list[str]]) -> _Best:
    """The reference with the highest F-measure for one hypothesis, with its LCS length."""
    best: _Best | None = None
    for ref in group:
        score = scorer.score(join(ref), join(hyp))["rougeL"]
        # rouge-score returns R = LCS / |ref|; the product is an exact integer up to float rounding.
        lcs = round(score.recall * len(ref)) if ref else 0
        if best is None or score.fmeasure > best.fmeasure:
            best = _Best(float(score.fmeasure), lcs, len(hyp), len(ref))
    assert best is not None  # align() guarantees at least one reference
    return best


def corpus_f(lcs: int, hyp_len: int, ref_len: int) -> float:
    """F-measure (0-1) from summed LCS and summed lengths: the corpus-level ROUGE-L above."""
    precision = lcs / hyp_len if hyp_len else 0.0
    recall = lcs / ref_len if ref_len else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def rouge_l(hypotheses: Sequence[Tokens], references: References) -> RougeLResult:
    """ROUGE-L F-measure of a corpus: corpus level (summed LCS), sentence mean and per sentence, 0-100."""
    hyps, refs = align(hypotheses, references)
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=WhitespaceTokenizer())
    best = [_best(scorer, h, group) for h, group in zip(hyps, refs)]
    per_sentence = tuple(100.0 * b.fmeasure for b in best)
    corpus = corpus_f(sum(b.lcs for b in best), sum(b.hyp_len for b in best), sum(b.ref_len for b in best))
    return RougeLResult(100.0 * corpus, mean(per_sentence), per_sentence)
