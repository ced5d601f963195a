"""Every evaluation metric of a generated corpus in one flat, JSON-able dict.

BLEU, METEOR and ROUGE-L are on the 0-100 scale (as the seed papers' tables print them); OverCopy is
a mean count of excess tokens per sentence (Scratchpad Encoder, Eq. 17-19); attention entropy is in
nats (Keeping Notes, section 5.2).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Union

from qgen.metrics.bleu import corpus_bleu, sentence_bleu_mean, sentence_bleu_unsmoothed_mean
from qgen.metrics.corpus import References, Tokens, align
from qgen.metrics.entropy import attention_entropy
from qgen.metrics.meteor import Meteor, MeteorResult, MetricUnavailableError
from qgen.metrics.overcopy import overcopy, overcopy_duplicates, overcopy_literal, overcopy_source
from qgen.metrics.rouge import rouge_l

log = logging.getLogger(__name__)

Value = Union[float, int, str, None]


def _meteor(
    hyps: list[list[str]], refs: list[list[list[str]]], scorer: Meteor | None, skip_if_unavailable: bool
) -> tuple[MeteorResult | None, str | None]:
    """METEOR, or ``(None, reason)`` when Java / the jar is missing and skipping is allowed."""
    if scorer is not None:
        return scorer.score(hyps, refs), None
    try:
        with Meteor() as own:
            return own.score(hyps, refs), None
    except MetricUnavailableError as error:
        if not skip_if_unavailable:
            raise
        log.warning("METEOR skipped: %s", error)
        return None, str(error)


def evaluate_corpus(
    hypotheses: Sequence[Tokens],
    references: References,
    attentions: Sequence[Any] | None = None,
    *,
    src_masks: Sequence[Any | None] | None = None,
    sources: Sequence[Tokens] | None = None,
    meteor: bool = True,
    skip_meteor_if_unavailable: bool = True,
    meteor_scorer: Meteor | None = None,
) -> dict[str, Value]:
    """All metrics of a corpus (token lists, one reference or a list of references per hypothesis).

    Keys: ``n``, ``bleu_corpus``, ``bleu_sentence_mean`` (smoothed, effective order),
    ``bleu_sentence_unsmoothed_mean`` (the seed paper's per-sentence BLEU), their three signatures,
    ``meteor_corpus``, ``meteor_sentence_mean``, ``meteor_skipped_reason``, ``rouge_l_corpus``,
    ``rouge_l_sentence_mean``, ``overcopy`` (Eq. 17-19, surplus generated words), ``overcopy_literal``
    (the paper's literal ref - gen) and, when ``attentions`` (one ``(tgt_len, src_len)`` array per
    hypothesis) are given, ``attention_entropy``; when ``sources`` (the logical-form tokens, one list per
    hypothesis) are given, ``overcopy_source`` and ``overcopy_duplicates`` (the copy-specific reading).

    METEOR needs Java: when it is missing and ``skip_meteor_if_unavailable`` (the default), the METEOR
    values are ``None`` and ``meteor_skipped_reason`` says why; ``meteor=False`` skips it on purpose.
    Pass an open ``meteor_scorer`` to reuse one JVM across corpora (its start costs ~7 s).
    """
    hyps, refs = align(hypotheses, references)
    if attentions is not None and len(attentions) != len(hyps):  # checked before the slow metrics
        raise ValueError(f"{len(hyps)} hypotheses but {len(attentions)} attention matrices")
    if sources is not None and len(sources) != len(hyps):
        raise ValueError(f"{len(hyps)} hypotheses but {len(sources)} sources")
    entropy = attention_entropy(attentions, src_masks) if attentions is not None else None
    bleu = corpus_bleu(hyps, refs)
    bleu_sentence = sentence_bleu_mean(hyps, refs)
    bleu_unsmoothed = sentence_bleu_unsmoothed_mean(hyps, refs)
    rouge = rouge_l(hyps, refs)
    if meteor:
        meteor_result, reason = _meteor(hyps, refs, meteor_scorer, skip_meteor_if_unavailable)
    else:
        meteor_result, reason = None, "disabled by the caller (meteor=False)"
    result: dict[str, Value] = {
        "n": len(hyps),
        "bleu_corpus": bleu.score,
        "bleu_sentence_mean": bleu_sentence.score,
        "bleu_signature": bleu.signature,
        "bleu_sentence_signature": bleu_sentence.signature,
        "bleu_sentence_unsmoothed_mean": bleu_unsmoothed.score,
        "bleu_sentence_unsmoothed_signature": bleu_unsmoothed.signature,
        "meteor_corpus": meteor_result.corpus if meteor_result else None,
        "meteor_sentence_mean": meteor_result.sentence_mean if meteor_result else None,
        "meteor_skipped_reason": reason,
        "rouge_l_corpus": rouge.corpus,
        "rouge_l_sentence_mean": rouge.sentence_mean,
        "overcopy": overcopy(hyps, refs),
        "overcopy_literal": overcopy_literal(hyps, refs),
    }
    if entropy is not None:
        result["attention_entropy"] = entropy
    if sources is not None:
        result["overcopy_source"] = overcopy_source(hyps, refs, sources)
        result["overcopy_duplicates"] = overcopy_duplicates(hyps, refs, sources)
    return result
