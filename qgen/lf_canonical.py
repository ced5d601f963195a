"""Logical forms compared as a parser's output should be: in a canonical token form.

Two token sequences mean the same query when they differ only in
- case and whitespace (the tokens are already lowercased and split by ``parsers.token_rules``);
- SPARQL variable names: ``? x`` / ``? y`` are renamed ``v0``, ``v1``, ... in order of first
  appearance (``?`` and ``$`` alike);
- the order of conditions joined by a top-level ``and`` after SQL's ``where`` (WikiSQL compares
  its conditions as a set).

``wikisql_structure`` rebuilds WikiSQL's structured query (sel, agg, conds) from SQL tokens, so that
logical-form accuracy is measured as WikiSQL defines it: the same selected column, aggregate and
set of conditions (column, operator, value; values compared lowercased, as WikiSQL's ``Query``
does). Columns are named by their tokens; with a table header they map to WikiSQL's indices.
"""
from __future__ import annotations

from typing import Sequence

# WikiSQL's aggregate and condition operators (lib/query.py of the WikiSQL release).
WIKISQL_AGGREGATES = ("", "max", "min", "count", "sum", "avg")
WIKISQL_OPERATORS = ("=", ">", "<")
_SPARQL_VARIABLE_SIGILS = ("?", "$")


def canonical_tokens(tokens: Sequence[str], lf_type: str) -> tuple[str, ...]:
    """The canonical form of a tokenized logical form (see the module docstring)."""
    lowered = [t.lower() for t in tokens if t.strip()]
    if lf_type == "sparql":
        return tuple(_rename_variables(lowered))
    if lf_type == "sql":
        return tuple(_sorted_conditions(lowered))
    return tuple(lowered)


def same_logical_form(a: Sequence[str], b: Sequence[str], lf_type: str) -> bool:
    """Whether two tokenized logical forms are equal in canonical form (for SQL: and WikiSQL's
    structure, when both read as WikiSQL queries)."""
    if canonical_tokens(a, lf_type) == canonical_tokens(b, lf_type):
        return True
    if lf_type == "sql":
        left, right = wikisql_structure(a), wikisql_structure(b)
        return left is not None and left == right
    return False


def _rename_variables(tokens: list[str]) -> list[str]:
    names: dict[str, str] = {}
    out: list[str] = []
    previous = ""
    for token in tokens:
        if previous in _SPARQL_VARIABLE_SIGILS and token not in _SPARQL_VARIABLE_SIGILS and token.isidentifier():
            token = names.setdefault(token, f"v{len(names)}")
            out[-1] = "?"  # SPARQL's $x is ?x
        out.append(token)
        previous = token
    return out


def _sorted_conditions(tokens: list[str]) -> list[str]:
    if "where" not in tokens:
        return tokens
    cut = tokens.index("where") + 1
    head, conditions = tokens[:cut], split_conditions(tokens[cut:])
    out = list(head)
    for number, condition in enumerate(sorted(conditions)):
        out.extend((["and"] if number else []) + list(condition))
    return out


def split_conditions(tokens: list[str]) -> list[tuple[str, ...]]:
    """Split at ``and`` outside quotes and brackets."""
    parts: list[tuple[str, ...]] = []
    current: list[str] = []
    quoted, depth = False, 0
    for token in tokens:
        if token == "'":
            quoted = not quoted
        elif not quoted and token == "(":
            depth += 1
        elif not quoted and token == ")":
            depth -= 1
        if token == "and" and not quoted and depth == 0:
            parts.append(tuple(current))
            current = []
        else:
            current.append(token)
    parts.append(tuple(current))
    return parts


def wikisql_structure(tokens: Sequence[str], header_tokens: Sequence[Sequence[str]] | None = None) -> dict | None:
    """``{"sel", "agg", "conds"}`` from the tokens of a rendered WikiSQL query, or None when the
    tokens are not one (``select [agg (] column [)] from table [where col op value [and ...]]``).

    ``sel`` and each condition's column are the column's tokens joined by spaces, or its index when
    ``header_tokens`` (the tokenized header) is given and holds it; ``conds`` is a sorted list of
    ``[column, operator, value]`` (WikiSQL compares them as a set).
    """
    words = [t.lower() for t in tokens if t.strip()]
    if len(words) < 4 or words[0] != "select" or "from" not in words:
        return None
    from_at = words.index("from")
    selected = words[1:from_at]
    agg = ""
    if len(selected) >= 3 and selected[0] in WIKISQL_AGGREGATES[1:] and selected[1] == "(" and selected[-1] == ")":
        agg, selected = selected[0], selected[2:-1]
    if not selected:
        return None
    rest = words[from_at + 1 :]
    if "where" in rest:
        where_at = rest.index("where")
        table, condition_tokens = rest[:where_at], rest[where_at + 1 :]
    else:
        table, condition_tokens = rest, []
    if not table:
        return None
    conds = []
    if condition_tokens:
        for part in split_conditions(condition_tokens):
            condition = _condition(list(part), header_tokens)
            if condition is None:
                return None
            conds.append(condition)
    # The table is kept too: WikiSQL's questions have one table each, but a corpus synthesized from
    # several tables must not take a parse over another table for a match.
    return {"sel": _column(selected, header_tokens), "agg": WIKISQL_AGGREGATES.index(agg),
            "conds": sorted(conds, key=lambda c: (str(c[0]), c[1], c[2])), "table": " ".join(table)}


def _condition(part: list[str], header_tokens: Sequence[Sequence[str]] | None) -> list | None:
    at = next((i for i, t in enumerate(part) if t in WIKISQL_OPERATORS), None)
    if at is None or at == 0 or at == len(part) - 1:
        return None
    value = part[at + 1 :]
    if value[0] == "'" and value[-1] == "'" and len(value) >= 2:
        value = value[1:-1]
    return [_column(part[:at], header_tokens), part[at], " ".join(value)]


def _column(tokens: list[str], header_tokens: Sequence[Sequence[str]] | None) -> str | int:
    name = " ".join(tokens)
    if header_tokens is not None:
        for index, column in enumerate(header_tokens):
            if " ".join(t.lower() for t in column) == name:
                return index
    return name


WIKISQL_PARTS = ("sel", "agg", "where_columns_operators", "where")


def wikisql_part_accuracy(predictions: Sequence[Sequence[str]], golds: Sequence[Sequence[str]]) -> dict[str, float | int]:
    """Where a parser goes wrong, part by part: the share of questions whose parse has the gold ``sel``,
    ``agg``, set of condition (column, operator) and set of conditions, over the questions whose gold
    tokens are a WikiSQL query (``examples``); a parse that is not one gets every part wrong."""
    hits = dict.fromkeys(WIKISQL_PARTS, 0)
    examples = 0
    for predicted, gold in zip(predictions, golds):
        want = wikisql_structure(gold)
        if want is None:
            continue
        examples += 1
        got = wikisql_structure(predicted)
        if got is None:
            continue
        hits["sel"] += got["sel"] == want["sel"]
        hits["agg"] += got["agg"] == want["agg"]
        hits["where_columns_operators"] += sorted(c[:2] for c in got["conds"]) == sorted(c[:2] for c in want["conds"])
        hits["where"] += got["conds"] == want["conds"]
    return {"examples": examples, **{part: hits[part] / examples if examples else 0.0 for part in WIKISQL_PARTS}}
