"""A generic loader for SPARQL question datasets in JSON: LC-QuAD 1, LC-QuAD 2, QALD.

Where each field lives is a :class:`SparqlJsonFormat` (dotted paths into one record); presets cover
the released formats and :func:`detect_format` picks one from the data:
- LC-QuAD 1: a list of ``{"_id", "corrected_question", "sparql_query", ...}``;
- LC-QuAD 2: a list of ``{"uid", "question", "NNQT_question", "sparql_wikidata", "sparql_dbpedia18"}``
  (``question`` is sometimes null or ``"n/a"``: such records get question None);
- QALD: ``{"questions": [{"id", "question": [{"language", "string"}], "query": {"sparql"}, "answers"}]}``.
Record ids are ``{split}-{id}`` (QALD train and test both number from 1).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from qgen.datasets.paths import open_text, rejected, select_splits
from qgen.datasets.records import RawExample

SPLITS = ("train", "dev", "test")
LF_TYPE = "sparql"
# Question values that LC-QuAD 2 uses for "no question was written".
_NO_QUESTION = {"", "n/a", "[]", "none", "null"}


@dataclass(frozen=True)
class SparqlJsonFormat:
    """Field names/paths of one SPARQL JSON format; ``name`` is also the default ``source``."""

    name: str
    id_field: str
    question_field: str  # a string, or a QALD list of {"language", "string"}
    sparql_field: str  # dotted path, e.g. "query.sparql"
    records_key: str | None = None  # top-level key holding the record list; None: a top-level list
    answers_field: str | None = None  # QALD: a list of SPARQL JSON results
    language: str = "en"


LCQUAD1 = SparqlJsonFormat("lcquad1", "_id", "corrected_question", "sparql_query")
LCQUAD2_WIKIDATA = SparqlJsonFormat("lcquad2", "uid", "question", "sparql_wikidata")
LCQUAD2_DBPEDIA = SparqlJsonFormat("lcquad2_dbpedia", "uid", "question", "sparql_dbpedia18")
QALD = SparqlJsonFormat("qald", "id", "question", "query.sparql", "questions", "answers")
# Detection order: LC-QuAD 2 detects as its Wikidata query (pass LCQUAD2_DBPEDIA explicitly).
PRESETS = {f.name: f for f in (QALD, LCQUAD1, LCQUAD2_WIKIDATA, LCQUAD2_DBPEDIA)}


def get_path(record: Any, path: str) -> Any:
    """``record["a"]["b"]`` for ``"a.b"``; None where any step is missing."""
    value = record
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


class UnknownJsonError(ValueError):
    """A JSON file of none of the known SPARQL JSON formats; the message names the file and the options."""


def detect_format(data: Any) -> SparqlJsonFormat:
    """The preset whose record list and SPARQL field the parsed JSON ``data`` has."""
    for fmt in PRESETS.values():
        records = _records(data, fmt)
        if records and get_path(records[0], fmt.sparql_field) is not None:
            return fmt
    raise ValueError(f"cannot detect the SPARQL JSON format; pass one of {', '.join(PRESETS)} (--format; "
                     "--format webqsp for WebQSP, jsonl for JSON Lines, sparql-json with --json-fields for others)")


def split_of(path: Path) -> str | None:
    """The split a file name says: ``*train*`` -> train, ``*dev*``/``*valid*`` -> dev, ``*test*`` -> test."""
    name = path.name.lower()
    for split, marks in (("train", ("train",)), ("dev", ("dev", "valid")), ("test", ("test",))):
        if any(mark in name for mark in marks):
            return split
    return None


def load(
    data_dir: Path, split: str | None = None, fmt: SparqlJsonFormat | None = None, source: str | None = None
) -> Iterator[RawExample]:
    """Every ``*.json`` file in ``data_dir`` whose name names a split (others are ignored)."""
    files: dict[str, list[Path]] = {}
    for path in sorted(Path(data_dir).glob("*.json")):
        if split_of(path) is not None:
            files.setdefault(split_of(path), []).append(path)
    names = select_splits(split, SPLITS, "sparql_json") if split else [s for s in SPLITS if s in files]
    for name in names:
        if name not in files:
            raise FileNotFoundError(f"no *{name}*.json file in {data_dir}")
        for path in files[name]:
            yield from load_file(path, name, fmt, source)


def load_file(
    path: Path, split: str, fmt: SparqlJsonFormat | None = None, source: str | None = None
) -> Iterator[RawExample]:
    """One file's records; ``fmt`` None detects it (a ValueError if no preset fits)."""
    try:
        with open_text(Path(path)) as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:  # one reject that names the file, as for a file that is not JSON
        yield _error(f"{split}-{Path(path).name}", split, source or "sparql_json", "",
                     f"{Path(path).name} is not UTF-8 text ({exc.reason} at byte {exc.start})")
        return
    try:
        data = json.loads(text)
    except ValueError as exc:
        yield _error(f"{split}-{Path(path).name}", split, source or "sparql_json", text, f"file is not JSON: {exc}")
        return
    try:
        fmt = fmt or detect_format(data)
    except ValueError as exc:  # the file is named: a user may have meant JSON Lines, or another format
        raise UnknownJsonError(f"{path}: {exc}") from None
    source = source or fmt.name
    records = _records(data, fmt)
    if records is None:
        yield _error(f"{split}-{Path(path).name}", split, source, text, f"no record list in {Path(path).name}")
        return
    seen: set[str] = set()
    for index, record in enumerate(records):
        example = _record_example(record, fmt, split, source, index)
        if example.id in seen:
            example = replace(example, id=f"{example.id}#{index}")
        seen.add(example.id)
        yield example


