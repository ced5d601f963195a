"""Evaluation metrics of generated questions: BLEU, ROUGE-L, METEOR, OverCopy, attention entropy.

Every metric takes hypotheses and references as token lists (``parsers.tokens.nl_tokens``), one
reference or a list of references per hypothesis; :func:`evaluate_corpus` returns them all at once.
"""
from qgen.metrics.bleu import (
    BleuResult,
    corpus_bleu,
    sentence_bleu_mean,
    sentence_bleu_scores,
    sentence_bleu_unsmoothed_mean,
    sentence_bleu_unsmoothed_scores,
)
from qgen.metrics.entropy import (
    attention_entropy,
    cumulative_attention_entropy,
    sentence_attention_entropy,
    step_entropies,
)
from qgen.metrics.meteor import Meteor, MeteorError, MeteorResult, MetricUnavailableError, meteor
from qgen.metrics.overcopy import (
    immediate_repeat_share,
    overcopy,
    overcopy_against_source,
    overcopy_duplicates,
    overcopy_duplicates_scores,
    overcopy_literal,
    overcopy_literal_scores,
    overcopy_scores,
    overcopy_sentence,
    overcopy_source,
    overcopy_source_scores,
    repeated_ngrams,
)
from qgen.metrics.report import evaluate_corpus
from qgen.metrics.rouge import RougeLResult, rouge_l
from qgen.metrics.significance import PairedSignificance, paired_significance

__all__ = [
    "BleuResult",
    "Meteor",
    "MeteorError",
    "MeteorResult",
    "MetricUnavailableError",
    "PairedSignificance",
    "RougeLResult",
    "attention_entropy",
    "corpus_bleu",
    "cumulative_attention_entropy",
    "evaluate_corpus",
    "meteor",
    "immediate_repeat_share",
    "overcopy",
    "overcopy_against_source",
    "overcopy_duplicates",
    "overcopy_duplicates_scores",
    "overcopy_literal",
    "overcopy_literal_scores",
    "overcopy_scores",
    "overcopy_sentence",
    "overcopy_source",
    "overcopy_source_scores",
    "paired_significance",
    "repeated_ngrams",
    "rouge_l",
    "sentence_attention_entropy",
    "sentence_bleu_mean",
    "sentence_bleu_scores",
    "sentence_bleu_unsmoothed_mean",
    "sentence_bleu_unsmoothed_scores",
    "step_entropies",
]
