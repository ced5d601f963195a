"""Read-only query execution with a time limit: the only way the samplers run a query.

- SPARQL: the text is normalised by ``parsers.sparql.normalize`` first, which refuses SPARQL Update
  (INSERT, DELETE, LOAD, CLEAR, ...) and SERVICE with ``UnsupportedQueryError`` before rdflib sees
  it. A local rdflib Graph is queried in the calling thread under a watchdog that raises inside
  it at the deadline (rdflib is pure Python, so any loop stops at its next bytecode); an endpoint
  (``endpoint_graph``, or an rdflib ``SPARQLStore``) is queried through ``endpoint.SparqlEndpoint``:
  timeouts, a deadline, a cap on the reply's size, retries, and the JSON results parsed by qgen.
- SQL: ``parsers.sql.parse_sql`` refuses anything but one SELECT; the connection is switched to
  ``PRAGMA query_only=ON`` (writes fail in SQLite itself, even if attempted directly), a progress
  handler interrupts the statement at the deadline, no string or blob may grow past
  ``SQL_MAX_VALUE_BYTES`` (``SQLITE_LIMIT_LENGTH``: ``randomblob(1e9)`` fails at once instead of
  allocating a gigabyte), ``printf``/``format`` are refused (one call of ``printf('%.*c', 1e9, 'x')``
  loops for seconds where no progress handler runs; the samplers never write them) and the result
  is capped at ``SQL_MAX_RESULT_ROWS`` rows and ``SQL_MAX_RESULT_BYTES`` bytes.

A refused, failed or timed-out query raises a typed ``LogicalFormError`` (stage ``validate`` or
``execute``) that the caller turns into a reject or a stat, never a crash.
"""
from __future__ import annotations

import ctypes
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from parsers.errors import LogicalFormError, SparqlSyntaxError, UnsupportedQueryError
from parsers.guards import check_text
from parsers.sparql.normalize import normalize_tokens
from parsers.sparql.validate import deep_recursion, refused_algebra
from parsers.sql.validate import parse_sql

SQL_MAX_VALUE_BYTES = 4 * 2**20  # the longest string, blob or row SQLite may make or read (Python 3.11+)
SQL_MAX_RESULT_ROWS = 100_000
SQL_MAX_RESULT_BYTES = 32 * 2**20  # the text and blob bytes of a result, summed
SQL_REFUSED_FUNCTIONS = ("printf", "format")  # can run past the time limit inside a single call


class QueryTimeoutError(LogicalFormError):
    """The query ran past its time limit."""

    stage = "execute"


class QueryExecutionError(LogicalFormError):
    """The engine failed on a query that passed validation (unknown table, type error, ...)."""

    stage = "execute"


@dataclass(frozen=True)
class SparqlRows:
    """A SPARQL result: the projected variables and the rows (None where unbound); ASK sets ``boolean``."""

    variables: list[str]
    rows: list[tuple[Any, ...]]
    boolean: bool | None = None

    def column(self, index: int = 0) -> list[Any]:
        """The distinct bound values of column ``index``, in row order."""
        seen: dict[Any, None] = {}
        for row in self.rows:
            if index < len(row) and row[index] is not None:
                seen.setdefault(row[index], None)
        return list(seen)


def run_sparql(graph_or_store: Any, query: str, timeout_s: float = 5.0) -> SparqlRows:
    """Run a read-only SPARQL ``query`` on an rdflib Graph, or on an endpoint (a ``SparqlEndpoint``
    from ``endpoint_graph``, an rdflib ``SPARQLStore`` or a Graph over one)."""
    from rdflib import Graph

    from qgen.samplers.endpoint import as_endpoint

    endpoint = as_endpoint(graph_or_store)
    if endpoint is not None:
        return endpoint.select(query, timeout_s)  # checked by ``checked_sparql`` before it is sent
    if not isinstance(graph_or_store, Graph):
        raise TypeError(f"run_sparql needs an rdflib Graph or an endpoint, got {type(graph_or_store).__name__}")
    text, prepared = checked_sparql(query)
    graph = graph_or_store
    try:
        with _Watchdog(timeout_s):
            return _materialise(graph.query(prepared, use_store_provided=False))
    except _Expired:
        raise QueryTimeoutError(f"SPARQL query ran past its time limit of {timeout_s:g} s", query) from None
    except LogicalFormError:
        raise
    except Exception as exc:  # rdflib raises bare Exceptions and SPARQLErrors while evaluating
        raise QueryExecutionError(f"rdflib: {type(exc).__name__}: {exc}", query) from None


def checked_sparql(query: str) -> tuple[str, Any]:
    """The normalised text of ``query`` and rdflib's algebra for it, or the typed error that refuses
    it: updates, LOAD and SERVICE (however spelled, in any subquery), junk, bad syntax."""
    text = normalize_tokens(check_text(query)).text
    return text, prepare_query(text)


def endpoint_graph(url: str, timeout_s: float = 30.0, method: str = "GET") -> Any:
    """The read-only SPARQL endpoint at ``url`` for ``run_sparql`` and the samplers: a
    ``SparqlEndpoint`` that waits at most ``timeout_s`` for a connection or for data."""
    from qgen.samplers.endpoint import EndpointLimits, SparqlEndpoint

    limits = EndpointLimits(connect_timeout_s=min(timeout_s, 5.0), read_timeout_s=timeout_s)
    return SparqlEndpoint(url, limits, method)


