"""Logical forms a user already has, as JSON Lines: ``{"id", "lf", "lf_type", "names"?, "question"?}``.

``lf_type`` defaults to the loader's argument; ``split`` defaults to ``train`` when a question is
given and ``unlabelled`` otherwise. A line that is not a JSON object with an ``lf`` becomes a
record with ``load_error`` set, so that it ends up in the rejects table.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from qgen.datasets.paths import rejected
from qgen.datasets.records import RawExample


def load_jsonl(path: str | Path, lf_type: str | None = None, source: str | None = None) -> Iterator[RawExample]:
    path = Path(path)
    source = source or path.stem
    with open(path, encoding="utf-8", errors="replace") as handle:
        for index, line in enumerate(handle):
            if not line.strip():
                continue
            yield parse_line(line.rstrip("\n"), f"{source}-{index}", lf_type, source)


def parse_line(line: str, fallback_id: str, lf_type: str | None, source: str) -> RawExample:
    """One JSON line -> RawExample (with ``load_error`` when the line is unusable)."""
    def reject(why: str, ident: str = fallback_id) -> RawExample:
        return rejected(ident, "unlabelled", line, why, lf_type=lf_type or "", source=source)

    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        return reject(f"JSONDecodeError: line is not JSON ({err.msg} at column {err.colno})")
    if not isinstance(record, dict):
        return reject(f"expected a JSON object, got {type(record).__name__}")
    ident = str(record.get("id", fallback_id))
    lf, kind = record.get("lf"), record.get("lf_type", lf_type)
    names = record.get("names") or {}
    if not isinstance(lf, str):
        return reject("the record has no 'lf' string", ident)
    if kind not in ("sparql", "sql", "mr", "da"):
        return reject(f"unknown or missing lf_type {kind!r} (sparql, sql, mr or da)", ident)
    if not isinstance(names, dict) or not all(isinstance(v, str) for v in names.values()):
        return reject("'names' must map entity ids to name strings", ident)
    question = record.get("question")
    split = record.get("split") or ("train" if question else "unlabelled")
    answers = [str(a) for a in record.get("answers") or []]
    return RawExample(ident, str(split), kind, lf, question, source, line,
                      names={str(k): v for k, v in names.items()}, answers=answers)
