"""The round-trip filter: the score rule keeps pairs at or above the threshold, the exact rule a
canonical match among the k best parses; parsers for other logical forms or other preprocessing are
refused; unsupported types and empty questions are rejects, never errors."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from tiny_parser import parse_pairs, train_tiny_parser

from qgen.synth.round_trip import (
    RoundTripFilter, RoundTripOptions, RoundTripSetupError, cached_filter, default_parser, judge_pairs, merge_counts,
    round_trip_statistics,
)
from qgen.synth.schema import PairRow

PAIRS = parse_pairs()
QUESTIONS = [p.src for p in PAIRS]
LFS = [p.tgt for p in PAIRS]
SCORE = {"sparql": "score"}  # the mean-score rule (the default for SPARQL is "token")


@pytest.fixture(scope="module")
def parser_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tiny_parser(tmp_path_factory.mktemp("parser"))


def pair_row(lf_type: str, question: str, lf_tokens: list[str], ident: str = "p") -> PairRow:
    return PairRow(ident, lf_type, " ".join(lf_tokens), lf_tokens, question, -1.0, 0, 0.0)


def test_score_rule_keeps_pairs_at_or_above_the_threshold(parser_checkpoint: Path) -> None:
    scores = RoundTripFilter(parser_checkpoint, rules=SCORE, threshold=0.0).parser.score(QUESTIONS, LFS)
    assert len(set(scores)) > 2 and all(s < 0 for s in scores)
    threshold = sorted(scores)[len(scores) // 2]  # one pair sits exactly on it
    judge = RoundTripFilter(parser_checkpoint, rules=SCORE, threshold=threshold)
    verdicts = judge.judge("sparql", QUESTIONS, LFS)
    assert [v.keep for v in verdicts] == [s >= threshold for s in scores]
    assert any(v.keep for v in verdicts) and not all(v.keep for v in verdicts)
    assert all(v.rule == "score" and v.score == pytest.approx(s) for v, s in zip(verdicts, scores))
    for verdict in verdicts:  # only a rejected pair shows what the parser read
        assert (verdict.parse == "") if verdict.keep else isinstance(verdict.parse, str)
        if not verdict.keep:
            assert verdict.reason(threshold).startswith("round_trip: rule score, log p(lf | question)")


def test_threshold_defaults_to_the_parsers_calibration(parser_checkpoint: Path) -> None:
    judge = RoundTripFilter(parser_checkpoint, rules=SCORE)
    calibration = torch.load(parser_checkpoint, weights_only=True)["round_trip"]
    assert judge.threshold == calibration["threshold"] and judge.settings()["calibration"] == calibration
    assert RoundTripFilter(parser_checkpoint, rules=SCORE, threshold=-3.5).threshold == -3.5


def test_exact_rule_needs_a_canonical_match_among_the_k_best(parser_checkpoint: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    lf = ["select", "?", "x", "where", "{", "ent:", "oslo", "ns", "location", ".", "capital", "?", "x", "}"]
    renamed = [("y" if t == "x" else t) for t in lf]  # the same query with another variable name
    wrong = [("lyon" if t == "oslo" else t) for t in lf]
    ranked = {"a": [(renamed, -0.5)], "b": [(wrong, -0.4), (renamed, -0.9)], "c": [(wrong, -0.3)], "": []}

    def fake_parse(questions, beam=4, k=1):
        return [ranked[q[0] if q else ""][:k] for q in questions]

    judge = RoundTripFilter(parser_checkpoint, rules={"sparql": "exact"}, k=1)
    monkeypatch.setattr(judge.parser, "parse", fake_parse)
    verdicts = judge.judge("sparql", [["a"], ["b"], ["c"], []], [lf] * 4)
    assert [v.keep for v in verdicts] == [True, False, False, False]
    assert verdicts[0].parse == " ".join(renamed) and verdicts[0].score == -0.5
    assert verdicts[2].parse == " ".join(wrong) and verdicts[3].parse == "" and verdicts[3].score == float("-inf")
    assert verdicts[2].reason(None).startswith("round_trip: rule exact, no parse matches")
    two_best = RoundTripFilter(parser_checkpoint, rules={"sparql": "exact"}, k=2)
    monkeypatch.setattr(two_best.parser, "parse", fake_parse)
    assert [v.keep for v in two_best.judge("sparql", [["b"], ["c"]], [lf] * 2)] == [True, False]


def test_a_parser_for_other_logical_forms_or_preprocessing_is_refused(parser_checkpoint: Path) -> None:
    judge = RoundTripFilter(parser_checkpoint, rules=SCORE)
    judge.check_compatible(["sparql"])
    with pytest.raises(RoundTripSetupError, match="trained on sparql logical forms and cannot judge sql"):
        judge.check_compatible(["sql"])
    with pytest.raises(RoundTripSetupError, match="cannot judge sql"):
        judge.check_compatible(["sparql", "sql"])
    same = {"preprocessing": {"entity_replacement": True, "lowercase": True}}
    judge.check_compatible(["sparql"], same)
    judge.check_compatible(["sparql"], {})  # a generator that does not record its preprocessing
    with pytest.raises(RoundTripSetupError, match="different preprocessing settings"):
        judge.check_compatible(["sparql"], {"preprocessing": {"entity_replacement": False, "lowercase": True}})


def test_bad_settings_are_refused(parser_checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(RoundTripSetupError, match="must be one of exact, score, token, answers"):
        RoundTripFilter(parser_checkpoint, rules={"sparql": "execute"})
    with pytest.raises(RoundTripSetupError, match=">= 1"):
        RoundTripFilter(parser_checkpoint, k=0)
    uncalibrated = train_tiny_parser(tmp_path / "uncalibrated", epochs=1, calibrated=False)
    with pytest.raises(RoundTripSetupError, match="has no round-trip calibration"):
        RoundTripFilter(uncalibrated)
    assert RoundTripFilter(uncalibrated, threshold=-2.0).threshold == -2.0
    assert RoundTripFilter(uncalibrated, rules={"sparql": "exact", "sql": "exact"}).threshold is None


def test_judge_pairs_rejects_types_the_parser_lacks_and_keeps_order(parser_checkpoint: Path) -> None:
    judge = RoundTripFilter(parser_checkpoint, rules=SCORE, threshold=-1e9)
    rows = [pair_row("sparql", " ".join(QUESTIONS[0]), LFS[0], "a"),
            pair_row("sql", "how many ferries ?", ["select", "count", "(", "name", ")", "from", "t"], "b"),
            pair_row("sparql", " ".join(QUESTIONS[1]), LFS[1], "c")]
    verdicts = judge_pairs(judge, rows)
    assert [v.rule for v in verdicts] == ["score", "unsupported", "score"]
    assert [v.keep for v in verdicts] == [True, False, True]
    unsupported = verdicts[1]
    assert unsupported.parse == "" and math.isnan(unsupported.score)
    assert unsupported.reason(judge.threshold) == "round_trip: the parser was not trained on this logical-form type"
    scores = judge.parser.score(QUESTIONS[:2], LFS[:2])
    assert verdicts[0].score == pytest.approx(scores[0]) and verdicts[2].score == pytest.approx(scores[1])
    assert judge_pairs(judge, []) == [] and judge.judge("sparql", [], []) == []


@pytest.mark.parametrize("rule", ["score", "exact"])
def test_an_empty_question_is_a_reject_not_an_error(parser_checkpoint: Path, rule: str) -> None:
    # a threshold that keeps every question the parser reads: an empty one is rejected for being empty
    judge = RoundTripFilter(parser_checkpoint, rules={"sparql": rule}, threshold=-1e9)
    verdicts = judge_pairs(judge, [pair_row("sparql", "", LFS[0]), pair_row("sparql", "   ", LFS[1]),
                                   pair_row("sparql", " ".join(QUESTIONS[0]), LFS[0])])
    assert [(v.keep, v.rule) for v in verdicts[:2]] == [(False, "empty")] * 2
    assert verdicts[0].reason(judge.threshold) == "round_trip: the question is empty"
    assert verdicts[2].rule == rule and (verdicts[2].keep or rule == "exact")  # a real question is judged


def test_options_are_hashable_whatever_the_rules_are_given_as(parser_checkpoint: Path) -> None:
    as_dict = RoundTripOptions(str(parser_checkpoint), {"sql": "exact", "sparql": "score"}, 2, -3.0)
    as_lists = RoundTripOptions(str(parser_checkpoint), [["sparql", "score"], ["sql", "exact"]], 2, -3.0)
    as_tuples = RoundTripOptions(str(parser_checkpoint), (("sql", "exact"), ("sparql", "score")), 2, -3.0)
    assert as_dict == as_lists == as_tuples and len({as_dict, as_lists, as_tuples}) == 1
    assert as_dict.rules == (("sparql", "score"), ("sql", "exact"))
    assert hash(RoundTripOptions(str(parser_checkpoint))) == hash(RoundTripOptions(str(parser_checkpoint), {}))
    built = cached_filter(as_lists)
    assert cached_filter(as_dict) is built  # one parser per process for equal options
    assert (built.rules, built.k, built.threshold) == ({"sparql": "score", "sql": "exact"}, 2, -3.0)


def test_default_parser_sits_beside_the_generators_folder(tmp_path: Path) -> None:
    generator = tmp_path / "run" / "model" / "best.pt"
    generator.parent.mkdir(parents=True)
    generator.write_bytes(b"")
    assert default_parser(generator) is None
    parser = tmp_path / "run" / "parser" / "best.pt"
    parser.parent.mkdir()
    parser.write_bytes(b"")
    assert default_parser(generator) == parser.resolve()


def test_statistics_count_and_merge(parser_checkpoint: Path) -> None:
    judge = RoundTripFilter(parser_checkpoint, rules=SCORE, threshold=-1e9)
    rows = [pair_row("sparql", " ".join(QUESTIONS[0]), LFS[0]), pair_row("sql", "which ?", ["select", "a"])]
    stats = round_trip_statistics(judge_pairs(judge, rows))
    assert stats == {"judged": 2, "kept": 1, "removed": 1,
                     "by_rule": {"score": {"judged": 1, "kept": 1}, "unsupported": {"judged": 1, "kept": 0}}}
    total = merge_counts([stats, stats], {"judged": 0, "kept": 0, "removed": 0, "by_rule": {}})
    assert total["judged"] == 4 and total["removed"] == 2 and total["by_rule"]["score"] == {"judged": 2, "kept": 2}


def test_token_rule_judges_the_least_probable_token(parser_checkpoint: Path) -> None:
    judge = RoundTripFilter(parser_checkpoint, rules={"sparql": "token"})
    lowest = judge.parser.score(QUESTIONS, LFS, "min")
    mean = judge.parser.score(QUESTIONS, LFS, "mean")
    assert all(low <= avg + 1e-6 for low, avg in zip(lowest, mean))
    assert judge.thresholds["token"] == judge.parser.payload["round_trip"]["threshold_min"]
    verdicts = judge.judge("sparql", QUESTIONS, LFS)
    assert [v.rule for v in verdicts] == ["token"] * len(QUESTIONS)
    assert [v.keep for v in verdicts] == [low >= judge.thresholds["token"] for low in lowest]


def test_every_entry_point_reads_the_same_number_of_parses_by_default() -> None:
    """--round-trip-k's default is one number, DEFAULT_ROUND_TRIP_K, for the CLI, the flows, the
    downstream benchmark and the filter itself."""
    import inspect

    from flows.benchmark import downstream_flow
    from flows.synthesize import synthesize_flow
    from qgen import cli
    from qgen.downstream import DownstreamConfig
    from qgen.synth.round_trip import DEFAULT_ROUND_TRIP_K, RoundTripFilter, RoundTripOptions

    def default(function, name: str = "round_trip_k"):
        value = inspect.signature(getattr(function, "fn", function)).parameters[name].default
        return getattr(value, "default", value)  # a typer option carries its default

    assert DEFAULT_ROUND_TRIP_K == 4
    assert default(cli.synthesize) == default(cli.downstream) == DEFAULT_ROUND_TRIP_K
    assert default(synthesize_flow) == default(downstream_flow) == DEFAULT_ROUND_TRIP_K
    assert DownstreamConfig().round_trip_k == RoundTripOptions("p").k == DEFAULT_ROUND_TRIP_K
    assert default(RoundTripFilter.__init__, "k") == DEFAULT_ROUND_TRIP_K
