"""Paired significance of corpus BLEU (qgen/metrics/significance.py) and its benchmark script."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from qgen.metrics import corpus_bleu, paired_significance

WORDS = "what who where when which city river team film country born capital play director".split()


def corpus(size: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.sample(WORDS, 6) + ["?"] for _ in range(size)]


REFS = corpus(200, 1)
# A good system: the reference with its last content word changed; a bad one: unrelated questions.
GOOD = [ref[:4] + ["film"] + ref[5:] for ref in REFS]
BAD = corpus(200, 2)


def test_scores_are_sacrebleu_corpus_bleu_and_a_clear_winner_gets_the_smallest_p() -> None:
    result = paired_significance(("good", GOOD), ("bad", BAD), REFS, trials=500, bootstrap=200)
    assert result.system_bleu == pytest.approx(corpus_bleu(GOOD, REFS).score)
    assert result.baseline_bleu == pytest.approx(corpus_bleu(BAD, REFS).score)
    assert result.difference > 30
    assert result.p_value == pytest.approx(1 / 501)  # no trial is as extreme: the test's floor
    assert 0 < result.baseline_ci < result.system_ci < 5  # BLEU near 0 (bad) varies less
    assert "ar:500" in result.signature and "bs:200" in result.signature


def test_equally_good_systems_are_not_significant_and_the_same_output_has_p_one() -> None:
    # Each spoils ten different questions: equally good, differently wrong.
    first = [BAD[i] if i < 10 else q for i, q in enumerate(GOOD)]
    second = [BAD[i] if 10 <= i < 20 else q for i, q in enumerate(GOOD)]
    assert paired_significance(("first", first), ("second", second), REFS, trials=1000).p_value > 0.3
    assert paired_significance(("same", GOOD), ("good", GOOD), REFS, trials=200).p_value == 1.0


def test_the_p_value_is_two_sided_swapping_the_systems_keeps_it() -> None:
    spoilt = [BAD[i] if i < 12 else q for i, q in enumerate(GOOD)]  # somewhat worse than GOOD
    forward = paired_significance(("spoilt", spoilt), ("good", GOOD), REFS, trials=2000)
    backward = paired_significance(("good", GOOD), ("spoilt", spoilt), REFS, trials=2000)
    assert forward.difference == pytest.approx(-backward.difference)
    assert forward.p_value == pytest.approx(backward.p_value, abs=0.02)


def test_trials_are_seeded_and_the_environment_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    spoilt = [BAD[i] if i < 12 else q for i, q in enumerate(GOOD)]
    first = paired_significance(("spoilt", spoilt), ("good", GOOD), REFS, trials=300, seed=7)
    assert first == paired_significance(("spoilt", spoilt), ("good", GOOD), REFS, trials=300, seed=7)
    assert "SACREBLEU_SEED" not in os.environ
    monkeypatch.setenv("SACREBLEU_SEED", "99")
    paired_significance(("spoilt", spoilt), ("good", GOOD), REFS, trials=100)
    assert os.environ["SACREBLEU_SEED"] == "99"


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="good has 199, bad 200, references 200"):
        paired_significance(("good", GOOD[:-1]), ("bad", BAD), REFS)
    with pytest.raises(ValueError, match="trials must be at least 1"):
        paired_significance(("good", GOOD), ("bad", BAD), REFS, trials=0)
    with pytest.raises(ValueError, match="seed must be at least 1, got 0"):  # sacrebleu: 0 = unseeded
        paired_significance(("good", GOOD), ("bad", BAD), REFS, seed=0)


def write_run(folder: Path, predictions: list[list[str]], references: list[list[str]]) -> None:
    folder.mkdir(parents=True)
    (folder / "ids.txt").write_text("".join(f"q{i}\n" for i in range(len(references))))
    (folder / "predictions.txt").write_text("".join(" ".join(p) + "\n" for p in predictions))
    (folder / "references.txt").write_text("".join(" ".join(r) + "\n" for r in references))


def test_script_compares_the_papers_orderings_and_seed_runs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for run, predictions in (("scratchpad", GOOD), ("copynet", BAD), ("scratchpad_seed2", GOOD), ("other", BAD)):
        write_run(results / "webqsp" / run, predictions, REFS)
    script = Path(__file__).resolve().parents[3] / "benchmarks" / "significance.py"
    proc = subprocess.run([sys.executable, str(script), "--results", str(results), "--trials", "200"],
                          capture_output=True, text=True, check=True)
    assert "| scratchpad | copynet |" in proc.stdout and "| scratchpad_seed2 | scratchpad |" in proc.stdout
    saved = json.loads((results / "webqsp" / "significance.json").read_text())
    assert [(r["system"], r["baseline"]) for r in saved["rows"]] == [("scratchpad", "copynet"),
                                                                      ("scratchpad_seed2", "scratchpad")]
    assert saved["rows"][1]["p_value"] == 1.0 and saved["trials"] == 200
    assert (results / "webqsp" / "significance.md").read_text().count("\n| ") == 3  # header + two rows


def test_script_names_a_run_without_predictions(tmp_path: Path) -> None:
    write_run(tmp_path / "webqsp" / "scratchpad", GOOD, REFS)
    script = Path(__file__).resolve().parents[3] / "benchmarks" / "significance.py"
    proc = subprocess.run([sys.executable, str(script), "--results", str(tmp_path), "--pairs", "scratchpad:coverage"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no predictions.txt under" in proc.stderr and "coverage" in proc.stderr


def test_default_pairs_compare_within_a_setting_and_each_seed_with_seed_one(tmp_path: Path) -> None:
    import importlib.util

    script = Path(__file__).resolve().parents[3] / "benchmarks" / "significance.py"
    spec = importlib.util.spec_from_file_location("significance_script", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for run in ("scratchpad", "copynet", "scratchpad_norepeat", "copynet_norepeat", "scratchpad_epoch35",
                "copynet_epoch35", "scratchpad_seed2", "scratchpad_seed2_epoch35", "copynet_seed2_epoch35",
                "scratchpad_extended"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "predictions.txt").write_text("")
    assert module.default_pairs(tmp_path) == [
        ("scratchpad", "copynet"), ("scratchpad_extended", "scratchpad"),  # seed 1, full epochs
        ("scratchpad_epoch35", "copynet_epoch35"),
        ("scratchpad_seed2_epoch35", "copynet_seed2_epoch35"),
        ("copynet_seed2_epoch35", "copynet_epoch35"), ("scratchpad_seed2", "scratchpad"),
        ("scratchpad_seed2_epoch35", "scratchpad_epoch35")]
