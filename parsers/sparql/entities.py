"""Find the entities of a SPARQL query and name them.

Entities: Freebase ids (``ns:m.xxx``, ``ns:g.xxx``), DBpedia resources (prefixed or full IRIs),
Wikidata Q-ids, and any other IRI that the given names name by its full IRI (a graph in a
namespace of its own, e.g. the demo's or a sampler's). Names come from, in order (the first that has one wins):
1. ``given``: names that came with the input (WebQSP's TopicEntityName and Constraints), keyed by
   canonical id (``m.01bkb``, ``Q42``), by full IRI or by the text as written;
2. ``labels``: a label source (``parsers.sparql.labels``), e.g. an rdflib Graph's rdfs:label;
3. ``comment``: a ``# name`` comment on the entity's line (WebQSP's hand-written queries annotate
   entities this way: ``ns:m.0fbrl ns:people.family.members ?x .  # Kennedy Family``);
4. ``local_name``: a DBpedia IRI's local name split on ``_`` and camelCase (``Barack_Obama``);
5. ``placeholder``: ``<e0>``, ``<e1>``, ... numbered per query, for an opaque id with no name.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Mapping
from urllib.parse import unquote

from parsers.result import Entity
from parsers.sparql.lexer import Token, split_pname
from parsers.sparql.prefixes import DBPEDIA_RESOURCE_PATTERN, FREEBASE_NS, WIKIDATA_ENTITY_NS
from parsers.token_rules import CAMEL_BOUNDARY, UNNAMED_ENTITY

LabelSource = Callable[[str], "str | None"]  # full IRI -> name

_FREEBASE_ID = re.compile(r"^[mg]\.[0-9a-z_]+$")
_WIKIDATA_QID = re.compile(r"^Q\d+$")
_DBPEDIA_RESOURCE = re.compile(DBPEDIA_RESOURCE_PATTERN)
_MAX_COMMENT_NAME = 80


def expand(tok: Token, prefixes: Mapping[str, str]) -> str | None:
    """The full IRI of an IRI or prefixed-name token (None for an undeclared prefix)."""
    if tok.kind == "iri":
        return tok.text[1:-1]
    prefix, local = split_pname(tok.text)
    base = prefixes.get(prefix)
    return None if base is None else base + local.replace("\\", "")


@lru_cache(maxsize=1 << 16)  # predicates and popular entities repeat across a corpus
def entity_id(iri: str) -> str | None:
    """The canonical id of an entity IRI, or None if the IRI is not an entity."""
    if iri.startswith(FREEBASE_NS):
        local = iri[len(FREEBASE_NS) :]
        return local if _FREEBASE_ID.match(local) else None
    if iri.startswith(WIKIDATA_ENTITY_NS):
        local = iri[len(WIKIDATA_ENTITY_NS) :]
        return local if _WIKIDATA_QID.match(local) else None
    if _DBPEDIA_RESOURCE.match(iri):
        return iri
    return None


def local_name(iri: str) -> str | None:
    """A DBpedia resource's local name as words: ``.../Barack_Obama`` -> ``Barack Obama``."""
    match = _DBPEDIA_RESOURCE.match(iri)
    if not match:
        return None
    words = unquote(iri[match.end() :]).replace("_", " ")
    words = CAMEL_BOUNDARY.sub(" ", words)
    return " ".join(words.split()) or None


def comment_names(all_tokens: list[Token], prefixes: Mapping[str, str]) -> dict[str, str]:
    """Names from ``# comments`` that close a line holding exactly one entity."""
    names: dict[str, str] = {}
    line: list[str] = []
    for tok in all_tokens:
        if tok.kind in ("iri", "pname"):
            iri = expand(tok, prefixes)
            ident = entity_id(iri) if iri else None
            if ident:
                line.append(ident)
        elif tok.kind == "comment":
            text = tok.text.lstrip("#").strip()
            if len(set(line)) == 1 and text and len(text) <= _MAX_COMMENT_NAME:
                names.setdefault(line[0], text)
        if "\n" in tok.text:
            line = []
    return names


class EntityNamer:
    """Resolves names for the entities of one query, numbering placeholders as it goes."""

    def __init__(
        self,
        given: Mapping[str, str] | None = None,
        labels: LabelSource | None = None,
        comments: Mapping[str, str] | None = None,
    ) -> None:
        self.given = given or {}
        self.labels = labels
        self.comments = comments or {}
        self.placeholders: dict[str, str] = {}

    def name(self, ident: str, iri: str, surface: str) -> Entity:
        for key in (ident, iri, surface):
            name = self.given.get(key)
            if name and name.strip():
                return Entity(ident, surface, name.strip(), "given")
        if self.labels is not None:
            name = self.labels(iri)
            if name and name.strip():
                return Entity(ident, surface, name.strip(), "labels")
        name = self.comments.get(ident)
        if name:
            return Entity(ident, surface, name, "comment")
        name = local_name(iri)
        if name:
            return Entity(ident, surface, name, "local_name")
        placeholder = self.placeholders.setdefault(ident, UNNAMED_ENTITY.format(index=len(self.placeholders)))
        return Entity(ident, surface, placeholder, "placeholder")
