"""Logical forms a user already has, as JSON Lines: ``{"id", "lf", "lf_type", "names"?, "question"?}``.

``lf_type`` defaults to the loader's argument; ``auto`` (either way) tells it from the text
(``parsers.lf_type``: refused when the text does not say); ``split`` defaults to ``train`` when a question is
given and ``unlabelled`` otherwise; a missing, null or empty ``id`` becomes ``line-N``. The file is
read as bytes by ``parsers.jsonl`` (lines split at ``\\n`` only; size, UTF-8, nesting, field types
and lone surrogates checked), so a line that is not a usable record becomes one record with
``load_error`` set naming its line number and the problem, and ends up in the rejects table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from parsers import LF_TYPES
from parsers.jsonl import JsonLine, parse_json_line, read_json_lines
from parsers.lf_type import AUTO, LfTypeError, infer_lf_type
from qgen.datasets.paths import rejected
from qgen.datasets.records import RawExample


def load_jsonl(path: str | Path, lf_type: str | None = None, source: str | None = None) -> Iterator[RawExample]:
    """One RawExample per non-blank line of the file at ``path``."""
    path = Path(path)
    source = source or path.stem
    with open(path, "rb") as handle:
        for line in read_json_lines(handle):
            yield to_example(line, lf_type, source)


def parse_line(line: str, fallback_id: str, lf_type: str | None, source: str, number: int = 0,
               unit: str = "row") -> RawExample:
    """One JSON text -> RawExample (with ``load_error`` when it is unusable), for a row of another
    file (Parquet) given as JSON text: ``number`` and ``unit`` say where it is in errors, ``fallback_id``
    is the id of a record without one."""
    parsed = parse_json_line(line, number, unit)
    ident = fallback_id if parsed.given_id in (None, "") else parsed.id
    return to_example(parsed, lf_type, source, ident, unit)


def to_example(line: JsonLine, lf_type: str | None, source: str, ident: str | None = None,
               unit: str = "line") -> RawExample:
    """A read line as a RawExample (id: ``ident`` or the line's), or a reject that names the line
    and the problem."""
    ident = ident or line.id
    if line.record is None:
        return _reject(ident, line.text, str(line.error), lf_type, source)
    return _example(line.record, ident, line.text, lf_type, source, f"{unit} {line.number}")


def _example(record: dict[str, Any], ident: str, raw: str, lf_type: str | None, source: str,
             where: str) -> RawExample:
    kind = record.get("lf_type") or lf_type
    if kind == AUTO:
        try:
            kind = infer_lf_type(record["lf"])
        except LfTypeError as err:
            return _reject(ident, raw, f"{where}: {err}", None, source)
    if kind not in LF_TYPES:
        return _reject(ident, raw, f"{where}: unknown or missing lf_type {kind!r} (sparql, sql, mr or da)",
                       lf_type, source)
    question = record.get("question")
    split = record.get("split") or ("train" if question else "unlabelled")
    return RawExample(ident, split, kind, record["lf"], question, source, raw,
                      names=dict(record.get("names") or {}), answers=[str(a) for a in record.get("answers") or []])


def _reject(ident: str, raw: str, why: str, lf_type: str | None, source: str) -> RawExample:
    return rejected(ident, "unlabelled", raw, why, lf_type=lf_type or "", source=source)
