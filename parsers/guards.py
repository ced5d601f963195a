"""Checks every logical form passes before any parser sees it (shared by SPARQL and SQL)."""
from __future__ import annotations

import re

from parsers.errors import BinaryInputError, EmptyInputError, InputTooLongError

# 20,000 characters is ~20x the longest WebQSP query; longer inputs are junk or attacks, and the
# rdflib parser's time grows faster than linearly on them.
MAX_LF_CHARS = 20_000

# Control characters other than tab/newline/carriage return mean binary junk, not a query.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


def check_text(lf: object, max_chars: int = MAX_LF_CHARS) -> str:
    """Return ``lf`` as text, or raise a typed error saying why it is not a usable input."""
    if isinstance(lf, (bytes, bytearray)):
        try:
            lf = bytes(lf).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BinaryInputError("input bytes are not UTF-8 text", repr(bytes(lf)[:80]), exc.start) from None
    if not isinstance(lf, str):
        raise EmptyInputError(f"expected a string, got {type(lf).__name__}", repr(lf)[:80])
    if not lf.strip():
        raise EmptyInputError("the logical form is empty", lf)
    if len(lf) > max_chars:
        raise InputTooLongError(f"the logical form has {len(lf)} characters, more than the limit of {max_chars}", lf[:200])
    bad = _CONTROL.search(lf)
    if bad:
        raise BinaryInputError(f"control character {bad.group()!r} in the input", lf, bad.start())
    return lf
