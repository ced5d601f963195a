"""Rewrite Virtuoso-style SPARQL into standard SPARQL 1.1 that rdflib accepts.

Public KBQA queries were written for Virtuoso endpoints, which accept more than the standard:
- ``OR`` / ``AND`` as boolean operators (WebQSP filters) -> ``||`` / ``&&``;
- aggregates in SELECT without ``(... AS ?var)`` (``SELECT COUNT(?x) WHERE``) -> wrapped;
- ``HAVING COUNT(?x) = 2`` without brackets -> ``HAVING (COUNT(?x) = 2)``;
- prefixes the endpoint predeclares (``xsd:``, ``dbo:``, ``wdt:``, ...) -> declared;
- ``#`` comment lines (``#MANUAL SPARQL``) -> removed.
All rewrites work on lexer tokens, so nothing inside a string literal or an IRI is touched.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from parsers.errors import UnknownPrefixError, UnsupportedQueryError
from parsers.sparql.escapes import expand_codepoint_escapes
from parsers.sparql.lexer import Token, lex, prefix_declarations
from parsers.sparql.prefixes import WELL_KNOWN_PREFIXES

AGGREGATES = {"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"}
UPDATE_KEYWORDS = {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
QUERY_KEYWORDS = {"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"}
_BOOLEAN_WORDS = {"OR": "||", "AND": "&&"}
_SOLUTION_MODIFIERS = {"ORDER", "LIMIT", "OFFSET", "VALUES", "HAVING"}
_AGGREGATE_HINT = re.compile(r"(?:" + "|".join(a.lower() for a in AGGREGATES) + r")\s*\(")


def strip_comments(tokens: list[Token]) -> list[Token]:
    """Drop ``#`` comments (the newline after them stays, so line structure is kept)."""
    return [t for t in tokens if t.kind != "comment"]


def check_query_form(tokens: list[Token], lf: str) -> None:
    """Refuse SPARQL Update and federated queries before anything else looks at them."""
    if "service" in lf.lower():
        for tok in tokens:
            if tok.kind == "word" and tok.text.upper() == "SERVICE":
                raise UnsupportedQueryError("SERVICE (federated query) is refused", lf, tok.start)
    first = next((t for t in tokens if t.kind == "word" and t.text.upper() not in ("PREFIX", "BASE")), None)
    if first is None:
        raise UnsupportedQueryError("no query form (SELECT, ASK, CONSTRUCT, DESCRIBE) found", lf, 0)
    upper = first.text.upper()
    if upper in UPDATE_KEYWORDS:
        raise UnsupportedQueryError(f"SPARQL Update ({upper}) is refused: only queries are accepted", lf, first.start)
    if upper not in QUERY_KEYWORDS:
        raise UnsupportedQueryError(f"expected SELECT, ASK, CONSTRUCT or DESCRIBE, found {first.text!r}", lf, first.start)


def rewrite_boolean_words(tokens: list[Token]) -> list[Token]:
    """Virtuoso's ``OR``/``AND`` -> ``||``/``&&`` (neither is a SPARQL keyword, so this is safe)."""
    return [
        Token("punct", _BOOLEAN_WORDS[t.text.upper()], t.start)
        if t.kind == "word" and t.text.upper() in _BOOLEAN_WORDS
        else t
        for t in tokens
    ]


def wrap_bare_aggregates(tokens: list[Token]) -> list[Token]:
    """``SELECT COUNT(?x) WHERE`` -> ``SELECT (COUNT(?x) AS ?count) WHERE`` in every SELECT clause."""
    out: list[Token] = []
    used_vars = {t.text[1:].lower() for t in tokens if t.kind == "var"}
    i = 0
    in_select = False
    depth = 0
    while i < len(tokens):
        tok = tokens[i]
        upper = tok.text.upper() if tok.kind == "word" else tok.text
        if tok.kind == "word" and upper == "SELECT":
            in_select, depth = True, 0
        elif in_select and (upper in ("WHERE", "FROM", "{") and depth == 0):
            in_select = False
        elif in_select and tok.text == "(":
            depth += 1
        elif in_select and tok.text == ")":
            depth -= 1
        if in_select and depth == 0 and tok.kind == "word" and upper in AGGREGATES:
            end = _matching_paren_end(tokens, i + 1)
            if end is not None:
                alias_end = _explicit_alias_end(tokens, end)
                if alias_end is not None:
                    inner, end = tokens[i:alias_end], alias_end
                else:
                    name = _fresh_name(upper.lower(), used_vars)
                    inner = tokens[i:end] + [Token("space", " ", -1), Token("word", "AS", -1),
                                             Token("space", " ", -1), Token("var", f"?{name}", -1)]
                out.append(Token("punct", "(", -1))
                out.extend(inner)
                out.append(Token("punct", ")", -1))
                i = end
                continue
        out.append(tok)
        i += 1
    return out


