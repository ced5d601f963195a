"""A misbehaving SPARQL endpoint on 127.0.0.1 for the endpoint tests and ``benchmarks/endpoint_limits_probe.py``.

``FakeEndpoint(graph)`` answers SELECT/ASK queries from an rdflib Graph (SPARQL 1.1 JSON results,
written here so that a lone surrogate in a label reaches the client as ``\\ud800``). The first
path segment picks a behaviour for every request to it; ``/mixed`` picks one by request number:

- ``/ok``: answers; ``/stall``: says nothing until the server stops; ``/flaky``: HTTP 503 to every
  other request, the first included; ``/down``: HTTP 503 always; ``/garbage``: 200 with bytes that
  are not JSON; ``/html``: 200 text/html; ``/stream``: 200 JSON results that never end (the bytes
  sent are counted in ``sent``); ``/trickle``: one byte of an endless reply every 50 ms;
  ``/huge``: announces a 10 GB body; ``/mixed``: in every 30 requests, one stalls, one gets HTTP
  503 and one garbage; the others are answered.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

JSON_RESULTS = "application/sparql-results+json"
MIXED_CYCLE = ("stall", *["ok"] * 9, "down", *["ok"] * 9, "garbage", *["ok"] * 9)


def closed_port() -> int:
    """A local port that nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def results_json(result: Any) -> bytes:
    """An rdflib query result as SPARQL 1.1 JSON results (ASCII, lone surrogates escaped)."""
    from rdflib import BNode, Literal

    if result.type == "ASK":
        return json.dumps({"head": {}, "boolean": bool(result.askAnswer)}).encode()
    names = [str(v) for v in result.vars or []]
    bindings = []
    for row in result:
        binding = {}
        for name, term in zip(names, row):
            if term is None:
                continue
            if isinstance(term, Literal):
                value: dict[str, str] = {"type": "literal", "value": str(term)}
                if term.language:
                    value["xml:lang"] = term.language
                elif term.datatype:
                    value["datatype"] = str(term.datatype)
            else:
                value = {"type": "bnode" if isinstance(term, BNode) else "uri", "value": str(term)}
            binding[name] = value
        bindings.append(binding)
    return json.dumps({"head": {"vars": names}, "results": {"bindings": bindings}}).encode()


class FakeEndpoint:
    """Serves ``graph`` with the behaviours above until ``close()`` (also a context manager)."""

    def __init__(self, graph: Any = None) -> None:
        from rdflib import Graph

        self.graph = graph if graph is not None else Graph()
        self.requests = 0
        self.sent = 0  # bytes of the endless replies written
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-endpoint", daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "FakeEndpoint":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                parts = urlsplit(self.path)
                self._serve(parts.path, parse_qs(parts.query).get("query", [""])[0])

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                query = parse_qs(body).get("query", [""])[0] if "form" in (self.headers.get("Content-Type") or "") else body
                self._serve(urlsplit(self.path).path, query)

            def _serve(self, path: str, query: str) -> None:
                with endpoint.lock:
                    number, endpoint.requests = endpoint.requests, endpoint.requests + 1
                mode = path.strip("/").split("/")[0] or "ok"
                if mode == "mixed":
                    mode = MIXED_CYCLE[number % len(MIXED_CYCLE)]
                if mode == "flaky":
                    mode = "down" if number % 2 == 0 else "ok"
                try:
                    getattr(self, f"_{mode}")(query)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, status: int, body: bytes, kind: str = JSON_RESULTS, length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)

            def _ok(self, query: str) -> None:
                try:
                    body = results_json(endpoint.graph.query(query))
                except Exception as exc:  # noqa: BLE001 - a bad query is the client's 400
                    self._send(400, f"bad query: {exc}".encode(), "text/plain")
                    return
                self._send(200, body)

            def _stall(self, query: str) -> None:
                endpoint.stopping.wait(60)

            def _down(self, query: str) -> None:
                self._send(503, b"<html>Service Unavailable</html>", "text/html")

            def _garbage(self, query: str) -> None:
                self._send(200, b"\x89PNG\r\n\x1a\n\x00\x00garbage{{{")

            def _html(self, query: str) -> None:
                self._send(200, b"<html><body>Welcome to the endpoint</body></html>", "text/html")

            def _huge(self, query: str) -> None:
                self._send(200, b'{"head": {"vars": ["x"]}, ', length=10 * 10**9)
                endpoint.stopping.wait(5)

            def _stream(self, query: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", JSON_RESULTS)
                self.end_headers()
                self._write(b'{"head": {"vars": ["x"]}, "results": {"bindings": [')
                row = b'{"x": {"type": "uri", "value": "http://example.org/' + b"x" * 200 + b'"}},'
                while not endpoint.stopping.is_set():
                    self._write(row * 64)

            def _trickle(self, query: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", JSON_RESULTS)
                self.end_headers()
                while not endpoint.stopping.is_set():
                    self._write(b" ")
                    time.sleep(0.05)

            def _write(self, data: bytes) -> None:
                self.wfile.write(data)
                self.wfile.flush()
                with endpoint.lock:
                    endpoint.sent += len(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
