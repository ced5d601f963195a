"""WikiSQL's structured ``sql`` dicts rendered as real SQL over the table's column names.

Zhong, Xiong & Socher (2017): ``{"sel": i, "agg": a, "conds": [[col, op, value], ...]}`` where ``a``
indexes ``AGG_OPS`` and ``op`` indexes ``COND_OPS``. WikiSQL's own ``lib/query.py`` writes
``SELECT COUNT(School/Club Team) FROM table WHERE No. = 3``, which no SQL parser accepts; here the
same query is written as valid SQLite:

    SELECT COUNT("School/Club Team") FROM "table" WHERE "No." = 3

- Column and table names are always double-quoted (``"`` doubled inside).
- Values keep their JSON type: ``str`` is single-quoted (``'`` doubled inside), ``int``/``float``
  are bare numbers. ``bool``, ``None``, NaN/infinity and other types are refused.
- Several conditions are joined with ``AND``; no conditions means no ``WHERE``.
- An empty or whitespace-only header name (140 WikiSQL tables have one) is written as the
  placeholder ``"col{index}"`` with the 0-based column index, e.g. ``"col4"``.
- ``'OP'`` (op index 3) is a placeholder in WikiSQL that never occurs in the data; it has no SQL
  meaning, so it is refused like any other malformed input.

Every malformed input raises ``StructuredLogicalFormError`` with a one-line message naming the field.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from parsers.errors import StructuredLogicalFormError

AGG_OPS = ["", "MAX", "MIN", "COUNT", "SUM", "AVG"]
COND_OPS = ["=", ">", "<", "OP"]
# Ops in COND_OPS that have no SQL meaning.
UNRENDERABLE_OPS = frozenset({"OP"})
EMPTY_HEADER_PLACEHOLDER = "col{index}"


def wikisql_table_name(table_id: str) -> str:
    """The SQLite table name / ``tables_columns.json`` key: ``1-10015132-11`` -> ``table_1_10015132_11``."""
    if not isinstance(table_id, str) or not table_id.strip():
        raise StructuredLogicalFormError(f"table_id must be a non-empty string, got {table_id!r}", repr(table_id))
    return "table_" + table_id.replace("-", "_")


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (``"`` doubled)."""
    return '"' + name.replace('"', '""') + '"'


def quote_string(value: str) -> str:
    """``value`` as a single-quoted SQL string literal (``'`` doubled)."""
    return "'" + value.replace("'", "''") + "'"


def render_wikisql(sql: Mapping[str, object], header: Sequence[str], table: str = "table") -> str:
    """Render one WikiSQL ``sql`` dict as a SQLite SELECT over ``header`` (see the module docstring)."""
    lf = repr(sql)[:200]
    if not isinstance(sql, Mapping):
        raise StructuredLogicalFormError(f"sql must be a dict, got {type(sql).__name__}", lf)
    missing = [key for key in ("sel", "agg", "conds") if key not in sql]
    if missing:
        raise StructuredLogicalFormError(f"sql is missing key(s) {', '.join(missing)}", lf)
    if not isinstance(header, Sequence) or isinstance(header, (str, bytes)):
        raise StructuredLogicalFormError(f"header must be a list of column names, got {type(header).__name__}", lf)
    if not isinstance(table, str) or not table.strip():
        raise StructuredLogicalFormError(f"table must be a non-empty string, got {table!r}", lf)

    column = _column(header, sql["sel"], "sql['sel']", lf)
    agg = _index(sql["agg"], len(AGG_OPS), "sql['agg']", lf)
    selected = f"{AGG_OPS[agg]}({column})" if AGG_OPS[agg] else column
    text = f"SELECT {selected} FROM {quote_identifier(table)}"

    conds = sql["conds"]
    if not isinstance(conds, Sequence) or isinstance(conds, (str, bytes)):
        raise StructuredLogicalFormError(f"sql['conds'] must be a list, got {type(conds).__name__}", lf)
    where = [_condition(header, cond, f"sql['conds'][{i}]", lf) for i, cond in enumerate(conds)]
    if where:
        text += " WHERE " + " AND ".join(where)
    return text


def _condition(header: Sequence[str], cond: object, field: str, lf: str) -> str:
    """One ``[column, op, value]`` condition as ``"column" op value``."""
    if not isinstance(cond, Sequence) or isinstance(cond, (str, bytes)) or len(cond) != 3:
        raise StructuredLogicalFormError(f"{field} must be a [column, op, value] triple, got {repr(cond)[:80]}", lf)
    column = _column(header, cond[0], f"{field}[0]", lf)
    op = COND_OPS[_index(cond[1], len(COND_OPS), f"{field}[1]", lf)]
    if op in UNRENDERABLE_OPS:
        raise StructuredLogicalFormError(f"{field}[1]: operator {op!r} has no SQL meaning", lf)
    return f"{column} {op} {_literal(cond[2], f'{field}[2]', lf)}"


def _column(header: Sequence[str], index: object, field: str, lf: str) -> str:
    """The quoted name of column ``index``; an empty name becomes the ``col{index}`` placeholder."""
    i = _index(index, len(header), field, lf, what="column index")
    name = header[i]
    if not isinstance(name, str):
        raise StructuredLogicalFormError(f"header[{i}] must be a string, got {type(name).__name__}", lf)
    if not name.strip():
        name = EMPTY_HEADER_PLACEHOLDER.format(index=i)
    return quote_identifier(name)


def _index(value: object, size: int, field: str, lf: str, what: str = "index") -> int:
    """``value`` checked to be an int (not a bool) in ``range(size)``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise StructuredLogicalFormError(f"{field} must be an integer {what}, got {repr(value)[:80]}", lf)
    if not 0 <= value < size:
        raise StructuredLogicalFormError(f"{field}: {what} {value} is out of range for {size} entries", lf)
    return value


def _literal(value: object, field: str, lf: str) -> str:
    """A condition value as SQL: strings quoted, finite ints/floats bare."""
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StructuredLogicalFormError(f"{field} must be a string or number, got {type(value).__name__}", lf)
    if isinstance(value, float) and not math.isfinite(value):
        raise StructuredLogicalFormError(f"{field} must be a finite number, got {value!r}", lf)
    return repr(value) if isinstance(value, float) else str(value)
