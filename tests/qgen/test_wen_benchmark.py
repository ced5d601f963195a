"""Seed 004's dialogue benchmark on the Wen fixture: the checklist's input layout, relexicalised
outputs, selection on dev BLEU, and the results table beside the paper's rows."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from qgen.cli import app
from qgen.datasets.wen_agenda import agenda_examples, agenda_tokens, relexicalise
from qgen.metrics.wen import normalise, parse_act
from qgen.wen_benchmark import WenBenchConfig, run_wen_benchmark

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
torch.set_num_threads(1)


def test_an_act_becomes_a_goal_and_slot_value_items() -> None:
    act = parse_act("inform(name='hotel stratford';dogsallowed=no;area)")
    assert agenda_tokens(act) == ["inform", "name", "SLOT_NAME", "dogsallowed", "no", "area", "?"]
    assert agenda_tokens(parse_act("goodbye()")) == ["goodbye", "null", "null"]
    assert relexicalise("SLOT_NAME does not allow dogs".split(), act, "hotel") == "hotel stratford does not allow dogs"


def test_targets_are_delexicalised_and_relexicalise_back_to_the_normalised_utterance() -> None:
    for domain in ("hotel", "restaurant"):
        examples = agenda_examples(domain, "train", FIXTURES)
        utterances = [record[1] for record in _records(domain)]
        assert len(examples) == len(utterances) > 0
        for example, utterance in zip(examples, utterances):
            assert example.pair.src == agenda_tokens(example.act)
            assert relexicalise(example.pair.tgt, example.act, domain) == normalise(utterance)


def _records(domain: str) -> list:
    lines = (FIXTURES / "wen2015_sf" / domain / "train.json").read_text().split("\n")
    return json.loads("\n".join(lines[5:]))


def test_the_benchmark_selects_on_dev_bleu_and_writes_the_table(tmp_path: Path) -> None:
    cfg = WenBenchConfig(epochs=3, patience=1, java_metrics=False)
    readme = run_wen_benchmark("hotel", ["kiddon_checklist"], cfg, tmp_path / "work", tmp_path / "results", FIXTURES,
                               log=lambda _: None)
    metrics = json.loads((tmp_path / "results" / "wen-hotel" / "kiddon_checklist" / "metrics.json").read_text())
    history = metrics["history"]
    assert 1 <= metrics["epochs_run"] == len(history) <= 3
    assert metrics["dev_bleu"] == max(h["dev_bleu"] for h in history)
    assert metrics["selected_epoch"] == next(h["epoch"] for h in history if h["dev_bleu"] == metrics["dev_bleu"])
    assert 0.0 <= metrics["test"]["BLEU"] <= 100.0 and metrics["test"]["METEOR"] is None
    outputs = (tmp_path / "results" / "wen-hotel" / "kiddon_checklist" / "test_outputs.txt").read_text().splitlines()
    assert len(outputs) == 3
    table = readme.read_text()
    assert "| Checklist | 90.61 | 62.10 | paper |" in table and "| kiddon_checklist, seed 1 |" in table
    assert "no recipe data" in table and "| HDC, scored here (metric check) |" in table


def test_the_command_refuses_an_unknown_row(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["benchmark", "wen-hotel", "--models", "checklist_plus", "--data-dir",
                                      str(FIXTURES), "--work-dir", str(tmp_path), "--results", str(tmp_path)])
    assert result.exit_code == 2 and "unknown row(s) checklist_plus" in result.output
    with pytest.raises(ValueError, match="unknown Wen domain"):
        run_wen_benchmark("laptop", ["kiddon_checklist"], WenBenchConfig(), tmp_path, tmp_path)
