"""Canonical logical forms: SPARQL variables renamed, SQL conditions as a set, case ignored; WikiSQL's
(sel, agg, conds) rebuilt from tokens."""
from __future__ import annotations

import pytest

from parsers import tokenize_lf
from qgen.lf_canonical import canonical_tokens, same_logical_form, wikisql_part_accuracy, wikisql_structure


def toks(text: str) -> list[str]:
    return text.split()


def test_sparql_variables_are_renamed_in_order_of_first_appearance() -> None:
    tokens = toks("SELECT ? y WHERE { ? y ns r ? z . ? z ns s $ y }")
    assert canonical_tokens(tokens, "sparql") == tuple(toks("select ? v0 where { ? v0 ns r ? v1 . ? v1 ns s ? v0 }"))
    # a name after a sigil that is no identifier, and "?" after "?", are left alone
    assert canonical_tokens(toks("? ? x ? 1"), "sparql") == ("?", "?", "v0", "?", "1")


def test_sparql_forms_differing_only_in_variable_names_or_case_are_the_same() -> None:
    a = toks("select ? x where { ent: oslo ns capital ? x . ? x ns mayor ? m }")
    b = toks("SELECT ? answer WHERE { ent: Oslo ns capital ? answer . ? answer ns mayor ? who }")
    assert same_logical_form(a, b, "sparql")
    swapped = toks("select ? x where { ent: oslo ns capital ? m . ? x ns mayor ? m }")  # another join
    assert not same_logical_form(a, swapped, "sparql")
    assert not same_logical_form(a, [("lyon" if t == "oslo" else t) for t in a], "sparql")


def test_dollar_and_question_mark_variables_are_one_variable() -> None:
    """SPARQL's ``$x`` is ``?x``, and the tokenizer keeps the sigil it was given."""
    dollar = tokenize_lf("SELECT $x WHERE { $x <http://a/b> ?y }", "sparql").tokens
    question = tokenize_lf("SELECT ?z WHERE { ?z <http://a/b> $w }", "sparql").tokens
    assert "$" in dollar and same_logical_form(dollar, question, "sparql")


def test_sql_conditions_after_where_are_a_set() -> None:
    a = toks("select name from t where region = ' north ' and year > 1900 and keepers < 3")
    b = toks("SELECT name FROM t WHERE keepers < 3 AND region = ' North ' AND year > 1900")
    assert canonical_tokens(a, "sql") == canonical_tokens(b, "sql")
    assert canonical_tokens(a, "sql")[:5] == ("select", "name", "from", "t", "where")
    assert same_logical_form(a, b, "sql")
    assert not same_logical_form(a, toks("select name from t where region = ' north ' and year > 1900"), "sql")
    # the selected columns are not a set
    assert canonical_tokens(toks("select a , b from t"), "sql") != canonical_tokens(toks("select b , a from t"), "sql")


def test_and_inside_a_quoted_value_or_brackets_does_not_split_conditions() -> None:
    tokens = toks("select a from t where b = ' x and y ' and c = ( 1 and 2 )")
    assert canonical_tokens(tokens, "sql") == tuple(toks("select a from t where b = ' x and y ' and c = ( 1 and 2 )"))
    moved = toks("select a from t where c = ( 1 and 2 ) and b = ' x and y '")
    assert same_logical_form(tokens, moved, "sql")
    assert wikisql_structure(tokens[:12])["conds"] == [["b", "=", "x and y"]]


def test_case_and_blank_tokens_are_ignored_for_every_type() -> None:
    assert canonical_tokens(["Name", " ", "[", "Aromi", "]"], "mr") == ("name", "[", "aromi", "]")
    assert same_logical_form(["Name", "[", "Aromi", "]"], ["name", "[", "aromi", "]"], "mr")
    assert not same_logical_form(["name", "[", "aromi", "]"], ["name", "[", "zizzi", "]"], "mr")
    assert canonical_tokens(toks("SELECT A FROM T"), "sql") == ("select", "a", "from", "t")


