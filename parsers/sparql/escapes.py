"""SPARQL codepoint escapes (``\\uXXXX``, ``\\UXXXXXXXX``), expanded before anything reads a query.

SPARQL 1.1 (section 19.2) processes codepoint escapes before parsing, anywhere in the text, and
rdflib does so inside ``parseQuery``. A check on the raw text therefore sees another query than
rdflib: ``SERVIC\\u0045 <http://...>`` is a federated query to rdflib and a harmless word to a text
check. So every SPARQL entry point expands the escapes first, and every check (the read-only guard,
the shape cache, the lexer, the tokenizer) reads the expanded text.

rdflib expands once more inside ``parseQuery``. For that second pass to change nothing, a query
whose expansion still holds an escape (``\\u005Cu0045`` expands to ``\\u0045``) is refused.
"""
from __future__ import annotations

import re

from parsers.errors import SparqlSyntaxError, UnsupportedQueryError
from parsers.guards import check_text

# The same pattern as rdflib's ``expandUnicodeEscapes_re`` (rdflib 7): ``\u`` or ``\U``, case-
# insensitive, then 8 hex digits where there are 8, else 4. It must match rdflib's exactly, so that
# the text our checks read is the text rdflib parses; tests/security compares the two.
CODEPOINT_ESCAPE = re.compile(r"\\u([0-9a-f]{4}(?:[0-9a-f]{4})?)", flags=re.I)


def expand_codepoint_escapes(lf: str) -> str:
    """``lf`` with its codepoint escapes expanded, as rdflib will read it.

    Raises ``SparqlSyntaxError`` for an escape that names no Unicode scalar value (past U+10FFFF,
    or a surrogate, which cannot be written as UTF-8), ``UnsupportedQueryError`` when the expansion
    spells another escape, and the input checks' errors (e.g. ``\\u0000`` is a control character).
    """
    if "\\" not in lf:
        return lf

    def expand(match: re.Match) -> str:
        code = int(match.group(1), 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise SparqlSyntaxError(f"the escape {match.group()!r} is not a Unicode character", lf, match.start())
        return chr(code)

    expanded = CODEPOINT_ESCAPE.sub(expand, lf)
    if expanded is lf or expanded == lf:
        return lf
    again = CODEPOINT_ESCAPE.search(expanded)
    if again:
        raise UnsupportedQueryError(f"an escape expands to another escape {again.group()!r}", lf)
    return check_text(expanded)
