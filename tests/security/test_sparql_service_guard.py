"""SERVICE and the read-only guard: escaped spellings never reach a listener (server-side request forgery).

SPARQL expands ``\\uXXXX`` / ``\\UXXXXXXXX`` anywhere before parsing, so ``SERVIC\\u0045`` is SERVICE to
rdflib. Every query below names a local listener; it must receive nothing, whichever entry point
(tokenizer, read-only runner, entity substitution) the query goes through.
"""
from __future__ import annotations

import http.server
import re
import threading
from pathlib import Path
from typing import Iterator

import pytest
from rdflib import Graph

from parsers import tokenize_lf
from parsers.errors import LogicalFormError, SparqlSyntaxError, UnsupportedQueryError
from parsers.sparql.escapes import CODEPOINT_ESCAPE, expand_codepoint_escapes
from parsers.sparql.validate import MAX_NESTING, refused_algebra
from qgen.datasets.records import RawExample
from qgen.samplers.readonly import prepare_query, run_sparql
from qgen.samplers.substitution import EntitySubstitution, SubstitutionConfig

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "samplers" / "small_kg.ttl"
NS = "PREFIX ns: <http://rdf.freebase.com/ns/>\n"


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def _record(self) -> None:
        type(self).hits.append(f"{self.command} {self.path}")
        body = b'{"head": {"vars": ["s"]}, "results": {"bindings": []}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _record  # noqa: N815 (http.server's names)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def listener() -> Iterator[tuple[str, list[str]]]:
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sparql", _Recorder.hits
    finally:
        server.shutdown()
        server.server_close()


def _spellings(url: str) -> list[str]:
    """SERVICE to ``url`` spelled every way SPARQL allows, in the main query and in a subquery."""
    keywords = ["SERVICE", "SERVIC\\u0045", "SERVIC\\U00000045", "\\u0053ERVICE", "servic\\u0065",
                "SERVIC\\u0045 SILENT", "\\U00000053\\U00000045RVICE"]
    queries = []
    for word in keywords:
        queries.append(f"SELECT * WHERE {{ {word} <{url}> {{ ?s ?p ?o }} }}")
        queries.append(f"SELECT * WHERE {{ {{ SELECT ?s WHERE {{ {word} <{url}> {{ ?s ?p ?o }} }} }} }}")
        queries.append(f"SELECT * WHERE {{ ?s ?p ?o FILTER EXISTS {{ {word} <{url}> {{ ?s ?p ?o }} }} }}")
    # The IRI escaped too, and an escape that expands to another escape (rdflib expands twice).
    escaped_url = url.replace("/", "\\u002F")
    queries.append(f"SELECT * WHERE {{ SERVIC\\u0045 <{escaped_url}> {{ ?s ?p ?o }} }}")
    queries.append(f"SELECT * WHERE {{ SERVIC\\u005Cu0045 <{url}> {{ ?s ?p ?o }} }}")
    return queries


def test_the_escape_pattern_is_rdflibs() -> None:
    from rdflib.plugins.sparql.parser import expandUnicodeEscapes, expandUnicodeEscapes_re

    assert CODEPOINT_ESCAPE.pattern == expandUnicodeEscapes_re.pattern
    assert CODEPOINT_ESCAPE.flags == expandUnicodeEscapes_re.flags
    for text in ["SERVIC\\u0045", "\\U00000045x", "\\u00e9t\\u00E9", "a\\u0045abcd"[:8], "plain"]:
        assert expand_codepoint_escapes(text) == expandUnicodeEscapes(text)


@pytest.mark.parametrize("index", range(len(_spellings("http://h/"))))
def test_tokenize_refuses_every_spelling(index: int, listener: tuple[str, list[str]]) -> None:
    url, hits = listener
    query = _spellings(url)[index]
    with pytest.raises(UnsupportedQueryError):
        tokenize_lf(query, "sparql")
    with pytest.raises(UnsupportedQueryError):
        tokenize_lf(query, "sparql", validate=False)
    assert hits == []


