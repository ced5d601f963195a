"""The README's tour runs as written: its `qgen` commands (steps 1-3) and its Python (step 4), in a
folder laid out as `make demo` leaves it, with a small model in place of the demo's. Training commands
get size options appended (the last value of an option wins), so the suite stays fast; commands that
need what a test machine lacks (a public SPARQL endpoint, LC-QuAD files, the public datasets, a Prefect
server, a Dask cluster) are left out and listed here."""
from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qgen.cli import app

REPO = Path(__file__).resolve().parents[2]
NEEDS_ELSEWHERE = ("--from-endpoint", "lcquad/", "preprocess wikisql")  # a live endpoint, files, datasets
SMALL = ["--epochs", "1", "--hidden", "16", "--embedding", "8", "--layers", "1", "--batch-size", "16"]


def tour_blocks(language: str) -> list[str]:
    """The fenced blocks of one language in the README's tour, steps 1-4."""
    text = (REPO / "README.md").read_text()
    tour = text.split("## A five-minute tour", 1)[1].split("### 5.", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", tour, flags=re.DOTALL)


def tour_commands() -> list[list[str]]:
    commands = []
    for block in tour_blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "qgen" and not any(skip in line for skip in NEEDS_ELSEWHERE):
                commands.append(words[1:])
    return commands


def test_the_tour_runs_as_written(tmp_path: Path, tiny_checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commands = tour_commands()
    assert {c[0] for c in commands} >= {"generate", "preprocess", "train", "evaluate", "synthesize"}, commands
    (tmp_path / "qgen-out" / "model").mkdir(parents=True)
    (tmp_path / "qgen-out" / "model" / "best.pt").write_bytes(tiny_checkpoint.read_bytes())
    (tmp_path / "data").symlink_to(REPO / "data")
    (tmp_path / "lfs.txt").write_text("SELECT ?x WHERE { dbr:Lyon dbo:country ?x . }\n"
                                      "SELECT \"Home port\" FROM \"ferries\" WHERE \"Operator\" = 'Coastal Link'\n")
    records = [json.loads(line) for line in (REPO / "data" / "demo" / "train_pairs.jsonl").read_text().splitlines()]
    mine = [{**r, "split": "test" if i % 5 == 0 else "train"} for i, r in enumerate(records[::8])]  # 65 pairs
    (tmp_path / "my_lfs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for words in commands:
        if words[0] == "train":
            words = [*words, *SMALL]
        result = runner.invoke(app, words)
        # sample.jsonl ends with five bad lines on purpose: each gets an error line and the exit code is 1
        expected = 1 if "data/demo/sample.jsonl" in words and words[0] == "generate" else 0
        assert result.exit_code == expected, (words, result.output)
        if expected:
            assert result.stdout.count('"error"') == 5, result.output
    (tmp_path / "qgen-out" / "corpus").symlink_to(tmp_path / "corpus")  # where the demo writes its corpora
    for block in tour_blocks("python"):
        try:
            import datasets  # noqa: F401 - the tour's Hugging Face line needs it
        except ImportError:
            block = "\n".join(line for line in block.splitlines() if "datasets" not in line)
        exec(compile(block, "README.md (tour, step 4)", "exec"), {})
    assert os.path.isdir(tmp_path / "out" / "mine") and (tmp_path / "corpus" / "tables" / "manifest.json").is_file()
