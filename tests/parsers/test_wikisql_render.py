"""WikiSQL ``sql`` dicts rendered as SQLite: examples, malformed inputs, and the whole dev split."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from parsers.errors import StructuredLogicalFormError
from parsers.sql import AGG_OPS, COND_OPS, parse_sql, render_wikisql, tokenize_sql, wikisql_table_name

REPO_ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("QGEN_DATASETS", REPO_ROOT.parent / "shared" / "datasets"))
WIKISQL = DATASETS / "wikisql"

# Header of table 1-10015132-11 (the first dev records).
HEADER = ["Player", "No.", "Nationality", "Position", "Years in Toronto", "School/Club Team"]


def test_ops_tables() -> None:
    assert AGG_OPS == ["", "MAX", "MIN", "COUNT", "SUM", "AVG"]
    assert COND_OPS == ["=", ">", "<", "OP"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            {"sel": 3, "agg": 0, "conds": [[5, 0, "Butler CC (KS)"]]},
            """SELECT "Position" FROM "table" WHERE "School/Club Team" = 'Butler CC (KS)'""",
        ),
        (
            {"sel": 5, "agg": 3, "conds": [[1, 0, 3]]},
            """SELECT COUNT("School/Club Team") FROM "table" WHERE "No." = 3""",
        ),
        (
            {"sel": 5, "agg": 3, "conds": [[1, 0, "3"]]},
            """SELECT COUNT("School/Club Team") FROM "table" WHERE "No." = '3'""",
        ),
        (
            {"sel": 1, "agg": 1, "conds": [[0, 0, "O'Neil"], [1, 1, 2.5], [1, 2, -4]]},
            """SELECT MAX("No.") FROM "table" WHERE "Player" = 'O''Neil' AND "No." > 2.5 AND "No." < -4""",
        ),
        ({"sel": 0, "agg": 5, "conds": []}, 'SELECT AVG("Player") FROM "table"'),
        ({"conds": [], "agg": 4, "sel": 2}, 'SELECT SUM("Nationality") FROM "table"'),
    ],
)
def test_render_examples(sql: dict, expected: str) -> None:
    rendered = render_wikisql(sql, HEADER)
    assert rendered == expected
    parse_sql(rendered)


def test_render_tokens_match_the_readme_example() -> None:
    rendered = render_wikisql({"sel": 5, "agg": 3, "conds": [[1, 0, "3"]]}, HEADER)
    tokens = " ".join(tokenize_sql(rendered).tokens)
    assert tokens == "select count ( school / club team ) from table where no . = ' 3 '"


def test_quotes_inside_names_and_custom_table() -> None:
    header = ['He said "hi"', "b"]
    rendered = render_wikisql({"sel": 0, "agg": 0, "conds": [[1, 0, "it's"]]}, header, table="table_1_2_3")
    assert rendered == 'SELECT "He said ""hi""" FROM "table_1_2_3" WHERE "b" = \'it\'\'s\''
    parse_sql(rendered)


@pytest.mark.parametrize("blank", ["", "   "])
def test_empty_header_uses_placeholder(blank: str) -> None:
    rendered = render_wikisql({"sel": 1, "agg": 0, "conds": [[1, 0, "x"]]}, ["a", blank])
    assert rendered == """SELECT "col1" FROM "table" WHERE "col1" = 'x'"""


def test_table_name() -> None:
    assert wikisql_table_name("1-10015132-11") == "table_1_10015132_11"
    with pytest.raises(StructuredLogicalFormError):
        wikisql_table_name("")


MALFORMED = [
    pytest.param(["sel", 0], "sql must be a dict", id="not-a-dict"),
    pytest.param({"agg": 0, "conds": []}, "sel", id="missing-sel"),
    pytest.param({"sel": 0, "conds": []}, "agg", id="missing-agg"),
    pytest.param({"sel": 0, "agg": 0}, "conds", id="missing-conds"),
    pytest.param({"sel": 6, "agg": 0, "conds": []}, "sql['sel']", id="sel-out-of-range"),
    pytest.param({"sel": -1, "agg": 0, "conds": []}, "sql['sel']", id="sel-negative"),
    pytest.param({"sel": "0", "agg": 0, "conds": []}, "sql['sel']", id="sel-string"),
    pytest.param({"sel": True, "agg": 0, "conds": []}, "sql['sel']", id="sel-bool"),
    pytest.param({"sel": 0, "agg": 6, "conds": []}, "sql['agg']", id="agg-out-of-range"),
    pytest.param({"sel": 0, "agg": 1.0, "conds": []}, "sql['agg']", id="agg-float"),
    pytest.param({"sel": 0, "agg": 0, "conds": "x"}, "sql['conds']", id="conds-string"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[0, 0]]}, "sql['conds'][0]", id="cond-pair"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[9, 0, "x"]]}, "sql['conds'][0][0]", id="cond-col-range"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[0, 4, "x"]]}, "sql['conds'][0][1]", id="cond-op-range"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[0, 3, "x"]]}, "'OP'", id="cond-op-OP"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[0, 0, "a"], [0, 0, True]]}, "sql['conds'][1][2]", id="value-bool"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[0, 0, None]]}, "sql['conds'][0][2]", id="value-none"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[0, 0, float("nan")]]}, "finite", id="value-nan"),
    pytest.param({"sel": 0, "agg": 0, "conds": [[0, 0, ["x"]]]}, "sql['conds'][0][2]", id="value-list"),
]


@pytest.mark.parametrize(("sql", "field"), MALFORMED)
def test_malformed_input_raises(sql: object, field: str) -> None:
    with pytest.raises(StructuredLogicalFormError) as info:
        render_wikisql(sql, HEADER)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message
    assert field in message


@pytest.mark.parametrize(
    ("header", "table", "field"),
    [("Player", "table", "header"), (["a", 3], "table", "header[1]"), (HEADER, " ", "table")],
)
def test_malformed_header_or_table(header: object, table: str, field: str) -> None:
    with pytest.raises(StructuredLogicalFormError) as info:
        render_wikisql({"sel": 1, "agg": 0, "conds": []}, header, table=table)  # type: ignore[arg-type]
    assert field in str(info.value)


@pytest.mark.slow
def test_every_dev_record_renders_to_valid_sql() -> None:
    dev, columns = WIKISQL / "dev.jsonl", WIKISQL / "tables_columns.json"
    if not (dev.is_file() and columns.is_file()):
        pytest.skip(f"WikiSQL dev.jsonl/tables_columns.json not found under {WIKISQL} (set QGEN_DATASETS)")
    headers = json.loads(columns.read_text(encoding="utf-8"))
    failures, count = [], 0
    with dev.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            count += 1
            try:
                parse_sql(render_wikisql(record["sql"], headers[wikisql_table_name(record["table_id"])]))
            except Exception as err:  # noqa: BLE001 - collect every failure, report them together
                failures.append(f"line {number}: {err}")
    assert count == 8421
    assert not failures, f"{len(failures)} records failed, first: {failures[:5]}"
