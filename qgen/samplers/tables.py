"""Table sampler: WikiSQL-shaped SQL drawn from tables, kept when the answer is not empty.

``SELECT [agg] column FROM table WHERE column op value [AND ...]`` (Zhong et al. 2017): a draw
picks a table and a random witness row, a selected column and an aggregate (``MAX``/``MIN``/
``SUM``/``AVG`` only over numeric columns), and 1-3 conditions on other columns of the witness row
(``=`` for text; ``=``, ``>`` or ``<`` for numbers), builds the statement with sqlglot and runs it
through ``readonly.run_sql`` on a read-only SQLite connection with a time limit. Tables come from
CSV or Parquet files (an in-memory copy, switched to query-only) or a SQLite file (``mode=ro``).
A cell longer than ``max_value_chars`` is never written into a query nor kept as an answer (a
draw that would need it is ``unsampleable``); a source without a table that has rows is refused
with ``NoRowsError``.
"""
from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from sqlglot import exp

from parsers.errors import LogicalFormError
from parsers.sql.wikisql import AGG_OPS, COND_OPS, quote_identifier
from qgen.datasets.records import RawExample
from qgen.samplers import Sampler, sql_key
from qgen.samplers.readonly import open_sqlite_readonly, run_sql, sqlite_from_frames

_AGGREGATES = {"COUNT": exp.Count, "MAX": exp.Max, "MIN": exp.Min, "SUM": exp.Sum, "AVG": exp.Avg}
_OPERATORS = {"=": exp.EQ, ">": exp.GT, "<": exp.LT}
_NUMERIC_AGGREGATES = {"MAX", "MIN", "SUM", "AVG"}


class NoRowsError(LogicalFormError):
    """No table of the source has a row to draw from."""

    stage = "input"


@dataclass(frozen=True)
class TableInfo:
    name: str
    columns: tuple[str, ...]
    numeric: tuple[bool, ...]  # every non-NULL value is an integer or a real
    rows: int


@dataclass(frozen=True)
class TableSamplerConfig:
    seed: int = 0
    max_answers: int = 10  # keep queries with 1..K answer values
    timeout_s: float = 2.0
    max_value_chars: int = 1000  # longer cells are not used as condition values or answers
    aggregate_weights: Mapping[str, float] = field(
        default_factory=lambda: {"": 6.0, "COUNT": 1.0, "MAX": 1.0, "MIN": 1.0, "SUM": 0.5, "AVG": 0.5})
    condition_weights: tuple[float, ...] = (0.7, 0.22, 0.08)  # P(1, 2, 3 conditions)


def load_table_files(paths: Iterable[str | Path]) -> dict[str, Any]:
    """CSV / Parquet files as pandas DataFrames named by file stem (``name_2`` for a repeated stem)."""
    import pandas as pd

    frames: dict[str, Any] = {}
    for path in map(Path, paths):
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path)
        elif path.suffix.lower() in (".csv", ".tsv"):
            frame = _read_delimited(path, "\t" if path.suffix.lower() == ".tsv" else ",")
        else:
            raise ValueError(f"{path}: expected a .csv, .tsv or .parquet table (or use TableSampler.from_sqlite)")
        name, n = path.stem, 2
        while name in frames:
            name, n = f"{path.stem}_{n}", n + 1
        frames[name] = _integral_columns(frame.rename(columns=str))
    return frames


def _read_delimited(path: Path, sep: str) -> Any:
    """A CSV/TSV table whose columns are its header's, as written. pandas would turn a first field that rows
    have beyond the header into an index (a ragged file's values shifted into the wrong columns) and rename
    a repeated column ("Name.1", a column the file does not have): both are refused instead."""
    import csv
    import warnings

    import pandas as pd

    # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the first column's name
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
        header = next(csv.reader(handle, delimiter=sep), [])
    repeated = sorted({name for name in header if name and header.count(name) > 1})  # "" is pandas' "Unnamed: i"
    if repeated:
        raise ValueError(f"{path}: the header repeats column {', '.join(map(repr, repeated))}")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(path, sep=sep, index_col=False)
        except pd.errors.ParserWarning:
            raise ValueError(f"{path}: rows with more fields than the header's {len(header)} columns") from None


SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


TABLE_SUFFIXES = (".csv", ".tsv", ".parquet")


