"""The synthetic-corpus Parquet schemas, declared once: a dataclass per row beside its pyarrow schema.

``pairs/part-NNNNN.parquet`` holds :class:`PairRow` rows, ``rejects/part-NNNNN.parquet``
:class:`RejectRow` rows; every input logical form ends in exactly one of the two (issue 4:
pairs + rejects = inputs). Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes
meaning; it is stored in every file's footer and in ``manifest.json``.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from qgen.datasets.records import RawExample

SCHEMA_VERSION = "synth-1.1"  # 1.1: audit_failures

# Reject stages, in the order an input meets them.
STAGES = (
    "input",  # the input itself: a duplicate id, or a logical-form type the model was not trained on
    "load",  # the loader or sampler flagged the record (RawExample.load_error, e.g. a KB query timeout)
    "tokenize",  # parsers.tokenize_lf raised (bad SPARQL/SQL), or the LF is longer than max_src_len
    "timeout",  # tokenizing/validating took longer than the time limit
    "unnamed_entity",  # an entity with no name (placeholder <eN> token): nothing sensible to copy
    "generate",  # beam search failed, or gave an empty or unfinished question
    "filter",  # over-copy filter (reason: overcopy | repeated_ngram | low_score | unknown_token)
    "round_trip",  # round-trip filter: the parser did not read the question as its logical form
)


@dataclass(frozen=True)
class PairRow:
    """One synthetic (logical form, question) pair."""

    id: str  # the input record's id (``input-<position>`` when it had none)
    lf_type: str  # sparql | sql | mr | da
    logical_form: str  # as given
    lf_tokens: list[str]  # the model's input (parsers.tokenize_lf)
    question: str  # generated tokens joined by single spaces (tokens never hold whitespace)
    score: float  # length-normalised log-probability of the question (qgen.decode.normalise)
    overcopy: int  # excess copies of copyable tokens against the logical form (qgen.synth.filter)
    copy_fraction: float  # fraction of question tokens the copy distribution produced (generator)
    # The faithfulness audit's failed checks (qgen.synth.audit: a value or name missing, a comparison
    # stated the other way, an aggregate unsaid); empty when the question passes. Kept, not rejected:
    # the audit's lexicons are small, so a reader decides (``audit_failures`` empty: the audited rows).
    audit_failures: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)  # answer names or ids where the input gave them
    source: str = ""  # dataset or sampler name of the input
    model_id: str = ""  # sha256:<checkpoint checksum>
    created_at: datetime | None = None  # the run's timestamp (UTC), fixed at the run's first start

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


PAIR_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("lf_type", pa.string()),
        ("logical_form", pa.string()),
        ("lf_tokens", pa.list_(pa.string())),
        ("question", pa.string()),
        ("score", pa.float64()),
        ("overcopy", pa.int32()),
        ("copy_fraction", pa.float64()),
        ("audit_failures", pa.list_(pa.string())),
        ("answers", pa.list_(pa.string())),
        ("source", pa.string()),
        ("model_id", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True)
class RejectRow:
    """An input that did not become a pair, and why."""

    id: str
    stage: str  # one of STAGES
    reason: str  # one line: what is wrong (the filter's start with their code: ``overcopy: ...``)
    input: str  # the input record as JSON (see ``record_json``), plus the question for filter rejects

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"unknown reject stage {self.stage!r}; expected one of {STAGES}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


REJECT_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("input", pa.string()),
    ]
)

assert [f.name for f in PAIR_SCHEMA] == list(PairRow.__dataclass_fields__)
assert [f.name for f in REJECT_SCHEMA] == list(RejectRow.__dataclass_fields__)


def record_json(record: RawExample, position: int | None = None, **extra: Any) -> str:
    """The ``input`` of a reject row: the record's fields (and its input position) as sorted JSON."""
    data: dict[str, Any] = {
        "id": record.id, "lf_type": record.lf_type, "logical_form": record.logical_form,
        "source": record.source, "names": record.names, "answers": record.answers, "raw": record.raw,
    }
    if record.load_error:
        data["load_error"] = record.load_error
    if position is not None:
        data["position"] = position
    data.update(extra)
    return json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)
