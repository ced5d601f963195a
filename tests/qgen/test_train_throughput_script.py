"""benchmarks/train_throughput.py keeps the figures of the models that a run did not time."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "train_throughput.py"


def load_script():
    spec = importlib.util.spec_from_file_location("train_throughput", SCRIPT)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_a_run_of_some_models_keeps_the_others_with_who_timed_them() -> None:
    untimed_models = load_script().untimed_models
    h100 = {"device": "cuda", "gpu": "NVIDIA H100", "machine": "x86_64"}
    previous = {**h100, "commit": "old", "command": "python benchmarks/train_throughput.py",
                "models": {"copynet": {"target_tokens_per_s": 1.0},
                           "coverage": {"target_tokens_per_s": 2.0, "timed_by": {"commit": "older"}}}}
    now = {**h100, "commit": "new", "models": {"copynet": {"target_tokens_per_s": 3.0}}}
    kept = untimed_models(previous, now)
    assert list(kept) == ["coverage"]  # copynet was timed again: the new figure stands
    assert kept["coverage"]["target_tokens_per_s"] == 2.0
    assert kept["coverage"]["timed_by"] == {"commit": "older"}  # an entry kept before keeps its origin
    previous["models"]["seq2seq"] = {"target_tokens_per_s": 4.0}
    assert untimed_models(previous, now)["seq2seq"]["timed_by"] == {"commit": "old", "command": previous["command"]}
    assert untimed_models(previous, {**now, "gpu": "NVIDIA H200"}) == {}  # another card's figures are not mixed in


def test_a_new_timing_keeps_the_synthesis_entry_and_the_recorded_ab() -> None:
    kept_records = load_script().kept_records
    previous = {"synthesis": {"questions_per_s": 35.2}, "training_same_model_before_and_after": {"before": {}},
                "decode_note": "about an earlier decode", "models": {}}
    assert kept_records(previous) == {"synthesis": {"questions_per_s": 35.2},
                                      "training_same_model_before_and_after": {"before": {}}}
    assert kept_records({}) == {}