@pytest.mark.parametrize("index", range(len(_spellings("http://h/"))))
def test_run_sparql_on_a_local_graph_never_calls_out(index: int, listener: tuple[str, list[str]]) -> None:
    url, hits = listener
    graph = Graph().parse(FIXTURE, format="turtle")
    with pytest.raises(UnsupportedQueryError):
        run_sparql(graph, _spellings(url)[index], timeout_s=5)
    assert hits == []


def test_the_algebra_check_refuses_service_without_the_text_check() -> None:
    """The second line of defence: the parsed algebra, whatever the text looked like."""
    from rdflib.plugins.sparql import algebra, parser

    def parsed(text: str) -> object:
        return algebra.translateQuery(parser.parseQuery(text))

    assert refused_algebra(parsed("SELECT * WHERE { SERVIC\\u0045 <http://127.0.0.1:9/> { ?s ?p ?o } }"))
    assert refused_algebra(parsed("SELECT * WHERE { ?s ?p ?o OPTIONAL { { SELECT ?s WHERE { "
                                  "SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } } } } }"))
    assert refused_algebra(parsed("SELECT * WHERE { ?s ?p ?o OPTIONAL { ?s ?q ?r } }")) is None
    with pytest.raises(UnsupportedQueryError, match="SERVICE"):
        prepare_query("SELECT * WHERE { { SELECT ?s WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } } } }")


def test_substitution_from_seeds_never_calls_out(listener: tuple[str, list[str]]) -> None:
    """``synthesize --from-graph G --substitute-from SEEDS``: each candidate once made a POST."""
    url, hits = listener
    graph = Graph().parse(FIXTURE, format="turtle")
    seeds = [RawExample(f"s{i}", "train", "sparql", NS + q.replace("SELECT * WHERE {", "SELECT ?s WHERE { ns:m.0kp1 ns:people.person.place_of_birth ?s .", 1),
                        "a question", "seeds", "{}")
             for i, q in enumerate(_spellings(url))]
    sub = EntitySubstitution(graph, SubstitutionConfig(seed=0, per_seed=2, max_answers=5))
    records = list(sub.substitute(seeds))
    assert records == []
    assert hits == []


def test_escapes_do_not_defeat_the_validation_cache() -> None:
    """A valid query caches its shape's verdict; an invalid one must not borrow it through escapes."""
    tokenize_lf(NS + 'SELECT ?x WHERE { ns:m.0kp1 ns:people.person.place_of_birth "plain" }', "sparql")
    # '\u0022' is '"': rdflib reads "a"b", which is invalid; as text it was a string of the same shape.
    with pytest.raises(LogicalFormError):
        tokenize_lf(NS + 'SELECT ?x WHERE { ns:m.0kp1 ns:people.person.place_of_birth "a\\u0022b" }', "sparql")


def test_bad_escapes_are_typed_errors() -> None:
    with pytest.raises(SparqlSyntaxError, match="not a Unicode character"):
        tokenize_lf('SELECT ?x WHERE { ?x ?p "\\ud800" }', "sparql")
    with pytest.raises(LogicalFormError, match="control character"):
        tokenize_lf('SELECT ?x WHERE { ?x ?p "\\u0000" }', "sparql")
    assert "café" in tokenize_lf('SELECT ?x WHERE { ?x ?p "caf\\u00e9" }', "sparql").tokens


def test_deep_nesting_parses_or_says_so() -> None:
    """Valid queries with 25+ nested brackets used to be syntax errors (rdflib's recursion)."""
    def nested(n: int) -> str:
        return "SELECT ?x WHERE { ?x ?p ?o FILTER(" + "(" * n + "?o" + ")" * n + " > 1) }"

    assert tokenize_lf(nested(30), "sparql").tokens.count("(") == 31
    with pytest.raises(SparqlSyntaxError, match=re.escape(f"the limit is {MAX_NESTING}")):
        tokenize_lf(nested(MAX_NESTING + 5), "sparql")
