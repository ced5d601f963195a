"""Logical forms a user already has: JSON Lines, Parquet with the same columns, plain text (one logical
form a line), or a named dataset.

Columns (JSON keys): ``id``, ``lf``, ``lf_type`` (sparql | sql | mr | da), optional ``names``
(entity id -> name: a JSON object, a Parquet map or struct, or a JSON string), ``question``,
``split``, ``answers``. Parquet rows go through the same checks as JSON lines
(``qgen.datasets.jsonl.parse_line``): a bad row becomes a ``RawExample`` with ``load_error`` set
(and the row as JSON in ``raw``), never an exception. A file that cannot be read at all raises.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from qgen.datasets.jsonl import load_jsonl, parse_line
from qgen.datasets.sparql_json import SparqlJsonFormat
from qgen.datasets.records import RawExample
from qgen.datasets.registry import DATASETS, load_dataset

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")


def read_logical_forms(path: str | Path, lf_type: str | None = None, data_dir: str | Path | None = None,
                       split: str | None = None, fmt: str = "auto",
                       fields: SparqlJsonFormat | None = None) -> Iterator[RawExample]:
    """Records from a file in ``fmt`` (``qgen.samplers.formats``; ``auto``: by its name), or from a
    dataset name (``webqsp``, ...).

    ``lf_type`` is the default for records without one; ``data_dir`` applies to a dataset name,
    ``split`` to a dataset name (the split to read) or a dataset-format file (its split where the
    file name does not say).
    """
    from qgen.samplers.formats import DATASET_FORMATS, DETECT, read_format

    text = str(path)
    if fmt in DATASET_FORMATS:
        return read_format(path, fmt, split, fields)
    if fmt == "auto" and text in DATASETS and not Path(text).exists():
        return load_dataset(text, data_dir, split)
    path = Path(path)
    suffix = path.suffix.lower()
    if fmt == "jsonl" or (fmt == "auto" and suffix in JSONL_SUFFIXES):
        return load_jsonl(path, lf_type)
    if fmt == "parquet" or (fmt == "auto" and suffix in PARQUET_SUFFIXES):
        return load_parquet(path, lf_type)
    if fmt == "auto" and suffix == ".json" and path.is_file():  # LC-QuAD or QALD, told from the data
        return load_jsonl(path, lf_type) if _json_lines(path) else read_format(path, DETECT, split)
    if fmt == "text" or path.is_file():
        return load_text(path, lf_type)
    known = ", ".join(sorted(DATASETS))
    raise ValueError(f"{path}: no such file, and not a dataset name ({known}); give a .jsonl, .parquet or text "
                     "file (one logical form a line)")


def _json_lines(path: Path) -> bool:
    """Whether a ``.json`` file holds JSON Lines, not one JSON document: its first line is a whole JSON
    object and either says ``lf`` or more lines follow (a dataset's JSON is one list or one object, and
    an object written on one line is the whole file)."""
    with open(path, "rb") as handle:
        lines = [line for line in (handle.readline(1 << 20) for _ in range(64)) if line.strip()][:2]
    try:
        first = json.loads(lines[0]) if lines else None
    except ValueError:  # "{" or "[" alone on the line, or not JSON at all: one document (or a reject) it is
        return False
    return isinstance(first, dict) and ("lf" in first or len(lines) > 1)


def load_text(path: str | Path, lf_type: str | None = None) -> Iterator[RawExample]:
    """One logical form a line, its type told from its text under ``auto`` (a line that is a JSON object
    is read as a record); a line that cannot be read (too long, not UTF-8) is a record with ``load_error``."""
    from parsers.jsonl import read_text_lines

    path = Path(path)
    with open(path, "rb") as handle:
        for line in read_text_lines(handle):
            ident = f"line-{line.number}"
            text = line.text if line.text.lstrip().startswith("{") else json.dumps({"id": ident, "lf": line.text})
            if line.error is not None:  # the text is a shortened, printable copy: nothing to tokenize
                text = json.dumps({"id": ident, "lf": ""})
                yield replace(parse_line(text, ident, lf_type, path.stem, line.number, "line"),
                              logical_form="", load_error=str(line.error))
                continue
            yield parse_line(text, ident, lf_type, path.stem, line.number, "line")


class MissingColumnError(ValueError):
    """A Parquet input without the column of the logical forms."""


def load_parquet(path: str | Path, lf_type: str | None = None, source: str | None = None,
                 batch_rows: int = 10_000) -> Iterator[RawExample]:
    """Records from a Parquet file with the JSON Lines columns, streamed in row batches."""
    import pyarrow.parquet as pq

    path = Path(path)
    source = source or path.stem
    index = 0
    with pq.ParquetFile(path) as handle:
        columns = handle.schema_arrow.names
        if "lf" not in columns:  # said once for the file, not once a row
            raise MissingColumnError(f"{path}: no 'lf' column (it has {', '.join(columns) or 'none'}); a Parquet "
                                     "input holds id, lf, lf_type?, names?")
        for batch in handle.iter_batches(batch_size=batch_rows):
            for row in batch.to_pylist():
                yield parse_line(_row_json(row), f"{source}-{index}", lf_type, source, index)
                index += 1


def _row_json(row: dict[str, Any]) -> str:
    """A Parquet row as the JSON line ``parse_line`` reads (maps and JSON-string names unpacked;
    NULL cells left out, so that the defaults for a missing id or lf_type apply)."""
    row = {k: v for k, v in row.items() if v is not None}
    names = row.get("names")
    if isinstance(names, list) and all(isinstance(p, (tuple, list)) and len(p) == 2 for p in names):
        row["names"] = {str(k): v for k, v in names}  # a Parquet map arrives as (key, value) pairs
    elif isinstance(names, dict):
        row["names"] = {k: v for k, v in names.items() if v is not None}  # a struct: absent keys are None
    elif isinstance(names, str) and names.strip():
        try:
            row["names"] = json.loads(names)
        except json.JSONDecodeError:
            pass  # left as a string: parse_line rejects the row with a reason
    elif isinstance(names, str):
        row["names"] = {}
    return json.dumps(row, ensure_ascii=False, default=str)
