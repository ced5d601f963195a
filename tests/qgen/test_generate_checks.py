"""`rank_by_checks`: the beam's questions, those passing the faithfulness audit first, then those passing the
over-copy filter, each group in the beam's order, each with what it fails."""
from __future__ import annotations

from parsers import tokenize_lf
from qgen.generate import rank_by_checks

LF = "SELECT name FROM players WHERE points > 20"
TOKENS = tokenize_lf(LF, "sql").tokens


def test_the_audit_comes_first_then_the_overcopy_filter_then_the_score() -> None:
    questions = [("which name has points less than 20 ?", -0.1),  # wrong direction
                 ("which name has points points more than 20 ?", -0.2),  # right, over-copies
                 ("which name has points more than 20 ?", -0.3),  # right, clean
                 ("which name has more than 20 points ?", -0.4)]  # right, clean
    ranked = rank_by_checks("sql", LF, TOKENS, questions)
    assert [score for _, score, _ in ranked] == [-0.3, -0.4, -0.2, -0.1]
    assert ranked[0][2] == [] and ranked[1][2] == []
    assert len(ranked[2][2]) == 1 and ranked[2][2][0].startswith("overcopy: 1 excess copies")
    assert ranked[3][2] == ["comparison > stated in the other direction"]


def test_without_an_audited_question_the_best_scored_comes_first_as_synthesis_writes() -> None:
    questions = [("which name has points points less than 20 ?", -0.1),  # wrong direction, over-copies
                 ("which name has points under 20 ?", -0.2)]  # wrong direction
    assert [score for _, score, _ in rank_by_checks("sql", LF, TOKENS, questions)] == [-0.1, -0.2]


def test_a_beam_that_all_passes_keeps_its_order() -> None:
    questions = [("which name has more than 20 points ?", -0.1), ("what name has over 20 points ?", -0.2)]
    assert rank_by_checks("sql", LF, TOKENS, questions) == [(q, s, []) for q, s in questions]
