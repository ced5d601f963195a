"""The record every dataset loader yields, before any parsing."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RawExample:
    """One (logical form, question) pair as the dataset gives it.

    Loaders never raise for a bad record: they set ``load_error`` and keep the raw text, so that
    preprocessing turns it into a reject row (inputs = examples + rejects).
    """

    id: str
    split: str  # train | dev | test (the dataset's own names mapped to these)
    lf_type: str  # sparql | sql | mr | da
    logical_form: str  # as written (WikiSQL: rendered to an SQL string by the loader)
    question: str | None  # the reference question/text; None where the dataset has none
    source: str  # dataset name: webqsp, wikisql, cwq, e2e, e2e_plus, wen2015_hotel, ...
    raw: str  # the raw record as JSON text (for the rejects table)
    names: dict[str, str] = field(default_factory=dict)  # entity id -> name given with the input
    answers: list[str] = field(default_factory=list)  # answer names or ids where given
    load_error: str | None = None  # set when the record itself is malformed
