"""Entity substitution: seed queries (e.g. WebQSP train) with the topic entity swapped for others.

For each seed the topic is the subject (else object) IRI of the query's basic graph pattern that
the seed names (WebQSP's ``TopicEntityMid``), else the first such IRI. Candidates are the entities
for which that pattern, with the topic made a variable, has a solution (one SPARQL query); each
candidate is written into the seed's text in place of the topic (same token kind, so the query
shape is unchanged; comments on those lines, which named the old topic, are dropped), executed
read-only, and kept with 1..K answers. Names: the seed's names minus the old topic, plus the
label of the new one. Outcomes per tried candidate are counted in ``stats``; a seed that cannot be
used at all (not SPARQL, refused, no topic) counts once as ``refused``/``errors``/``unsampleable``.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from parsers.errors import LogicalFormError
from parsers.sparql.entities import entity_id, expand
from parsers.sparql.lexer import declaration_spans, lex, prefix_declarations, split_pname
from parsers.sparql.normalize import normalize_tokens
from parsers.sparql.prefixes import WELL_KNOWN_PREFIXES
from qgen.datasets.records import RawExample
from qgen.samplers import SamplerStats, outcome_of, sparql_key
from qgen.samplers.endpoint import labels_for
from qgen.samplers.kg_index import SAFE_LOCAL, answer_id, term_key
from qgen.samplers.readonly import prepare_query, run_sparql

_TOPIC_VAR = "qgen_topic"


@dataclass(frozen=True)
class SubstitutionConfig:
    seed: int = 0
    per_seed: int = 5  # substitutes kept per seed query at most
    max_candidates: int = 50  # candidate entities executed per seed at most
    max_scan: int = 10_000  # candidate entities read from the graph per seed at most
    max_answers: int = 10  # K
    timeout_s: float = 5.0
    require_names: bool = True  # the new topic must have a label


def replace_entity(lf: str, old_iri: str, new_iri: str) -> str:
    """``lf`` with every IRI / prefixed name that means ``old_iri`` written as ``new_iri`` in the
    same form (a prefixed name where the prefix fits); ``#`` comments on those lines are dropped."""
    tokens = lex(lf)
    prefixes = {**WELL_KNOWN_PREFIXES, **prefix_declarations(tokens)}
    skip = declaration_spans(tokens)
    out: list[str] = []
    replaced_on_line = False
    for i, tok in enumerate(tokens):
        if tok.kind in ("iri", "pname") and i not in skip and expand(tok, prefixes) == old_iri:
            out.append(_write_like(tok.text, tok.kind, new_iri, prefixes))
            replaced_on_line = True
        elif tok.kind == "comment" and replaced_on_line:
            if out and not out[-1].strip() and "\n" not in out[-1]:
                out.pop()  # the spaces before the dropped comment
            continue
        else:
            out.append(tok.text)
        if "\n" in tok.text:
            replaced_on_line = False
    return "".join(out)


def _write_like(text: str, kind: str, iri: str, prefixes: dict[str, str]) -> str:
    if kind == "pname":
        prefix = split_pname(text)[0]
        namespace = prefixes.get(prefix, "")
        if namespace and iri.startswith(namespace) and SAFE_LOCAL.match(iri[len(namespace):]):
            return f"{prefix}:{iri[len(namespace):]}"
    return f"<{iri}>"