def _record_example(record: Any, fmt: SparqlJsonFormat, split: str, source: str, index: int) -> RawExample:
    raw = json.dumps(record, ensure_ascii=False)
    if not isinstance(record, dict):
        return _error(f"{split}-{index}", split, source, raw, f"record is a {type(record).__name__}, not an object")
    record_id = record.get(fmt.id_field)
    example_id = f"{split}-{record_id if record_id not in (None, '') else index}"
    question = _question(get_path(record, fmt.question_field), fmt.language)
    sparql = get_path(record, fmt.sparql_field)
    if not isinstance(sparql, str) or not sparql.strip():
        return _error(example_id, split, source, raw, f"no SPARQL at {fmt.sparql_field!r}", question)
    answers = _answers(get_path(record, fmt.answers_field)) if fmt.answers_field else []
    return RawExample(
        id=example_id, split=split, lf_type=LF_TYPE, logical_form=sparql, question=question,
        source=source, raw=raw, answers=answers,
    )


def _question(value: Any, language: str) -> str | None:
    """A plain string, or the ``language`` entry of a QALD list; None for LC-QuAD 2's placeholders."""
    if isinstance(value, list):
        texts = [q.get("string") for q in value if isinstance(q, dict) and q.get("language") == language]
        value = texts[0] if texts else None
    if not isinstance(value, str) or value.strip().lower() in _NO_QUESTION:
        return None
    return value


def _answers(value: Any) -> list[str]:
    """Values of QALD's SPARQL JSON results (``results.bindings`` or ``boolean``)."""
    answers: list[str] = []
    for result in value if isinstance(value, list) else [value]:
        if not isinstance(result, dict):
            continue
        if isinstance(result.get("boolean"), bool):
            answers.append(str(result["boolean"]).lower())
        for binding in get_path(result, "results.bindings") or []:
            for cell in binding.values() if isinstance(binding, dict) else []:
                if isinstance(cell, dict) and cell.get("value") is not None:
                    answers.append(str(cell["value"]))
    return answers


def _records(data: Any, fmt: SparqlJsonFormat) -> list[Any] | None:
    """The record list: ``data[fmt.records_key]``, or ``data`` itself; None if it is not a list."""
    if fmt.records_key:
        data = data.get(fmt.records_key) if isinstance(data, dict) else None
    return data if isinstance(data, list) else None


def _error(
    example_id: str, split: str, source: str, raw: str, message: str, question: str | None = None
) -> RawExample:
    return rejected(example_id, split, raw, message, question, lf_type=LF_TYPE, source=source)
