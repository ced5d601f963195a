"""qgen's SPARQL endpoint client: every query qgen sends to an endpoint goes through ``SparqlEndpoint``.

One HTTP request per query, made and read in the calling thread (nothing is left downloading):
a connect and a read timeout, an overall deadline (a timer shuts the socket down when it passes,
whatever the server trickles), a cap on the reply's size (read in chunks, stopped past the cap),
retries with exponential backoff for HTTP 5xx and failed connections, and the SPARQL 1.1 JSON
results format (``application/sparql-results+json``) parsed here into rdflib terms. The text is
checked by ``readonly.checked_sparql`` first, which refuses updates and SERVICE before anything
is sent. Every failure is an ``EndpointError`` (stage ``execute``, one line naming its ``kind``;
timeouts are also ``QueryTimeoutError``s) that the samplers count as the draw's outcome; after
``trip_after`` failures in a row the endpoint is not contacted for ``cooldown_s``.

``EndpointLabels`` reads entity names through it; a name whose text is not Unicode (a lone
surrogate) is dropped. Plain ``http(s)://`` only: no proxies, no redirects followed.
"""
from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlencode, urlsplit

from parsers.sparql.labels import NAME_PREDICATES, GraphLabels, choose_label
from qgen.samplers.readonly import QueryExecutionError, QueryTimeoutError, SparqlRows, checked_sparql

JSON_RESULTS = "application/sparql-results+json"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSAFE_IRI = re.compile(r'[\x00-\x20<>"{}|^`\\\ud800-\udfff]')  # what cannot go between < > in a query


class EndpointError(QueryExecutionError):
    """An endpoint query that failed. ``kind``: timeout | refused | unreachable | http | too_large |
    not_results | bad_text | down."""

    def __init__(self, kind: str, message: str, lf: str = "", transient: bool = False) -> None:
        self.kind = kind
        self.transient = transient  # the endpoint, not the query, failed: counted towards ``trip_after``
        super().__init__(message, lf)


class EndpointTimeoutError(EndpointError, QueryTimeoutError):
    """No connection, no data within the read timeout, or no full reply by the deadline."""

    def __init__(self, message: str, lf: str = "") -> None:
        super().__init__("timeout", message, lf, transient=True)


@dataclass(frozen=True)
class EndpointLimits:
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0  # longest silence while reading; the call's timeout_s bounds the whole
    max_bytes: int = 32 * 2**20  # a longer reply is refused (the 100,000-topic query is ~15 MB)
    retries: int = 2  # further tries after HTTP 5xx or a failed connection, within the deadline
    backoff_s: float = 0.25  # the first retry's wait; doubled for each next one
    trip_after: int = 10  # failures in a row before the endpoint is left alone ...
    cooldown_s: float = 30.0  # ... for this long (every query then fails at once as ``down``)


class _Retry(Exception):
    """A failure worth another try (HTTP 5xx, refused or dropped connection); carries the error."""

    def __init__(self, error: EndpointError) -> None:
        self.error = error


