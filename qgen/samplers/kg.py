"""Knowledge-graph sampler: WebQSP-shaped SPARQL drawn from an RDF graph, kept with 1..K answers.

A draw picks a shape (``SHAPES``: a topic entity, a 1-hop or 2-hop chain through a middle node
``?y``, optionally an entity constraint on ``?y``/``?x``, an ``ORDER BY ... LIMIT 1`` superlative over
a number or date, or ``COUNT``), walks one witness path from a random topic so the query is known to
match somewhere, writes the query text (``render_query``, WebQSP layout) and executes it through the
graph access: a ``KGIndex`` (in memory, fast) or ``SparqlAccess`` (an rdflib Graph or an endpoint,
through ``readonly.run_sparql``). With ``verify_every=n`` every n-th executed query is also run by
rdflib on the graph and a differing answer is counted in ``stats.mismatches`` and not kept.
Entity names come from the graph's labels (``parsers.sparql.labels.GraphLabels``, or
``endpoint.EndpointLabels`` through an endpoint).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from parsers.errors import LogicalFormError
from parsers.sparql.entities import entity_id
from parsers.sparql.labels import NAME_PREDICATES, GraphLabels
from parsers.sparql.prefixes import WELL_KNOWN_PREFIXES
from qgen.datasets.records import RawExample
from qgen.samplers import Sampler, sparql_key
from qgen.samplers.endpoint import as_endpoint, labels_for
from qgen.samplers.kg_index import (
    IRI, LITERAL, KGIndex, KGQuery, answer_id, ordered_value, pick_extreme, render_query,
    term_key, term_kind,
)
from qgen.samplers.readonly import run_sparql

SHAPES: tuple[str, ...] = tuple(
    "+".join(p for p in (hops, constraint, modifier) if p)
    for hops in ("1hop", "2hop") for constraint in ("", "constraint") for modifier in ("", "superlative", "count")
)
EXCLUDED_PREDICATES = (
    *NAME_PREDICATES,
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
    "http://rdf.freebase.com/ns/type.object.type",
    "http://rdf.freebase.com/ns/common.topic.alias",
    "http://www.w3.org/2000/01/rdf-schema#comment",
)


@dataclass(frozen=True)
class KGSamplerConfig:
    seed: int = 0
    shapes: tuple[str, ...] = SHAPES
    max_answers: int = 10  # K: keep queries with 1..K answers (COUNT: 1..K counted answers)
    inverse_rate: float = 0.0  # share of draws whose first hop goes against the edge (?x p topic)
    timeout_s: float = 5.0
    verify_every: int = 0  # 0: never; n: every n-th executed query is also run by rdflib
    require_names: bool = True  # topic and constraint entities must have a label
    exclude_predicates: tuple[str, ...] = EXCLUDED_PREDICATES
    prefixes: Mapping[str, str] = field(default_factory=dict)  # extra prefixes for the query text

    def __post_init__(self) -> None:
        unknown = [s for s in self.shapes if s not in SHAPES]
        if unknown or not self.shapes:
            raise ValueError(f"unknown or no shapes {unknown}; known shapes: {', '.join(SHAPES)}")
        if self.max_answers < 1:
            raise ValueError("max_answers must be at least 1")


class KGSampler(Sampler):
    """Seeded sampler of KG queries: the same graph, config and seed give the same records in order."""

    def __init__(self, access: Any, config: KGSamplerConfig | None = None, graph: Any = None,
                 labels: Callable[[str], str | None] | None = None) -> None:
        self.access = access
        self.config = config or KGSamplerConfig()
        self.graph = graph  # for verify_every: the rdflib Graph the index was built from
        if self.config.verify_every and graph is None:
            raise ValueError("verify_every needs the rdflib graph (pass graph=...)")
        self.labels = labels or (GraphLabels(access) if isinstance(access, KGIndex)
                                 else labels_for(access.graph, self.config.timeout_s))
        super().__init__(self.config.seed)
        self.excluded = {h for h in map(access.handle, self.config.exclude_predicates) if h is not None}
        self.prefixes = {**WELL_KNOWN_PREFIXES, **self.config.prefixes}

    @classmethod
    def from_graph(cls, graph: Any, config: KGSamplerConfig | None = None) -> "KGSampler":
        """Build the in-memory index of an rdflib Graph (kept for verification) and sample over it."""
        return cls(KGIndex.from_graph(graph), config, graph=graph)

    @classmethod
    def from_endpoint(cls, graph_or_store: Any, config: KGSamplerConfig | None = None,
                      topics: list[Any] | None = None) -> "KGSampler":
        """Sample through SPARQL (an endpoint from ``readonly.endpoint_graph``, or any Graph)."""
        timeout = (config or KGSamplerConfig()).timeout_s
        return cls(SparqlAccess(graph_or_store, timeout_s=timeout, topics=topics), config)

    def draw(self) -> RawExample | None:
        """One draw; returns the record if it was kept (its outcome is recorded in ``stats``). A
        query or name lookup that fails while drawing (an endpoint that times out, refuses or
        answers junk) ends the draw with that outcome."""
        index = self.stats.drawn
        try:
            return self._draw(index)
        except LogicalFormError as error:
            if self.stats.drawn != index:  # the draw already has its outcome
                raise
            return self._failed(error)

    def _draw(self, index: int) -> RawExample | None:
        shape = self.config.shapes[self.rng.randrange(len(self.config.shapes))]
        q = self._draw_query(shape)
        try:
            text = None if q is None else render_query(q, self.access.term, self.prefixes)
        except ValueError:  # a blank node where the text needs a constant
            text = None
        if q is None or text is None:
            return self._outcome("unsampleable")
        names = self._names(q)
        if names is None:
            return self._outcome("unnamed")
        if not self._first_time(sparql_key(text)):
            return None
        try:
            answers = self.access.execute(q, limit=self.config.max_answers, timeout_s=self.config.timeout_s)
            every = self.config.verify_every
            if every and self.stats.executed % every == 0 and len(answers) <= self.config.max_answers:
                if not self._verify(q, text, answers):
                    return self._outcome("mismatches")
        except LogicalFormError as error:  # timeouts, refusals, ties at the top of a superlative
            return self._failed(error)
        if not answers:
            return self._outcome("no_answer")
        if len(answers) > self.config.max_answers:
            return self._outcome("too_many_answers")
        record = self._record(index, shape, q, text, names, answers)  # may look up names
        self.stats.add("kept")
        return record

    # -- drawing -----------------------------------------------------------------------------
    def _draw_query(self, shape: str) -> KGQuery | None:
        a, rng, parts = self.access, self.rng, shape.split("+")
        forward = not (self.config.inverse_rate and rng.random() < self.config.inverse_rate)
        topics = a.topics(forward)
        if not topics:
            return None
        topic = topics[rng.randrange(len(topics))]
        first = self._step(topic, forward)
        if first is None:
            return None
        p1, y = first
        hops: tuple[tuple[Any, bool], ...] = ((p1, forward),)
        witness = {"x": y}
        if parts[0] == "2hop":
            second = None if a.is_literal(y) else self._step(y, True)
            if second is None:
                return None
            hops, witness = (*hops, (second[0], True)), {"y": y, "x": second[1]}
        constraint = order = None
        if "constraint" in parts:
            var = rng.choice(sorted(witness))
            constraint = self._constraint(var, witness[var], topic)
            if constraint is None:
                return None
        if "superlative" in parts:
            var = rng.choice(sorted(witness))
            order = self._order(var, witness[var])
            if order is None:
                return None
        return KGQuery(topic, hops, constraint, order, "count" in parts)

    def _step(self, node: Any, forward: bool) -> tuple[Any, Any] | None:
        """A random allowed predicate of ``node`` and a random neighbour along it."""
        preds = [p for p in self.access.predicates(node, forward) if p not in self.excluded]
        if not preds:
            return None
        pred = preds[self.rng.randrange(len(preds))]
        ends = self.access.neighbours(node, pred, forward)
        return (pred, ends[self.rng.randrange(len(ends))]) if ends else None

    def _constraint(self, var: str, node: Any, topic: Any) -> tuple[str, Any, Any] | None:
        a = self.access
        if a.is_literal(node):
            return None
        preds = [p for p in a.predicates(node) if p not in self.excluded]
        for pred in self.rng.sample(preds, min(len(preds), 5)):
            objs = [o for o in a.neighbours(node, pred) if a.is_iri(o) and o != topic]
            if objs:
                return var, pred, objs[self.rng.randrange(len(objs))]
        return None

    def _order(self, var: str, node: Any) -> tuple[str, Any, bool] | None:
        a = self.access
        if a.is_literal(node):
            return None
        preds = [p for p in a.predicates(node) if p not in self.excluded]
        for pred in self.rng.sample(preds, min(len(preds), 10)):
            if any(a.ordered(o) for o in a.neighbours(node, pred)):
                return var, pred, self.rng.random() < 0.5
        return None

    # -- records -----------------------------------------------------------------------------
    def _names(self, q: KGQuery) -> dict[str, str] | None:
        names: dict[str, str] = {}
        for node in (q.topic, q.constraint[2] if q.constraint else None):
            if node is None:
                continue
            iri = str(self.access.term(node))
            name = self.labels(iri)
            if name:
                names[entity_id(iri) or iri] = name
            elif self.config.require_names:
                return None
        return names

    def _verify(self, q: KGQuery, text: str, answers: list[Any]) -> bool:
        self.stats.verified += 1
        result = run_sparql(self.graph, text, self.config.timeout_s)
        if q.count:  # rdflib's COUNT row; 0 when nothing matches
            return bool(result.rows) and int(result.rows[0][0]) == len(answers)
        return set(result.column(0)) == {self.access.term(h) for h in answers}

    def _record(self, index: int, shape: str, q: KGQuery, text: str, names: dict[str, str],
                answers: list[Any]) -> RawExample:
        ids = [answer_id(self.access.term(h)) for h in answers]
        shown = [str(len(answers))] if q.count else [self._answer_name(h) for h in answers]

        def iri(handle: Any) -> str:
            return str(self.access.term(handle))

        raw = {
            "sampler": "kg", "seed": self.config.seed, "draw": index, "shape": shape, "topic": iri(q.topic),
            "hops": [[iri(p), "forward" if forward else "inverse"] for p, forward in q.hops],
            "constraint": [q.constraint[0], iri(q.constraint[1]), iri(q.constraint[2])] if q.constraint else None,
            "order": [q.order[0], iri(q.order[1]), "DESC" if q.order[2] else "ASC"] if q.order else None,
            "count": q.count, "answer_ids": ids,
        }
        return RawExample(
            id=f"kg-{self.config.seed}-{index:07d}", split="synthetic", lf_type="sparql", logical_form=text,
            question=None, source="kg_sampler", raw=json.dumps(raw, ensure_ascii=False), names=names, answers=shown,
        )

    def _answer_name(self, handle: Any) -> str:
        node = self.access.term(handle)
        if term_kind(node) == IRI:
            return self.labels(str(node)) or answer_id(node)
        return str(node)


class SparqlAccess:
    """The sampler's graph access through SPARQL (``readonly.run_sparql``): for an endpoint, or to
    cross-check ``KGIndex``. Handles are rdflib terms, lists are in ``term_key`` order like the
    index's, so both give the same draws on the same graph. Blank nodes cannot be named in a
    query, so paths through them are not drawn here. Slow: one SPARQL query per step."""

    def __init__(self, graph_or_store: Any, timeout_s: float = 5.0, topics: list[Any] | None = None,
                 max_topics: int = 100_000) -> None:
        from rdflib import Graph

        self.graph = as_endpoint(graph_or_store) or (
            graph_or_store if isinstance(graph_or_store, Graph) else Graph(store=graph_or_store))
        self.timeout_s, self.max_topics = timeout_s, max_topics
        self._topics = {True: sorted(topics, key=term_key), False: sorted(topics, key=term_key)} if topics else {}

    def _run(self, text: str) -> list[tuple[Any, ...]]:
        return run_sparql(self.graph, text, self.timeout_s).rows

    def topics(self, forward: bool = True) -> list[Any]:
        if forward not in self._topics:
            where = "?t ?p ?o" if forward else "?o ?p ?t"
            rows = self._run(f"SELECT DISTINCT ?t WHERE {{ {where} FILTER(isIRI(?t)) }} LIMIT {self.max_topics}")
            self._topics[forward] = sorted((r[0] for r in rows), key=term_key)
        return self._topics[forward]

    def predicates(self, node: Any, forward: bool = True) -> list[Any]:
        if term_kind(node) != IRI:
            return []
        where = f"{node.n3()} ?p ?o" if forward else f"?o ?p {node.n3()}"
        return sorted({r[0] for r in self._run(f"SELECT DISTINCT ?p WHERE {{ {where} }}")}, key=term_key)

    def neighbours(self, node: Any, pred: Any, forward: bool = True) -> list[Any]:
        if term_kind(node) != IRI:
            return []
        where = f"{node.n3()} {pred.n3()} ?o" if forward else f"?o {pred.n3()} {node.n3()}"
        return sorted({r[0] for r in self._run(f"SELECT DISTINCT ?o WHERE {{ {where} }}")}, key=term_key)

    def is_literal(self, node: Any) -> bool:
        return term_kind(node) == LITERAL

    def is_iri(self, node: Any) -> bool:
        return term_kind(node) == IRI

    def ordered(self, node: Any) -> tuple[int, Any] | None:
        return ordered_value(node)

    def term(self, node: Any) -> Any:
        return node

    def handle(self, term_or_iri: Any) -> Any:
        from rdflib import URIRef

        return URIRef(term_or_iri) if type(term_or_iri) is str else term_or_iri

    def execute(self, q: KGQuery, limit: int | None = None, timeout_s: float = 5.0) -> list[Any]:
        """Answers as ``KGIndex.execute`` gives them, from the ``check`` variant of the query text."""
        result = run_sparql(self.graph, render_query(q, self.term, check=True), timeout_s)
        if q.order:
            best = pick_extreme(((row[0], ordered_value(row[1])) for row in result.rows), q.order[2])
            return [] if best is None else [best]
        return sorted(result.column(0), key=term_key)
