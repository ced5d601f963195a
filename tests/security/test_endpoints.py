"""SPARQL endpoints that stall, fail, lie or flood: every call ends in time, in bounded memory, with a
typed one-line ``EndpointError`` that a sampler counts as the draw's outcome (the run goes on)."""
from __future__ import annotations

import json
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Iterator

import pytest
from fake_endpoint import FakeEndpoint, closed_port
from rdflib import Graph, Literal, URIRef

from parsers.errors import UnsupportedQueryError
from qgen.samplers.endpoint import (
    EndpointError, EndpointLabels, EndpointLimits, EndpointTimeoutError, SparqlEndpoint, parse_results,
)
from qgen.samplers.kg import KGSampler, KGSamplerConfig
from qgen.samplers.readonly import QueryTimeoutError, endpoint_graph, run_sparql
from qgen.synth.sources import SourceError, open_source

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "samplers" / "small_kg.ttl"
EX = "http://example.org/kg/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
ANY = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 5"
FAST = EndpointLimits(connect_timeout_s=1.0, read_timeout_s=1.0, retries=2, backoff_s=0.05)


@pytest.fixture()
def server() -> Iterator[FakeEndpoint]:
    graph = Graph().parse(FIXTURE)
    graph.add((URIRef(EX + "good"), URIRef(LABEL), Literal("Good Harbour", lang="en")))
    graph.add((URIRef(EX + "bad"), URIRef(LABEL), Literal("Bad \ud800 Harbour", lang="en")))
    graph.add((URIRef(EX + "mixed"), URIRef(LABEL), Literal("Broken \udfff", lang="en")))
    graph.add((URIRef(EX + "mixed"), URIRef(LABEL), Literal("Mixed Harbour")))
    with FakeEndpoint(graph) as fake:
        yield fake


def _client(url: str, **limits: float) -> SparqlEndpoint:
    return SparqlEndpoint(url, EndpointLimits(**{**FAST.__dict__, **limits}))


def _raises(endpoint: object, timeout_s: float = 1.0, query: str = ANY) -> tuple[EndpointError, float]:
    started = time.monotonic()
    with pytest.raises(EndpointError) as caught:
        run_sparql(endpoint, query, timeout_s=timeout_s)
    assert "\n" not in str(caught.value) and caught.value.stage == "execute"
    return caught.value, time.monotonic() - started


def test_endpoint_graph_is_our_client_and_refuses_updates_and_service_before_sending(server: FakeEndpoint) -> None:
    endpoint = endpoint_graph(server.url + "/ok")
    assert isinstance(endpoint, SparqlEndpoint)
    for query in ("DROP ALL", "INSERT DATA { <a:b> <a:c> <a:d> }",
                  "SELECT ?s WHERE { SERVICE <http://127.0.0.1:9/x> { ?s ?p ?o } }"):
        with pytest.raises(UnsupportedQueryError):
            run_sparql(endpoint, query)
    assert server.requests == 0
    rows = run_sparql(endpoint, "SELECT ?n WHERE { <http://rdf.freebase.com/ns/m.0kc1> "
                                "<http://rdf.freebase.com/ns/type.object.name> ?n }")
    assert {(str(n), n.language) for n in rows.column(0)} == {("Veloria", "en"), ("Vélorie", "fr")}
    assert run_sparql(endpoint, "ASK { ?s ?p ?o }").boolean is True
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    store = SPARQLStore(server.url + "/stream")  # an rdflib store is queried through our client too
    assert _raises(Graph(store=store))[0].kind == "too_large"


def test_a_stalling_endpoint_times_out_and_leaves_no_thread_behind(server: FakeEndpoint) -> None:
    error, took = _raises(_client(server.url + "/stall", read_timeout_s=0.3), timeout_s=5.0)
    assert isinstance(error, EndpointTimeoutError) and isinstance(error, QueryTimeoutError)
    assert error.kind == "timeout" and "no data for 0.3 s" in str(error) and took < 2.0
    time.sleep(0.1)  # the request ran in the calling thread; its deadline timer is cancelled
    assert [t.name for t in threading.enumerate() if t.name.startswith("qgen-")] == []


