"""SQL validation and tokenization: fixture-driven token cases, typed errors, and a fuzz test."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from parsers.errors import (
    BinaryInputError,
    EmptyInputError,
    InputTooLongError,
    LogicalFormError,
    SqlSyntaxError,
    UnsupportedQueryError,
)
from parsers.guards import MAX_LF_CHARS
from parsers.result import ParsedLF
from parsers.sql import parse_sql, tokenize_sql

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sql_tokens.tsv"


def _fixture_cases() -> list[pytest.param]:
    """(sql, expected tokens) pairs from the TSV fixture; '#' lines are comments."""
    cases = []
    for number, line in enumerate(FIXTURE.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        sql, expected = line.split("\t")
        cases.append(pytest.param(sql, expected.split(" "), id=f"line{number}"))
    return cases


CASES = _fixture_cases()


def test_fixture_has_enough_cases() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize(("sql", "expected"), CASES)
def test_tokens_match_fixture(sql: str, expected: list[str]) -> None:
    parsed = tokenize_sql(sql)
    assert parsed.tokens == expected
    assert tokenize_sql(sql, validate=False).tokens == expected


def test_parsed_lf_fields() -> None:
    sql = """select count("School/Club Team") from "table" where "No." = '3'"""
    parsed = tokenize_sql(sql)
    assert isinstance(parsed, ParsedLF)
    assert parsed.lf_type == "sql"
    assert parsed.logical_form == sql
    assert parsed.normalized == """SELECT COUNT("School/Club Team") FROM "table" WHERE "No." = '3'"""
    assert parsed.entities == []


def test_without_validation_normalized_is_the_stripped_input() -> None:
    parsed = tokenize_sql("  SELECT a FROM t  \n", validate=False)
    assert parsed.normalized == "SELECT a FROM t"
    # Nothing is parsed, so a statement sqlglot would refuse still tokenizes.
    assert tokenize_sql("DROP TABLE t", validate=False).tokens == ["drop", "table", "t"]


def test_bytes_input_is_decoded() -> None:
    assert tokenize_sql(b"SELECT 1").tokens == ["select", "1"]


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("SELECT a FROM t", exp.Select),
        ("SELECT a FROM t1 UNION SELECT b FROM t2", exp.Union),
        ("SELECT a FROM t1 INTERSECT SELECT b FROM t2", exp.Intersect),
        ("WITH x AS (SELECT 1 AS a) SELECT a FROM x", exp.Select),
        ("SELECT a FROM t;", exp.Select),
        ("(SELECT a FROM t)", exp.Subquery),
    ],
)
def test_parse_sql_accepts_queries(sql: str, kind: type) -> None:
    assert isinstance(parse_sql(sql), kind)


def test_parse_sql_other_dialect() -> None:
    tree = parse_sql("SELECT `a b` FROM t LIMIT 3", dialect="mysql")
    assert tree.sql(dialect="mysql") == "SELECT `a b` FROM t LIMIT 3"


BAD_INPUTS = [
    pytest.param("", EmptyInputError, "empty", id="empty"),
    pytest.param("   \n\t ", EmptyInputError, "empty", id="whitespace"),
    pytest.param("-- just a comment", EmptyInputError, "comments", id="comment-only"),
    pytest.param(";", EmptyInputError, "no", id="semicolon-only"),
    pytest.param("\x00\x01", BinaryInputError, "control character", id="binary"),
    pytest.param(b"\xff\xfe SELECT", BinaryInputError, "UTF-8", id="bad-utf8"),
    pytest.param("SELECT a FROM", SqlSyntaxError, "table name", id="truncated"),
    pytest.param("SELECT a FROM t WHERE", SqlSyntaxError, "Where", id="truncated-where"),
    pytest.param("SELECT a FROM t WHERE b = 'abc", SqlSyntaxError, "tokenize", id="unterminated-string"),
    pytest.param("SELECT a b c FROM t", SqlSyntaxError, "Unexpected token", id="garbage"),
    pytest.param("SELECT", SqlSyntaxError, "result column", id="bare-select"),
    pytest.param("CREATE TABLE t (a INT)", UnsupportedQueryError, "CREATE TABLE", id="create"),
    pytest.param("DROP TABLE t", UnsupportedQueryError, "DROP TABLE", id="drop"),
    pytest.param("ALTER TABLE t ADD COLUMN b", UnsupportedQueryError, "ALTER", id="alter"),
    pytest.param("INSERT INTO t VALUES (1)", UnsupportedQueryError, "INSERT", id="insert"),
    pytest.param("UPDATE t SET a = 1", UnsupportedQueryError, "UPDATE", id="update"),
    pytest.param("DELETE FROM t", UnsupportedQueryError, "DELETE", id="delete"),
    pytest.param("PRAGMA table_info(t)", UnsupportedQueryError, "PRAGMA", id="pragma"),
    pytest.param("ATTACH DATABASE 'x.db' AS x", UnsupportedQueryError, "ATTACH", id="attach"),
    pytest.param("BEGIN", UnsupportedQueryError, "TRANSACTION", id="transaction"),
    pytest.param("VALUES (1)", UnsupportedQueryError, "VALUES", id="values"),
    pytest.param("SELECT a INTO b FROM c", UnsupportedQueryError, "INTO", id="select-into"),
    pytest.param("SELECT 1; DROP TABLE t", UnsupportedQueryError, "2 statements", id="multi-statement"),
    pytest.param("SELECT 1; SELECT 2", UnsupportedQueryError, "2 statements", id="two-selects"),
    pytest.param("WITH x AS (SELECT 1) DELETE FROM t", UnsupportedQueryError, "DELETE", id="cte-delete"),
    pytest.param("SELECT " + "a, " * MAX_LF_CHARS + "b FROM t", InputTooLongError, "limit", id="too-long"),
    pytest.param("SELECT " + "(" * 300 + "1" + ")" * 300, UnsupportedQueryError, "nested", id="too-deep"),
]


@pytest.mark.parametrize(("sql", "error", "words"), BAD_INPUTS)
def test_bad_input_raises_typed_one_line_error(sql: str, error: type, words: str) -> None:
    for call in (parse_sql, tokenize_sql):
        with pytest.raises(error) as info:
            call(sql)
        message = str(info.value)
        assert "\n" not in message and "Traceback" not in message
        assert message.startswith(error.__name__ + ":")
        assert words in message
        assert len(message) < 1000


@pytest.mark.parametrize(
    ("sql", "position"),
    [
        ("SELECT a FROM", 9),  # at FROM, where the table name is missing
        ("SELECT a FROM t\nWHERE b = = 3", 26),  # the second '=' on line 2
        ("SELECT a FROM t WHERE b = 'abc", 26),  # the opening quote of the unterminated string
    ],
)
def test_syntax_error_position(sql: str, position: int) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_sql(sql)
    assert info.value.position == position
    assert info.value.lf == sql
    assert f"at position {position}" in str(info.value)


def test_unknown_dialect_is_a_caller_error() -> None:
    with pytest.raises(ValueError):
        tokenize_sql("SELECT 1", dialect="no-such-dialect")


def test_threads_share_nothing() -> None:
    queries = [f"SELECT c{i} FROM t{i} WHERE v = '{i}'" for i in range(200)]
    results: dict[int, list[list[str]]] = {}

    def work(k: int) -> None:
        results[k] = [tokenize_sql(q).tokens for q in queries]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [tokenize_sql(q).tokens for q in queries]
    assert all(results[k] == expected for k in range(4))


SQL_PIECES = st.sampled_from(
    ["SELECT", "FROM", "WHERE", "AND", "OR", "(", ")", ",", "*", "=", "<=", "!=", "'", '"', "`", "[",
     "]", ";", "--", "/*", "*/", "t", "a", "1", "2.5", "'x y'", '"col name"', "COUNT", "UNION",
     "DROP", "TABLE", "INSERT", "WITH", "AS", "IN", "NOT", "NULL", "x'0A'", "0x1F", "?", ":p", "@v",
     "$", "\n", " "]
)
SQL_LIKE = st.lists(SQL_PIECES, max_size=25).map(" ".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), SQL_LIKE, st.binary(max_size=50)))
def test_fuzz_only_typed_errors(text: str | bytes) -> None:
    for validate in (True, False):
        try:
            parsed = tokenize_sql(text, validate=validate)
        except LogicalFormError as err:
            assert "\n" not in str(err)
        else:
            assert isinstance(parsed, ParsedLF) and parsed.tokens
            assert all(token and " " not in token for token in parsed.tokens)
