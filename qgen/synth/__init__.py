"""Synthesis (issue 4): logical forms without questions -> a filtered synthetic corpus as Parquet.

``synthesize(records, checkpoint, out_dir, config)`` is the one entry point (``config``: a frozen
``SynthesisConfig``, config.py): ``QuestionWriter``
(generator.py) tokenizes and runs batched beam search, ``OverCopyFilter`` (filter.py) judges each
question against its logical form, and corpus.py writes resumable shards, the manifest and the
dataset card (card.py). Schemas are declared once in schema.py.
"""
from qgen.synth.config import SynthesisConfig
from qgen.synth.corpus import CorpusError, synthesize
from qgen.synth.filter import FilterThresholds, OverCopyFilter, Verdict, filter_statistics, overcopy_score
from qgen.synth.generator import QuestionWriter
from qgen.synth.schema import PAIR_SCHEMA, REJECT_SCHEMA, SCHEMA_VERSION, PairRow, RejectRow

__all__ = ["CorpusError", "FilterThresholds", "OverCopyFilter", "PAIR_SCHEMA", "PairRow", "QuestionWriter",
           "REJECT_SCHEMA", "RejectRow", "SCHEMA_VERSION", "SynthesisConfig", "Verdict", "filter_statistics", "overcopy_score",
           "synthesize"]
