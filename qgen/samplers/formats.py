"""``--format``: a file of logical forms in a named format, wherever it lies.

Without ``--format`` (``auto``) the file name decides: ``.jsonl``/``.ndjson`` JSON Lines, ``.parquet``
Parquet, ``.json`` one of the SPARQL JSON datasets (detected from the data), anything else text, one
logical form a line. The public datasets' own formats are read from any path by name:

- ``webqsp``: a ``WebQSP.*.json`` file (every parse; ``*.partial.json`` as partial);
- ``wikisql``: a questions ``.jsonl`` with its ``.tables.jsonl`` (or ``tables_columns.json``) beside it;
- ``lcquad1``, ``lcquad2``, ``lcquad2_dbpedia``, ``qald``: the released JSON files;
- ``sparql-json``: any JSON list of records with a SPARQL field, its field names given by
  ``--json-fields id=...,question=...,sparql=...[,records=...][,answers=...]`` (dotted paths).

A file's split is what its name says (``*train*``, ``*dev*``/``*valid*``, ``*test*``), else ``split``
(default ``test``: these are inputs, not training data, unless a name says so).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from qgen.datasets import sparql_json
from qgen.datasets.records import RawExample

AUTO = "auto"
DETECT = "sparql-json-detect"  # auto on a .json file: one of the SPARQL JSON presets, told from the data
FILE_FORMATS = ("jsonl", "parquet", "text")
DATASET_FORMATS = ("webqsp", "wikisql", *sparql_json.PRESETS, "sparql-json")
FORMATS = (AUTO, *FILE_FORMATS, *DATASET_FORMATS)
FIELD_KEYS = {"id": "id_field", "question": "question_field", "sparql": "sparql_field", "records": "records_key",
              "answers": "answers_field"}


class FormatError(ValueError):
    """A ``--format`` or ``--json-fields`` that cannot be used: the message says which and why."""


def check_format(fmt: str, json_fields: str | None = None) -> sparql_json.SparqlJsonFormat | None:
    """Refuse an unknown format, or field names without the generic format; the generic format's fields."""
    if fmt not in FORMATS:
        raise FormatError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if (fmt == "sparql-json") != (json_fields is not None):
        raise FormatError("--json-fields goes with --format sparql-json, and --format sparql-json needs it "
                          "(id=FIELD,question=FIELD,sparql=FIELD[,records=KEY][,answers=FIELD])")
    return None if json_fields is None else parse_json_fields(json_fields)


def parse_json_fields(text: str) -> sparql_json.SparqlJsonFormat:
    """``id=_id,question=q.text,sparql=query`` -> the generic SPARQL JSON format with those fields."""
    fields: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in FIELD_KEYS or not value.strip():
            raise FormatError(f"--json-fields expects KEY=FIELD items with KEY one of {', '.join(FIELD_KEYS)}, "
                              f"got {item!r}")
        fields[FIELD_KEYS[key.strip()]] = value.strip()
    missing = [k for k in ("id", "question", "sparql") if FIELD_KEYS[k] not in fields]
    if missing:
        raise FormatError(f"--json-fields needs {', '.join(f'{k}=FIELD' for k in missing)} too")
    return sparql_json.SparqlJsonFormat(name="sparql_json", **fields)


def read_format(path: str | Path, fmt: str, split: str | None = None,
                fields: sparql_json.SparqlJsonFormat | None = None) -> Iterator[RawExample]:
    """The records of one file in a public dataset's format (``DATASET_FORMATS``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    split = sparql_json.split_of(path) or split or "test"
    if fmt == "webqsp":
        from qgen.datasets import webqsp

        return webqsp.load_file(path, split)
    if fmt == "wikisql":
        from qgen.datasets import wikisql

        return wikisql.load_file(path, split)
    if fmt == "sparql-json":
        return sparql_json.load_file(path, split, fields or check_format(fmt))
    if fmt in sparql_json.PRESETS:
        return sparql_json.load_file(path, split, sparql_json.PRESETS[fmt])
    if fmt == DETECT:
        return sparql_json.load_file(path, split)
    raise FormatError(f"{fmt!r} is not a dataset format ({', '.join(DATASET_FORMATS)})")
