"""The round trip's answers rule: a parse is turned back into a query over the sampled tables and
counts when it selects the same rows and runs to the input's answers; the rule keeps what exact
keeps, and no more where the input has no answers or the run has no tables."""
from __future__ import annotations

from pathlib import Path

import pytest
from tiny_parser import train_tiny_parser

from parsers import tokenize_lf
from qgen.samplers.tables import TableSampler
from qgen.synth.answer_check import TableAnswers, value_tokens
from qgen.synth.round_trip import RoundTripFilter, RoundTripOptions, RoundTripSetupError, judge_pairs
from qgen.synth.schema import PairRow

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo"
TABLES = [str(DEMO / "ferries.csv"), str(DEMO / "festivals.csv")]
ANSWERS = {"sql": "answers"}
COUNT_LANTERN = "SELECT COUNT(\"Visitors\") FROM \"festivals\" WHERE \"Festival\" = 'Lantern Night'"


def tokens(sql: str) -> list[str]:
    return tokenize_lf(sql, "sql").tokens


@pytest.fixture(scope="module")
def tables() -> TableAnswers:
    return TableAnswers.from_paths(TABLES)


@pytest.fixture(scope="module")
def parser_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tiny_parser(tmp_path_factory.mktemp("parser"), epochs=1)


def test_every_sampled_query_runs_back_to_its_own_answers(tables: TableAnswers) -> None:
    records = list(TableSampler.from_files(TABLES).sample(120))
    assert len(records) > 100
    for record in records:
        found = tables.denotation(tokens(record.logical_form))
        assert found is not None and found.answers == tuple(sorted(record.answers)), record.logical_form
        assert tables.answer_equivalent(tokens(record.logical_form), tokens(record.logical_form), record.answers)


def test_parses_are_run_by_their_tokens(tables: TableAnswers) -> None:
    visitors = tables.denotation(tokens(COUNT_LANTERN))
    month = tables.denotation("select count ( month ) from festivals where festival = ' lantern night '".split())
    other = tables.denotation("select count ( month ) from festivals where festival = ' harbour jazz days '".split())
    assert visitors == month and visitors.answers == ("1",)  # another column counted over the same row
    assert other.answers == ("1",) and other != visitors  # the same count over another row
    before = tables.denotation(tokens('SELECT "Festival" FROM "festivals" WHERE "First held" < 1960'))
    after = tables.denotation(tokens('SELECT "Festival" FROM "festivals" WHERE "First held" > 1960'))
    assert "Lantern Night" in before.answers and "Lantern Night" not in after.answers  # first held 1952
    port = tables.denotation(tokens('SELECT "Home port" FROM "ferries" WHERE "Ferry" = \'Grey Heron\''))
    assert port.answers == ("Port Maren",) and port.table == "ferries" and len(port.rows) == 1
    # what cannot be run denotes nothing: an unknown column, value or table, no WikiSQL shape, no number
    for parse in ("select count ( budget ) from festivals", "select city from festivals where festival = ' nowhere '",
                  "select city from concerts", "select", "select city from festivals where visitors > many"):
        assert tables.denotation(parse.split()) is None, parse
    assert value_tokens("Port Maren") == "port maren" and value_tokens(1990) == "1990"


def test_equivalence_needs_the_inputs_own_answers(tables: TableAnswers) -> None:
    lf = tokens(COUNT_LANTERN)
    assert tables.answer_equivalent(lf, lf, ["1"])
    assert not tables.answer_equivalent(lf, lf, [])  # an input without answers
    assert not tables.answer_equivalent(lf, lf, ["2"])  # tables other than those it was sampled from


def test_equivalence_needs_the_same_aggregate_and_conditions(tables: TableAnswers) -> None:
    """Equal denotations that are coincidences of a small table do not count."""
    both = tokens('SELECT "Festival" FROM "festivals" WHERE "City" = \'Eskholm\' AND "First held" = 1990')
    dropped = "select festival from festivals where first held = 1990".split()
    assert tables.denotation(both) == tables.denotation(dropped)  # one festival first held in 1990
    assert not tables.answer_equivalent(dropped, both, list(tables.denotation(both).answers))
    total = tokens('SELECT SUM("Visitors") FROM "festivals" WHERE "Month" = \'April\'')
    largest = "select max ( visitors ) from festivals where month = ' april '".split()
    assert tables.denotation(total).answers == tables.denotation(largest).answers  # one festival in April
    assert not tables.answer_equivalent(largest, total, list(tables.denotation(total).answers))