def table_files(paths: Iterable[str | Path]) -> list[Path]:
    """``--from-tables`` paths with each folder replaced by its CSV/TSV/Parquet files (name order): a shell's
    ``data/*.csv`` gives one path per file, which an option of one value cannot take, so a folder can."""
    files: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            files.append(path)
            continue
        found = sorted(f for f in path.iterdir() if f.is_file() and f.suffix.lower() in TABLE_SUFFIXES)
        if not found:
            raise ValueError(f"{path}: a folder without .csv, .tsv or .parquet tables")
        files.extend(found)
    return files


def connect_tables(paths: Iterable[str | Path]) -> sqlite3.Connection:
    """A read-only connection to the tables of ``--from-tables``: one SQLite database file, or
    CSV/Parquet files (or folders of them) copied into memory."""
    paths = table_files(paths)
    if len(paths) == 1 and Path(paths[0]).suffix in SQLITE_SUFFIXES:
        return open_sqlite_readonly(paths[0])
    return sqlite_from_frames(load_table_files(paths))


def _integral_columns(frame: Any) -> Any:
    """Float columns that only hold whole numbers and NaN (an integer column with gaps, as pandas
    reads it) become nullable integers, so that values are written ``3``, not ``3.0``."""
    for name in frame.columns:
        column = frame[name]
        if column.dtype.kind == "f" and column.notna().any():
            values = column.dropna()
            if (values == values.round()).all() and values.abs().max() < 2**53:
                frame[name] = column.astype("Int64")
    return frame


def describe_tables(conn: sqlite3.Connection, timeout_s: float = 10.0) -> list[TableInfo]:
    """Every table of ``conn`` (name order) with its columns, numeric columns and row count."""
    names = [r[0] for r in run_sql(conn, "SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND name NOT LIKE 'sqlite_%' ORDER BY name", timeout_s)]
    tables = []
    for name in names:
        cursor = conn.execute(f"SELECT * FROM {quote_identifier(name)} LIMIT 0")  # column names only
        columns = tuple(d[0] for d in cursor.description)
        cursor.close()
        numeric = tuple(_is_numeric(conn, name, c, timeout_s) for c in columns)
        rows = run_sql(conn, f"SELECT COUNT(*) FROM {quote_identifier(name)}", timeout_s)[0][0]
        tables.append(TableInfo(name, columns, numeric, rows))
    return tables


def _is_numeric(conn: sqlite3.Connection, table: str, column: str, timeout_s: float) -> bool:
    col, tab = quote_identifier(column), quote_identifier(table)
    sql = (f"SELECT SUM(typeof({col}) IN ('integer', 'real')), SUM(typeof({col}) NOT IN "
           f"('integer', 'real', 'null')) FROM {tab}")
    try:
        good, bad = run_sql(conn, sql, timeout_s)[0]
    except LogicalFormError:  # too slow, or a value too large to read: the draws that read it fail
        return False
    return bool(good) and not bad