def test_a_trickling_reply_ends_at_the_overall_deadline(server: FakeEndpoint) -> None:
    error, took = _raises(_client(server.url + "/trickle", read_timeout_s=5.0), timeout_s=0.6)
    assert isinstance(error, EndpointTimeoutError) and "no full reply within 0.6 s" in str(error)
    assert took < 2.0


def test_503_then_200_is_retried(server: FakeEndpoint) -> None:
    rows = run_sparql(_client(server.url + "/flaky"), ANY, timeout_s=3.0)
    assert len(rows.rows) == 5 and server.requests == 2


def test_a_down_endpoint_is_http_503_after_the_retries(server: FakeEndpoint) -> None:
    error, took = _raises(_client(server.url + "/down"), timeout_s=3.0)
    assert error.kind == "http" and "answered HTTP 503 Service Unavailable" in str(error)
    assert server.requests == 3 and took < 2.0


def test_connection_refused_says_so(server: FakeEndpoint) -> None:
    error, took = _raises(_client(f"http://127.0.0.1:{closed_port()}/sparql"), timeout_s=3.0)
    assert error.kind == "refused" and "refused the connection" in str(error)
    assert "You did something wrong" not in str(error) and took < 2.0


@pytest.mark.parametrize("mode, words", [("garbage", "not SPARQL JSON results: not JSON (UnicodeDecodeError"),
                                         ("html", "not SPARQL JSON results (content type text/html)")])
def test_a_reply_that_is_not_sparql_json_results(server: FakeEndpoint, mode: str, words: str) -> None:
    error, _ = _raises(_client(f"{server.url}/{mode}"))
    assert error.kind == "not_results" and words in str(error)


