"""Where logical forms come from when a dataset does not give them (issue 4).

- ``files``: logical forms a user already has (JSON Lines, Parquet, a named dataset);
- ``kg``: WebQSP-shaped SPARQL drawn from an RDF graph (executed on ``kg_index`` or an endpoint);
- ``tables``: WikiSQL-shaped SQL drawn from tables (CSV, Parquet, SQLite);
- ``substitution``: seed queries with their topic entity swapped for other entities of a graph;
- ``seed_substitution``: the same without a graph, among the seeds' own topics (same relation and role);
- ``readonly``: the only way any of them executes a query (refusals and time limits).

Every sampler yields ``RawExample`` records (split ``synthetic``, no question) and keeps a
``SamplerStats`` in which every draw ends in exactly one outcome, so nothing is dropped silently.
This module holds what they share: the stats and the duplicate keys (normalised query text).
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields
from typing import Iterator

from parsers.errors import LogicalFormError, UnsupportedQueryError
from parsers.sparql.entities import expand
from parsers.sparql.lexer import code_tokens, declaration_spans, lex, prefix_declarations
from parsers.sparql.prefixes import WELL_KNOWN_PREFIXES
from qgen.datasets.records import RawExample

OUTCOMES = (
    "kept", "duplicates", "no_answer", "too_many_answers", "timeouts", "refused", "errors",
    "unsampleable", "ambiguous", "unnamed", "mismatches",
)


@dataclass
class SamplerStats:
    """Counts of one sampler run. ``drawn`` = the sum of the outcome fields (see ``OUTCOMES``).

    ``executed`` counts draws whose query was run (duplicates and unsampleable draws are not).
    ``unsampleable``: no query of the drawn shape could be formed there (e.g. no second hop);
    ``ambiguous``: a superlative whose extreme value is shared by several answers (or over values
    of mixed types), whose ``LIMIT 1`` answer would be arbitrary; ``unnamed``: a topic or constraint
    entity without a label; ``mismatches``: the index answers differed from rdflib's (a bug check).
    """

    drawn: int = 0
    executed: int = 0
    verified: int = 0
    kept: int = 0
    duplicates: int = 0
    no_answer: int = 0
    too_many_answers: int = 0
    timeouts: int = 0
    refused: int = 0
    errors: int = 0
    unsampleable: int = 0
    ambiguous: int = 0
    unnamed: int = 0
    mismatches: int = 0

    def add(self, outcome: str) -> None:
        """Record one finished draw whose outcome is ``outcome`` (one of ``OUTCOMES``)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown sampler outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}")
        self.drawn += 1
        setattr(self, outcome, getattr(self, outcome) + 1)

    def accounted(self) -> bool:
        """True when every draw has exactly one outcome."""
        return self.drawn == sum(getattr(self, name) for name in OUTCOMES)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def __str__(self) -> str:
        return ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name))


def outcome_of(error: LogicalFormError) -> str:
    """The stats outcome of a query that raised ``error``: timeouts, refused, ambiguous or errors."""
    from qgen.samplers.readonly import QueryTimeoutError

    if isinstance(error, QueryTimeoutError):
        return "timeouts"
    if isinstance(error, UnsupportedQueryError):
        return "refused"
    return getattr(error, "outcome", "errors")


class Sampler:
    """What the drawing samplers share: a seeded generator, the stats and the duplicate keys."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.stats = SamplerStats()
        self.seen: set[str] = set()
        # Per outcome, the first query error's message: a cause (later ones may be its consequences, as an
        # endpoint's circuit breaker), for the user when nothing could be sampled.
        self.first_errors: dict[str, str] = {}

    def draw(self) -> RawExample | None:
        """One draw: the record if it was kept, else None (every outcome is counted in ``stats``)."""
        raise NotImplementedError

    def sample(self, n: int, max_draws: int | None = None) -> Iterator[RawExample]:
        """Yield up to ``n`` kept records, drawing at most ``max_draws`` (default 50 n) times."""
        limit = self.stats.drawn + (max_draws if max_draws is not None else 50 * n)
        kept = 0
        while kept < n and self.stats.drawn < limit:
            record = self.draw()
            if record is not None:
                kept += 1
                yield record

    def _outcome(self, outcome: str) -> None:
        self.stats.add(outcome)
        return None

    def _failed(self, error: Exception) -> None:
        """A draw that ``error`` ended: its outcome counted, the outcome's first message kept (``first_errors``)."""
        outcome = outcome_of(error)
        self.first_errors.setdefault(outcome, " ".join(str(error).split())[:300] or type(error).__name__)
        return self._outcome(outcome)

    def _first_time(self, key: str) -> bool:
        """True (and one more ``executed``) for a new duplicate key; False (counted) for a repeat."""
        if key in self.seen:
            self.stats.add("duplicates")
            return False
        self.seen.add(key)
        self.stats.executed += 1
        return True


def sparql_key(lf: str) -> str:
    """``lf`` normalised for duplicate detection: comments, whitespace and PREFIX lines dropped,
    prefixed names expanded to full IRIs, keywords upper-cased, variables renamed ``?v0, ?v1, ...``
    in order of first appearance."""
    tokens = code_tokens(lex(lf))
    prefixes = {**WELL_KNOWN_PREFIXES, **prefix_declarations(tokens)}
    skip = declaration_spans(tokens)
    renamed: dict[str, str] = {}
    parts: list[str] = []
    for index, tok in enumerate(tokens):
        if index in skip:
            continue
        if tok.kind == "var":
            parts.append(renamed.setdefault(tok.text[1:], f"?v{len(renamed)}"))
        elif tok.kind in ("pname", "iri"):
            iri = expand(tok, prefixes)
            parts.append(f"<{iri}>" if iri is not None else tok.text)
        elif tok.kind == "word":
            parts.append(tok.text.upper() if tok.text != "a" else "a")
        else:
            parts.append(tok.text)
    return " ".join(parts)


def sql_key(sql: str) -> str:
    """``sql`` normalised for duplicate detection: parsed and re-rendered by sqlglot (raises a
    ``parsers.errors.LogicalFormError`` for anything but one SELECT)."""
    from parsers.sql.validate import parse_sql, render_sql

    return render_sql(parse_sql(sql))
