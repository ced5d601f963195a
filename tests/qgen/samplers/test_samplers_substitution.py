"""Entity substitution: same query shape, only substitutes with 1..K answers, names and stats."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from rdflib import Graph, URIRef

from parsers import tokenize_lf
from parsers.sparql.lexer import lex
from parsers.sparql.validate import shape_key
from qgen.datasets.records import RawExample
from qgen.samplers.readonly import run_sparql
from qgen.samplers.substitution import EntitySubstitution, SubstitutionConfig, replace_entity

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "samplers" / "small_kg.ttl"
FB = "http://rdf.freebase.com/ns/"
HEAD = "PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT DISTINCT ?x\nWHERE {\n"
LANG = "FILTER (!isLiteral(?x) OR lang(?x) = '' OR langMatches(lang(?x), 'en'))\n"


def _seed(ident: str, lf: str, names: dict[str, str] | None = None) -> RawExample:
    return RawExample(ident, "train", "sparql", lf, "a question", "webqsp", "{}", names=names or {})


def _shape(lf: str) -> str:
    """The validator's shape key (terminals abstracted), whitespace collapsed."""
    return " ".join(shape_key(lex(lf)).split())


SEEDS = [
    _seed("birth", HEAD + "FILTER (?x != ns:m.0kp1)\n" + LANG
          + "ns:m.0kp1 ns:people.person.place_of_birth ?x .  # Ada Varro\n}\n", {"m.0kp1": "Ada Varro"}),
    _seed("spouse", HEAD + "FILTER (?x != ns:m.0kp1)\nns:m.0kp1 ns:people.person.spouse_s ?y .\n"
          "?y ns:people.marriage.spouse ?x .\n?y ns:people.marriage.type_of_union ns:m.0ku2 . # Marriage\n"
          "?y ns:people.marriage.from ?sk0 .\n}\nORDER BY DESC(?sk0)\nLIMIT 1\n",
          {"m.0kp1": "Ada Varro", "m.0ku2": "Marriage"}),
    _seed("films", "PREFIX ns: <http://rdf.freebase.com/ns/>\n"
          "SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE { ns:m.0kp2 ns:film.actor.film ?x . }"),
    _seed("iri", f"SELECT ?x WHERE {{ <{FB}m.0kc1> <{FB}location.location.contains> ?x . }}"),
]


@pytest.fixture(scope="module")
def graph() -> Graph:
    return Graph().parse(FIXTURE, format="turtle")


def test_substitutes_keep_the_shape_and_have_answers(graph: Graph) -> None:
    sub = EntitySubstitution(graph, SubstitutionConfig(seed=0, per_seed=3, max_answers=5))
    records = list(sub.substitute(SEEDS))
    by_seed = {s.id: s for s in SEEDS}
    assert {json.loads(r.raw)["seed_id"] for r in records} == set(by_seed)
    for record in records:
        raw = json.loads(record.raw)
        seed = by_seed[raw["seed_id"]]
        assert raw["by"] != raw["replaced"] and raw["by"].startswith(FB)
        assert raw["by"][len(FB):] in record.logical_form and raw["replaced"][len(FB):] not in record.logical_form
        assert _shape(record.logical_form) == _shape(seed.logical_form)
        assert record.logical_form == replace_entity(seed.logical_form, raw["replaced"], raw["by"])
        rows = run_sparql(graph, record.logical_form)
        if raw["seed_id"] == "films":
            assert 1 <= int(record.answers[0]) == int(rows.rows[0][0]) <= 5
        else:
            assert 1 <= len(rows.column(0)) == len(record.answers) <= 5
        tokenize_lf(record.logical_form, "sparql", names=record.names)
    assert sub.stats.accounted() and sub.stats.kept == len(records)


def test_names_are_swapped_and_stale_comment_dropped(graph: Graph) -> None:
    records = EntitySubstitution(graph, SubstitutionConfig(seed=1, per_seed=2)).substitutes_for(SEEDS[1])
    assert records
    for record in records:
        new = json.loads(record.raw)["by"][len(FB):]
        assert "m.0kp1" not in record.names and record.names["m.0ku2"] == "Marriage"
        assert record.names[new] == str(next(graph.objects(URIRef(FB + new), URIRef(FB + "type.object.name"))))
        assert "# Marriage" in record.logical_form  # a comment on a line not touched stays
    birth = EntitySubstitution(graph, SubstitutionConfig(seed=1, per_seed=1)).substitutes_for(SEEDS[0])
    assert birth and "# Ada Varro" not in birth[0].logical_form


def test_only_substitutes_with_answers_are_kept(graph: Graph) -> None:
    """m.0kp6 was born somewhere but has no name; with names not required it becomes a candidate."""
    sub = EntitySubstitution(graph, SubstitutionConfig(seed=2, per_seed=10, require_names=False, max_answers=1))
    records = sub.substitutes_for(SEEDS[3])  # countries' cities: 2 each, more than K = 1
    assert records == [] and sub.stats.too_many_answers >= 1
    records = sub.substitutes_for(SEEDS[0])
    assert len(records) == 5  # every other person with a place of birth
    assert all(r.answers for r in records)


def test_same_seed_same_substitutes_and_bad_seeds_counted(graph: Graph) -> None:
    config = SubstitutionConfig(seed=4, per_seed=2)
    first = list(EntitySubstitution(graph, config).substitute(SEEDS))
    second = list(EntitySubstitution(graph, config).substitute(SEEDS))
    assert first == second
    sub = EntitySubstitution(graph, config)
    bad = [_seed("upd", "DELETE WHERE { ?s ?p ?o }"), _seed("junk", "SELECT WHERE"),
           RawExample("sql", "train", "sql", "SELECT 1", None, "x", "{}"),
           _seed("none", "SELECT ?x WHERE { ?x ?p ?o }")]
    assert list(sub.substitute(bad)) == []
    assert (sub.stats.refused, sub.stats.errors, sub.stats.unsampleable) == (1, 1, 2)
