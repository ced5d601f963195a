"""SPARQL -> tokens, the scheme of seed "Question Generation using a Scratchpad Encoder" (Fig. 2).

The tokens are those of the query as written (comments removed), not of the normalised text, so
``OR`` stays ``or`` as in Figure 2. Choices where the paper is silent:
- PREFIX/BASE declarations carry no content and are left out (Figure 2 shows none).
- A full IRI in a well-known or declared namespace is read as its prefixed name
  (``<http://dbpedia.org/ontology/birthPlace>`` -> ``dbo birth place``); other IRIs are split.
- A variable keeps its sigil as a token (``?x`` -> ``? x``), a language tag its ``@``.
"""
from __future__ import annotations

from typing import Mapping

from parsers.guards import check_text
from parsers.result import Entity, ParsedLF
from parsers.sparql.entities import EntityNamer, LabelSource, comment_names, entity_id, expand
from parsers.sparql.lexer import Token, declaration_spans, lex, split_pname, string_content
from parsers.sparql.normalize import normalize_tokens
from parsers.sparql.prefixes import WELL_KNOWN_PREFIXES
from parsers.sparql.validate import validate_sparql
from parsers.token_rules import ENTITY_TOKEN
from parsers.tokens import entity_tokens, literal_tokens, operator_tokens, split_identifier


def tokenize_sparql(
    lf: str,
    names: Mapping[str, str] | None = None,
    labels: LabelSource | None = None,
    validate: bool = True,
) -> ParsedLF:
    """Normalise, validate (rdflib, cached per shape), find and name entities, and tokenize.

    Raises a ``parsers.errors.LogicalFormError`` subclass for input that is not a usable query.
    """
    lf = check_text(lf)
    all_tokens = lex(lf)
    tokens, normalized, prefixes = normalize_tokens(lf)
    if validate:
        validate_sparql(normalized, lf)
    namer = EntityNamer(names, labels, comment_names(all_tokens, prefixes))
    out, entities = _emit(tokens, prefixes, namer)
    return ParsedLF("sparql", lf, normalized, out, entities)


def _emit(tokens: list[Token], prefixes: Mapping[str, str], namer: EntityNamer) -> tuple[list[str], list[Entity]]:
    skip = declaration_spans(tokens)
    namespaces = _namespace_index(prefixes)
    out: list[str] = []
    entities: dict[str, Entity] = {}
    for index, tok in enumerate(tokens):
        if index in skip:
            continue
        kind = tok.kind
        if kind in ("space", "comment"):
            continue
        if kind in ("iri", "pname"):
            iri = expand(tok, prefixes)
            ident = entity_id(iri) if iri else None
            if ident:
                entity = entities.get(ident) or namer.name(ident, iri, tok.text)
                entities.setdefault(ident, entity)
                out.extend(_entity_tokens(entity))
            elif kind == "pname":
                prefix, local = split_pname(tok.text)
                out.extend(split_identifier(prefix) + split_identifier(local))
            else:
                out.extend(_iri_tokens(tok.text[1:-1], namespaces))
        elif kind == "string":
            out.extend(literal_tokens(*string_content(tok.text)))
        elif kind == "var":
            out.append(tok.text[0])
            out.extend(split_identifier(tok.text[1:]))
        elif kind == "langtag":
            out.append("@")
            out.extend(tok.text[1:].lower().split("-"))
        elif kind == "number":
            out.append(tok.text.lower())
        elif kind == "word":
            out.extend(split_identifier(tok.text))
        else:
            out.extend(operator_tokens(tok.text))
    return out, list(entities.values())


def _entity_tokens(entity: Entity) -> list[str]:
    if entity.name_source == "placeholder":
        return [ENTITY_TOKEN, entity.name]
    return entity_tokens(entity.name)


def _namespace_index(prefixes: Mapping[str, str]) -> list[tuple[str, str]]:
    """(namespace, prefix) pairs, longest namespace first; declared prefixes win over well-known."""
    merged = {iri: prefix for prefix, iri in WELL_KNOWN_PREFIXES.items()}
    merged.update({iri: prefix for prefix, iri in prefixes.items() if prefix})
    return sorted(merged.items(), key=lambda item: -len(item[0]))


def _iri_tokens(iri: str, namespaces: list[tuple[str, str]]) -> list[str]:
    for namespace, prefix in namespaces:
        if iri.startswith(namespace) and len(iri) > len(namespace):
            return split_identifier(prefix) + split_identifier(iri[len(namespace) :])
    return ["<", *split_identifier(iri), ">"]