WIKISQL = toks("select count ( school / club team ) from t where no . = ' 3 ' and pos > 2.5")
HEADER = [["Player"], ["No", "."], ["Pos"], ["School", "/", "Club", "Team"]]


def test_wikisql_structure_reads_sel_agg_and_conds() -> None:
    assert wikisql_structure(WIKISQL) == {"sel": "school / club team", "agg": 3,
                                          "conds": [["no .", "=", "3"], ["pos", ">", "2.5"]], "table": "t"}
    assert wikisql_structure(toks("select max ( pos ) from t")) == {"sel": "pos", "agg": 1, "conds": [], "table": "t"}
    assert wikisql_structure(toks("SELECT Player FROM t WHERE Pos < 3")) == {"sel": "player", "agg": 0,
                                                                            "conds": [["pos", "<", "3"]],
                                                                            "table": "t"}


def test_wikisql_conditions_are_order_insensitive() -> None:
    reordered = toks("select count ( school / club team ) from t where pos > 2.5 and no . = ' 3 '")
    assert wikisql_structure(reordered) == wikisql_structure(WIKISQL)
    other_value = toks("select count ( school / club team ) from t where pos > 2.5 and no . = ' 4 '")
    assert wikisql_structure(other_value) != wikisql_structure(WIKISQL)


def test_wikisql_columns_map_to_header_indices() -> None:
    assert wikisql_structure(WIKISQL, HEADER) == {"sel": 3, "agg": 3, "conds": [[1, "=", "3"], [2, ">", "2.5"]],
                                                 "table": "t"}
    unknown = wikisql_structure(toks("select height from t where pos > 2"), HEADER)
    assert unknown == {"sel": "height", "agg": 0, "conds": [[2, ">", "2"]], "table": "t"}  # a column not in the header keeps its name


@pytest.mark.parametrize("text", [
    "select ? x where { ent: oslo ns capital ? x }",  # SPARQL
    "select a from",  # no table
    "select from t",  # nothing selected
    "select count ( ) from t",  # an empty aggregate
    "select a from t where b c",  # a condition without an operator
    "select a from t where b =",  # nor a value
    "ask where { }",
    "",
])
def test_wikisql_structure_is_none_for_other_tokens(text: str) -> None:
    assert wikisql_structure(toks(text)) is None


def test_same_sql_form_falls_back_to_the_wikisql_structure() -> None:
    quoted = toks("select a from t where b = ' 3 '")
    assert canonical_tokens(quoted, "sql") != canonical_tokens(toks("select a from t where b = 3"), "sql")
    assert same_logical_form(quoted, toks("select a from t where b = 3"), "sql")  # WikiSQL compares values only
    assert not same_logical_form(quoted, toks("select a from t where b = 4"), "sql")
    assert not same_logical_form(toks("select ? x where { }"), toks("select ? x where { ? y }"), "sql")


def test_a_parse_over_another_table_is_no_match() -> None:
    """A corpus from several tables: the same column and condition on another table is another query."""
    assert not same_logical_form(toks("select destination from ferries where operator = ' x '"),
                                 toks("select destination from festivals where operator = ' x '"), "sql")


def test_wikisql_part_accuracy_scores_each_part_apart() -> None:
    gold = "select position from table where school = ' butler cc ' and no . = ' 4 '".split()
    predictions = [
        "select position from table where no . = ' 4 ' and school = ' butler cc '".split(),  # all right
        "select count ( position ) from table where player = ' butler cc ' and no . = ' 4 '".split(),  # agg, a column
        "select player from table where school = ' butler ' and no . = ' 4 '".split(),  # sel, a value
        "not a query".split(),  # every part wrong
        gold,  # its gold is not a query: not counted
    ]
    parts = wikisql_part_accuracy(predictions, [gold] * 4 + [["select"]])
    assert parts == {"examples": 4, "sel": 0.5, "agg": 0.5, "where_columns_operators": 0.5, "where": 0.25}
    assert wikisql_part_accuracy([], []) == {"examples": 0, "sel": 0.0, "agg": 0.0, "where_columns_operators": 0.0,
                                             "where": 0.0}
