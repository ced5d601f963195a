"""Seed 003's E2E benchmark on the E2E fixture at toy size: each row trained per seed with selection
on dev BLEU, its seeds decoded on test as one ensemble, the table beside the paper's rows."""
from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import patch

import pytest
import torch
from typer.testing import CliRunner

from qgen import checkpoint
from qgen.cli import app
from qgen.e2e_benchmark import E2EBenchConfig, run_e2e_benchmark
from qgen.metrics.e2e_official import read_references

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
torch.set_num_threads(1)


def test_a_row_trains_per_seed_and_its_seeds_decode_test_as_one_ensemble(tmp_path: Path) -> None:
    cfg = E2EBenchConfig(epochs=2, seeds=(1, 2), java_metrics=False, hidden=16, embedding=8, batch_size=8,
                         learning_rate=1e-2, device="cpu")
    loaded_to, original = [], checkpoint.load_checkpoint

    def load_checkpoint(path, device="cpu"):  # where each checkpoint goes: the run's device, never a default
        loaded_to.append(device)
        return original(path, device)

    with patch("qgen.checkpoint.load_checkpoint", load_checkpoint):
        readme = run_e2e_benchmark(["zhang_caencoder_attreg"], cfg, tmp_path / "work", tmp_path / "results",
                                   FIXTURES, log=lambda _: None)
    # the run's device (cfg.device="cpu") as a torch.device; the default would be the string "cpu"
    assert loaded_to and all(isinstance(d, torch.device) and d == torch.device("cpu") for d in loaded_to), loaded_to
    out = tmp_path / "results" / "e2e-zhang"
    report = json.loads((out / "metrics.json").read_text())
    assert set(report["dev"]) == {"zhang_caencoder_attreg_seed1", "zhang_caencoder_attreg_seed2"}
    for run in report["dev"].values():
        assert run["selected_on"] == "bleu" and run["selected_epoch"] in (1, 2)
        assert 0.0 <= run["figures"]["BLEU"] <= 1.0 and run["figures"]["METEOR"] is None
    for seed in (1, 2):
        assert (tmp_path / "work" / f"zhang_caencoder_attreg_seed{seed}" / "best_bleu.pt").is_file()
    test_lines = (out / "test" / "zhang_caencoder_attreg.tsv").read_text().splitlines()
    mrs = read_references(FIXTURES / "e2e" / "testset_w_refs.csv").mrs  # one output per distinct test MR
    assert test_lines[0] == "MR\toutput" and [line.split("\t")[0] for line in test_lines[1:]] == list(mrs)
    assert 0.0 <= report["test"]["zhang_caencoder_attreg"]["BLEU"] <= 1.0
    table = readme.read_text()
    assert "| test | zhang_caencoder_attreg | paper | 0.6545 |" in table
    assert "| test | zhang_caencoder_attreg | ours (ensemble of seeds 1, 2) |" in table


def test_the_command_refuses_an_unknown_row(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["benchmark", "e2e", "--models", "tgen", "--data-dir", str(FIXTURES),
                                      "--work-dir", str(tmp_path), "--results", str(tmp_path)])
    assert result.exit_code == 2 and "unknown row(s) tgen" in result.output
    with pytest.raises(ValueError, match="unknown row"):
        run_e2e_benchmark(["tgen"], E2EBenchConfig(), tmp_path, tmp_path, FIXTURES)


def _tiny(**changes) -> E2EBenchConfig:
    return E2EBenchConfig(**{**dict(epochs=1, seeds=(1,), java_metrics=False, hidden=16, embedding=8, batch_size=8,
                                    learning_rate=1e-2, device="cpu"), **changes})


def test_a_runs_time_budget_counts_every_start(tmp_path: Path, training_budgets: list) -> None:
    """--max-seconds is a run's training time over every start: a start gets what is left of it, not the
    whole budget again (before, each epoch of each start got all of it, so a run never stopped in time)."""
    state = tmp_path / "work" / "zhang_caencoder_seed1" / "selection.json"
    spent = []
    for epochs in (1, 2):  # the run started again for one more epoch
        run_e2e_benchmark(["zhang_caencoder"], _tiny(epochs=epochs, max_seconds=1000.0), tmp_path / "work",
                          tmp_path / "results", FIXTURES, log=lambda _: None)
        spent.append(json.loads(state.read_text())["train_seconds"])
    assert training_budgets == [1000.0, pytest.approx(1000.0 - spent[0])]
    assert 0 < spent[0] < spent[1]


def test_a_spent_budget_stops_the_benchmark_before_the_later_runs_and_test(tmp_path: Path) -> None:
    from qgen.dev_selection import BudgetSpent

    work, results = tmp_path / "work", tmp_path / "results"
    run_e2e_benchmark(["zhang_caencoder"], _tiny(epochs=1), work, results, FIXTURES, log=lambda _: None)
    spent = json.loads((work / "zhang_caencoder_seed1" / "selection.json").read_text())["train_seconds"]
    (results / "e2e-zhang" / "metrics.json").unlink()
    # Two epochs wanted, the budget all spent on the first: seed 2 and the test ensemble wait for seed 1.
    with pytest.raises(BudgetSpent, match=r"zhang_caencoder_seed1: 1 of 2 epochs scored .* larger --max-seconds"):
        run_e2e_benchmark(["zhang_caencoder"], _tiny(epochs=2, seeds=(1, 2), max_seconds=spent), work, results,
                          FIXTURES, log=lambda _: None)
    assert not (work / "zhang_caencoder_seed2").exists() and not (results / "e2e-zhang" / "metrics.json").exists()
    # Started again with more time, it goes on from epoch 2 and finishes.
    run_e2e_benchmark(["zhang_caencoder"], _tiny(epochs=2, max_seconds=spent + 1000.0), work, results, FIXTURES,
                      log=lambda _: None)
    report = json.loads((results / "e2e-zhang" / "metrics.json").read_text())
    assert report["dev"]["zhang_caencoder_seed1"]["selected_epoch"] in (1, 2)
    history = json.loads((work / "zhang_caencoder_seed1" / "selection.json").read_text())["history"]
    assert [entry["epoch"] for entry in history] == [1, 2]


def test_the_command_says_a_budget_stop_is_resumable_and_exits_0(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import qgen.e2e_benchmark
    from qgen.dev_selection import BudgetSpent, NoEpochScored

    for stop in (BudgetSpent("run/zhang_seed1: 1 of 5 epochs scored"), NoEpochScored("run: no epoch was scored")):
        def stopped(*args, stop=stop, **kwargs):
            raise stop

        monkeypatch.setattr(qgen.e2e_benchmark, "run_e2e_benchmark", stopped)
        result = CliRunner().invoke(app, ["benchmark", "e2e", "--max-seconds", "60", "--data-dir", str(FIXTURES),
                                          "--work-dir", str(tmp_path), "--results", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert result.output.startswith("stopped, results not written yet: ") and str(stop) in result.output
