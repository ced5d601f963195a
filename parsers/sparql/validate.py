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
import sys
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

from parsers.errors import SparqlSyntaxError, UnsupportedQueryError
from parsers.sparql.lexer import Token, lex, split_pname

SHAPE_CACHE_SIZE = 65_536
# rdflib's recursive-descent parser needs ~40 Python frames a bracket level: past ~24 nested
# brackets it hits Python's default recursion limit (1,000). It parses under a raised limit
# (PARSE_RECURSION_LIMIT; 128 levels parsed in a thread, measured with rdflib 7 on Python 3.11), and
# queries deeper than MAX_NESTING get a clear error up front instead of a RecursionError.
MAX_NESTING = 64
PARSE_RECURSION_LIMIT = 20_000


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


# Algebra nodes of queries qgen refuses whatever their spelling: a federated query makes the engine
# send requests to a URL of the query's choosing (server-side request forgery).
REFUSED_ALGEBRA = {"ServiceGraphPattern": "SERVICE (federated query) is refused"}
_SERVICE_REFUSED = "refused: "


def refused_algebra(node: object) -> str | None:
    """The reason to refuse a parsed query (rdflib's algebra or parse tree), else None.

    Walks every node, expressions included (``FILTER EXISTS { SERVICE ... }``), so the verdict
    does not depend on how the text spelled the keyword.
    """
    stack = [node]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        name = getattr(item, "name", None)
        if isinstance(name, str) and name in REFUSED_ALGEBRA:
            return REFUSED_ALGEBRA[name]
        if isinstance(item, dict):  # rdflib's CompValue is an OrderedDict
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif hasattr(item, "algebra"):  # rdflib's Query
            stack.append(item.algebra)
    return None


@lru_cache(maxsize=SHAPE_CACHE_SIZE)
def _rdflib_verdict(query: str) -> tuple[str, int] | None:
    """None when rdflib parses and translates ``query`` into an algebra qgen accepts, else
    (message, position); a refused algebra's message starts with ``_SERVICE_REFUSED``."""
    from pyparsing import ParseBaseException
    from rdflib.plugins.sparql import algebra, parser

    logging.getLogger("rdflib").setLevel(logging.ERROR)
    try:
        with deep_recursion():
            translated = algebra.translateQuery(parser.parseQuery(query))
    except ParseBaseException as exc:
        return f"rdflib: {exc.msg}", int(exc.loc)
    except RecursionError:
        return f"the query is nested too deeply for the parser (limit {MAX_NESTING} levels of brackets)", -1
    except Exception as exc:  # rdflib's algebra raises bare Exceptions for semantic errors
        return f"rdflib: {type(exc).__name__}: {exc}", -1
    refused = refused_algebra(translated)
    if refused is not None:
        return _SERVICE_REFUSED + refused, -1
    return None


def validate_sparql(normalized: str, tokens: list[Token] | None = None) -> None:
    """Raise ``SparqlSyntaxError`` unless rdflib accepts ``normalized``.

    ``tokens`` (default: lexed from ``normalized``) give the shape key; the PREFIX lines that
    normalisation adds may be left out of them, as they follow from the prefixes used. The first
    query of each shape is checked itself; later ones reuse its verdict. Positions in the error
    refer to ``normalized`` (``parsers.sparql.tokenize`` moves them past the PREFIX lines it added).
    """
    tokens = tokens if tokens is not None else lex(normalized)
    depth, where = nesting_depth(tokens)
    if depth > MAX_NESTING:
        raise SparqlSyntaxError(f"the query is nested too deeply: {depth} levels of brackets, the limit is "
                                f"{MAX_NESTING}", normalized, where)
    key = shape_key(tokens)
    verdict = _check_shape(key, normalized)
    if verdict is not None:
        message, position = verdict
        if message.startswith(_SERVICE_REFUSED):
            raise UnsupportedQueryError(message[len(_SERVICE_REFUSED):], normalized)
        raise SparqlSyntaxError(message, normalized, position if position >= 0 else None)


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Raise Python's recursion limit to ``PARSE_RECURSION_LIMIT`` while rdflib parses."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, PARSE_RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def nesting_depth(tokens: list[Token]) -> tuple[int, int]:
    """The deepest nesting of ( { [ in ``tokens`` and the position where it is reached."""
    depth = deepest = where = 0
    for tok in tokens:
        if tok.kind == "punct" and tok.text in "({[":
            depth += 1
            if depth > deepest:
                deepest, where = depth, tok.start
        elif tok.kind == "punct" and tok.text in ")}]":
            depth -= 1
    return deepest, where


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
