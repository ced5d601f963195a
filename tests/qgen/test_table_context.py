"""A WikiSQL parser's input: the question, then its table's header tokenized as the logical form spells it."""
from __future__ import annotations

import json
from pathlib import Path

from parsers.sql.tokenize import tokenize_sql
from parsers.sql.wikisql import render_wikisql
from qgen.datasets.registry import load_dataset
from qgen.table_context import COLUMN_MARK, SCHEMA_MARK, column_tokens, wikisql_headers_by_id, with_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"


def test_the_header_follows_the_question_one_marked_column_at_a_time() -> None:
    tokens = with_header(["what", "clu", "?"], ["School/Club Team", "No.", " "])
    assert tokens == ["what", "clu", "?", SCHEMA_MARK, COLUMN_MARK, "school", "/", "club", "team",
                      COLUMN_MARK, "no", ".", COLUMN_MARK, "col2"]  # an empty name: its placeholder
    assert with_header([], []) == [SCHEMA_MARK]


def test_every_column_a_logical_form_names_can_be_copied_from_the_header() -> None:
    """For each fixture query, the tokens of its selected column are a run of the parser's input."""
    headers = wikisql_headers_by_id(FIXTURES)
    examples = list(load_dataset("wikisql", FIXTURES, "test"))
    assert examples and all(e.id in headers for e in examples)
    for example in examples:
        sql, header = json.loads(example.raw)["sql"], headers[example.id]
        lf_tokens = tokenize_sql(render_wikisql({"sel": sql["sel"], "agg": 0, "conds": []}, header)).tokens
        column = lf_tokens[1:lf_tokens.index("from")]  # select <column> from table
        assert tuple(column) == column_tokens(header[sql["sel"]], sql["sel"])
        source = with_header([], header)
        assert any(source[i:i + len(column)] == column for i in range(len(source))), example.id
