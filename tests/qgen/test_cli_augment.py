"""qgen train --augment-with: seed questions as templates filled by the domain's SQL logical forms."""
import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from qgen.checkpoint import load_checkpoint
from qgen.cli import app
from qgen.train_job import AUGMENT_WEIGHT_AVERAGE

runner = CliRunner()
COLUMNS = [("Position", "Player"), ("College", "Player"), ("Nationality", "Pick"), ("Team", "Season")]
VALUES = ["Ann Lee", "Bo Park", "Cy Dunn", "Di Moss", "Ed Fox"]


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _preprocess(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    out = tmp_path / f"{name}-prep"
    result = runner.invoke(app, ["preprocess", str(_write_jsonl(tmp_path / f"{name}.jsonl", rows)), "--out", str(out),
                                 "--workers", "1"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def prepared(tmp_path: Path) -> tuple[Path, Path]:
    seeds = [{"id": f"s{i}-{j}", "lf": f"SELECT \"{asked}\" FROM \"table\" WHERE \"{by}\" = '{value}'",
              "question": f"what is the {asked.lower()} when the {by.lower()} is {value} ?"}
             for i, (asked, by) in enumerate(COLUMNS) for j, value in enumerate(VALUES)]
    # forms over a column no seed has ("Zebra Count"): only a filled template can teach its words
    forms = [{"id": f"f{j}", "lf": f"SELECT \"Zebra Count\" FROM \"table\" WHERE \"Player\" = '{value}'"}
             for j, value in enumerate(VALUES)]
    # a seed's own form (under another id) is left out: the seeds are learnt as people wrote them
    forms.append({"id": "f-seed", "lf": "SELECT \"Position\" FROM \"table\" WHERE \"Player\" = 'Ann Lee'"})
    forms.append({"id": "f-sparql", "lf": "SELECT ?x WHERE { <http://example.org/a> <http://example.org/b> ?x }"})
    return _preprocess(tmp_path, "seeds", seeds) / "train.parquet", _preprocess(tmp_path, "forms", forms) / "unlabelled.parquet"


def test_train_fills_templates_and_keeps_the_best_validation_bleu(tmp_path: Path, prepared) -> None:
    seeds, forms = prepared
    out = tmp_path / "m"
    result = runner.invoke(app, ["train", str(seeds), "--augment-with", str(forms), "--out", str(out), "--epochs", "2",
                                 "--hidden", "16", "--embedding", "8", "--layers", "1", "--batch-size", "8"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "make templates; they fill 5 of 5 logical forms of unlabelled.parquet" in text  # not the SPARQL one, nor the seed's
    selection = json.loads((out / "selection.json").read_text())
    assert [h["epoch"] for h in selection["history"]] == [1, 2]
    best = selection["best"]
    assert best["dev_score"] == max(h["dev_score"] for h in selection["history"])
    assert f"best epoch {best['epoch']}: validation BLEU" in text
    if best["epoch"] == 1:  # the later epoch is averaged with it, and the average kept only if it scores higher
        averaged = selection["averaged"]
        assert averaged["epochs"] == [1, 2] and f"epochs 1-2 averaged: validation BLEU {averaged['dev_score']:.2f}" in text
        kept = averaged["kept"]
        assert kept == (averaged["dev_score"] > best["dev_score"])
        assert ("best.pt is the average" if kept else "best.pt is epoch 1") in text
    else:
        assert "averaged" not in selection and "averaged" not in text
        kept = False
    best, selected = load_checkpoint(out / "best.pt")[0].state_dict(), load_checkpoint(out / "best_bleu.pt")[0].state_dict()
    assert all(torch.equal(best[k], selected[k]) for k in best) == (not kept)
    assert not (out / "epochs").exists() and not (out / "averaged.pt").exists()
    _, _, tgt_vocab, payload = load_checkpoint(out / "best.pt", "cpu")
    assert "zebra" in tgt_vocab.itos  # learnt from the filled templates: no seed question says it
    assert payload["train_config"]["weight_average"] == AUGMENT_WEIGHT_AVERAGE  # on by default with --augment-with


def test_weight_average_is_off_without_augment_with_and_checked(tmp_path: Path, prepared) -> None:
    seeds, forms = prepared
    common = ["train", str(seeds), "--epochs", "1", "--hidden", "16", "--embedding", "8", "--layers", "1"]
    result = runner.invoke(app, [*common, "--out", str(tmp_path / "plain")])
    assert result.exit_code == 0, result.output
    assert load_checkpoint(tmp_path / "plain" / "last.pt")[3]["train_config"]["weight_average"] == 0.0
    result = runner.invoke(app, [*common, "--out", str(tmp_path / "bad"), "--weight-average", "1"])
    assert result.exit_code == 2 and "--weight-average must be in [0, 1), got 1.0" in result.output
    # A run written without an average resumes without one unless told (--augment-with's default is on).
    result = runner.invoke(app, [*common, "--out", str(tmp_path / "plain"), "--epochs", "2", "--augment-with", str(forms)])
    assert result.exit_code == 0, result.output
    assert load_checkpoint(tmp_path / "plain" / "last.pt")[3]["train_config"]["weight_average"] == 0.0
    help_text = " ".join(runner.invoke(app, ["train", "--help"]).output.replace("│", " ").split())
    assert f"with --augment-with, {AUGMENT_WEIGHT_AVERAGE:g})" in help_text


def test_augment_with_refuses_a_missing_file_a_file_without_sql_and_a_parser(tmp_path: Path, prepared) -> None:
    seeds, _ = prepared
    sparql = _preprocess(tmp_path, "kg", [{"id": "k1", "lf": "SELECT ?x WHERE { <http://e.org/a> <http://e.org/b> ?x }"}])
    cases = [([str(tmp_path / "nothing.parquet")], "no such file"),
             ([str(sparql / "unlabelled.parquet")], "no SQL logical forms in it"),
             ([str(sparql / "unlabelled.parquet"), "--task", "parse"], "trains a question generator")]
    for extra, message in cases:
        result = runner.invoke(app, ["train", str(seeds), "--out", str(tmp_path / "never"), "--augment-with", *extra])
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
        assert not (tmp_path / "never").exists()


def test_a_budget_spent_within_the_first_epoch_keeps_the_model_so_far(tmp_path: Path, prepared) -> None:
    seeds, forms = prepared
    out = tmp_path / "m"
    result = runner.invoke(app, ["train", str(seeds), "--augment-with", str(forms), "--out", str(out), "--epochs", "2",
                                 "--hidden", "16", "--embedding", "8", "--layers", "1", "--batch-size", "2",
                                 "--max-seconds", "0.001"])
    assert result.exit_code == 0, result.output
    assert "the time budget ended within the first epoch: best.pt is the model so far" in " ".join(result.stdout.split())
    assert (out / "best.pt").is_file() and not (out / "best_bleu.pt").exists()
    # started again without a budget, it finishes the epoch and the run (the cut epoch's state was kept)
    result = runner.invoke(app, ["train", str(seeds), "--augment-with", str(forms), "--out", str(out), "--epochs", "2",
                                 "--hidden", "16", "--embedding", "8", "--layers", "1", "--batch-size", "2"])
    assert result.exit_code == 0, result.output
    assert [h["epoch"] for h in json.loads((out / "selection.json").read_text())["history"]] == [1, 2]
