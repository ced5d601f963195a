"""KG sampler: determinism, 1..K answers, index == rdflib on every shape, duplicates, names."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from rdflib import Graph, Literal, Namespace, URIRef
from rdflib.namespace import RDFS

from parsers import tokenize_lf
from qgen.samplers import OUTCOMES, SamplerStats, sparql_key
from qgen.samplers.kg import SHAPES, KGSampler, KGSamplerConfig
from qgen.samplers.kg_index import AmbiguousAnswerError, KGIndex, KGQuery, pick_extreme, render_query
from qgen.samplers.readonly import run_sparql

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "samplers" / "small_kg.ttl"
NS = Namespace("http://rdf.freebase.com/ns/")


@pytest.fixture(scope="module")
def graph() -> Graph:
    return Graph().parse(FIXTURE, format="turtle")


@pytest.fixture(scope="module")
def index(graph: Graph) -> KGIndex:
    return KGIndex.from_graph(graph)


def _sample(index: KGIndex, graph: Graph, n: int = 40, **config: object) -> tuple[list, KGSampler]:
    sampler = KGSampler(index, KGSamplerConfig(**config), graph=graph)
    return list(sampler.sample(n, max_draws=2000)), sampler


def test_same_seed_same_records_in_the_same_order(index: KGIndex, graph: Graph) -> None:
    first, _ = _sample(index, graph, seed=7, inverse_rate=0.3)
    second, _ = _sample(KGIndex.from_graph(graph), graph, seed=7, inverse_rate=0.3)
    other, _ = _sample(index, graph, seed=8, inverse_rate=0.3)
    assert first == second and len(first) == 40
    assert [r.logical_form for r in first] != [r.logical_form for r in other]


@pytest.mark.parametrize("shape", SHAPES)
def test_index_answers_equal_rdflib_answers_for_every_shape(index: KGIndex, graph: Graph, shape: str) -> None:
    """Every executed query of the shape, kept or not, is run by rdflib on the same text."""
    sampler = KGSampler(index, KGSamplerConfig(seed=3, shapes=(shape,), verify_every=1, max_answers=50,
                                               inverse_rate=0.3, require_names=False), graph=graph)
    records = list(sampler.sample(8, max_draws=400))
    assert records, f"no {shape} query drawn"
    assert sampler.stats.mismatches == 0
    assert sampler.stats.verified == sampler.stats.executed - sampler.stats.ambiguous - sampler.stats.too_many_answers
    for record in records:
        assert json.loads(record.raw)["shape"] == shape
        rows = run_sparql(graph, record.logical_form)
        if "count" in shape:
            assert [str(rows.rows[0][0])] == record.answers
        else:
            assert len(rows.column(0)) == len(record.answers)


def test_answers_between_1_and_k_and_text_tokenizes(index: KGIndex, graph: Graph) -> None:
    records, sampler = _sample(index, graph, n=60, seed=1, max_answers=2)
    assert sampler.stats.too_many_answers > 0 and sampler.stats.no_answer > 0
    for record in records:
        assert record.split == "synthetic" and record.question is None and record.source == "kg_sampler"
        raw = json.loads(record.raw)
        counted = int(record.answers[0]) if raw["count"] else len(record.answers)
        assert 1 <= counted <= 2 and 1 <= len(raw["answer_ids"]) <= 2
        parsed = tokenize_lf(record.logical_form, "sparql", names=record.names)
        assert {e.id for e in parsed.entities} >= set(record.names)
        assert all(e.name_source == "given" for e in parsed.entities if e.id in record.names)


def test_stats_account_for_every_draw(index: KGIndex, graph: Graph) -> None:
    _, sampler = _sample(index, graph, n=50, seed=2)
    stats = sampler.stats
    assert stats.accounted() and stats.kept == 50
    assert stats.executed == stats.drawn - stats.duplicates - stats.unsampleable - stats.unnamed
    with pytest.raises(ValueError):
        SamplerStats().add("lost")
    assert set(OUTCOMES) <= set(stats.as_dict())


def test_duplicates_are_dropped_and_counted(index: KGIndex, graph: Graph) -> None:
    records, sampler = _sample(index, graph, n=150, seed=4, shapes=("1hop",), require_names=False)
    keys = [sparql_key(r.logical_form) for r in records]
    assert len(keys) == len(set(keys))
    assert sampler.stats.duplicates > 0  # the fixture has far fewer than 150 distinct 1-hop queries


def test_duplicate_key_ignores_whitespace_variable_names_and_prefix_form() -> None:
    a = "PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT DISTINCT ?x WHERE { ns:m.0kp1 ns:p.q ?x . }"
    b = "select distinct ?answer where {\n  <http://rdf.freebase.com/ns/m.0kp1>   ns:p.q ?answer .\n}  # note"
    assert sparql_key(a) == sparql_key(b)
    assert sparql_key(a) != sparql_key(a.replace("m.0kp1", "m.0kp2"))


def test_names_come_from_the_graph_labels(index: KGIndex, graph: Graph) -> None:
    records, _ = _sample(index, graph, n=40, seed=5)
    assert records
    for record in records:
        topic = json.loads(record.raw)["topic"]
        assert record.names[topic.rsplit("/", 1)[1]] in {str(o) for o in graph.objects(URIRef(topic), None)}
    labels = KGSampler(index).labels  # GraphLabels over the index: English or untagged first
    assert labels(str(NS["m.0kc1"])) == "Veloria" and labels(str(NS["m.0kt3"])) == "Dunhallow"  # rdfs:label
    assert labels(str(NS["m.0kp6"])) is None
    unnamed = KGSampler(index, KGSamplerConfig(seed=5, shapes=("1hop",)), graph=graph)
    list(unnamed.sample(30, max_draws=300))
    assert unnamed.stats.unnamed > 0
    assert all("m.0kp6" not in r.names for r in unnamed.sample(5))


def test_superlative_tie_is_ambiguous_not_kept(index: KGIndex) -> None:
    q = KGQuery(index.handle(NS["m.0kc2"]), ((index.handle(NS["location.location.contains"]), True),),
                order=("x", index.handle(NS["location.statistical_region.population"]), True))
    with pytest.raises(AmbiguousAnswerError):
        index.execute(q)  # Dunhallow and Brenlake share the largest population
    q_asc = KGQuery(q.topic, q.hops, order=("x", q.order[1], False))
    with pytest.raises(AmbiguousAnswerError):
        index.execute(q_asc)
    assert pick_extreme([("a", (0, 1)), ("b", (0, 2))], descending=True) == "b"
    with pytest.raises(AmbiguousAnswerError):
        pick_extreme([("a", (0, 1)), ("b", (1, 2))], descending=True)  # a number and a date


def test_language_filter_and_topic_filter_match_rdflib(index: KGIndex, graph: Graph) -> None:
    q = KGQuery(index.handle(NS["m.0kp1"]), ((index.handle(NS["common.topic.nickname"]), True),))
    text = render_query(q, index.term, {"ns": str(NS)})
    assert [str(index.term(h)) for h in index.execute(q)] == ["Adie"]  # "Adita"@es is filtered out
    assert {str(t) for t in run_sparql(graph, text).column(0)} == {"Adie"}


def test_sparql_access_draws_the_same_records_as_the_index(index: KGIndex, graph: Graph) -> None:
    config = KGSamplerConfig(seed=11, inverse_rate=0.3)
    through_index = list(KGSampler(index, config).sample(12))
    through_sparql = list(KGSampler.from_endpoint(graph, config).sample(12))
    assert through_index == through_sparql


def test_generic_namespace_names_keyed_by_full_iri(tmp_path: Path) -> None:
    ex = Namespace("http://example.org/kg/")
    g = Graph()
    g.add((ex.harbour, RDFS.label, Literal("Old Harbour")))
    g.add((ex.harbour, ex.opened, Literal("1899-05-01", datatype=URIRef("http://www.w3.org/2001/XMLSchema#date"))))
    g.add((ex.harbour, ex.serves, ex.town))
    g.add((ex.town, RDFS.label, Literal("Saltby")))
    records = list(KGSampler.from_graph(g, KGSamplerConfig(seed=0, shapes=("1hop",), verify_every=1)).sample(2))
    assert records and all(str(ex.harbour) in r.names or str(ex.town) in r.names for r in records)
    # A generic-namespace IRI named by its full IRI becomes an entity (ent: + its label).
    parsed = tokenize_lf(records[0].logical_form, "sparql", names=records[0].names)
    assert parsed.entities and all(e.name_source == "given" for e in parsed.entities)
    assert "ent:" in parsed.tokens
    # An index streamed from an N-Triples file equals the one built from the Graph.
    path = tmp_path / "g.nt"
    g.serialize(path, format="nt", encoding="utf-8")
    assert KGIndex.from_file(path).terms == KGIndex.from_graph(g).terms


def test_config_refuses_unknown_shapes() -> None:
    with pytest.raises(ValueError):
        KGSamplerConfig(shapes=("3hop",))
    with pytest.raises(ValueError):
        KGSampler(KGIndex.from_triples([]), KGSamplerConfig(verify_every=1))
