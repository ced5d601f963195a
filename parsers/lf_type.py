"""Which kind of logical form a text is, for inputs that do not say (``lf_type`` absent or ``auto``).

Each kind has one surface pattern; a text must match exactly one of them, else it is refused with a
message that names the text and asks for ``lf_type`` (a guess would tokenize it the wrong way):

- ``sparql``: a query form (SELECT, ASK, CONSTRUCT, DESCRIBE, or a PREFIX/BASE prologue) with a ``{``,
  or an update with one (INSERT, DELETE, WITH ...), so that the SPARQL parser refuses it by name; or a
  DESCRIBE without one (``DESCRIBE <iri>``);
- ``sql``: a statement keyword (SELECT, WITH, or INSERT, UPDATE, DELETE ... for the SQL parser to
  refuse) and no ``{``;
- ``mr`` (E2E meaning representation): ``slot[value]`` items separated by commas;
- ``da`` (dialogue act): ``act(slot=value;...)``, the act optionally prefixed by ``?``.
"""
from __future__ import annotations

import re

AUTO = "auto"
_PATTERNS = {
    # DESCRIBE needs no braces: DESCRIBE followed by an IRI, a prefixed name, a variable or * (MySQL's
    # DESCRIBE users, a bare name, stays unknown).
    "sparql": re.compile(r"^\s*((PREFIX|BASE|SELECT|ASK|CONSTRUCT|DESCRIBE|INSERT|DELETE|WITH)\b[^{]*\{"
                         r"|((PREFIX|BASE)\b.*\s)?DESCRIBE\s+(<|\?|\$|\*|[A-Za-z_][\w.-]*:))", re.IGNORECASE | re.DOTALL),
    "sql": re.compile(r"^\s*(SELECT|WITH|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b[^{]*$",
                      re.IGNORECASE | re.DOTALL),
    "mr": re.compile(r"^\s*[^\[\],()=]+\[[^\]]*\](\s*,\s*[^\[\],()=]+\[[^\]]*\])*\s*$"),
    "da": re.compile(r"^\s*\??[A-Za-z_]+\s*\(.*\)\s*$", re.DOTALL),
}


class LfTypeError(ValueError):
    """A logical form whose kind cannot be told from its text."""


def infer_lf_type(text: str) -> str:
    """``sparql``, ``sql``, ``mr`` or ``da``; ``LfTypeError`` when no pattern or several match."""
    matches = [kind for kind, pattern in _PATTERNS.items() if pattern.match(text)]
    if len(matches) == 1:
        return matches[0]
    shown = " ".join(text.split())
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    why = "it looks like " + " and ".join(matches) if matches else "it matches none of them"
    raise LfTypeError(f"cannot tell the logical-form type of {shown!r} (sparql, sql, mr or da: {why}); "
                      "give lf_type in the record or --lf-type")
