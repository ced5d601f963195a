"""The preprocessing Parquet schemas, declared once: a dataclass per row beside its pyarrow schema.

Bump ``SCHEMA_VERSION`` whenever a column is added, removed or changes meaning.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

SCHEMA_VERSION = "1.1"  # 1.1: lf_tokens_raw

ENTITY_TYPE = pa.struct(
    [("id", pa.string()), ("surface", pa.string()), ("name", pa.string()), ("name_source", pa.string())]
)


@dataclass(frozen=True)
class ExampleRow:
    """One preprocessed (logical form, question) example."""

    id: str
    split: str
    source: str  # dataset name
    lf_type: str  # sparql | sql | mr | da
    logical_form: str  # as given
    normalized_lf: str  # what was validated
    lf_tokens: list[str]
    lf_tokens_raw: list[str]  # entities kept as written (the paper's no-entity-replacement baseline)
    question: str | None
    question_tokens: list[str]
    entities: list[dict[str, str]] = field(default_factory=list)  # id, surface, name, name_source
    answers: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


EXAMPLE_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("split", pa.string()),
        ("source", pa.string()),
        ("lf_type", pa.string()),
        ("logical_form", pa.string()),
        ("normalized_lf", pa.string()),
        ("lf_tokens", pa.list_(pa.string())),
        ("lf_tokens_raw", pa.list_(pa.string())),
        ("question", pa.string()),
        ("question_tokens", pa.list_(pa.string())),
        ("entities", pa.list_(ENTITY_TYPE)),
        ("answers", pa.list_(pa.string())),
    ]
)


@dataclass(frozen=True)
class RejectRow:
    """An input that did not become an example, and why."""

    id: str
    split: str
    source: str
    stage: str  # load | input | parse | normalise | validate
    error: str  # one line: the error type and what is wrong
    input: str  # the raw input record

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


REJECT_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("split", pa.string()),
        ("source", pa.string()),
        ("stage", pa.string()),
        ("error", pa.string()),
        ("input", pa.string()),
    ]
)

assert [f.name for f in EXAMPLE_SCHEMA] == list(ExampleRow.__dataclass_fields__)
assert [f.name for f in REJECT_SCHEMA] == list(RejectRow.__dataclass_fields__)
