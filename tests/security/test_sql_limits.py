"""SQL that asks for gigabytes or seconds, and tables that cannot be sampled: typed errors and
counted draws, never a crash, a memory spike or a run past the time limit."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from parsers.errors import LogicalFormError
from qgen.samplers import readonly
from qgen.samplers.readonly import QueryExecutionError, run_sql
from qgen.samplers.tables import NoRowsError, TableSampler


def _fails_fast(sql: str, words: str, timeout_s: float = 3.0) -> None:
    conn = sqlite3.connect(":memory:")
    started = time.monotonic()
    with pytest.raises(QueryExecutionError) as caught:
        run_sql(conn, sql, timeout_s=timeout_s)
    assert words in str(caught.value) and time.monotonic() - started < 1.0


@pytest.mark.parametrize("sql", [
    "SELECT randomblob(1e9)",
    "SELECT hex(zeroblob(2e8))",
    "SELECT length(zeroblob(2e8))",
    "SELECT replace(hex(zeroblob(1e6)), '0', '00000000')",
])
def test_values_past_the_length_cap_fail_before_they_are_made(sql: str) -> None:
    _fails_fast(sql, "string or blob too big")
    assert run_sql(sqlite3.connect(":memory:"), "SELECT length(randomblob(3000000))") == [(3_000_000,)]


@pytest.mark.parametrize("sql", ["SELECT printf('%.*c', 1e9, 'x')", "SELECT format('%.*c', 1e9, 'x')",
                                 "SELECT 1 WHERE printf('%d', 1) = '1'"])
def test_printf_which_no_time_limit_can_stop_is_refused(sql: str) -> None:
    _fails_fast(sql, "is not allowed (one call can run past the time limit)")


def test_the_result_is_capped_in_rows_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = sqlite3.connect(":memory:")
    rows = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 200) "
    monkeypatch.setattr(readonly, "SQL_MAX_RESULT_ROWS", 100)
    with pytest.raises(QueryExecutionError, match="more than 100 rows"):
        run_sql(conn, rows + "SELECT n FROM c")
    assert len(run_sql(conn, rows + "SELECT n FROM c", max_rows=150)) == 150  # asked for: truncated
    monkeypatch.setattr(readonly, "SQL_MAX_RESULT_BYTES", 100_000)
    with pytest.raises(QueryExecutionError, match="larger than 100000 bytes"):
        run_sql(conn, rows + "SELECT randomblob(1000) FROM c", max_rows=150)


def test_a_generated_column_of_gigabytes_is_a_counted_error(tmp_path: Path) -> None:
    path = tmp_path / "blobs.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER, b TEXT GENERATED ALWAYS AS (hex(zeroblob(2e7))) VIRTUAL)")
        conn.executemany("INSERT INTO t (a) VALUES (?)", [(1,), (2,), (3,)])
    conn.close()
    sampler = TableSampler.from_sqlite(path)
    started = time.monotonic()
    assert list(sampler.sample(2, max_draws=10)) == []
    assert sampler.stats.drawn == sampler.stats.errors == 10 and time.monotonic() - started < 2.0


@pytest.mark.parametrize("long_header", [False, True])
def test_an_oversized_csv_cell_is_skipped_not_fatal(tmp_path: Path, long_header: bool) -> None:
    path = tmp_path / "notes.csv"
    header = "name,year," + ("n" * 25_000 if long_header else "notes")
    path.write_text(header + "\n" + "".join(f"n{i},{1990 + i},{'x' * 25_000}\n" for i in range(10)))
    sampler = TableSampler.from_files([path])
    records = list(sampler.sample(5, max_draws=60))
    assert sampler.stats.accounted() and sampler.stats.drawn <= 60
    assert all(len(r.logical_form) < 5000 and all(len(a) <= 1000 for a in r.answers) for r in records)
    if not long_header:
        assert records  # the other columns are still sampled


@pytest.mark.parametrize("setup, words", [
    ("csv-header-only", "table notes has no rows"),
    ("sqlite-no-tables", "the database has no tables"),
    ("sqlite-empty-tables", "tables a, b have no rows"),
])
def test_nothing_to_sample_is_a_typed_error(tmp_path: Path, setup: str, words: str) -> None:
    if setup == "csv-header-only":
        path = tmp_path / "notes.csv"
        path.write_text("name,year,notes\n")
        opened = lambda: TableSampler.from_files([path])  # noqa: E731
    else:
        path = tmp_path / "empty.sqlite"
        with sqlite3.connect(path) as conn:
            if setup == "sqlite-empty-tables":
                conn.execute("CREATE TABLE a (x INTEGER)")
                conn.execute("CREATE TABLE b (y TEXT)")
        conn.close()
        opened = lambda: TableSampler.from_sqlite(path)  # noqa: E731
    with pytest.raises(NoRowsError) as caught:
        opened()
    assert isinstance(caught.value, LogicalFormError) and words in str(caught.value)
