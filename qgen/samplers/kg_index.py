"""An in-memory index of an RDF graph that executes the KG sampler's query shapes without rdflib.

rdflib's SPARQL engine needs milliseconds a query; the sampler needs thousands a second. The index
is built once (from an rdflib Graph, any triple iterable, or an N-Triples file streamed without a
Graph): every term gets an integer id *in sorted term order*, and ``out[s][p]`` / ``inc[o][p]`` hold
sorted tuples of ids. Sorted ids make every draw independent of the order rdflib yields triples
in, and identical to what ``kg.SparqlAccess`` sees through SPARQL.

``execute(KGQuery)`` implements, for the shapes of ``kg.SHAPES``, the SPARQL semantics of the text
``render_query`` writes: the chain's joins, the entity constraint, ``FILTER (?x != topic)``, the
WebQSP language filter, ``DISTINCT`` / ``COUNT(DISTINCT ?x)``, and ``ORDER BY ... LIMIT 1``; a test
checks it against rdflib on every shape.
"""
from __future__ import annotations

import re
import time
from bisect import bisect_left
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from rdflib import BNode, Literal, URIRef

from parsers.errors import LogicalFormError
from parsers.sparql.entities import entity_id
from qgen.samplers.readonly import QueryTimeoutError

IRI, BNODE, LITERAL = 0, 1, 2
_EMPTY: tuple[int, ...] = ()
_XSD = "http://www.w3.org/2001/XMLSchema#"
LANG_FILTER = "FILTER (!isLiteral(?x) || lang(?x) = '' || langMatches(lang(?x), 'en'))"
SAFE_LOCAL = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?$")
_NUMERIC = {
    _XSD + name
    for name in (
        "integer", "int", "long", "short", "byte", "decimal", "float", "double", "nonNegativeInteger",
        "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedInt", "unsignedLong",
        "unsignedShort", "unsignedByte",
    )
}


class AmbiguousAnswerError(LogicalFormError):
    """``ORDER BY ... LIMIT 1`` has no single answer: a tie at the top, or values of mixed types."""

    stage = "execute"
    outcome = "ambiguous"  # the sampler stats field it is counted in


@dataclass(frozen=True)
class KGQuery:
    """One sampled query over node handles (ids of a ``KGIndex``, or rdflib terms for SPARQL access).

    ``hops``: (predicate, forward) per hop, ``?x`` = the last hop's end, ``?y`` = the middle node;
    ``constraint``: (variable "x"/"y", predicate, entity); ``order``: (variable, predicate, descending).
    """

    topic: Any
    hops: tuple[tuple[Any, bool], ...]
    constraint: tuple[str, Any, Any] | None = None
    order: tuple[str, Any, bool] | None = None
    count: bool = False

    @property
    def shape(self) -> str:
        parts = [f"{len(self.hops)}hop"]
        parts += ["constraint"] if self.constraint else []
        parts += ["superlative"] if self.order else []
        parts += ["count"] if self.count else []
        return "+".join(parts)


def term_kind(term: Any) -> int:
    return LITERAL if isinstance(term, Literal) else BNODE if isinstance(term, BNode) else IRI


def term_key(term: Any) -> tuple[int, str, str, str]:
    """The sort key of an rdflib term: IRIs, then blank nodes, then literals, each by text."""
    if isinstance(term, Literal):
        return LITERAL, str(term), str(term.datatype or ""), term.language or ""
    return term_kind(term), str(term), "", ""


def answer_id(term: Any) -> str:
    """How an answer is stored: an entity's canonical id (``m.0abc``, ``Q42``), another IRI in
    full, a literal's lexical form."""
    text = str(term)
    return (entity_id(text) or text) if term_kind(term) == IRI else text


