"""Label sources: where entity names come from when the input does not give them.

A label source is any callable ``full IRI -> name or None``. Two are provided:
``GraphLabels`` reads an rdflib Graph (rdfs:label, Freebase type.object.name, skos:prefLabel,
schema:name, foaf:name; English or untagged preferred) and ``TableLabels`` a two-column id/name
table (CSV, TSV or Parquet) keyed by full IRI or canonical id (``m.01bkb``, ``Q42``).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable

from parsers.sparql.entities import entity_id

NAME_PREDICATES = (
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://rdf.freebase.com/ns/type.object.name",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://schema.org/name",
    "http://xmlns.com/foaf/0.1/name",
)


class GraphLabels:
    """Names from the label triples of an rdflib Graph."""

    def __init__(self, graph: "object", language: str = "en") -> None:
        from rdflib import URIRef

        self.graph = graph
        self.language = language
        self._predicates = [URIRef(p) for p in NAME_PREDICATES]
        self._uri = URIRef

    def __call__(self, iri: str) -> str | None:
        subject = self._uri(iri)
        for predicate in self._predicates:
            name = choose_label(self.graph.objects(subject, predicate), self.language)
            if name:
                return name
        return None


def choose_label(objects: Iterable[object], language: str) -> str | None:
    """The first of ``objects`` (the values of one name predicate) in ``language`` (or a variant of
    it, ``en-GB``) or untagged; else the first non-empty one; None if there is none."""
    best = None
    for obj in objects:
        lang = getattr(obj, "language", None)
        if lang in (None, language) or (lang or "").startswith(language + "-"):
            return str(obj)
        best = best or str(obj)
    return best


class TableLabels:
    """Names from a two-column (id, name) table."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    @classmethod
    def from_file(cls, path: str | Path) -> "TableLabels":
        path = Path(path)
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            ids, names = table.column(0).to_pylist(), table.column(1).to_pylist()
            return cls({str(i): str(n) for i, n in zip(ids, names) if i is not None and n})
        delimiter = "\t" if path.suffix in (".tsv", ".tab") else ","
        with open(path, newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle, delimiter=delimiter) if len(row) >= 2]
        if rows and rows[0][0].strip().lower() in ("id", "iri", "mid", "entity"):
            rows = rows[1:]
        return cls({row[0].strip(): row[1].strip() for row in rows if row[1].strip()})

    def __call__(self, iri: str) -> str | None:
        ident = entity_id(iri)
        return self.names.get(iri) or (self.names.get(ident) if ident else None)
