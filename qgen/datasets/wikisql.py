"""WikiSQL (Zhong, Xiong & Socher 2017): structured SQL dicts rendered to SQL strings with real headers.

Two layouts are read (``shared/datasets/wikisql/SOURCE.md``):
- the official release: ``{split}.jsonl`` beside ``{split}.tables.jsonl`` (``{"id", "header", ...}``);
- the shared copy: ``{dev,test}.jsonl`` beside ``tables_columns.json``, a header map keyed by the
  SQLite table name ``'table_' + table_id.replace('-', '_')``.
The official train split is absent from the shared copy. Protocol (datasets/README.md): train on the
official test split minus a table-disjoint 10% (:func:`table_disjoint_split`), report on dev.
"""
from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from pathlib import Path

from parsers.errors import LogicalFormError
from parsers.sql.wikisql import render_wikisql, wikisql_table_name
from qgen.datasets.paths import open_text, rejected, require_file, select_splits
from qgen.datasets.records import RawExample

SOURCE = "wikisql"
SPLITS = ("train", "dev", "test")
LF_TYPE = "sql"
HEADER_MAP = "tables_columns.json"


def available_splits(data_dir: Path) -> list[str]:
    """The splits whose question file is present in ``data_dir``."""
    return [s for s in SPLITS if (Path(data_dir) / f"{s}.jsonl").is_file()]


def load(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """Every question of ``{split}.jsonl`` (every present split for None), id ``{split}-{line}``."""
    data_dir = Path(data_dir)
    names = select_splits(split, SPLITS, SOURCE) if split else available_splits(data_dir)
    if not names:
        raise FileNotFoundError(f"WikiSQL: no {{train,dev,test}}.jsonl in {data_dir}")
    header_map: dict[str, list[str]] | None = None
    for name in names:
        questions = require_file([data_dir / f"{name}.jsonl"], f"WikiSQL {name}")
        official = data_dir / f"{name}.tables.jsonl"
        if official.is_file():
            headers = _read_official_tables(official)
        else:
            if header_map is None:
                what = f"WikiSQL {name} headers ({official.name} or {HEADER_MAP})"
                path = require_file([data_dir / HEADER_MAP], what)
                header_map = _read_header_map(path)
            headers = header_map
        with open_text(questions) as handle:
            for number, line in enumerate(handle):
                if line.strip():
                    yield _line_example(line.rstrip("\r\n"), name, number, headers)


def load_file(path: str | Path, split: str) -> Iterator[RawExample]:
    """Every question of one WikiSQL questions file anywhere (``--format wikisql``), its headers from the
    ``<name>.tables.jsonl`` beside it (the official release's layout), else a ``tables_columns.json`` there."""
    path = Path(path)
    official = path.with_name(path.name[: -len(".jsonl")] + ".tables.jsonl") if path.name.endswith(".jsonl") else None
    if official is not None and official.is_file():
        headers = _read_official_tables(official)
    else:
        where = f"{official.name} or {HEADER_MAP}" if official is not None else HEADER_MAP
        headers = _read_header_map(require_file([path.with_name(HEADER_MAP)], f"WikiSQL headers ({where}) beside {path}"))
    with open_text(path) as handle:
        for number, line in enumerate(handle):
            if line.strip():
                yield _line_example(line.rstrip("\r\n"), split, number, headers)


def table_id(example: RawExample) -> str | None:
    """The WikiSQL table id kept in ``raw`` (None if the record is not readable)."""
    try:
        record = json.loads(example.raw)
    except ValueError:
        return None
    value = record.get("table_id") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def table_disjoint_split(
    examples: Iterable[RawExample], fraction: float = 0.1, seed: int = 13
) -> tuple[list[RawExample], list[RawExample]]:
    """Split into (train, valid) so that no table id is in both; valid holds about ``fraction``.

    Tables are drawn in a seeded random order until valid holds at least ``fraction`` of the
    examples; the order of examples within each part is kept. Unreadable records go to train.
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction must be in [0, 1), got {fraction}")
    items = list(examples)
    by_table: dict[str, int] = {}
    for example in items:
        key = table_id(example)
        if key is not None:
            by_table[key] = by_table.get(key, 0) + 1
    tables = sorted(by_table)
    random.Random(seed).shuffle(tables)
    target, held, valid_tables = fraction * len(items), 0, set()
    for key in tables:
        if held >= target:
            break
        valid_tables.add(key)
        held += by_table[key]
    train = [e for e in items if table_id(e) not in valid_tables]
    valid = [e for e in items if table_id(e) in valid_tables]
    return train, valid


def wikisql_headers(data_dir: str | Path | None = None) -> dict[str, list[str]]:
    """SQLite table name -> header: the shared copy's header map (``tables_columns.json``), else the
    official release's ``{split}.tables.jsonl`` files."""
    from qgen.datasets.registry import dataset_folder

    folder = Path(dataset_folder("wikisql", data_dir))
    if (folder / HEADER_MAP).is_file():
        return _read_header_map(folder / HEADER_MAP)
    headers: dict[str, list[str]] = {}
    for split in SPLITS:
        official = folder / f"{split}.tables.jsonl"
        if official.is_file():
            headers.update(_read_official_tables(official))
    if not headers:
        raise FileNotFoundError(f"no WikiSQL headers in {folder} ({HEADER_MAP} or <split>.tables.jsonl)")
    return headers


def _read_header_map(path: Path) -> dict[str, list[str]]:
    with open_text(path) as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object of table name -> header list")
    return {k: v for k, v in data.items() if isinstance(v, list)}


def _read_official_tables(path: Path) -> dict[str, list[str]]:
    """``{split}.tables.jsonl`` -> SQLite table name -> header (unreadable lines are skipped:
    the questions on those tables then get a load_error)."""
    headers: dict[str, list[str]] = {}
    with open_text(path) as handle:
        for line in handle:
            try:
                table = json.loads(line)
                headers[wikisql_table_name(table["id"])] = list(table["header"])
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
    return headers


def _line_example(line: str, split: str, number: int, headers: dict[str, list[str]]) -> RawExample:
    example_id = f"{split}-{number}"
    try:
        record = json.loads(line)
    except ValueError as exc:
        return _error(example_id, split, line, f"line is not JSON: {exc}")
    if not isinstance(record, dict):
        return _error(example_id, split, line, f"line is a {type(record).__name__}, not an object")
    question = record.get("question")
    question = question if isinstance(question, str) else None
    table = record.get("table_id")
    sql = record.get("sql")
    if not isinstance(table, str) or not isinstance(sql, dict):
        return _error(example_id, split, line, "record lacks a table_id string or an sql object", question)
    try:
        header = headers.get(wikisql_table_name(table))
        if header is None:
            return _error(example_id, split, line, f"table {table!r} has no header in the tables file", question)
        rendered = render_wikisql(sql, header)
    except LogicalFormError as exc:
        return _error(example_id, split, line, str(exc), question)
    return RawExample(
        id=example_id, split=split, lf_type=LF_TYPE, logical_form=rendered, question=question,
        source=SOURCE, raw=line,
    )


def _error(example_id: str, split: str, raw: str, message: str, question: str | None = None) -> RawExample:
    return rejected(example_id, split, raw, message, question, lf_type=LF_TYPE, source=SOURCE)