def wrap_bare_having(tokens: list[Token]) -> list[Token]:
    """Virtuoso's ``HAVING COUNT(?x) = 2`` -> ``HAVING (COUNT(?x) = 2)`` (SPARQL wants a bracket)."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        out.append(tok)
        i += 1
        if not (tok.kind == "word" and tok.text.upper() == "HAVING"):
            continue
        start = i
        while start < len(tokens) and tokens[start].kind == "space":
            start += 1
        if start >= len(tokens) or tokens[start].text == "(":
            continue
        end, depth = start, 0
        while end < len(tokens):
            text = tokens[end].text
            upper = text.upper() if tokens[end].kind == "word" else text
            if depth == 0 and (upper in _SOLUTION_MODIFIERS or text == "}"):
                break
            depth += (text == "(") - (text == ")")
            end += 1
        while end > start and tokens[end - 1].kind == "space":
            end -= 1
        out.extend(tokens[i:start])
        out.append(Token("punct", "(", -1))
        out.extend(tokens[start:end])
        out.append(Token("punct", ")", -1))
        i = end
    return out


def declare_prefixes(tokens: list[Token], lf: str) -> tuple[str, dict[str, str]]:
    """Prepend PREFIX lines for well-known prefixes used but not declared.

    Returns the declarations text and the complete prefix map. An undeclared prefix that is not
    well known raises ``UnknownPrefixError`` at its first use.
    """
    declared = prefix_declarations(tokens)
    used = {t.text.partition(":")[0] for t in tokens if t.kind == "pname"}
    missing: dict[str, str] = {}
    for prefix in sorted(used - declared.keys()):
        if prefix not in WELL_KNOWN_PREFIXES:
            first = next(t for t in tokens if t.kind == "pname" and t.text.partition(":")[0] == prefix)
            shown = f"'{prefix}:'" if prefix else "the empty prefix ':'"
            raise UnknownPrefixError(f"prefix {shown} is used but neither declared nor well known", lf, first.start)
        missing[prefix] = WELL_KNOWN_PREFIXES[prefix]
    header = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in missing.items())
    return header, {**missing, **declared}


class Normalized(NamedTuple):
    tokens: list[Token]  # the input's tokens, comments removed (what the tokenizer reads)
    rewritten: list[Token]  # after the rewrites, without the added PREFIX lines
    text: str  # the normalised query: added PREFIX lines + the rewritten tokens
    prefixes: dict[str, str]  # every prefix in force: declared and added


def normalize_tokens(lf: str, all_tokens: list[Token] | None = None) -> Normalized:
    """Normalise ``lf`` (its lexer tokens may be passed in to avoid lexing twice).

    Codepoint escapes are expanded first (``parsers.sparql.escapes``): every rewrite and check reads
    the query rdflib will parse. Tokens passed in must be those of the expanded text.
    """
    expanded = expand_codepoint_escapes(lf)
    if expanded != lf:
        lf, all_tokens = expanded, None
    tokens = strip_comments(all_tokens if all_tokens is not None else lex(lf))
    check_query_form(tokens, lf)
    rewritten = rewrite_boolean_words(tokens)
    # A cheap text check first: most queries have no aggregate or HAVING to rewrite.
    lowered = lf.lower()
    if _AGGREGATE_HINT.search(lowered):
        rewritten = wrap_bare_aggregates(rewritten)
    if "having" in lowered:
        rewritten = wrap_bare_having(rewritten)
    header, prefixes = declare_prefixes(rewritten, lf)
    return Normalized(tokens, rewritten, header + "".join(t.text for t in rewritten), prefixes)


def _matching_paren_end(tokens: list[Token], start: int) -> int | None:
    """Index just past the ')' that closes the '(' at or after ``start`` (skipping spaces)."""
    j = start
    while j < len(tokens) and tokens[j].kind == "space":
        j += 1
    if j >= len(tokens) or tokens[j].text != "(":
        return None
    depth = 0
    for k in range(j, len(tokens)):
        if tokens[k].text == "(":
            depth += 1
        elif tokens[k].text == ")":
            depth -= 1
            if depth == 0:
                return k + 1
    return None


def _explicit_alias_end(tokens: list[Token], start: int) -> int | None:
    """Virtuoso's ``COUNT(?x) AS ?n`` without parentheses: index past ``?n``, else None."""
    code = [(k, t) for k, t in enumerate(tokens[start:], start) if t.kind != "space"][:2]
    if len(code) == 2 and code[0][1].kind == "word" and code[0][1].text.upper() == "AS" and code[1][1].kind == "var":
        return code[1][0] + 1
    return None


def _fresh_name(base: str, used: set[str]) -> str:
    name, n = base, 1
    while name in used:
        name, n = f"{base}{n}", n + 1
    used.add(name)
    return name