def test_an_endless_reply_stops_at_the_size_cap(server: FakeEndpoint) -> None:
    cap = 256 * 1024
    endpoint = _client(server.url + "/stream", max_bytes=cap)
    tracemalloc.start()
    try:
        error, took = _raises(endpoint, timeout_s=5.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error.kind == "too_large" and f"larger than the cap of {cap} bytes" in str(error)
    assert endpoint.bytes_read <= cap + 1 and peak < 4 * cap and took < 3.0


def test_an_announced_huge_reply_is_not_read(server: FakeEndpoint) -> None:
    endpoint = _client(server.url + "/huge", max_bytes=10**6)
    error, took = _raises(endpoint)
    assert error.kind == "too_large" and "10000000000 bytes" in str(error)
    assert endpoint.bytes_read == 0 and took < 1.0


def test_labels_with_a_lone_surrogate_are_dropped(server: FakeEndpoint) -> None:
    endpoint = _client(server.url + "/ok")
    labels = EndpointLabels(endpoint, timeout_s=2.0)
    assert labels(EX + "good") == "Good Harbour"
    assert labels(EX + "bad") is None  # dropped, not a crash
    assert labels(EX + "mixed") == "Mixed Harbour"
    assert labels(EX + "has space>") is None and server.requests == 3  # never put into a query
    error, _ = _raises(endpoint, query=f"SELECT ?o WHERE {{ <{EX}bad> <{LABEL}> ?o }}")
    assert error.kind == "bad_text" and "lone surrogate" in str(error)


@pytest.mark.parametrize("body, words", [
    (b"[1, 2]", "a JSON list"),
    (b'{"head": {}}', "no head.vars"),
    (b'{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri"}}]}}', "a bad term"),
    (b'{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "triple", "value": "v"}}]}}', "a bad term"),
    (b"[" * 200_000, "nested too deeply"),
    (b'{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", "value": "\xff\xfe"}}]}}',
     "UnicodeDecodeError"),
])
def test_malformed_results_are_refused(body: bytes, words: str) -> None:
    with pytest.raises(EndpointError) as caught:
        parse_results(body, "host")
    assert caught.value.kind == "not_results" and words in str(caught.value)


def test_raw_surrogate_bytes_and_escapes_are_bad_text() -> None:
    for value in (b'"a \\ud800 b"', b'"a \xed\xa0\x80 b"'):  # an escape, and a surrogate encoded in UTF-8
        body = b'{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", "value": ' + value + b"}}]}}"
        with pytest.raises(EndpointError) as caught:
            parse_results(body, "host")
        assert caught.value.kind == "bad_text"
        assert parse_results(body, "host", drop_bad_text=True).rows == []
    rows = parse_results(json.dumps({"head": {"vars": ["x", "y"]}, "results": {"bindings": [
        {"x": {"type": "literal", "value": "7", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}).encode())
    assert rows.rows == [(Literal(7), None)]


def test_after_repeated_failures_the_endpoint_is_left_alone(server: FakeEndpoint) -> None:
    endpoint = _client(server.url + "/down", retries=0, trip_after=3, cooldown_s=60.0)
    for _ in range(3):
        assert _raises(endpoint)[0].kind == "http"
    error, took = _raises(endpoint)
    assert error.kind == "down" and "not contacted for 60 s" in str(error) and took < 0.1
    assert server.requests == 3


@pytest.mark.parametrize("mode", ["garbage", "stall", "refused", "stream", "mixed"])
def test_a_sampling_run_goes_on_through_a_failing_endpoint(server: FakeEndpoint, mode: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}/" if mode == "refused" else f"{server.url}/{mode}"
    endpoint = SparqlEndpoint(url, EndpointLimits(read_timeout_s=0.3, max_bytes=2**20, backoff_s=0.05, trip_after=4))
    sampler = KGSampler.from_endpoint(endpoint, KGSamplerConfig(seed=0, timeout_s=0.5))
    started = time.monotonic()
    records = list(sampler.sample(3, max_draws=12))
    stats = sampler.stats
    assert stats.drawn == 12 or len(records) == 3
    assert stats.accounted() and time.monotonic() - started < 12
    if mode != "mixed":
        assert records == [] and stats.errors + stats.timeouts == stats.drawn


def test_synthesize_source_from_a_garbage_endpoint_counts_every_draw(server: FakeEndpoint) -> None:
    """Nothing sampled is refused with the sampler's counts (no corpus of nothing is written)."""
    with pytest.raises(SourceError, match=r"--from-endpoint .*/garbage: no query could be sampled from it "
                                          r"\(100 drawn: errors 100\); the first of the errors: EndpointError: endpoint "
                                          r"\S+ reply is not"):  # the cause, not only the count
        open_source(from_endpoint=server.url + "/garbage", count=2)


def test_a_sampling_run_through_a_flaky_endpoint_keeps_records(server: FakeEndpoint) -> None:
    sampler = KGSampler.from_endpoint(_client(server.url + "/flaky", backoff_s=0.01), KGSamplerConfig(seed=0))
    records = list(sampler.sample(2, max_draws=30))
    assert len(records) == 2 and sampler.stats.accounted() and all(r.names for r in records)


def test_a_source_that_sampled_nothing_names_the_first_error_of_its_most_frequent_failure() -> None:
    """One tie at the top among 40 timeouts is not why nothing came: the timeouts are."""
    from types import SimpleNamespace

    from qgen.samplers import SamplerStats
    from qgen.synth.sources import Source, _sampled_something

    stats = SamplerStats()
    for outcome in ["ambiguous"] + ["timeouts"] * 40 + ["no_answer"] * 59:
        stats.add(outcome)
    sampler = SimpleNamespace(stats=stats, first_errors={"ambiguous": "AmbiguousAnswerError: 2 answers tie",
                                                         "timeouts": "QueryTimeoutError: over 5 s"})
    with pytest.raises(SourceError, match=r"\(100 drawn: no_answer 59, timeouts 40, ambiguous 1\); the first of the "
                                          r"timeouts: QueryTimeoutError: over 5 s$"):
        _sampled_something(Source(iter([]), "graph", "g.ttl", sampler))
