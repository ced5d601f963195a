"""parsers: normalise, validate, name entities and tokenize logical forms (SPARQL, SQL, MRs).

Imports nothing of ``qgen``. ``tokenize_lf`` is the one entry point that dispatches on the type.
"""
from __future__ import annotations

from typing import Callable, Mapping

from parsers.errors import LogicalFormError
from parsers.result import Entity, ParsedLF

LF_TYPES = ("sparql", "sql", "mr", "da")


def tokenize_lf(
    lf: str,
    lf_type: str,
    names: Mapping[str, str] | None = None,
    labels: Callable[[str], "str | None"] | None = None,
    validate: bool = True,
    dialect: str = "sqlite",
) -> ParsedLF:
    """Tokenize one logical form of type ``lf_type``; raises a ``LogicalFormError`` subclass."""
    if lf_type == "sparql":
        from parsers.sparql import tokenize_sparql

        return tokenize_sparql(lf, names=names, labels=labels, validate=validate)
    if lf_type == "sql":
        from parsers.sql import tokenize_sql

        return tokenize_sql(lf, dialect=dialect, validate=validate)
    if lf_type == "mr":
        from parsers.mr import tokenize_mr

        return tokenize_mr(lf)
    if lf_type == "da":
        from parsers.mr import tokenize_da

        return tokenize_da(lf)
    raise ValueError(f"unknown logical-form type {lf_type!r}; expected one of {', '.join(LF_TYPES)}")


__all__ = ["Entity", "LF_TYPES", "LogicalFormError", "ParsedLF", "tokenize_lf"]