def run_sql(conn: sqlite3.Connection, sql: str, timeout_s: float = 5.0, max_rows: int | None = None) -> list[tuple]:
    """Run one SELECT on ``conn`` (switched to query-only) and return at most ``max_rows`` rows; a
    result past ``SQL_MAX_RESULT_ROWS`` rows or ``SQL_MAX_RESULT_BYTES`` bytes is an error."""
    parse_sql(sql)  # UnsupportedQueryError for DDL/DML/PRAGMA/ATTACH/several statements
    deadline = time.monotonic() + timeout_s
    conn.execute("PRAGMA query_only=ON")
    if hasattr(conn, "setlimit"):  # Python 3.11+
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQL_MAX_VALUE_BYTES)
    refused: list[str] = []
    for name in SQL_REFUSED_FUNCTIONS:  # these replace SQLite's own, for this connection
        conn.create_function(name, -1, _refuser(name, refused), deterministic=True)
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    try:
        cursor = conn.execute(sql)
        rows = _fetch_capped(cursor, sql, max_rows)
        cursor.close()
        return rows
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise QueryTimeoutError(f"SQL query ran past its time limit of {timeout_s:g} s", sql) from None
        if refused:
            raise QueryExecutionError(f"sqlite: {refused[0]}() is not allowed (one call can run past the time "
                                      "limit)", sql) from None
        raise QueryExecutionError(f"sqlite: {exc}", sql) from None
    except sqlite3.Error as exc:
        raise QueryExecutionError(f"sqlite: {type(exc).__name__}: {exc}", sql) from None
    finally:
        conn.set_progress_handler(None, 0)


def _refuser(name: str, calls: list[str]) -> Any:
    def refuse(*args: object) -> None:
        calls.append(name)
        raise ValueError(f"{name}() is not allowed")

    return refuse


def _fetch_capped(cursor: sqlite3.Cursor, sql: str, max_rows: int | None) -> list[tuple]:
    rows: list[tuple] = []
    wanted, size = SQL_MAX_RESULT_ROWS if max_rows is None else max_rows, 0
    while len(rows) < wanted:
        batch = cursor.fetchmany(min(1000, wanted - len(rows)))
        if not batch:
            return rows
        size += sum(len(v) for row in batch for v in row if isinstance(v, (str, bytes)))
        if size > SQL_MAX_RESULT_BYTES:
            raise QueryExecutionError(f"the SQL result is larger than {SQL_MAX_RESULT_BYTES} bytes", sql)
        rows.extend(batch)
    if max_rows is None and cursor.fetchone() is not None:
        raise QueryExecutionError(f"the SQL result has more than {SQL_MAX_RESULT_ROWS} rows", sql)
    return rows


def open_sqlite_readonly(path: str | Path) -> sqlite3.Connection:
    """A read-only connection to an existing SQLite file (URI ``mode=ro``, then query-only)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no SQLite database at {path}")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    conn.execute("PRAGMA query_only=ON")
    return conn


def sqlite_from_frames(frames: Mapping[str, Any]) -> sqlite3.Connection:
    """An in-memory SQLite copy of pandas DataFrames (one table each), then switched to query-only."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    for name, frame in frames.items():
        frame.to_sql(name, conn, index=False)
    conn.commit()
    conn.execute("PRAGMA query_only=ON")
    return conn


class _Expired(BaseException):
    """Raised inside the querying thread at the deadline (a BaseException: rdflib's broad
    ``except Exception`` clauses must not swallow it)."""


class _Watchdog:
    """Raises ``_Expired`` in the thread that entered it once ``timeout_s`` have passed."""

    def __init__(self, timeout_s: float) -> None:
        self.thread_id = threading.get_ident()
        self.lock = threading.Lock()
        self.state = "running"
        self.timer = threading.Timer(timeout_s, self._fire)
        self.timer.daemon = True

    def _fire(self) -> None:
        with self.lock:
            if self.state == "running":
                self.state = "fired"
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), ctypes.py_object(_Expired))

    def __enter__(self) -> "_Watchdog":
        self.timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.timer.cancel()
        with self.lock:
            fired, self.state = self.state == "fired", "done"
            if fired:  # clear the exception if it is still pending, and raise it ourselves
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread_id), None)
        if fired and exc_info[0] is None:
            raise _Expired


def prepare_query(text: str) -> Any:
    """rdflib's algebra for normalised ``text`` (``SparqlSyntaxError`` when rdflib rejects it)."""
    from pyparsing import ParseBaseException
    from rdflib.plugins.sparql import algebra, parser

    try:
        with deep_recursion():
            prepared = algebra.translateQuery(parser.parseQuery(text))
    except ParseBaseException as exc:
        raise SparqlSyntaxError(f"rdflib: {exc.msg}", text, int(exc.loc)) from None
    except Exception as exc:  # the algebra raises bare Exceptions for semantic errors
        raise SparqlSyntaxError(f"rdflib: {type(exc).__name__}: {exc}", text) from None
    refused = refused_algebra(prepared)  # SERVICE however it was spelled, in any subquery
    if refused is not None:
        raise UnsupportedQueryError(refused, text)
    return prepared


def _materialise(result: Any) -> SparqlRows:
    if result.type == "ASK":
        return SparqlRows([], [], bool(result.askAnswer))
    if result.type in ("CONSTRUCT", "DESCRIBE"):
        return SparqlRows(["s", "p", "o"], [tuple(t) for t in result.graph])
    variables = [str(v) for v in result.vars or []]
    return SparqlRows(variables, [tuple(row) for row in result])