class TableSampler(Sampler):
    """Seeded sampler of WikiSQL-shaped queries over the tables of a read-only SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, config: TableSamplerConfig | None = None) -> None:
        self.conn = conn
        self.config = config or TableSamplerConfig()
        described = describe_tables(conn, self.config.timeout_s)
        self.tables = [t for t in described if t.rows and t.columns]
        if not self.tables:
            empty = [t.name for t in described]
            raise NoRowsError("the database has no tables" if not empty else
                              f"table {empty[0]} has no rows" if len(empty) == 1 else
                              f"tables {', '.join(empty)} have no rows")
        super().__init__(self.config.seed)

    @classmethod
    def from_files(cls, paths: Iterable[str | Path], config: TableSamplerConfig | None = None) -> "TableSampler":
        """CSV / Parquet tables, copied into an in-memory database that is then query-only."""
        return cls(sqlite_from_frames(load_table_files(paths)), config)

    @classmethod
    def from_sqlite(cls, path: str | Path, config: TableSamplerConfig | None = None) -> "TableSampler":
        return cls(open_sqlite_readonly(path), config)

    def draw(self) -> RawExample | None:
        """One draw; returns the record if it was kept (its outcome is recorded in ``stats``)."""
        index, rng = self.stats.drawn, self.rng
        table = self.tables[rng.randrange(len(self.tables))]
        try:
            row = run_sql(self.conn, f"SELECT * FROM {quote_identifier(table.name)} LIMIT 1 OFFSET "
                          f"{rng.randrange(table.rows)}", self.config.timeout_s)[0]
        except (LogicalFormError, IndexError):
            return self._outcome("errors")
        spec = self._draw_spec(table, row)
        if spec is None:
            return self._outcome("unsampleable")
        sql = build_sql(table, *spec)
        try:
            key = sql_key(sql)
        except LogicalFormError as error:  # e.g. column names too long for a logical form
            return self._failed(error)
        if not self._first_time(key):
            return None
        try:
            rows = run_sql(self.conn, sql, self.config.timeout_s, max_rows=self.config.max_answers + 1)
        except LogicalFormError as error:
            return self._failed(error)
        answers = answers_of_rows(rows, spec[1])
        if not answers:
            return self._outcome("no_answer")
        if len(answers) > self.config.max_answers:
            return self._outcome("too_many_answers")
        if any(len(a) > self.config.max_value_chars for a in answers):
            return self._outcome("unsampleable")
        self.stats.add("kept")
        sel, agg, conds = spec
        wikisql = {"sel": sel, "agg": AGG_OPS.index(agg), "conds": [[c, COND_OPS.index(op), v] for c, op, v in conds]}
        raw = {"sampler": "table", "seed": self.config.seed, "draw": index, "table": table.name,
               "header": list(table.columns), "sql": wikisql}
        return RawExample(
            id=f"table-{self.config.seed}-{index:07d}", split="synthetic", lf_type="sql", logical_form=sql,
            question=None, source="table_sampler", raw=json.dumps(raw, ensure_ascii=False), answers=answers,
        )

    def _draw_spec(self, table: TableInfo, row: tuple) -> tuple[int, str, list[tuple[int, str, Any]]] | None:
        rng, width = self.rng, len(table.columns)
        sel = rng.randrange(width)
        weights = {a: w for a, w in self.config.aggregate_weights.items()
                   if a not in _NUMERIC_AGGREGATES or table.numeric[sel]}
        agg = rng.choices(list(weights), list(weights.values()))[0]
        usable = [i for i in range(width) if i != sel and _usable(row[i], self.config.max_value_chars)]
        if not usable:
            return None
        counts = self.config.condition_weights[: len(usable)]
        chosen = rng.sample(usable, rng.choices(range(1, len(counts) + 1), counts)[0])
        conds = []
        for i in chosen:
            numeric = table.numeric[i] and not isinstance(row[i], str)
            conds.append((i, rng.choice(("=", ">", "<")) if numeric else "=", row[i]))
        return sel, agg, conds



def build_sql(table: TableInfo, sel: int, agg: str, conds: list[tuple[int, str, Any]]) -> str:
    """The SQLite text of one WikiSQL-shaped query, built with sqlglot (identifiers always quoted)."""
    selected: exp.Expression = _AGGREGATES[agg](this=_column(table, sel)) if agg else _column(table, sel)
    return _query(table, selected, conds)


def build_rows_sql(table: TableInfo, conds: list[tuple[int, str, Any]]) -> str:
    """The SQLite text that lists the rowids of the rows a query's conditions select."""
    return _query(table, exp.column("rowid"), conds)


def _column(table: TableInfo, i: int) -> exp.Column:
    return exp.Column(this=exp.to_identifier(table.columns[i], quoted=True))


def _query(table: TableInfo, selected: exp.Expression, conds: list[tuple[int, str, Any]]) -> str:
    query = exp.select(selected).from_(exp.Table(this=exp.to_identifier(table.name, quoted=True)))
    where = [_OPERATORS[op](this=_column(table, i), expression=_literal(v)) for i, op, v in conds]
    return query.where(exp.and_(*where)).sql(dialect="sqlite") if where else query.sql(dialect="sqlite")


def answers_of_rows(rows: list[tuple], agg: str) -> list[str]:
    """A query's answers as the corpus keeps them: the first column's values as text, without NULLs
    (and without a COUNT of 0, which answers nothing)."""
    return [_text(r[0]) for r in rows if r and r[0] is not None and not (agg == "COUNT" and r[0] == 0)]


def literal_sql(value: Any) -> str:
    """A condition value as the sampler writes it into a query (SQLite text)."""
    return _literal(value).sql(dialect="sqlite")


def _literal(value: Any) -> exp.Literal:
    if isinstance(value, str):
        return exp.Literal.string(value)
    return exp.Literal.number(repr(value) if isinstance(value, float) else str(value))


def _usable(value: Any, max_chars: int) -> bool:
    """A condition value the query text can hold exactly: text up to ``max_chars``, an integer, a
    finite real."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return len(value) <= max_chars
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
