"""Read-only query execution with a time limit: the only way the samplers run a query.

- SPARQL: the text is normalised by ``parsers.sparql.normalize`` first, which refuses SPARQL Update
  (INSERT, DELETE, LOAD, CLEAR, ...) and SERVICE with ``UnsupportedQueryError`` before rdflib sees
  it. A local rdflib Graph is queried in the calling thread under a watchdog that raises inside
  it at the deadline (rdflib is pure Python, so any loop stops at its next bytecode); a Graph over
  a ``SPARQLStore`` (an endpoint) is queried in a daemon thread that is abandoned at the deadline
  (a blocked socket read cannot be interrupted; the endpoint's own ``timeout`` parameter is set too).
- SQL: ``parsers.sql.parse_sql`` refuses anything but one SELECT; the connection is switched to
  ``PRAGMA query_only=ON`` (writes fail in SQLite itself, even if attempted directly) and a
  progress handler interrupts the statement at the deadline.

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
    """Run a read-only SPARQL ``query`` on an rdflib Graph, or on a ``SPARQLStore`` / a Graph over one."""
    from rdflib import Graph
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    text = normalize_tokens(check_text(query)).text  # refuses updates, LOAD and SERVICE
    graph = Graph(store=graph_or_store) if isinstance(graph_or_store, SPARQLStore) else graph_or_store
    if not isinstance(graph, Graph):
        raise TypeError(f"run_sparql needs an rdflib Graph or SPARQLStore, got {type(graph_or_store).__name__}")
    prepared = prepare_query(text)  # refuses a SERVICE in the algebra, local or remote
    if isinstance(graph.store, SPARQLStore):
        return _run_remote(graph, text, timeout_s)
    try:
        with _Watchdog(timeout_s):
            return _materialise(graph.query(prepared, use_store_provided=False))
    except _Expired:
        raise QueryTimeoutError(f"SPARQL query ran past its time limit of {timeout_s:g} s", query) from None
    except LogicalFormError:
        raise
    except Exception as exc:  # rdflib raises bare Exceptions and SPARQLErrors while evaluating
        raise QueryExecutionError(f"rdflib: {type(exc).__name__}: {exc}", query) from None


def endpoint_graph(url: str, timeout_s: float = 30.0, method: str = "GET") -> Any:
    """A read-only rdflib Graph over the SPARQL endpoint at ``url`` (rdflib's SPARQLStore)."""
    from rdflib import Graph
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    store = SPARQLStore(url, returnFormat="json", method=method, params={"timeout": str(int(timeout_s * 1000))})
    return Graph(store=store)


def run_sql(conn: sqlite3.Connection, sql: str, timeout_s: float = 5.0, max_rows: int | None = None) -> list[tuple]:
    """Run one SELECT on ``conn`` (switched to query-only) and return at most ``max_rows`` rows."""
    parse_sql(sql)  # UnsupportedQueryError for DDL/DML/PRAGMA/ATTACH/several statements
    deadline = time.monotonic() + timeout_s
    conn.execute("PRAGMA query_only=ON")
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    try:
        cursor = conn.execute(sql)
        rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows)
        cursor.close()
        return rows
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise QueryTimeoutError(f"SQL query ran past its time limit of {timeout_s:g} s", sql) from None
        raise QueryExecutionError(f"sqlite: {exc}", sql) from None
    except sqlite3.Error as exc:
        raise QueryExecutionError(f"sqlite: {type(exc).__name__}: {exc}", sql) from None
    finally:
        conn.set_progress_handler(None, 0)


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


def _run_remote(graph: Any, text: str, timeout_s: float) -> SparqlRows:
    """Query an endpoint in a daemon thread; give up on it at the deadline."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["rows"] = _materialise(graph.query(text))
        except Exception as exc:  # reported to the caller below, typed
            box["error"] = exc

    worker = threading.Thread(target=work, name="qgen-sparql-endpoint", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise QueryTimeoutError(f"the endpoint did not answer within {timeout_s:g} s", text)
    if "error" in box:
        exc = box["error"]
        raise QueryExecutionError(f"endpoint: {type(exc).__name__}: {exc}", text) from None
    return box["rows"]
