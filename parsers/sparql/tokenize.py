"""SPARQL -> tokens, the scheme of seed "Question Generation using a Scratchpad Encoder" (Fig. 2).

The tokens are those of the query as written (comments removed), not of the normalised text, so
``OR`` stays ``or`` as in Figure 2. Choices where the paper is silent:
- PREFIX/BASE declarations carry no content and are left out (Figure 2 shows none).
- A full IRI in a well-known or declared namespace is read as its prefixed name
  (``<http://dbpedia.org/ontology/birthPlace>`` -> ``dbo birth place``); other IRIs are split.
- A variable keeps its sigil as a token (``?x`` -> ``? x``), a language tag its ``@``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from parsers.guards import check_text
from parsers.result import Entity, ParsedLF
from parsers.sparql.escapes import expand_codepoint_escapes
from parsers.sparql.entities import EntityNamer, LabelSource, comment_names, entity_id, expand
from parsers.sparql.lexer import Token, declaration_spans, lex, split_pname, string_content
from parsers.errors import SparqlSyntaxError
from parsers.sparql.normalize import Normalized, normalize_tokens
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
    lf = expand_codepoint_escapes(check_text(lf))  # the query rdflib reads (parsers.sparql.escapes)
    all_tokens = lex(lf)
    norm = normalize_tokens(lf, all_tokens)
    if validate:
        try:
            validate_sparql(norm.text, norm.rewritten)
        except SparqlSyntaxError as err:
            raise _in_the_query(err, norm, lf) from None
    comments = comment_names(all_tokens, norm.prefixes) if len(norm.tokens) < len(all_tokens) else {}
    namer = EntityNamer(names, labels, comments)
    out, raw, entities = _emit(norm.tokens, norm.prefixes, namer)
    return ParsedLF("sparql", lf, norm.text, out, entities, raw if entities else None)


def _in_the_query(err: SparqlSyntaxError, norm: Normalized, lf: str) -> SparqlSyntaxError:
    """``err`` with its position in the query as the user wrote it (``lf``): rdflib's position is in the
    normalised text, after the PREFIX lines that normalisation added (a 44-character query said "at
    position 129") and with comments dropped and some tokens rewritten. Each rewritten token keeps its
    offset in ``lf`` (``Token.start``; -1 for an inserted one: the next kept token's is taken)."""
    if err.position is None or err.lf != norm.text:
        return err
    offset = err.position - (len(norm.text) - sum(len(t.text) for t in norm.rewritten))  # past the PREFIX lines
    if offset < 0:
        return err
    at = len(lf)  # past the last token: the end of the query
    for token in norm.rewritten:
        if offset < len(token.text):
            if token.start >= 0:
                at = token.start + offset
                break
            offset = 0  # inside a token that a rewrite inserted: at the next token the user wrote
            continue
        offset -= len(token.text)
    return SparqlSyntaxError(err.message, lf, min(at, len(lf)))


def _emit(tokens: list[Token], prefixes: Mapping[str, str],
          namer: EntityNamer) -> tuple[list[str], list[str], list[Entity]]:
    """Model tokens, the same with entities kept as written, and the entities found."""
    skip = declaration_spans(tokens)
    namespaces: list[tuple[str, str]] | None = None
    out: list[str] = []
    raw: list[str] = []  # filled lazily: only queries with entities need a second list
    raw_upto = 0  # out[:raw_upto] has been copied to raw
    entities: dict[str, Entity] = {}
    for index, tok in enumerate(tokens):
        kind = tok.kind
        if kind == "space" or index in skip:
            continue
        if kind != "pname" and kind != "iri":
            out.extend(_plain_tokens(kind, tok.text))
            continue
        iri = expand(tok, prefixes)
        ident = entity_id(iri) if iri else None
        if ident is None and iri and iri in namer.given:
            ident = iri  # any IRI the caller names is an entity (a KG in its own namespace)
        if ident:
            entity = entities.get(ident) or namer.name(ident, iri, tok.text)
            entities.setdefault(ident, entity)
            raw.extend(out[raw_upto:])
            if kind == "pname":
                raw.extend(_pname_tokens(tok.text))
            else:
                namespaces = namespaces if namespaces is not None else _namespace_index(prefixes)
                raw.extend(_iri_tokens(tok.text[1:-1], namespaces))
            out.extend(_entity_tokens(entity))
            raw_upto = len(out)
        elif kind == "pname":
            out.extend(_pname_tokens(tok.text))
        else:
            namespaces = namespaces if namespaces is not None else _namespace_index(prefixes)
            out.extend(_iri_tokens(tok.text[1:-1], namespaces))
    raw.extend(out[raw_upto:])
    return out, raw, list(entities.values())


@lru_cache(maxsize=1 << 16)  # keywords, variables and operators repeat: work each out once
def _plain_tokens(kind: str, text: str) -> tuple[str, ...]:
    if kind == "string":
        return tuple(literal_tokens(*string_content(text)))
    if kind == "var":
        return (text[0], *split_identifier(text[1:]))
    if kind == "langtag":
        return ("@", *text[1:].lower().split("-"))
    if kind == "number":
        return (text.lower(),)
    if kind == "word":
        return tuple(split_identifier(text))
    if kind == "comment":
        return ()
    return tuple(operator_tokens(text))


@lru_cache(maxsize=1 << 16)
def _pname_tokens(text: str) -> tuple[str, ...]:
    prefix, local = split_pname(text)
    return (*split_identifier(prefix), *split_identifier(local))


def _entity_tokens(entity: Entity) -> list[str]:
    if entity.name_source == "placeholder":
        return [ENTITY_TOKEN, entity.name]
    return entity_tokens(entity.name)


def _namespace_index(prefixes: Mapping[str, str]) -> list[tuple[str, str]]:
    """(namespace, prefix) pairs, longest namespace first; declared prefixes win over well-known."""
    merged: dict[str, str] = {}
    for prefix, iri in WELL_KNOWN_PREFIXES.items():
        merged.setdefault(iri, prefix)  # the first listed wins: dbr over res, ns over fb
    merged.update({iri: prefix for prefix, iri in prefixes.items() if prefix})
    return sorted(merged.items(), key=lambda item: -len(item[0]))


def _iri_tokens(iri: str, namespaces: list[tuple[str, str]]) -> list[str]:
    for namespace, prefix in namespaces:
        if iri.startswith(namespace) and len(iri) > len(namespace):
            return split_identifier(prefix) + split_identifier(iri[len(namespace) :])
    return ["<", *split_identifier(iri), ">"]
