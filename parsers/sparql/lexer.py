"""A small SPARQL lexer: enough to rewrite, find entities and tokenize without touching strings.

It is not a validator (rdflib does that); it splits the text into spans of a few kinds so that the
normaliser never rewrites inside a string or an IRI, and so that a ``#`` starts a comment only
where it is not part of an IRI or a string.
"""
from __future__ import annotations

import re
from typing import NamedTuple

# PN_LOCAL of the SPARQL 1.1 grammar, approximated: may not end with '.'.
_LOCAL_CHAR = r"(?:[\w:\-]|%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%])"
_LOCAL = rf"{_LOCAL_CHAR}(?:(?:{_LOCAL_CHAR}|\.)*{_LOCAL_CHAR})?"
_PREFIX = r"[A-Za-z](?:[\w.\-]*[\w\-])?"

# Alternatives in order of frequency where order does not matter; where it does, pname comes
# before word (``ns:x`` starts like a word) and comment/string/iri before punct.
_TOKEN_PATTERN = re.compile(
    "|".join(
        [
            r"(?P<space>\s+)",
            r"(?P<var>[?$][\w\u00b7]+)",
            rf"(?P<pname>(?:{_PREFIX})?:(?:{_LOCAL})?)",
            r"(?P<word>[A-Za-z_][\w]*)",
            r"(?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)",
            r"(?P<comment>#[^\n]*)",
            r"(?P<string>\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''"
            r"|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')",
            r"(?P<iri><[^<>\"{}|^`\\\s]*>)",
            r"(?P<langtag>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)",
            r"(?P<punct>\^\^|\|\||&&|!=|<=|>=|[{}()\[\];,.=<>!+\-*/|^])",
            r"(?P<other>.)",
        ]
    ),
    re.DOTALL,
)


class Token(NamedTuple):
    kind: str  # comment | string | iri | var | pname | number | langtag | word | punct | space | other
    text: str
    start: int  # offset in the input; -1 for a token a rewrite inserted


_new_token = tuple.__new__  # skips NamedTuple's argument handling: lexing is the hot path


_UNGROUPED = re.compile(re.sub(r"\(\?P<\w+>", "(?:", _TOKEN_PATTERN.pattern), re.DOTALL)
_KIND_BY_FIRST_CHAR = {
    **{c: "space" for c in " \t\n\r\f\v"},
    **{c: "number" for c in "0123456789"},
    "?": "var", "$": "var", "#": "comment", '"': "string", "'": "string", "<": "iri", "@": "langtag",
    ":": "pname",
}
_PUNCT = {"^^", "||", "&&", "!=", "<=", ">=", *"{}()[];,.=<>!+-*/|^"}


def lex(text: str) -> list[Token]:
    """Split ``text`` into tokens; concatenating their texts gives back ``text``.

    ``findall`` over the pattern without named groups, then a kind from the first character, is
    about twice as fast as ``finditer`` with ``lastgroup`` (this is the tokenizer's hot path).
    """
    tokens: list[Token] = []
    start = 0
    for piece in _UNGROUPED.findall(text):
        tokens.append(_new_token(Token, (_kind(piece), piece, start)))
        start += len(piece)
    return tokens


def _kind(piece: str) -> str:
    first = piece[0]
    kind = _KIND_BY_FIRST_CHAR.get(first)
    if kind is None:
        if first.isascii() and (first.isalpha() or first == "_"):
            return "pname" if ":" in piece else "word"
        if first.isspace():
            return "space"
        return "punct" if piece in _PUNCT else "other"
    if len(piece) == 1 and kind in ("var", "string", "iri", "langtag"):
        return "punct" if piece in _PUNCT else "other"
    if kind == "iri" and piece in _PUNCT:  # <= is an operator, not an IRI
        return "punct"
    return kind


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
    for i, tok in enumerate(tokens):
        if tok.kind == "word" and tok.text.upper() == "PREFIX":
            args = [t for t in tokens[i + 1 : i + 8] if t.kind not in ("space", "comment")][:2]
            if len(args) == 2 and args[0].kind == "pname" and args[1].kind == "iri":
                declared[args[0].text.rstrip(":")] = args[1].text[1:-1]
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
