"""BLEU through sacrebleu, on our own tokens (0-100 scale, as in the seed papers' tables).

Input is already tokenized and lowercased by ``parsers.tokens.nl_tokens``, so tokens are joined with
spaces and sacrebleu runs with ``tokenize='none'`` (its signature then says ``tok:none``).

- corpus BLEU (Papineni et al. 2002): n-gram statistics summed over the corpus, one brevity penalty;
- sentence BLEU mean: sacrebleu's sentence score per hypothesis with ``effective_order=True``
  (orders with no possible match are left out, default ``exp`` smoothing), averaged over the corpus.

Multi-reference input is passed to sacrebleu as reference streams, padded with ``None`` where a
hypothesis has fewer references (sacrebleu's variable-reference mode, ``nrefs:var``).
"""
from __future__ import annotations

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


def _bleu(effective_order: bool, references: list[list[str | None]] | None = None) -> BLEU:
    # force=True: input is deliberately tokenized, so silence the "tokenized period" warning.
    return BLEU(tokenize="none", effective_order=effective_order, force=True, references=references)


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
