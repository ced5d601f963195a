"""Typed errors for logical forms that cannot be processed.

Every error carries the offending input and, where it is known, a character position, so that a
batch job can turn it into a row of a rejects table (``stage``, ``error``, ``input``) instead of
stopping. ``str(err)`` is always one line: it names what is wrong and where.
"""
from __future__ import annotations


class LogicalFormError(ValueError):
    """Base class: a logical form that cannot be normalised, validated or tokenized."""

    stage = "parse"

    def __init__(self, message: str, lf: str = "", position: int | None = None) -> None:
        self.message = message
        self.lf = lf
        self.position = position
        super().__init__(self._one_line())

    def _one_line(self) -> str:
        where = f" at position {self.position}" if self.position is not None else ""
        near = ""
        if self.position is not None and self.lf:
            snippet = self.lf[self.position : self.position + 30].replace("\n", " ")
            near = f" (near {snippet!r})"
        text = f"{type(self).__name__}: {self.message}{where}{near}"
        return " ".join(text.split())


class EmptyInputError(LogicalFormError):
    """The input is empty or only whitespace/comments."""

    stage = "input"


class BinaryInputError(LogicalFormError):
    """The input holds control characters or undecodable bytes: not text."""

    stage = "input"


class InputTooLongError(LogicalFormError):
    """The input is longer than the configured limit."""

    stage = "input"


class UnsupportedQueryError(LogicalFormError):
    """Valid or not, the input asks for something qgen refuses (updates, SERVICE, DDL/DML)."""

    stage = "validate"


class UnknownPrefixError(LogicalFormError):
    """A prefixed name uses a prefix that is neither declared nor well known."""

    stage = "normalise"


class SparqlSyntaxError(LogicalFormError):
    """rdflib rejected the (normalised) query."""

    stage = "validate"


class SqlSyntaxError(LogicalFormError):
    """sqlglot rejected the statement."""

    stage = "validate"


class StructuredLogicalFormError(LogicalFormError):
    """A structured logical form (WikiSQL dict, E2E MR, dialogue act) is malformed."""

    stage = "parse"
