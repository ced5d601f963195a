"""Tokenize a stream of JSON Lines, one result line per input line, whatever the input holds.

Input lines: ``{"id": ..., "lf": ..., "names": {id: name}}`` (``names`` optional).
Output: ``{"id": ..., "tokens": [...]}`` or ``{"id": ..., "error": "..."}``. A bad line never stops
the stream: it gets an error line naming what is wrong.
"""
from __future__ import annotations

import json
from typing import Iterable, Iterator, Mapping

from parsers import tokenize_lf
from parsers.errors import LogicalFormError


def tokenize_json_lines(lines: Iterable[str], lf_type: str, names: Mapping[str, str] | None = None,
                        validate: bool = True, dialect: str = "sqlite") -> Iterator[dict]:
    """Yield one result dict per non-blank input line (``names`` apply to every line)."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        yield tokenize_json_line(line, number, lf_type, names or {}, validate, dialect)


def tokenize_json_line(line: str, number: int, lf_type: str, names: Mapping[str, str],
                       validate: bool = True, dialect: str = "sqlite") -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        return {"id": None, "error": f"line {number} is not JSON: {err.msg} at column {err.colno}"}
    if not isinstance(record, dict):
        return {"id": None, "error": f"line {number} is a JSON {type(record).__name__}, expected an object"}
    ident = record.get("id")
    lf = record.get("lf")
    line_names = record.get("names") or {}
    if not isinstance(lf, str):
        return {"id": ident, "error": f"line {number} has no 'lf' string"}
    if not isinstance(line_names, dict):
        return {"id": ident, "error": f"line {number}: 'names' must be an object of id -> name"}
    try:
        parsed = tokenize_lf(lf, lf_type, names={**names, **line_names}, validate=validate, dialect=dialect)
    except LogicalFormError as err:
        return {"id": ident, "error": str(err)}
    return {"id": ident, "tokens": parsed.tokens}
