"""BLEU through sacrebleu, on our own tokens (0-100 scale, as in the seed papers' tables).

Input is already tokenized and lowercased by ``parsers.tokens.nl_tokens``, so tokens are joined with
spaces and sacrebleu runs with ``tokenize='none'`` (its signature then says ``tok:none``).

- corpus BLEU (Papineni et al. 2002): n-gram statistics summed over the corpus, one brevity penalty;
- sentence BLEU mean: sacrebleu's sentence score per hypothesis with ``effective_order=True``
  (orders with no possible match are left out, default ``exp`` smoothing), averaged over the corpus.
- unsmoothed sentence BLEU mean (the seed paper's per-sentence protocol): sacrebleu's sentence score
  with ``smooth_method='none'`` and ``effective_order=False``, so every sentence is scored on all four
  n-gram orders and one order without a match makes its score 0. This is what NLTK's
  ``sentence_bleu`` computes by default (method0: no smoothing, weights 1/4 each, closest reference
  length for the brevity penalty), up to NLTK's ``sys.float_info.min`` stand-in for a zero precision,
  which gives ~1e-75 where sacrebleu gives 0. The paper's per-sentence BLEU far below its corpus BLEU
  (15.29 against 27.64 for Scratchpad) is this pattern: short questions missing a 4-gram score 0.

Multi-reference input is passed to sacrebleu as reference streams, padded with ``None`` where a
hypothesis has fewer references (sacrebleu's variable-reference mode, ``nrefs:var``).
"""
from __future__ import annotations

import logging

from collections.abc import Sequence
from dataclasses import dataclass

from sacrebleu.metrics import BLEU

from qgen.metrics.corpus import References, Tokens, align, join, mean

CORPUS = "corpus"
SENTENCE_MEAN = "sentence-mean"


@dataclass(frozen=True)
class BleuResult:
    """A BLEU score (0-100), sacrebleu's signature string and which level it is (corpus / sentence-mean)."""

    score: float
    signature: str
    level: str = CORPUS


def _streams(refs: list[list[list[str]]]) -> list[list[str | None]]:
    """Per-hypothesis reference lists -> sacrebleu reference streams (one list per reference slot)."""
    width = max(len(group) for group in refs)
    return [[join(group[k]) if k < len(group) else None for group in refs] for k in range(width)]


def _bleu(effective_order: bool, references: list[list[str | None]] | None = None, smooth_method: str = "exp") -> BLEU:
    # force=True: input is deliberately tokenized, so silence the "tokenized period" warning.
    return BLEU(tokenize="none", effective_order=effective_order, force=True, references=references,
                smooth_method=smooth_method)


def corpus_bleu(hypotheses: Sequence[Tokens], references: References) -> BleuResult:
    """Corpus BLEU on space-joined tokens with sacrebleu (``tokenize='none'``)."""
    hyps, refs = align(hypotheses, references)
    metric = _bleu(effective_order=False)
    score = metric.corpus_score([join(h) for h in hyps], _streams(refs))
    return BleuResult(float(score.score), str(metric.get_signature()), CORPUS)


def sentence_bleu_scores(hypotheses: Sequence[Tokens], references: References) -> list[float]:
    """Sentence BLEU (``effective_order=True``) of each hypothesis, 0-100."""
    hyps, refs = align(hypotheses, references)
    metric = _bleu(effective_order=True)
    return [float(metric.sentence_score(join(h), [join(r) for r in group]).score) for h, group in zip(hyps, refs)]


def sentence_bleu_mean(hypotheses: Sequence[Tokens], references: References) -> BleuResult:
    """Mean sentence BLEU over the corpus; the signature is sacrebleu's for the sentence-level metric
    (``eff:yes``) with the reference count of the whole corpus."""
    hyps, refs = align(hypotheses, references)
    scores = sentence_bleu_scores(hyps, refs)
    # A metric built on the whole corpus's references, so the signature's nrefs covers every sentence.
    metric = _bleu(effective_order=True, references=_streams(refs))
    return BleuResult(mean(scores), f"{SENTENCE_MEAN}|{metric.get_signature()}", SENTENCE_MEAN)


SENTENCE_MEAN_UNSMOOTHED = "sentence-mean-unsmoothed"


def sentence_bleu_unsmoothed_scores(hypotheses: Sequence[Tokens], references: References) -> list[float]:
    """Unsmoothed sentence BLEU of each hypothesis (0-100): sacrebleu, ``smooth_method='none'``,
    ``effective_order=False`` (NLTK's ``sentence_bleu`` default; see the module's docstring)."""
    hyps, refs = align(hypotheses, references)
    metric = _bleu(effective_order=False, smooth_method="none")
    # sacrebleu logs "It is recommended to enable `effective_order`" once per sentence: here its absence
    # is the point (the paper's protocol), so the warning is held back while scoring.
    logger = logging.getLogger("sacrebleu")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return [float(metric.sentence_score(join(h), [join(r) for r in group]).score) for h, group in zip(hyps, refs)]
    finally:
        logger.setLevel(level)


def sentence_bleu_unsmoothed_mean(hypotheses: Sequence[Tokens], references: References) -> BleuResult:
    """Mean unsmoothed sentence BLEU: the seed paper's per-sentence BLEU (its Table 2)."""
    hyps, refs = align(hypotheses, references)
    scores = sentence_bleu_unsmoothed_scores(hyps, refs)
    metric = _bleu(effective_order=False, references=_streams(refs), smooth_method="none")
    return BleuResult(mean(scores), f"{SENTENCE_MEAN_UNSMOOTHED}|{metric.get_signature()}", SENTENCE_MEAN_UNSMOOTHED)