def ordered_value(term: Any) -> tuple[int, Any] | None:
    """(family, value) of a literal ORDER BY can rank: numbers, xsd:date, naive or aware xsd:dateTime."""
    datatype = str(getattr(term, "datatype", None) or "")
    if not datatype or getattr(term, "ill_typed", False):
        return None
    value = term.value
    if datatype in _NUMERIC:
        number = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
        return (0, value) if number and value == value else None  # NaN cannot be ranked
    if datatype == _XSD + "date" and isinstance(value, date) and not isinstance(value, datetime):
        return 1, value
    if datatype == _XSD + "dateTime" and isinstance(value, datetime):
        return (2 if value.tzinfo is None else 3), value
    return None


def lang_ok(term: Any, language: str = "en") -> bool:
    """WebQSP's ``!isLiteral(?x) || lang(?x) = '' || langMatches(lang(?x), 'en')``."""
    lang = (getattr(term, "language", None) or "").lower()
    return not lang or lang == language or lang.startswith(language + "-")


def pick_extreme(rows: Iterable[tuple[Any, Any]], descending: bool) -> Any:
    """The answer of ``ORDER BY DESC|ASC(?sk) LIMIT 1`` over (answer, ordered_value) rows.

    Raises ``AmbiguousAnswerError`` for a tie between different answers or mixed value types; returns
    None for no rows.
    """
    best, best_value, family, tied = None, None, None, False
    for answer, ranked in rows:
        if ranked is None or (family is not None and ranked[0] != family):
            raise AmbiguousAnswerError("ORDER BY over values that are not all numbers, dates or dateTimes")
        family, value = ranked
        if best is None or (value > best_value if descending else value < best_value):
            best, best_value, tied = answer, value, False
        elif value == best_value and answer != best:
            tied = True
    if tied:
        raise AmbiguousAnswerError(f"several answers share the {'largest' if descending else 'smallest'} value")
    return best


def render_query(q: KGQuery, term: Callable[[Any], Any], prefixes: Mapping[str, str] | None = None,
                 check: bool = False) -> str:
    """The SPARQL text of ``q`` in WebQSP's layout (``term`` maps handles to rdflib terms).

    ``check=True`` writes the variant a SPARQL access runs to see every answer: ``DISTINCT ?x``
    instead of COUNT, and ``?x ?sk0`` rows without ORDER BY/LIMIT for a superlative.
    """
    writer = _IriWriter(prefixes or {})
    topic = writer(term(q.topic))
    nodes = [topic, *(["?y"] if len(q.hops) == 2 else []), "?x"]
    lines = [f"FILTER (?x != {topic})", LANG_FILTER]
    for i, (pred, forward) in enumerate(q.hops):
        a, b = (nodes[i], nodes[i + 1]) if forward else (nodes[i + 1], nodes[i])
        lines.append(f"{a} {writer(term(pred))} {b} .")
    if q.constraint:
        lines.append(f"?{q.constraint[0]} {writer(term(q.constraint[1]))} {writer(term(q.constraint[2]))} .")
    if q.order:
        lines.append(f"?{q.order[0]} {writer(term(q.order[1]))} ?sk0 .")
    head, tail = ("SELECT (COUNT(DISTINCT ?x) AS ?count)" if q.count and not check else "SELECT DISTINCT ?x"), ""
    if q.order and check:
        head = "SELECT ?x ?sk0"
    elif q.order:
        tail = f"ORDER BY {'DESC' if q.order[2] else 'ASC'}(?sk0)\nLIMIT 1\n"
    body = "\n".join(lines)
    return f"{writer.header()}{head}\nWHERE {{\n{body}\n}}\n{tail}"


