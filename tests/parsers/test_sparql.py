"""SPARQL normalisation, validation, entity naming and tokenization."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.errors import (
    BinaryInputError,
    EmptyInputError,
    InputTooLongError,
    LogicalFormError,
    SparqlSyntaxError,
    UnknownPrefixError,
    UnsupportedQueryError,
)
from parsers.sparql import GraphLabels, TableLabels, tokenize_sparql
from parsers.sparql.lexer import lex
from parsers.sparql.normalize import normalize_tokens
from parsers.sparql.validate import shape_key

FIXTURES = Path(__file__).parent.parent / "fixtures"
CASES = [json.loads(line) for line in (FIXTURES / "sparql_tokens.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_tokens_match_fixture(case: dict) -> None:
    parsed = tokenize_sparql(case["lf"], case["names"])
    assert " ".join(parsed.tokens) == case["tokens"]


def test_figure_2_entities_and_normalised_text() -> None:
    case = CASES[0]
    parsed = tokenize_sparql(case["lf"], case["names"])
    assert [(e.id, e.name, e.name_source) for e in parsed.entities] == [
        ("m.01bkb", "Bali", "given"),
        ("m.03qb78c", "Air transportation", "given"),
    ]
    assert parsed.normalized.startswith("PREFIX ns: <http://rdf.freebase.com/ns/>\n")
    assert " || lang(?x) = '' || " in parsed.normalized


def test_normaliser_rewrites_virtuoso_isms() -> None:
    norm = normalize_tokens(
        "SELECT COUNT(?c) WHERE { ?c ns:a.b ?y . FILTER (?y > 1 AND ?y < 5) }\n"
        "GROUP BY ?c HAVING COUNT(?c) = 2 ORDER BY ?c"
    )
    text, prefixes = norm.text, norm.prefixes
    assert "SELECT (COUNT(?c) AS ?count) WHERE" in text
    assert "?y > 1 && ?y < 5" in text
    assert "HAVING (COUNT(?c) = 2) ORDER BY" in text
    assert prefixes["ns"] == "http://rdf.freebase.com/ns/"


def test_bare_aggregate_alias_does_not_clash_with_a_variable() -> None:
    text = normalize_tokens("SELECT COUNT(?count) WHERE { ?count ?p ?o }").text
    assert "(COUNT(?count) AS ?count1)" in text


def test_declared_prefix_wins_over_well_known() -> None:
    parsed = tokenize_sparql("PREFIX ns: <http://example.org/> SELECT ?x WHERE { ns:m.01 ns:p ?x }")
    assert parsed.entities == []  # ns: is not Freebase here, so m.01 is no Freebase id
    assert parsed.normalized.count("PREFIX") == 1


def test_name_sources_in_order() -> None:
    from rdflib import Graph, Literal, URIRef
    from rdflib.namespace import RDFS

    graph = Graph()
    graph.add((URIRef("http://rdf.freebase.com/ns/m.02"), RDFS.label, Literal("Graph Name", lang="en")))
    graph.add((URIRef("http://rdf.freebase.com/ns/m.03"), RDFS.label, Literal("Nom", lang="fr")))
    query = (
        "SELECT ?x WHERE { ns:m.01 ns:p ns:m.02 . ns:m.03 ns:p ?x .\n"
        "ns:m.04 ns:p ?x . # From A Comment\n dbr:Sao_Paulo ns:p ns:m.05 }"
    )
    parsed = tokenize_sparql(query, names={"m.01": "Given Name", "m.02": "  "}, labels=GraphLabels(graph))
    found = {e.id.rsplit("/", 1)[-1]: (e.name, e.name_source) for e in parsed.entities}
    assert found == {
        "m.01": ("Given Name", "given"),
        "m.02": ("Graph Name", "labels"),  # a blank given name does not count
        "m.03": ("Nom", "labels"),  # no English label: the other language is better than none
        "m.04": ("From A Comment", "comment"),
        "Sao_Paulo": ("Sao Paulo", "local_name"),
        "m.05": ("<e0>", "placeholder"),
    }


def test_table_labels_from_csv(tmp_path: Path) -> None:
    table = tmp_path / "names.csv"
    table.write_text("id,name\nm.01bkb,Bali\nhttp://www.wikidata.org/entity/Q42,Douglas Adams\n", encoding="utf-8")
    labels = TableLabels.from_file(table)
    parsed = tokenize_sparql("SELECT ?x WHERE { ns:m.01bkb ns:p ?x . wd:Q42 wdt:P1 ?x }", labels=labels)
    assert [e.name for e in parsed.entities] == ["Bali", "Douglas Adams"]


def test_same_entity_twice_gets_one_placeholder() -> None:
    parsed = tokenize_sparql("SELECT ?x WHERE { ns:m.0a ns:p ?x . ?x ns:q ns:m.0a . ?x ns:q ns:m.0b }")
    assert " ".join(parsed.tokens).count("ent: <e0>") == 2
    assert "ent: <e1>" in " ".join(parsed.tokens)


@pytest.mark.parametrize(
    ("lf", "error", "says"),
    [
        ("", EmptyInputError, "empty"),
        ("   \n\t ", EmptyInputError, "empty"),
        ("SELECT \x00\x01\x02 ?x", BinaryInputError, "control character"),
        (b"\xff\xfe\x00junk", BinaryInputError, "not UTF-8"),
        ("SELECT ?x WHERE { ?x ns:p ", SparqlSyntaxError, "rdflib"),
        ("SELECT ?x WHERE { ?x ns:p ?y . } LIMIT 1.5", SparqlSyntaxError, "rdflib"),
        ("INSERT DATA { <http://a> <http://b> <http://c> }", UnsupportedQueryError, "SPARQL Update (INSERT)"),
        ("DELETE WHERE { ?s ?p ?o }", UnsupportedQueryError, "SPARQL Update (DELETE)"),
        ("LOAD <http://example.org/data.ttl>", UnsupportedQueryError, "SPARQL Update (LOAD)"),
        ("DROP GRAPH <http://example.org/g>", UnsupportedQueryError, "SPARQL Update (DROP)"),
        ("SELECT * WHERE { SERVICE <http://x/sparql> { ?s ?p ?o } }", UnsupportedQueryError, "SERVICE"),
        ("SELECT ?x WHERE { ?x foo:bar ?y }", UnknownPrefixError, "'foo:'"),
        ("hello world", UnsupportedQueryError, "expected SELECT"),
        ("SELECT ?x WHERE { ?x ?p ?o } " + "#" * 30_000, InputTooLongError, "limit"),
    ],
)
def test_bad_input_gets_a_typed_one_line_error(lf: object, error: type, says: str) -> None:
    with pytest.raises(error) as caught:
        tokenize_sparql(lf)  # type: ignore[arg-type]
    message = str(caught.value)
    assert says in message
    assert "\n" not in message and "Traceback" not in message
    assert caught.value.stage in ("input", "parse", "normalise", "validate")


def test_syntax_error_carries_input_and_position() -> None:
    lf = "SELECT ?x WHERE { ?x ns:p ?y . } GROUP ?x"
    with pytest.raises(SparqlSyntaxError) as caught:
        tokenize_sparql(lf)
    assert caught.value.position == 33 == lf.index("GROUP")  # at GROUP, which lacks its BY
    assert caught.value.lf == lf
    assert "at position 33 (near 'GROUP ?x')" in str(caught.value)


def test_shape_key_abstracts_terminals_but_keeps_variables() -> None:
    a = shape_key(lex('SELECT ?x WHERE { ns:m.01 ns:a.b ?x . FILTER(?x = "a") } LIMIT 1'))
    b = shape_key(lex('SELECT ?x WHERE { ns:m.99 ns:c.d ?x . FILTER(?x = "zz") } LIMIT 7'))
    c = shape_key(lex('SELECT ?y WHERE { ns:m.99 ns:c.d ?y . FILTER(?y = "zz") } LIMIT 7'))
    d = shape_key(lex('SELECT ?x WHERE { ns:m.99 ns:c.d ?x . FILTER(?x = "zz") } LIMIT 7.5'))
    assert a == b and a != c and a != d


def test_invalid_query_is_rejected_even_when_its_shape_was_seen_valid() -> None:
    tokenize_sparql("SELECT ?x WHERE { ns:m.01 ns:p ?x } LIMIT 3")
    with pytest.raises(SparqlSyntaxError):
        tokenize_sparql("SELECT ?x WHERE { ns:m.01 ns:p ?x } LIMIT 3.5")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_any_text_is_tokens_or_a_typed_error(text: str) -> None:
    try:
        parsed = tokenize_sparql(text)
    except LogicalFormError as err:
        assert "\n" not in str(err)
    else:
        assert all(tok and not tok.isspace() for tok in parsed.tokens)


_SPARQL_ALPHABET = st.sampled_from(
    ["SELECT", "?x", " ", "{", "}", "(", ")", "ns:m.01", "OR", "AND", "'a OR b'", '"x"', "#c\n", "<http://a/b>",
     "COUNT", "HAVING", "WHERE", ".", "FILTER", "=", "1", "\n", "@en", "^^", "xsd:int", "GROUP BY"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SPARQL_ALPHABET, max_size=40).map("".join))
def test_fuzz_sparql_like_text(text: str) -> None:
    assert "".join(t.text for t in lex(text)) == text  # the lexer loses nothing
    try:
        parsed = tokenize_sparql(text)
    except LogicalFormError:
        return
    assert "'a || b'" not in parsed.normalized  # never rewrites inside a string


def test_raw_entity_tokens_keep_the_ids_for_the_seq2seq_baseline() -> None:
    parsed = tokenize_sparql("SELECT ?x WHERE { ns:m.01bkb ns:a.b ?x . <http://dbpedia.org/resource/Bali> dbo:x ?x }",
                             {"m.01bkb": "Bali"})
    assert " ".join(parsed.tokens) == "select ? x where { ent: bali ns a . b ? x . ent: bali dbo x ? x }"
    assert " ".join(parsed.raw_entity_tokens) == (
        "select ? x where { ns m . 01bkb ns a . b ? x . dbr bali dbo x ? x }")
    assert tokenize_sparql("SELECT ?x WHERE { ?x ?p ?o }").raw_entity_tokens is None


def test_an_iri_named_by_the_caller_is_an_entity() -> None:
    parsed = tokenize_sparql("SELECT ?x WHERE { <http://example.org/kg/harbour> <http://example.org/kg/serves> ?x }",
                             names={"http://example.org/kg/harbour": "Old Harbour"})
    assert " ".join(parsed.tokens).startswith("select ? x where { ent: old harbour <")
    assert [(e.id, e.name_source) for e in parsed.entities] == [("http://example.org/kg/harbour", "given")]


@pytest.mark.parametrize("query", [
    "SELECT ?x WHERE { dbr:Berlin dbo:leader ?x . FILTER( }",
    "#MANUAL SPARQL, a comment normalisation drops\nSELECT ?x WHERE { dbr:Rome dbo:leader ?x . FILTER( }",
    "SELECT COUNT(?x) WHERE { dbr:Rome dbo:leader ?x . FILTER( }",  # the count is rewritten (wrapped)
])
def test_a_syntax_error_is_placed_in_the_query_as_written(query: str) -> None:
    """Not in the normalised text, which begins with the PREFIX lines that normalisation adds and has its
    comments dropped and some tokens rewritten."""
    with pytest.raises(SparqlSyntaxError) as caught:
        tokenize_sparql(query)
    assert caught.value.position == query.index("FILTER") and "(near 'FILTER( }')" in str(caught.value)