def test_only_a_count_may_count_another_column(tmp_path: Path) -> None:
    (tmp_path / "teams.csv").write_text("Team,Wins,Losses,Coach\nHawks,3,3,\nOwls,5,1,Ann Lee\n")
    teams = TableAnswers.from_paths([tmp_path / "teams.csv"])
    wins = tokens('SELECT "Wins" FROM "teams" WHERE "Team" = \'Hawks\'')
    losses = "select losses from teams where team = ' hawks '".split()
    assert teams.denotation(wins).answers == teams.denotation(losses).answers == ("3",)
    assert not teams.answer_equivalent(losses, wins, ["3"])  # the same value by chance, another question
    count_wins = tokens('SELECT COUNT("Wins") FROM "teams" WHERE "Team" = \'Hawks\'')
    assert teams.answer_equivalent("select count ( losses ) from teams where team = ' hawks '".split(), count_wins, ["1"])
    # a column that is NULL in the selected row counts 0 there: no answers, no equivalence
    assert not teams.answer_equivalent("select count ( coach ) from teams where team = ' hawks '".split(),
                                       count_wins, ["1"])


def test_a_query_that_fails_denotes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    fresh = TableAnswers.from_paths(TABLES)

    def failing(*args, **kwargs):
        raise sqlite3.OperationalError("interrupted")

    monkeypatch.setattr("qgen.synth.answer_check.run_sql", failing)
    assert fresh.denotation("select city from festivals where festival = ' lantern night '".split()) is None
    assert fresh.denotation(tokens(COUNT_LANTERN)) is None


def test_threads_can_share_the_tables() -> None:
    from concurrent.futures import ThreadPoolExecutor

    shared = TableAnswers.from_paths(TABLES)
    records = list(TableSampler.from_files(TABLES).sample(60))
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda r: shared.denotation(tokens(r.logical_form)), records * 4))
    assert all(f is not None and f.answers == tuple(sorted(r.answers)) for f, r in zip(found, records * 4))


def test_answers_rule_keeps_answer_equivalent_parses(parser_checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lf = tokens(COUNT_LANTERN)
    equivalent = "select count ( month ) from festivals where festival = ' lantern night '".split()
    other_row = "select count ( month ) from festivals where festival = ' harbour jazz days '".split()
    other_table = "select count ( ferry ) from ferries where ferry = ' grey heron '".split()
    ranked = {"a": [(equivalent, -0.5)], "b": [(other_row, -0.4)], "c": [(other_table, -0.3)], "d": [(lf, -0.2)]}

    def fake_parse(questions, beam=4, k=1):
        return [ranked[q[0]][:k] for q in questions]

    judge = RoundTripFilter(parser_checkpoint, rules=ANSWERS, tables=TABLES)
    monkeypatch.setattr(judge.parser, "parse", fake_parse)
    questions = [["a"], ["b"], ["c"], ["d"], ["a"]]
    verdicts = judge.judge("sql", questions, [lf] * 5, [["1"], ["1"], ["1"], [], []])
    # b and c count 1 too, over another row or table; without answers only an exact parse counts (d)
    assert [v.keep for v in verdicts] == [True, False, False, True, False]
    assert all(v.rule == "answers" for v in verdicts)
    assert verdicts[2].reason(None).startswith("round_trip: rule answers, no parse matches the logical form or its")
    assert judge.settings()["tables"] == TABLES and judge.settings()["rules"]["sql"] == "answers"
    without_tables = RoundTripFilter(parser_checkpoint, rules=ANSWERS)
    monkeypatch.setattr(without_tables.parser, "parse", fake_parse)
    found = without_tables.judge("sql", questions[:1], [lf], [["1"]])
    assert [(v.keep, v.rule) for v in found] == [(False, "exact")]  # without tables the rule is exact
    assert "tables" not in without_tables.settings() and without_tables.settings()["rules"]["sql"] == "exact"


def test_answers_rule_tells_a_comparison_from_its_inverse(parser_checkpoint: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    lf = tokens('SELECT "Festival" FROM "festivals" WHERE "First held" < 1960')
    inverted = [(">" if t == "<" else t) for t in lf]
    judge = RoundTripFilter(parser_checkpoint, rules=ANSWERS, tables=TABLES)
    monkeypatch.setattr(judge.parser, "parse", lambda questions, beam=4, k=1: [[(inverted, -0.1)] for _ in questions])
    answers = list(judge.executor.denotation(lf).answers)
    pair = PairRow("p", "sql", "", lf, "which festivals were first held before 1960 ?", -1.0, 0, 0.0, answers=answers)
    assert [v.keep for v in judge_pairs(judge, [pair])] == [False]


def test_answers_rule_is_for_sql_and_travels_with_its_tables(parser_checkpoint: Path) -> None:
    with pytest.raises(RoundTripSetupError, match="answers runs SQL parses only"):
        RoundTripFilter(parser_checkpoint, rules={"sparql": "answers"})
    options = RoundTripOptions(str(parser_checkpoint), {"sql": "answers"}, tables=[Path(TABLES[0])])
    assert options.tables == (str(Path(TABLES[0]).resolve()),) and hash(options)
    assert options.build().executor is not None