class SparqlEndpoint:
    """A read-only SPARQL endpoint at ``url`` (``http`` or ``https``), queried within ``limits``."""

    def __init__(self, url: str, limits: EndpointLimits | None = None, method: str = "GET") -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"an endpoint URL must be http:// or https:// with a host, got {url!r}")
        if method not in ("GET", "POST"):
            raise ValueError(f"method must be GET or POST, got {method!r}")
        self.url, self.limits, self.method = url, limits or EndpointLimits(), method
        self.host = parts.netloc
        self._parts = parts
        self._failures = 0
        self._resting_until = 0.0
        self.bytes_read = 0  # the size of the last reply read (bounded by ``limits.max_bytes``)

    def __repr__(self) -> str:
        return f"SparqlEndpoint({self.url!r})"

    def select(self, query: str, timeout_s: float = 5.0, drop_bad_text: bool = False) -> SparqlRows:
        """Run a SELECT or ASK ``query`` within ``timeout_s`` seconds, retries included. Rows with a
        lone surrogate raise ``EndpointError`` (``bad_text``), or are left out with ``drop_bad_text``."""
        text = checked_sparql(query)[0]  # refuses updates, LOAD and SERVICE before anything is sent
        if time.monotonic() < self._resting_until:
            raise EndpointError("down", f"endpoint {self.host} failed {self.limits.trip_after} times in a row; "
                                        f"not contacted for {self.limits.cooldown_s:g} s", text)
        try:
            rows = parse_results(self._fetch(text, timeout_s), self.host, text, drop_bad_text)
        except EndpointError as error:
            self._failures = self._failures + 1 if error.transient else 0
            if self._failures >= self.limits.trip_after:
                self._failures, self._resting_until = 0, time.monotonic() + self.limits.cooldown_s
            raise
        self._failures = 0
        return rows

    # -- HTTP ----------------------------------------------------------------------------------
    def _fetch(self, text: str, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        attempt = 0
        while True:
            try:
                return self._request(text, deadline, timeout_s)
            except _Retry as retry:
                wait = self.limits.backoff_s * 2**attempt
                if attempt >= self.limits.retries or time.monotonic() + wait >= deadline:
                    raise retry.error from None
                time.sleep(wait)
                attempt += 1

    def _request(self, text: str, deadline: float, timeout_s: float) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EndpointTimeoutError(f"endpoint {self.host} timed out: no reply within {timeout_s:g} s", text)
        parts, limits = self._parts, self.limits
        connection = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = connection(parts.hostname, parts.port, timeout=min(limits.connect_timeout_s, remaining))
        # The endpoint's own limit, in ms (Virtuoso, Blazegraph); most others ignore it.
        form = urlencode({"query": text, "timeout": str(int(timeout_s * 1000))})
        headers = {"Accept": f"{JSON_RESULTS}, application/json;q=0.9", "User-Agent": "qgen"}
        path, body = (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), None
        if self.method == "POST":
            body, headers["Content-Type"] = form.encode(), "application/x-www-form-urlencoded"
        else:
            path += ("&" if parts.query else "?") + form
        watchdog = _Deadline(deadline)
        try:
            try:
                conn.connect()
            except socket.timeout:
                raise EndpointTimeoutError(f"endpoint {self.host} timed out: no connection within "
                                           f"{min(limits.connect_timeout_s, remaining):g} s", text) from None
            watchdog.watch(conn.sock)
            sock = conn.sock
            sock.settimeout(min(limits.read_timeout_s, max(deadline - time.monotonic(), 0.001)))
            conn.request(self.method, path, body, headers)
            response = conn.getresponse()
            self._check_status(response, text)
            return self._read(response, sock, watchdog, timeout_s, text)
        except EndpointError:
            raise
        except (socket.timeout, TimeoutError):
            raise EndpointTimeoutError(self._silence(watchdog, timeout_s), text) from None
        except ConnectionRefusedError:
            raise _Retry(EndpointError("refused", f"endpoint {self.host} refused the connection", text,
                                       transient=True)) from None
        except (ConnectionError, http.client.IncompleteRead) as exc:
            if watchdog.fired:
                raise EndpointTimeoutError(self._silence(watchdog, timeout_s), text) from None
            raise _Retry(EndpointError("unreachable", f"endpoint {self.host} dropped the connection "
                                                      f"({type(exc).__name__})", text, transient=True)) from None
        except http.client.HTTPException as exc:
            if watchdog.fired:
                raise EndpointTimeoutError(self._silence(watchdog, timeout_s), text) from None
            raise EndpointError("not_results", f"endpoint {self.host} reply is not HTTP ({type(exc).__name__})",
                                text) from None
        except OSError as exc:  # DNS failure, no route, TLS errors
            if watchdog.fired:
                raise EndpointTimeoutError(self._silence(watchdog, timeout_s), text) from None
            reason = " ".join(str(exc.strerror or exc).split())[:120]
            raise EndpointError("unreachable", f"endpoint {self.host} unreachable: {reason}", text,
                                transient=True) from None
        finally:
            watchdog.cancel()
            conn.close()

    def _silence(self, watchdog: "_Deadline", timeout_s: float) -> str:
        if watchdog.fired or time.monotonic() >= watchdog.deadline:
            return f"endpoint {self.host} timed out: no full reply within {timeout_s:g} s"
        return f"endpoint {self.host} timed out: no data for {self.limits.read_timeout_s:g} s"

    def _check_status(self, response: http.client.HTTPResponse, text: str) -> None:
        status = response.status
        if 500 <= status < 600:
            raise _Retry(EndpointError("http", f"endpoint {self.host} answered HTTP {status} {response.reason}", text,
                                       transient=True))
        if status != 200:
            detail = response.read(300).decode("utf-8", "replace") if status < 300 or status >= 400 else ""
            detail = "".join(c for c in " ".join(detail.split()) if c.isprintable())[:160]
            raise EndpointError("http", f"endpoint {self.host} answered HTTP {status} {response.reason}"
                                        + (f": {detail}" if detail else ""), text)
        kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if kind and "json" not in kind:
            raise EndpointError("not_results", f"endpoint {self.host} reply is not SPARQL JSON results "
                                               f"(content type {kind[:60]})", text)
        length = response.getheader("Content-Length")
        if length and length.strip().isdigit() and int(length) > self.limits.max_bytes:
            raise EndpointError("too_large", f"endpoint {self.host} reply of {int(length)} bytes is larger than the "
                                             f"cap of {self.limits.max_bytes} bytes", text)

    def _read(self, response: http.client.HTTPResponse, sock: socket.socket, watchdog: "_Deadline",
              timeout_s: float, text: str) -> bytes:
        cap, chunks, total = self.limits.max_bytes, [], 0
        self.bytes_read = 0
        while True:
            remaining = watchdog.deadline - time.monotonic()
            if remaining <= 0 or watchdog.fired:
                raise EndpointTimeoutError(self._silence(watchdog, timeout_s), text)
            sock.settimeout(min(self.limits.read_timeout_s, remaining))
            chunk = response.read1(min(65536, cap + 1 - total))
            if not chunk:
                if watchdog.fired:  # the shut-down socket reads as the end of the reply
                    raise EndpointTimeoutError(self._silence(watchdog, timeout_s), text)
                return b"".join(chunks)
            total += len(chunk)
            self.bytes_read = total
            if total > cap:
                raise EndpointError("too_large", f"endpoint {self.host} reply is larger than the cap of {cap} bytes",
                                    text)
            chunks.append(chunk)


class _Deadline:
    """Shuts a socket down when ``deadline`` passes, which ends any blocked read on it."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self.timer: threading.Timer | None = None

    def watch(self, sock: socket.socket) -> None:
        def fire() -> None:
            self.fired = True
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        self.timer = threading.Timer(max(self.deadline - time.monotonic(), 0.0), fire)
        self.timer.name, self.timer.daemon = "qgen-endpoint-deadline", True
        self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


# -- SPARQL 1.1 JSON results -------------------------------------------------------------------
def parse_results(body: bytes, host: str = "endpoint", lf: str = "", drop_bad_text: bool = False) -> SparqlRows:
    """SPARQL JSON results as ``SparqlRows`` of rdflib terms (``EndpointError`` if they are not)."""
    def refuse(why: str) -> EndpointError:
        return EndpointError("not_results", f"endpoint {host} reply is not SPARQL JSON results: {why}", lf)

    try:
        data = json.loads(body)
    except RecursionError:
        raise refuse("nested too deeply") from None
    except ValueError as exc:  # bad JSON, or bytes that are not UTF-8
        raise refuse(f"not JSON ({type(exc).__name__} at byte {getattr(exc, 'pos', getattr(exc, 'start', '?'))})") \
            from None
    if not isinstance(data, dict):
        raise refuse(f"a JSON {type(data).__name__}, not an object")
    if isinstance(data.get("boolean"), bool):
        return SparqlRows([], [], data["boolean"])
    head, results = data.get("head"), data.get("results")
    names = head.get("vars") if isinstance(head, dict) else None
    bindings = results.get("bindings") if isinstance(results, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not isinstance(bindings, list):
        raise refuse("no head.vars and results.bindings")
    rows = []
    for binding in bindings:
        if not isinstance(binding, dict):
            raise refuse("a binding that is not an object")
        try:
            rows.append(tuple(_term(binding.get(name), name) for name in names))
        except _BadText as bad:
            if drop_bad_text:
                continue
            raise EndpointError("bad_text", f"endpoint {host} reply holds text that is not valid Unicode (a lone "
                                            f"surrogate) in ?{bad.args[0]}", lf) from None
        except (TypeError, ValueError) as exc:
            raise refuse(f"a bad term ({' '.join(str(exc).split())[:80]})") from None
    return SparqlRows(list(names), rows)


class _BadText(Exception):
    """A term holds a lone surrogate."""


def _term(value: Any, name: str) -> Any:
    from rdflib import BNode, Literal, URIRef

    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("value"), str):
        raise TypeError("a term without a string value")
    text, kind = value["value"], value.get("type")
    lang, datatype = value.get("xml:lang"), value.get("datatype")
    for part in (text, lang, datatype):
        if part is not None and (not isinstance(part, str) or _LONE_SURROGATE.search(part)):
            if isinstance(part, str):
                raise _BadText(name)
            raise TypeError("a language or datatype that is not a string")
    if kind == "uri":
        return URIRef(text)
    if kind == "bnode":
        return BNode(text)
    if kind in ("literal", "typed-literal"):
        return Literal(text, lang=lang or None, datatype=None if lang else (URIRef(datatype) if datatype else None))
    raise ValueError(f"unknown term type {str(kind)[:20]!r}")


# -- names ---------------------------------------------------------------------------------------
class EndpointLabels:
    """Entity names from an endpoint's label triples, chosen as ``GraphLabels`` chooses them (one
    query per entity, remembered); names that are not valid Unicode are dropped. A failed lookup
    raises its ``EndpointError``: the draw that needed the name counts it."""

    def __init__(self, endpoint: SparqlEndpoint, language: str = "en", timeout_s: float = 5.0,
                 cache_size: int = 65536) -> None:
        self.endpoint, self.language, self.timeout_s = endpoint, language, timeout_s
        self.cache_size = cache_size
        self._filter = ", ".join(f"<{p}>" for p in NAME_PREDICATES)
        self._known: dict[str, str | None] = {}

    def __call__(self, iri: str) -> str | None:
        if _UNSAFE_IRI.search(iri):
            return None
        if iri not in self._known:
            if len(self._known) >= self.cache_size:
                self._known.clear()
            self._known[iri] = self._fetch(iri)  # a failed lookup raises and is not remembered
        return self._known[iri]

    def _fetch(self, iri: str) -> str | None:
        query = f"SELECT ?p ?o WHERE {{ <{iri}> ?p ?o . FILTER(?p IN ({self._filter})) }} LIMIT 200"
        by_predicate: dict[str, list[Any]] = defaultdict(list)
        for predicate, obj in self.endpoint.select(query, self.timeout_s, drop_bad_text=True).rows:
            if predicate is not None and obj is not None:
                by_predicate[str(predicate)].append(obj)
        for predicate in NAME_PREDICATES:
            name = choose_label(by_predicate.get(predicate, ()), self.language)
            if name:
                return name
        return None


def as_endpoint(graph_or_store: Any) -> SparqlEndpoint | None:
    """``graph_or_store`` as our client if it is one, or an rdflib ``SPARQLStore`` (or a Graph over
    one), whose URL is then queried through ``SparqlEndpoint``; None for anything else."""
    if isinstance(graph_or_store, SparqlEndpoint):
        return graph_or_store
    store = getattr(graph_or_store, "store", graph_or_store)
    url = getattr(store, "query_endpoint", None)
    if not isinstance(url, str):
        return None
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    return SparqlEndpoint(url, method="POST" if getattr(store, "method", "GET") == "POST" else "GET") \
        if isinstance(store, SPARQLStore) else None


def labels_for(graph_or_endpoint: Any, timeout_s: float = 5.0) -> Callable[[str], str | None]:
    """The label source of a graph access: ``EndpointLabels`` for an endpoint, else ``GraphLabels``."""
    endpoint = as_endpoint(graph_or_endpoint)
    return EndpointLabels(endpoint, timeout_s=timeout_s) if endpoint else GraphLabels(graph_or_endpoint)
