"""A WikiSQL parser's input: the question followed by its table's header.

A WikiSQL question rarely spells its columns as the table names them ("what clu was in toronto
1995-96" asks for ``"School/Club Team"`` where ``"Years in Toronto" = '1995-96'``), and dev and test
tables are disjoint from the training tables. A parser that reads the question alone must guess
column names it has never seen; one that also reads the header can copy them, as WikiSQL's own
baselines do (Zhong et al. 2017's augmented pointer network reads question and columns). The input is

    question tokens  <schema>  <col> column 1 tokens  <col> column 2 tokens ...

with each column tokenized exactly as it appears in the logical form's tokens (``"School/Club Team"``
-> ``school / club team``; an empty name -> its ``col{index}`` placeholder), so that the copy
mechanism can write it. A parser trained on such inputs records ``input_context: table_header`` in
its checkpoint; whoever parses with it must give each question its header.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

TABLE_HEADER = "table_header"  # the checkpoint's ``input_context`` for such a parser
SCHEMA_MARK = "<schema>"  # between the question and the header
COLUMN_MARK = "<col>"  # before each column name


@lru_cache(maxsize=1 << 16)
def column_tokens(name: str, index: int) -> tuple[str, ...]:
    """Column ``index`` called ``name`` as the logical form's tokens spell it."""
    from parsers.sql.tokenize import tokenize_sql
    from parsers.sql.wikisql import EMPTY_HEADER_PLACEHOLDER, quote_identifier

    name = name if name.strip() else EMPTY_HEADER_PLACEHOLDER.format(index=index)
    tokens = tokenize_sql(f"SELECT {quote_identifier(name)}", validate=False).tokens
    return tuple(tokens[1:])  # without "select"


def with_header(question: Sequence[str], header: Sequence[str]) -> list[str]:
    """The parser's input for ``question`` tokens over a table with ``header`` (see the module docstring)."""
    out = [*question, SCHEMA_MARK]
    for index, name in enumerate(header):
        out += [COLUMN_MARK, *column_tokens(name, index)]
    return out


def wikisql_headers_by_id(data_dir: str | Path | None, splits: Iterable[str] = ("dev", "test")) -> dict[str, list[str]]:
    """Example id (``test-0``) -> its table's header, for the WikiSQL examples of ``splits``."""
    import json

    from parsers.sql.wikisql import wikisql_table_name
    from qgen.datasets.registry import load_dataset
    from qgen.datasets.wikisql import wikisql_headers

    headers = wikisql_headers(data_dir)
    out: dict[str, list[str]] = {}
    for split in splits:
        for record in load_dataset("wikisql", data_dir, split):
            if record.raw and not record.load_error:
                header = headers.get(wikisql_table_name(json.loads(record.raw)["table_id"]))
                if header is not None:
                    out[record.id] = header
    return out