class EntitySubstitution:
    """Seeded substitution over an rdflib Graph (or an endpoint from ``readonly.endpoint_graph``)."""

    def __init__(self, graph: Any, config: SubstitutionConfig | None = None,
                 labels: Callable[[str], str | None] | None = None) -> None:
        self.graph = graph
        self.config = config or SubstitutionConfig()
        self.labels = labels or labels_for(graph, self.config.timeout_s)  # e.g. GraphLabels(KGIndex): faster
        self.rng = random.Random(self.config.seed)
        self.stats = SamplerStats()
        self.seen: set[str] = set()

    def substitute(self, seeds: Iterable[RawExample]) -> Iterator[RawExample]:
        """Substitutes of every seed, seed by seed, in order."""
        for seed in seeds:
            yield from self.substitutes_for(seed)

    def substitutes_for(self, seed: RawExample) -> list[RawExample]:
        if seed.load_error or seed.lf_type != "sparql":
            self.stats.add("unsampleable")
            return []
        try:
            algebra = prepare_query(normalize_tokens(seed.logical_form).text).algebra
            topic, pattern = find_topic(algebra, seed.names)
        except LogicalFormError as error:
            self.stats.add(outcome_of(error))
            return []
        if topic is None:
            self.stats.add("unsampleable")
            return []
        self.seen.add(sparql_key(seed.logical_form))
        kept: list[RawExample] = []
        for candidate in self._candidates(topic, pattern):
            drawn = self.stats.drawn
            try:
                record = self._try(seed, topic, candidate, len(kept), is_count_query(algebra))
            except LogicalFormError as error:  # a name lookup through an endpoint that failed
                if self.stats.drawn != drawn:
                    raise
                self.stats.add(outcome_of(error))
                continue
            if record is not None:
                kept.append(record)
                if len(kept) >= self.config.per_seed:
                    break
        return kept

    def _candidates(self, topic: Any, pattern: list[tuple[Any, Any, Any]]) -> list[Any]:
        """Entities (not the topic) for which ``pattern`` with the topic as a variable has a solution."""
        from rdflib import URIRef, Variable

        var = Variable(_TOPIC_VAR)
        body = " ".join(" ".join(var.n3() if t == topic else t.n3() for t in triple) + " ." for triple in pattern)
        query = (f"SELECT DISTINCT ?{_TOPIC_VAR} WHERE {{ {body} FILTER(isIRI(?{_TOPIC_VAR})) }} "
                 f"LIMIT {self.config.max_scan}")
        try:
            rows = run_sparql(self.graph, query, self.config.timeout_s).column(0)
        except LogicalFormError:
            return []
        found = sorted((e for e in rows if isinstance(e, URIRef) and e != topic), key=term_key)
        self.rng.shuffle(found)
        return found[: self.config.max_candidates]

    def _try(self, seed: RawExample, topic: Any, candidate: Any, number: int, counting: bool) -> RawExample | None:
        old, new = str(topic), str(candidate)
        lf = replace_entity(seed.logical_form, old, new)
        name = self.labels(new)
        if not name and self.config.require_names:
            self.stats.add("unnamed")
            return None
        key = sparql_key(lf)
        if key in self.seen:
            self.stats.add("duplicates")
            return None
        self.seen.add(key)
        self.stats.executed += 1
        try:
            result = run_sparql(self.graph, lf, self.config.timeout_s)
        except LogicalFormError as error:
            self.stats.add(outcome_of(error))
            return None
        values = result.column(0)
        count = _count_value(result) if counting else None
        size = count if count is not None else len(values)
        if size == 0:
            self.stats.add("no_answer")
            return None
        if size > self.config.max_answers:
            self.stats.add("too_many_answers")
            return None
        stale = {old, entity_id(old) or old}
        names = {k: v for k, v in seed.names.items() if k not in stale}
        if name:
            names[entity_id(new) or new] = name
        ids = [answer_id(v) for v in values]
        shown = [str(count)] if count is not None else [self._answer_name(v) for v in values]
        raw = {"sampler": "substitution", "seed": self.config.seed, "seed_id": seed.id, "replaced": old,
               "by": new, "answer_ids": ids}
        record = RawExample(
            id=f"{seed.id}~sub{number}", split="synthetic", lf_type="sparql", logical_form=lf, question=None,
            source="substitution", raw=json.dumps(raw, ensure_ascii=False), names=names, answers=shown,
        )
        self.stats.add("kept")
        return record

    def _answer_name(self, value: Any) -> str:
        from rdflib import URIRef

        return (self.labels(str(value)) or answer_id(value)) if isinstance(value, URIRef) else str(value)


def find_topic(algebra: Any, names: dict[str, str]) -> tuple[Any, list[tuple[Any, Any, Any]]]:
    """The topic IRI and the triple patterns of the first basic graph pattern that holds it."""
    from rdflib import URIRef

    best: tuple[Any, list] = (None, [])
    for triples in basic_graph_patterns(algebra):
        iris = [t[0] for t in triples if isinstance(t[0], URIRef)] + [t[2] for t in triples if isinstance(t[2], URIRef)]
        for iri in iris:
            if str(iri) in names or (entity_id(str(iri)) or "") in names:
                return iri, triples
        if best[0] is None and iris:
            best = (iris[0], triples)
    return best


def basic_graph_patterns(algebra: Any) -> Iterator[list[tuple[Any, Any, Any]]]:
    """The triple lists of every BGP in an rdflib algebra tree, in document order."""
    for node in _nodes(algebra):
        if node.name == "BGP":
            yield list(node.get("triples") or [])


def _nodes(node: Any) -> Iterator[Any]:
    """Every CompValue of an rdflib algebra tree, in document order."""
    from rdflib.plugins.sparql.parserutils import CompValue

    if isinstance(node, CompValue):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            yield from _nodes(value)


def is_count_query(algebra: Any) -> bool:
    """True when the query projects a COUNT (its answer is one number, not the rows)."""
    return any(node.name == "Aggregate_Count" for node in _nodes(algebra))


def _count_value(result: Any) -> int:
    value = getattr(result.rows[0][0], "value", None) if result.rows and result.rows[0] else None
    return value if isinstance(value, int) else 0
