"""Validate normalised SPARQL with rdflib, once per query shape.

rdflib's parser costs ~15 ms a query. Generated and templated corpora repeat a few shapes with
other entities and literals, so the verdict is cached under a *shape key*: the lexer tokens with
every IRI and prefixed-name local part replaced by a placeholder and every literal by one of its
kind (string / integer / decimal / double). Two queries with the same key are the same sentence of
the grammar with other terminals of the same class, so they are both valid or both invalid.
Variables, keywords and prefixes are kept: they decide algebra errors (e.g. GROUP BY scoping) and
prefix declarations.
"""
from __future__ import annotations

import logging
from functools import lru_cache

from parsers.errors import SparqlSyntaxError
from parsers.sparql.lexer import Token, lex, split_pname

SHAPE_CACHE_SIZE = 65_536


def shape_key(tokens: list[Token]) -> str:
    """The query with terminals abstracted (see the module docstring)."""
    parts: list[str] = []
    for tok in tokens:
        kind = tok.kind
        if kind == "space":
            parts.append(" ")
        elif kind == "comment":
            continue
        elif kind == "pname":
            prefix, local = split_pname(tok.text)
            parts.append(f"{prefix}:L" if local else f"{prefix}:")
        elif kind == "iri":
            parts.append("<I>")
        elif kind == "string":
            parts.append('"S"')
        elif kind == "number":
            parts.append("1e0" if "e" in tok.text.lower() else "1.0" if "." in tok.text else "1")
        else:
            parts.append(tok.text)
    return "".join(parts)


@lru_cache(maxsize=SHAPE_CACHE_SIZE)
def _rdflib_verdict(query: str) -> tuple[str, int] | None:
    """None when rdflib parses and translates ``query``, else (message, position)."""
    from pyparsing import ParseBaseException
    from rdflib.plugins.sparql import algebra, parser

    logging.getLogger("rdflib").setLevel(logging.ERROR)
    try:
        algebra.translateQuery(parser.parseQuery(query))
    except ParseBaseException as exc:
        return f"rdflib: {exc.msg}", int(exc.loc)
    except Exception as exc:  # rdflib's algebra raises bare Exceptions for semantic errors
        return f"rdflib: {type(exc).__name__}: {exc}", -1
    return None


def validate_sparql(normalized: str, tokens: list[Token] | None = None) -> None:
    """Raise ``SparqlSyntaxError`` unless rdflib accepts ``normalized``.

    ``tokens`` (default: lexed from ``normalized``) give the shape key; the PREFIX lines that
    normalisation adds may be left out of them, as they follow from the prefixes used. The first
    query of each shape is checked itself; later ones reuse its verdict. Positions in the error
    refer to the normalised query (which begins with any PREFIX lines we added).
    """
    tokens = tokens if tokens is not None else lex(normalized)
    key = shape_key(tokens)
    verdict = _check_shape(key, normalized)
    if verdict is not None:
        message, position = verdict
        raise SparqlSyntaxError(f"{message} (in the normalised query)", normalized, position if position >= 0 else None)


_shape_verdicts: dict[str, tuple[str, int] | None] = {}


def _check_shape(key: str, normalized: str) -> tuple[str, int] | None:
    if key in _shape_verdicts:
        verdict = _shape_verdicts[key]
        if verdict is None:
            return None
        # Re-run on the real text so the message and position describe this query.
        return _rdflib_verdict(normalized)
    verdict = _rdflib_verdict(normalized)
    if len(_shape_verdicts) >= SHAPE_CACHE_SIZE:
        _shape_verdicts.clear()
    _shape_verdicts[key] = verdict
    return verdict
