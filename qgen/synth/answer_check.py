"""The round trip's ``answers`` rule for SQL over tables: run the parse, compare its answers.

A parse that is not the logical form token for token may still ask the same thing: "how many
festivals called varby midsummer are there ?" for ``SELECT COUNT("Visitors") ... WHERE "Festival" =
'Varby Midsummer'`` parses as a COUNT of another column over the same rows. Where the input came
with answers (the table sampler runs every query it draws) and the tables are at hand, such an
answer-equivalent parse counts.

A parse is a list of lowercased model tokens; it becomes a query over the tables again:
- its structure (selected column, aggregate, conditions, table) by ``qgen.lf_canonical.wikisql_structure``;
- the table and each column by their tokens as the logical form spells them
  (``qgen.table_context.column_tokens``): a name the parse does not spell exactly is not executable;
- each condition value: on a numeric column the number its tokens spell, else the column's cell
  whose tokens are the value's (the first such cell in table order when several are).
The query is then built and run as the sampler builds and runs its own (``build_sql``, ``run_sql``,
``answers_of_rows``). Its denotation is its answers (as a multiset) and the rows its conditions
select. A parse counts when it is the logical form but for the column a COUNT counts, its
denotation is the logical form's, and the logical form's answers are the input's: COUNT of one
column or another over the same rows, where neither column is NULL there, asks the same thing, and
no question can tell the two apart. Equal denotations alone are too weak on small tables (measured
on the demo's: 3 of the 8 pairs they added over ``exact`` failed the faithfulness audit): a question
that drops a condition can select the same single row ("the festival first held in 1990" for
``"City" = 'Eskholm' AND "First held" = 1990``), SUM and MAX agree over one row ("the average number
of visitors" for ``SUM``), and two columns can hold the same value in the one row selected ("losses"
for ``"Wins"`` where both are 3). A parse that cannot be turned back into a query, or whose query
fails (a table without rowids, a result past ``ROWS_LIMIT`` rows, a time limit), has no denotation:
it does not count.

SPARQL parses are not executed: entity names replace the entity ids in the model's tokens, so a
parse cannot be turned back into a query over the graph in general.
"""
from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from parsers.errors import LogicalFormError
from parsers.sql.wikisql import AGG_OPS, quote_identifier
from qgen.lf_canonical import wikisql_structure
from qgen.samplers.readonly import run_sql
from qgen.samplers.tables import (TableInfo, answers_of_rows, build_rows_sql, build_sql, connect_tables, describe_tables,
                                  literal_sql)
from qgen.table_context import column_tokens

ROWS_LIMIT = 10_000  # a query whose answers or selected rows run past this is not compared


@dataclass(frozen=True)
class Denotation:
    table: str  # as its tokens spell it
    answers: tuple[str, ...]  # sorted
    rows: tuple[int, ...]  # the rowids the conditions select, sorted


class TableAnswers:
    """Answers of parsed WikiSQL-shaped queries over the tables of a read-only SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, timeout_s: float = 2.0) -> None:
        self.conn, self.timeout_s = conn, timeout_s
        self.tables = {_joined(_table_tokens(t.name)): t for t in describe_tables(conn, timeout_s)}
        self._columns = {name: {_joined(column_tokens(c, i)): i for i, c in enumerate(t.columns)}
                         for name, t in self.tables.items()}
        self._cells: dict[tuple[str, int], dict[str, Any]] = {}  # (table, column) -> value tokens -> cell
        # run_sql sets a function and a progress handler on the connection per query: one query at a
        # time, whichever thread (a Dask worker's threads share the cached filter) asks
        self._lock = threading.Lock()

    @classmethod
    def from_paths(cls, paths: Sequence[str | Path]) -> "TableAnswers":
        """The tables ``qgen synthesize --from-tables`` reads: CSV/Parquet files or one SQLite database."""
        return cls(connect_tables(paths))

    def denotation(self, tokens: Sequence[str]) -> Denotation | None:
        """What a tokenized query denotes here, or None when it cannot be run (see the module docstring)."""
        structure = wikisql_structure(tokens)
        if structure is None or structure["table"] not in self.tables:
            return None
        with self._lock:
            try:
                return self._denotation(structure)
            except (LogicalFormError, sqlite3.Error):
                return None

    def _denotation(self, structure: dict) -> Denotation | None:
        table, columns = self.tables[structure["table"]], self._columns[structure["table"]]
        sel = columns.get(str(structure["sel"]))
        if sel is None:
            return None
        conds = []
        for column, op, value in structure["conds"]:
            index = columns.get(str(column))
            cell = None if index is None else self._value(table, structure["table"], index, value)
            if cell is None:
                return None
            conds.append((index, op, cell))
        agg = AGG_OPS[structure["agg"]]
        answers = run_sql(self.conn, build_sql(table, sel, agg, conds), self.timeout_s, max_rows=ROWS_LIMIT + 1)
        rows = run_sql(self.conn, build_rows_sql(table, conds), self.timeout_s, max_rows=ROWS_LIMIT + 1)
        if len(answers) > ROWS_LIMIT or len(rows) > ROWS_LIMIT:
            return None
        return Denotation(structure["table"], tuple(sorted(answers_of_rows(answers, agg))),
                          tuple(sorted(r[0] for r in rows)))

    def answer_equivalent(self, parse: Sequence[str], lf: Sequence[str], answers: Sequence[str]) -> bool:
        """Whether ``parse`` has ``lf``'s aggregate and conditions and denotes what ``lf`` does here,
        ``lf`` running to the input's ``answers`` (see the module docstring)."""
        if not answers:
            return False
        ours, theirs = wikisql_structure(parse), wikisql_structure(lf)
        if ours is None or theirs is None or {**ours, "sel": None} != {**theirs, "sel": None}:
            return False
        if ours["sel"] != theirs["sel"] and AGG_OPS[ours["agg"]] != "COUNT":
            return False
        wanted = self.denotation(lf)
        if wanted is None or wanted.answers != tuple(sorted(answers)):
            return False  # the tables are not those the input was sampled from
        return self.denotation(parse) == wanted

    def _value(self, table: TableInfo, key: str, column: int, value: str) -> Any:
        if table.numeric[column]:
            return _number(value)
        if (key, column) not in self._cells:
            cells: dict[str, Any] = {}
            self._cells[key, column] = cells  # a column that cannot be read stays empty: no value matches
            rows = run_sql(self.conn, f"SELECT DISTINCT {quote_identifier(table.columns[column])} FROM "
                                      f"{quote_identifier(table.name)}", self.timeout_s)
            for (cell,) in rows:
                if cell is not None:
                    cells.setdefault(value_tokens(cell), cell)
        return self._cells[key, column].get(value)


def value_tokens(value: Any) -> str:
    """A condition value as ``wikisql_structure`` reads it from a logical form's tokens."""
    from parsers.sql.tokenize import tokenize_sql

    tokens = tokenize_sql(f"SELECT {literal_sql(value)}", validate=False).tokens[1:]
    if len(tokens) >= 2 and tokens[0] == "'" and tokens[-1] == "'":
        tokens = tokens[1:-1]
    return _joined(tokens)


def _table_tokens(name: str) -> list[str]:
    from parsers.sql.tokenize import tokenize_sql

    tokens = tokenize_sql(f"SELECT x FROM {quote_identifier(name)}", validate=False).tokens
    return tokens[tokens.index("from") + 1:]


def _number(value: str) -> int | float | None:
    text = value.replace(" ", "")
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return None


def _joined(tokens: Sequence[str]) -> str:
    return " ".join(t.lower() for t in tokens if t.strip())
