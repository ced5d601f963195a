"""METEOR 1.5 through pycocoevalcap's jar (qgen/metrics/meteor.py). One JVM for the module (~7 s)."""
from __future__ import annotations

import random
import shutil
from collections.abc import Iterator

import pytest

from qgen.metrics.meteor import (
    EMPTY_HYPOTHESIS,
    Meteor,
    MeteorError,
    MetricUnavailableError,
    check_meteor_available,
    meteor_files,
    segment,
)

HYPS = ["what is the capital city of france ?", "who was the director of titanic ?", "what river goes through paris ?"]
REFS = [
    ["what is the capital of france ?"],
    ["who directed the film titanic ?"],
    ["which river flows through paris ?", "what river runs through paris ?"],
]
# pycocoevalcap 1.2's Meteor().compute_score on the strings above (the reference implementation)
COCO_CORPUS = 0.4321708385156478
COCO_SENTENCES = (0.5120309542150457, 0.2195177180876247, 0.9571428571428572)


@pytest.fixture(scope="module")
def scorer() -> Iterator[Meteor]:
    if shutil.which("java") is None:
        pytest.skip("METEOR needs `java` on PATH (install a JRE, e.g. default-jre-headless)")
    with Meteor(timeout_s=120) as opened:
        yield opened


def _corpus(n: int, seed: int = 0) -> tuple[list[list[str]], list[list[str]]]:
    rng = random.Random(seed)
    vocab = "what is the name of who which city river film directed by born in where team ? 's".split()
    refs = [[rng.choice(vocab) for _ in range(rng.randint(3, 12))] for _ in range(n)]
    hyps = [r[: len(r) // 2] + [rng.choice(vocab) for _ in range(rng.randint(0, 6))] for r in refs]
    return hyps, refs


def test_package_ships_jar_and_paraphrase_table() -> None:
    jar, paraphrase = meteor_files()
    assert jar.is_file(), jar
    assert paraphrase.is_file(), paraphrase


def test_matches_pycocoevalcap_compute_score(scorer: Meteor) -> None:
    result = scorer.score([h.split() for h in HYPS], [[r.split() for r in group] for group in REFS])
    assert result.corpus == pytest.approx(100 * COCO_CORPUS)
    assert result.sentence_scores == pytest.approx([100 * s for s in COCO_SENTENCES])


def test_identical_corpus_scores_close_to_100(scorer: Meteor) -> None:
    _, refs = _corpus(20)
    result = scorer.score(refs, refs)
    assert result.corpus > 99.0
    assert result.sentence_mean > 99.0


def test_fifty_sentences_score_within_range(scorer: Meteor) -> None:
    hyps, refs = _corpus(50, seed=1)
    result = scorer.score(hyps, refs)
    assert len(result.sentence_scores) == 50
    assert all(0.0 <= s <= 100.0 for s in result.sentence_scores)
    assert 0.0 < result.corpus < 100.0
    assert result.sentence_mean == pytest.approx(sum(result.sentence_scores) / 50)


def test_empty_segments_and_separator_tokens_do_not_hang(scorer: Meteor) -> None:
    hyps = [[], ["a", "b"], ["x", "|||", "y"], []]
    refs = [["a", "b"], [], ["x", "y"], []]
    result = scorer.score(hyps, refs)
    assert result.sentence_scores[0] == 0.0 and result.sentence_scores[1] == 0.0
    assert result.sentence_scores[2] > 99.0  # "|||" removed before sending
    assert result.sentence_scores[3] == 0.0


def test_segment_placeholder_and_separator() -> None:
    assert segment([], EMPTY_HYPOTHESIS) == EMPTY_HYPOTHESIS
    assert segment(["a", "|||", "b|||c"], EMPTY_HYPOTHESIS) == "a b c"


def test_mismatched_lengths_raise(scorer: Meteor) -> None:
    with pytest.raises(ValueError):
        scorer.score([["a"]], [["a"], ["b"]])


def test_missing_java_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(MetricUnavailableError, match="java"):
        check_meteor_available()
    with pytest.raises(MetricUnavailableError, match="/nowhere/java"):
        Meteor(java="/nowhere/java")


def test_closed_scorer_refuses_to_score() -> None:
    if shutil.which("java") is None:
        pytest.skip("METEOR needs `java` on PATH")
    scorer = Meteor()
    scorer.close()
    scorer.close()  # idempotent
    with pytest.raises(MeteorError, match="closed"):
        scorer.score([["a"]], [["a"]])