class KGIndex:
    """subject -> predicate -> objects and object -> predicate -> subjects, over integer ids."""

    def __init__(self, terms: list[Any], out: dict[int, dict[int, tuple[int, ...]]],
                 inc: dict[int, dict[int, tuple[int, ...]]]) -> None:
        self.terms = terms
        self.ids = {term: i for i, term in enumerate(terms)}
        self.out, self.inc = out, inc
        self.kinds = bytes(term_kind(t) for t in terms)
        self.lang_ok = bytes(lang_ok(t) for t in terms)
        self.ranked = {i: ordered_value(t) for i, t in enumerate(terms) if self.kinds[i] == LITERAL}
        self.triples = sum(len(objs) for preds in out.values() for objs in preds.values())
        self._topics = {True: [s for s in sorted(out) if self.kinds[s] == IRI],
                        False: [o for o in sorted(inc) if self.kinds[o] == IRI]}

    @classmethod
    def from_triples(cls, triples: Iterable[tuple[Any, Any, Any]]) -> "KGIndex":
        """Build from (subject, predicate, object) rdflib terms (duplicates are merged)."""
        triples = triples if isinstance(triples, list) else list(triples)
        seen: dict[Any, None] = {}
        for s, p, o in triples:
            seen[s] = seen[p] = seen[o] = None
        terms = sorted(seen, key=term_key)
        ids = {term: i for i, term in enumerate(terms)}
        out: dict[int, dict[int, list[int]]] = {}
        inc: dict[int, dict[int, list[int]]] = {}
        for s, p, o in triples:
            si, pi, oi = ids[s], ids[p], ids[o]
            out.setdefault(si, {}).setdefault(pi, []).append(oi)
            inc.setdefault(oi, {}).setdefault(pi, []).append(si)
        return cls(terms, _freeze(out), _freeze(inc))

    @classmethod
    def from_graph(cls, graph: Any) -> "KGIndex":
        return cls.from_triples(list(graph.triples((None, None, None))))

    @classmethod
    def from_file(cls, path: str | Path, format: str | None = None) -> "KGIndex":
        """N-Triples is streamed without an rdflib Graph; other formats are parsed into one first."""
        from rdflib import Graph
        from rdflib.plugins.parsers.ntriples import W3CNTriplesParser
        from rdflib.util import guess_format

        path = Path(path)
        format = format or guess_format(str(path)) or "turtle"
        if format in ("nt", "ntriples", "nt11"):
            sink = _ListSink()
            with open(path, "rb") as handle:
                W3CNTriplesParser(sink).parse(handle)
            return cls.from_triples(sink.triples)
        return cls.from_graph(Graph().parse(path, format=format))

    # -- the access interface the sampler draws through (shared with kg.SparqlAccess) ----------
    def topics(self, forward: bool = True) -> list[int]:
        """IRIs with outgoing (forward) or incoming edges, in term order."""
        return self._topics[forward]

    def predicates(self, node: int, forward: bool = True) -> Sequence[int]:
        return tuple((self.out if forward else self.inc).get(node, {}))

    def neighbours(self, node: int, pred: int, forward: bool = True) -> Sequence[int]:
        return (self.out if forward else self.inc).get(node, {}).get(pred, _EMPTY)

    def is_literal(self, node: int) -> bool:
        return self.kinds[node] == LITERAL

    def is_iri(self, node: int) -> bool:
        return self.kinds[node] == IRI

    def ordered(self, node: int) -> tuple[int, Any] | None:
        return self.ranked.get(node)

    def term(self, node: int) -> Any:
        return self.terms[node]

    def handle(self, term_or_iri: Any) -> int | None:
        """The id of an rdflib term (a string is read as an IRI), or None if the graph lacks it."""
        return self.ids.get(URIRef(term_or_iri) if type(term_or_iri) is str else term_or_iri)

    def objects(self, subject: Any, predicate: Any) -> Iterator[Any]:
        """rdflib's ``Graph.objects`` on terms, so that ``GraphLabels(index)`` reads labels here."""
        s, p = self.ids.get(subject), self.ids.get(predicate)
        if s is not None and p is not None:
            yield from (self.terms[o] for o in self.neighbours(s, p))

    def execute(self, q: KGQuery, limit: int | None = None, timeout_s: float = 5.0) -> list[int]:
        """The distinct answers of ``q`` in term order (counted ones for COUNT; stops past ``limit``)."""
        rows = _checked(self._rows(q), time.monotonic() + timeout_s, q)
        if q.order:
            order_at_y, ps, descending = q.order[0] == "y", q.order[1], q.order[2]
            ranked = ((x, self.ranked.get(sk)) for y, x in rows for sk in self.neighbours(y if order_at_y else x, ps))
            best = pick_extreme(ranked, descending)
            return [] if best is None else [best]
        answers: dict[int, None] = {}
        for _, x in rows:
            answers[x] = None
            if limit is not None and len(answers) > limit:
                break
        return sorted(answers)

    def _rows(self, q: KGQuery) -> Iterator[tuple[int, int]]:
        """(?y, ?x) solutions of the chain, the constraint and the two filters (?y = ?x for 1 hop)."""
        (p1, f1), topic, has, lang_ok_ = q.hops[0], q.topic, self._has, self.lang_ok
        first = self.neighbours(topic, p1, f1)
        if len(q.hops) == 2:
            p2, f2 = q.hops[1]
            pairs: Iterable[tuple[int, int]] = ((y, x) for y in first for x in self.neighbours(y, p2, f2))
        else:
            pairs = ((x, x) for x in first)
        at_y, pc, oc = (q.constraint[0] == "y", q.constraint[1], q.constraint[2]) if q.constraint else (False, -1, -1)
        for y, x in pairs:
            if x != topic and lang_ok_[x] and (pc < 0 or has(y if at_y else x, pc, oc)):
                yield y, x

    def _has(self, node: int, pred: int, obj: int) -> bool:
        objs = self.out.get(node, {}).get(pred, _EMPTY)
        i = bisect_left(objs, obj)
        return i < len(objs) and objs[i] == obj


