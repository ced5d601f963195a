"""A small SPARQL lexer: enough to rewrite, find entities and tokenize without touching strings.

It is not a validator (rdflib does that); it splits the text into spans of a few kinds so that the
normaliser never rewrites inside a string or an IRI, and so that a ``#`` starts a comment only
where it is not part of an IRI or a string.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# PN_LOCAL of the SPARQL 1.1 grammar, approximated: may not end with '.'.
_LOCAL_CHAR = r"(?:[\w:\-]|%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%])"
_LOCAL = rf"{_LOCAL_CHAR}(?:(?:{_LOCAL_CHAR}|\.)*{_LOCAL_CHAR})?"
_PREFIX = r"[A-Za-z](?:[\w.\-]*[\w\-])?"

_TOKEN_PATTERN = re.compile(
    "|".join(
        [
            r"(?P<comment>#[^\n]*)",
            r"(?P<string>\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''"
            r"|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')",
            r"(?P<iri><[^<>\"{}|^`\\\s]*>)",
            r"(?P<var>[?$][\w\u00b7]+)",
            rf"(?P<pname>(?:{_PREFIX})?:(?:{_LOCAL})?)",
            r"(?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)",
            r"(?P<langtag>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)",
            r"(?P<word>[A-Za-z_][\w]*)",
            r"(?P<punct>\^\^|\|\||&&|!=|<=|>=|[{}()\[\];,.=<>!+\-*/|^])",
            r"(?P<space>\s+)",
            r"(?P<other>.)",
        ]
    ),
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # comment | string | iri | var | pname | number | langtag | word | punct | space | other
    text: str
    start: int


def lex(text: str) -> list[Token]:
    """Split ``text`` into tokens; concatenating their texts gives back ``text``."""
    return [Token(m.lastgroup or "other", m.group(), m.start()) for m in _TOKEN_PATTERN.finditer(text)]


def code_tokens(tokens: list[Token]) -> list[Token]:
    """The tokens that carry meaning (no whitespace, no comments)."""
    return [t for t in tokens if t.kind not in ("space", "comment")]


def split_pname(text: str) -> tuple[str, str]:
    """``ns:m.01bkb`` -> (``ns``, ``m.01bkb``)."""
    prefix, _, local = text.partition(":")
    return prefix, local


def string_content(text: str) -> tuple[str, str]:
    """A string literal's quote and content: ``'en'`` -> (``'``, ``en``)."""
    quote = text[:3] if text[:3] in ('"""', "'''") else text[0]
    return quote[0], text[len(quote) : len(text) - len(quote)]


def prefix_declarations(tokens: list[Token]) -> dict[str, str]:
    """Prefixes declared by ``PREFIX p: <iri>`` in the query."""
    declared: dict[str, str] = {}
    code = code_tokens(tokens)
    for i, tok in enumerate(code[:-2]):
        if tok.kind == "word" and tok.text.upper() == "PREFIX" and code[i + 1].kind == "pname":
            if code[i + 2].kind == "iri":
                declared[code[i + 1].text.rstrip(":")] = code[i + 2].text[1:-1]
    return declared


def declaration_spans(tokens: list[Token]) -> set[int]:
    """Indexes (into ``tokens``) of the PREFIX/BASE declarations, keyword and arguments."""
    skip: set[int] = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind == "word" and tok.text.upper() in ("PREFIX", "BASE"):
            wanted = 2 if tok.text.upper() == "PREFIX" else 1
            skip.add(i)
            j = i + 1
            while j < len(tokens) and wanted:
                if tokens[j].kind not in ("space", "comment"):
                    wanted -= 1
                skip.add(j)
                j += 1
            i = j
            continue
        i += 1
    return skip
