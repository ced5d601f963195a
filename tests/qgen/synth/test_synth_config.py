"""SynthesisConfig: one frozen configuration of a corpus run, built alike from options and flow parameters."""
from __future__ import annotations

import dataclasses

import pytest

from qgen.synth.config import SynthesisConfig
from qgen.synth.filter import FilterThresholds
from qgen.synth.round_trip import RoundTripOptions


def test_build_takes_flat_options_as_a_command_line_or_a_flow_gives_them() -> None:
    config = SynthesisConfig.build(2, 1, -3.0, {"checkpoint": "p.pt", "rules": {"sql": "exact"}, "k": 2},
                                   beam=3, shard_size=50, seed=9, no_repeat=True)
    assert config.thresholds == FilterThresholds(max_overcopy=2, max_repeated_ngrams=1, min_score=-3.0)
    assert config.round_trip == RoundTripOptions("p.pt", (("sql", "exact"),), 2)
    assert (config.beam, config.shard_size, config.seed, config.no_repeat) == (3, 50, 9, True)
    assert SynthesisConfig.build() == SynthesisConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.beam = 5  # type: ignore[misc]


@pytest.mark.parametrize("field, value", [("beam", 0), ("shard_size", 0), ("max_len", 0), ("max_tokens", 0),
                                          ("batch_size", -1), ("seed", -1)])
def test_bad_values_are_refused_by_name(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=field):
        SynthesisConfig(**{field: value})


def test_writer_options_are_what_the_question_writer_takes() -> None:
    import inspect

    from qgen.synth.generator import QuestionWriter

    options = SynthesisConfig(beam=2, max_tokens=500, no_repeat=True).writer_options()
    accepted = set(inspect.signature(QuestionWriter).parameters)
    assert set(options) <= accepted
    assert options["beam"] == 2 and options["max_tokens"] == 500 and options["no_repeat"] is True
    assert options["ignore_tokens"] == FilterThresholds().ignore_tokens


def test_the_cli_refuses_a_bad_value_with_a_usage_error(tiny_checkpoint, tmp_path) -> None:
    from typer.testing import CliRunner

    from qgen.cli import app

    result = CliRunner().invoke(app, ["synthesize", "--checkpoint", str(tiny_checkpoint), "--out", str(tmp_path / "c"),
                                      "--from-file", "data/demo/sample.jsonl", "--shard-size", "0",
                                      "--no-round-trip"])
    assert result.exit_code == 2 and "error: --shard-size must be >= 1, got 0" in result.output
    assert not (tmp_path / "c").exists()
