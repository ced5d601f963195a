"""Table sampler: CSV, Parquet and SQLite inputs, determinism, non-empty answers, WikiSQL shape."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from parsers import tokenize_lf
from parsers.errors import UnsupportedQueryError
from parsers.sql.wikisql import render_wikisql
from qgen.samplers import sql_key
from qgen.samplers.readonly import QueryTimeoutError, run_sql
from qgen.samplers.tables import TableSampler, TableSamplerConfig

CSV = Path(__file__).resolve().parents[2] / "fixtures" / "samplers" / "lighthouses.csv"


@pytest.fixture()
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "lighthouses.parquet"
    pd.read_csv(CSV).to_parquet(path)
    return path


@pytest.fixture()
def sqlite_db(tmp_path: Path) -> Path:
    path = tmp_path / "tables.sqlite"
    with sqlite3.connect(path) as conn:
        pd.read_csv(CSV).to_sql("lighthouses", conn, index=False)
        conn.execute("CREATE TABLE empty_table (a TEXT)")
    conn.close()
    return path


def _check_records(records: list, sampler: TableSampler, k: int) -> None:
    assert records and sampler.stats.accounted()
    keys = [sql_key(r.logical_form) for r in records]
    assert len(keys) == len(set(keys))
    for record in records:
        assert record.lf_type == "sql" and record.split == "synthetic" and record.source == "table_sampler"
        assert 1 <= len(record.answers) <= k
        assert record.logical_form.startswith("SELECT ") and " FROM \"lighthouses\" WHERE " in record.logical_form
        tokenize_lf(record.logical_form, "sql")  # valid: one SELECT that sqlglot parses
        raw = json.loads(record.raw)
        # The WikiSQL dict stored in raw renders to the same query as the sampled text.
        assert sql_key(render_wikisql(raw["sql"], raw["header"], raw["table"])) == sql_key(record.logical_form)
        assert 1 <= len(raw["sql"]["conds"]) <= 3


def test_csv_tables(tmp_path: Path) -> None:
    sampler = TableSampler.from_files([CSV], TableSamplerConfig(seed=1, max_answers=4))
    records = list(sampler.sample(25))
    _check_records(records, sampler, 4)
    assert sampler.stats.executed == sampler.stats.kept + sampler.stats.no_answer + sampler.stats.too_many_answers
    assert any(r.logical_form.startswith(("SELECT MAX(", "SELECT MIN(", "SELECT COUNT(")) for r in records)


def test_parquet_and_sqlite_tables(parquet: Path, sqlite_db: Path) -> None:
    for sampler in (TableSampler.from_files([parquet], TableSamplerConfig(seed=2)),
                    TableSampler.from_sqlite(sqlite_db, TableSamplerConfig(seed=2))):
        assert [t.name for t in sampler.tables] == ["lighthouses"]  # the empty table is not drawn from
        _check_records(list(sampler.sample(15)), sampler, 10)


def test_same_seed_same_records_and_integer_columns_stay_integers() -> None:
    first = list(TableSampler.from_files([CSV], TableSamplerConfig(seed=9)).sample(20))
    second = list(TableSampler.from_files([CSV], TableSamplerConfig(seed=9)).sample(20))
    assert first == second
    sampler = TableSampler.from_files([CSV])
    keepers = next(t for t in sampler.tables if t.name == "lighthouses")
    assert keepers.numeric == (False, False, True, True, True, False)
    assert run_sql(sampler.conn, 'SELECT "Keepers" FROM "lighthouses" WHERE "Name" = \'Gull Point\'') == [(3,)]


def test_sampler_connection_refuses_writes_and_ddl(sqlite_db: Path) -> None:
    for sampler in (TableSampler.from_files([CSV]), TableSampler.from_sqlite(sqlite_db)):
        with pytest.raises(UnsupportedQueryError):
            run_sql(sampler.conn, 'DELETE FROM "lighthouses"')
        with pytest.raises(sqlite3.OperationalError):
            sampler.conn.execute('DELETE FROM "lighthouses"')  # even when tried directly
        with pytest.raises(sqlite3.OperationalError):
            sampler.conn.execute("CREATE TABLE t (a INT)")
        assert run_sql(sampler.conn, 'SELECT COUNT(*) FROM "lighthouses"') == [(12,)]


def test_slow_query_times_out_as_typed_error() -> None:
    sampler = TableSampler.from_files([CSV])
    slow = ('WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) '
            'SELECT COUNT(*) FROM c, "lighthouses"')
    with pytest.raises(QueryTimeoutError):
        run_sql(sampler.conn, slow, timeout_s=0.05)


def test_a_timed_out_draw_is_counted_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    sampler = TableSampler.from_files([CSV], TableSamplerConfig(seed=3, timeout_s=0.05))
    import qgen.samplers.tables as tables

    real = tables.run_sql

    def slow_on_sampled(conn, sql, timeout_s=2.0, max_rows=None):  # the sampled query is the one with WHERE
        if " WHERE " in sql:
            sql = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT COUNT(*) FROM c"
        return real(conn, sql, timeout_s, max_rows)

    monkeypatch.setattr(tables, "run_sql", slow_on_sampled)
    assert list(sampler.sample(2, max_draws=3)) == []
    assert sampler.stats.timeouts == sampler.stats.executed == 3 and sampler.stats.accounted()