def _freeze(adjacency: dict[int, dict[int, list[int]]]) -> dict[int, dict[int, tuple[int, ...]]]:
    """Predicates in id order, each with its sorted, duplicate-free neighbours."""
    return {node: {p: tuple(sorted(set(preds[p]))) for p in sorted(preds)} for node, preds in adjacency.items()}


def _checked(rows: Iterable[tuple[int, int]], deadline: float, q: KGQuery) -> Iterator[tuple[int, int]]:
    """``rows``, raising ``QueryTimeoutError`` past ``deadline`` (checked every 4,096 rows)."""
    for n, row in enumerate(rows, 1):
        if not n & 4095 and time.monotonic() > deadline:
            raise QueryTimeoutError(f"index evaluation of a {q.shape} query ran past its time limit")
        yield row


class _ListSink:
    """Collects the triples of rdflib's N-Triples parser."""

    def __init__(self) -> None:
        self.triples: list[tuple[Any, Any, Any]] = []

    def triple(self, s: Any, p: Any, o: Any) -> None:
        self.triples.append((s, p, o))


class _IriWriter:
    """Writes IRIs as prefixed names where a namespace fits, and remembers the prefixes used."""

    def __init__(self, prefixes: Mapping[str, str]) -> None:
        self.namespaces = sorted(((ns, p) for p, ns in prefixes.items() if p), key=lambda item: -len(item[0]))
        self.used: dict[str, str] = {}

    def __call__(self, node: Any) -> str:
        if term_kind(node) != IRI:
            raise ValueError(f"cannot write {node!r} as a constant of the query")
        iri = str(node)
        for namespace, prefix in self.namespaces:
            local = iri[len(namespace):]
            if iri.startswith(namespace) and SAFE_LOCAL.match(local):
                self.used.setdefault(prefix, namespace)
                return f"{prefix}:{local}"
        return f"<{iri}>"

    def header(self) -> str:
        return "".join(f"PREFIX {p}: <{ns}>\n" for p, ns in sorted(self.used.items()))
