"""Read-only execution: refusals and time limits are typed errors; writes fail even when tried directly."""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
from rdflib import Graph, Literal, URIRef

from parsers.errors import SparqlSyntaxError, SqlSyntaxError, UnsupportedQueryError
from qgen.samplers.readonly import (
    QueryExecutionError, QueryTimeoutError, endpoint_graph, open_sqlite_readonly, run_sparql, run_sql,
    sqlite_from_frames,
)

EX = "http://example.org/kg/"
SLOW_SQL = ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
            "SELECT COUNT(*) FROM c")


@pytest.fixture(scope="module")
def graph() -> Graph:
    g = Graph()
    for i in range(40):
        g.add((URIRef(f"{EX}e{i}"), URIRef(f"{EX}next"), URIRef(f"{EX}e{(i + 1) % 40}")))
        g.add((URIRef(f"{EX}e{i}"), URIRef(f"{EX}rank"), Literal(i)))
    return g


@pytest.mark.parametrize("query", [
    "INSERT DATA { <http://example.org/a> <http://example.org/b> <http://example.org/c> }",
    "DELETE WHERE { ?s ?p ?o }",
    "LOAD <http://example.org/data.ttl>",
    "CLEAR ALL",
    "SELECT ?s WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
])
def test_sparql_updates_service_and_load_are_refused(graph: Graph, query: str) -> None:
    before = len(graph)
    with pytest.raises(UnsupportedQueryError):
        run_sparql(graph, query)
    assert len(graph) == before


def test_sparql_select_ask_and_syntax_error(graph: Graph) -> None:
    rows = run_sparql(graph, f"SELECT ?o WHERE {{ <{EX}e1> <{EX}next> ?o }}")
    assert rows.variables == ["o"] and rows.column(0) == [URIRef(f"{EX}e2")]
    assert run_sparql(graph, f"ASK {{ <{EX}e1> ?p ?o }}").boolean is True
    with pytest.raises(SparqlSyntaxError):
        run_sparql(graph, "SELECT ?x WHERE { ?x ?y }")
    with pytest.raises(TypeError):
        run_sparql("not a graph", "SELECT ?x WHERE { ?x ?p ?o }")


def test_sparql_time_limit_is_a_typed_error_and_leaves_no_stray_interrupt(graph: Graph) -> None:
    slow = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"  # 80^4 rows
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError):
        run_sparql(graph, slow, timeout_s=0.2)
    assert time.monotonic() - started < 3.0
    time.sleep(0.1)  # a late watchdog must not interrupt what the thread does next
    assert run_sparql(graph, f"ASK {{ <{EX}e1> ?p ?o }}", timeout_s=5.0).boolean is True


class _Endpoint(BaseHTTPRequestHandler):
    """A tiny SPARQL endpoint: ``/fast`` answers one binding, ``/slow`` takes 3 s."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/slow"):
            time.sleep(3)
        body = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": [
            {"x": {"type": "uri", "value": f"{EX}answer"}}]}}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up at its deadline
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_endpoint_through_endpoint_graph(endpoint: str) -> None:
    rows = run_sparql(endpoint_graph(endpoint + "/fast"), "SELECT ?x WHERE { ?x ?p ?o }", timeout_s=5)
    assert rows.column(0) == [URIRef(f"{EX}answer")]
    with pytest.raises(UnsupportedQueryError):  # refused before anything is sent
        run_sparql(endpoint_graph(endpoint + "/fast"), "DROP ALL")
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError):
        run_sparql(endpoint_graph(endpoint + "/slow"), "SELECT ?x WHERE { ?x ?p ?o }", timeout_s=0.3)
    assert time.monotonic() - started < 2.0


@pytest.fixture()
def database(tmp_path: Path) -> Path:
    path = tmp_path / "db.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE "ships" (name TEXT, tons INTEGER)')
        conn.executemany('INSERT INTO "ships" VALUES (?, ?)', [("Tern", 120), ("Petrel", 300)])
    conn.close()
    return path


@pytest.mark.parametrize("sql", [
    "INSERT INTO ships VALUES ('Skua', 1)",
    "DELETE FROM ships",
    "DROP TABLE ships",
    "CREATE TABLE t (a INT)",
    "PRAGMA query_only = OFF",
    "ATTACH DATABASE 'other.db' AS other",
    "SELECT 1; DELETE FROM ships",
])
def test_sql_other_than_one_select_is_refused(database: Path, sql: str) -> None:
    conn = open_sqlite_readonly(database)
    with pytest.raises(UnsupportedQueryError):
        run_sql(conn, sql)
    assert run_sql(conn, "SELECT COUNT(*) FROM ships") == [(2,)]


def test_readonly_connections_refuse_writes_attempted_directly(database: Path) -> None:
    import pandas as pd

    for conn in (open_sqlite_readonly(database), sqlite_from_frames({"ships": pd.DataFrame({"name": ["Tern"]})})):
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("INSERT INTO ships (name) VALUES ('Skua')")
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("CREATE TABLE t (a INT)")
        assert conn.execute("SELECT COUNT(*) FROM ships").fetchone()[0] in (1, 2)


def test_sql_time_limit_and_errors_are_typed(database: Path) -> None:
    conn = open_sqlite_readonly(database)
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError):
        run_sql(conn, SLOW_SQL, timeout_s=0.05)
    assert time.monotonic() - started < 2.0
    assert run_sql(conn, "SELECT name FROM ships WHERE tons > 200") == [("Petrel",)]  # handler removed
    with pytest.raises(QueryExecutionError):
        run_sql(conn, "SELECT nope FROM ships")
    with pytest.raises(SqlSyntaxError):
        run_sql(conn, "SELECT FROM WHERE")
    assert run_sql(conn, "SELECT name FROM ships ORDER BY name", max_rows=1) == [("Petrel",)]
