"""All metrics in one dict (qgen/metrics/report.py)."""
from __future__ import annotations

import json
import math

import pytest
import torch

from qgen.metrics.meteor import MeteorResult, MetricUnavailableError
from qgen.metrics.report import evaluate_corpus

HYPS = ["what is the capital of france ?".split(), "who who directed titanic ?".split()]
REFS = ["what is the capital of france ?".split(), "who directed the film titanic ?".split()]
KEYS = {
    "n", "bleu_corpus", "bleu_sentence_mean", "bleu_signature", "bleu_sentence_signature",
    "meteor_corpus", "meteor_sentence_mean", "meteor_skipped_reason",
    "rouge_l_corpus", "rouge_l_sentence_mean", "overcopy",
    "bleu_sentence_unsmoothed_mean", "bleu_sentence_unsmoothed_signature", "overcopy_literal",
}


class FakeMeteor:
    """Stands in for an open ``Meteor`` (no JVM in this module: test_metrics_meteor covers the jar)."""

    def __init__(self) -> None:
        self.calls = 0

    def score(self, hyps: list, refs: list) -> MeteorResult:
        self.calls += 1
        return MeteorResult(42.0, 40.0, tuple(40.0 for _ in hyps))


def test_flat_json_dict_with_every_metric() -> None:
    fake = FakeMeteor()
    report = evaluate_corpus(HYPS, REFS, meteor_scorer=fake)  # type: ignore[arg-type]
    assert set(report) == KEYS
    assert json.loads(json.dumps(report)) == report
    assert report["n"] == 2
    assert fake.calls == 1 and report["meteor_corpus"] == 42.0 and report["meteor_sentence_mean"] == 40.0
    assert report["meteor_skipped_reason"] is None
    assert report["overcopy"] == pytest.approx(0.5)  # the extra "who"
    for key in ("bleu_corpus", "bleu_sentence_mean", "rouge_l_corpus", "rouge_l_sentence_mean"):
        assert 0.0 < report[key] < 100.0, key  # 0-100 scale
    assert "tok:none" in str(report["bleu_signature"])


def test_identical_corpus() -> None:
    report = evaluate_corpus(REFS, REFS, meteor=False)
    assert report["bleu_corpus"] == pytest.approx(100.0)
    assert report["rouge_l_corpus"] == pytest.approx(100.0)
    assert report["overcopy"] == 0.0
    assert report["meteor_corpus"] is None and "meteor=False" in str(report["meteor_skipped_reason"])


def test_attention_entropy_when_attentions_given() -> None:
    attentions = [torch.full((len(h), 4), 0.25) for h in HYPS]
    report = evaluate_corpus(HYPS, REFS, attentions, meteor=False)
    assert report["attention_entropy"] == pytest.approx(math.log(4))
    with pytest.raises(ValueError):
        evaluate_corpus(HYPS, REFS, attentions[:1], meteor=False)


def test_overcopy_source_when_sources_given() -> None:
    sources = ["ent: france capital".split(), "ent: titanic film directed by".split()]
    report = evaluate_corpus(HYPS, REFS, sources=sources, meteor=False)
    assert report["overcopy_source"] == 0.0  # the second hypothesis repeats "who", not a source word
    assert report["overcopy"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="sources"):
        evaluate_corpus(HYPS, REFS, sources=sources[:1], meteor=False)


def test_missing_java_records_null_and_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    report = evaluate_corpus(HYPS, REFS)
    assert report["meteor_corpus"] is None and report["meteor_sentence_mean"] is None
    assert "java" in str(report["meteor_skipped_reason"])
    with pytest.raises(MetricUnavailableError):
        evaluate_corpus(HYPS, REFS, skip_meteor_if_unavailable=False)


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError):
        evaluate_corpus(HYPS, REFS[:1], meteor=False)
