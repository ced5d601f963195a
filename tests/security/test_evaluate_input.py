"""``qgen evaluate`` on a file it cannot score, ``qgen train`` on one it cannot learn from: one line naming
the file and the fix, never a KeyError, a BLEU of 0 against missing references or a model trained on
empty questions."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

Qgen = Callable[..., "tuple[int, str, str]"]


def _examples(path: Path, questions: list[list[str]]) -> Path:
    rows = len(questions)
    pq.write_table(pa.table({
        "id": [f"q{i}" for i in range(rows)], "source": ["file"] * rows, "lf_type": ["sparql"] * rows,
        "lf_tokens": [["select", "?", "x", "where", "{", "ent:", "oslo", "}"]] * rows,
        "lf_tokens_raw": [["select", "?", "x", "where", "{", "ent:", "oslo", "}"]] * rows,
        "question_tokens": pa.array(questions, type=pa.list_(pa.string()))}), path)
    return path


@pytest.mark.parametrize("questions, expected", [
    ([], "no examples to evaluate on"),
    ([["what", "is", "oslo", "?"], []], "1 of 2 examples have no question to score against (e.g. q1)"),
])
def test_a_file_without_references_is_refused(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path,
                                              questions: list[list[str]], expected: str) -> None:
    examples = _examples(tmp_path / "test.parquet", questions)
    code, out, err = qgen("evaluate", "--checkpoint", tiny_checkpoint, examples, "--out", tmp_path / "ev")
    assert code == 2 and not out and err.startswith(f"error: {examples}: {expected}")
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "ev").exists()


def test_files_that_are_not_examples_and_a_bad_beam(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path) -> None:
    code, _, err = qgen("evaluate", "--checkpoint", tiny_checkpoint, tmp_path / "nosuch.parquet")
    assert code == 2 and "nosuch.parquet: no such file" in err
    (tmp_path / "pre").mkdir()  # qgen preprocess's folder given for its file: the file is named
    pq.write_table(pa.table({"id": ["a"]}), tmp_path / "pre" / "test.parquet")
    code, _, err = qgen("evaluate", "--checkpoint", tiny_checkpoint, tmp_path / "pre")
    assert code == 2 and err == (f"error: {tmp_path / 'pre'}: a folder, not a preprocessed examples file; give "
                                 f"{tmp_path / 'pre' / 'test.parquet'}\n"), err
    text = tmp_path / "test.csv"
    text.write_text("id,lf\n")
    code, _, err = qgen("evaluate", "--checkpoint", tiny_checkpoint, text)
    assert code == 1 and err.startswith(f"error: {text}: not a preprocessed examples file")
    other = tmp_path / "rejects.parquet"  # Parquet, but not examples: said by its missing columns, not a schema dump
    pq.write_table(pa.table({"id": ["r1"], "stage": ["input"], "reason": ["x"]}), other)
    code, _, err = qgen("evaluate", "--checkpoint", tiny_checkpoint, other)
    assert code == 2 and err == (f"error: {other}: not a preprocessed examples file (no column lf_type, "
                                 "question_tokens; qgen preprocess writes them: DIR/test.parquet)\n"), err
    examples = _examples(tmp_path / "test.parquet", [["what", "is", "oslo", "?"]])
    code, _, err = qgen("evaluate", "--checkpoint", tiny_checkpoint, examples, "--beam", "0")
    assert code == 2 and err.strip() == "error: --beam must be between 1 and 64, got 0"


def test_evaluate_scores_a_good_file(qgen: Qgen, tiny_checkpoint: Path, tmp_path: Path) -> None:
    examples = _examples(tmp_path / "test.parquet", [["what", "is", "oslo", "?"]] * 2)
    code, out, _ = qgen("evaluate", "--checkpoint", tiny_checkpoint, examples, "--out", tmp_path / "ev", "-q")
    assert code == 0 and "BLEU" in out and (tmp_path / "ev" / "metrics.json").is_file()


@pytest.mark.parametrize("questions, expected", [
    ([], "no examples to train on"),
    ([["what", "is", "oslo", "?"], []], "1 of 2 examples have no question to learn from (e.g. q1)"),
])
def test_train_refuses_a_file_without_questions(qgen: Qgen, tmp_path: Path, questions: list[list[str]],
                                                expected: str) -> None:
    examples = _examples(tmp_path / "unlabelled.parquet", questions)
    code, out, err = qgen("train", examples, "--out", tmp_path / "model", "--epochs", "1")
    assert code == 2 and not out and err.startswith(f"error: {examples}: {expected}")
    assert not (tmp_path / "model").exists()


def test_train_refuses_a_file_whose_one_example_validation_holds_out(qgen: Qgen, tmp_path: Path) -> None:
    """One example: held out for validation, it would leave a model with empty vocabularies."""
    examples = _examples(tmp_path / "train.parquet", [["what", "is", "oslo", "?"]])
    code, out, err = qgen("train", examples, "--out", tmp_path / "model", "--epochs", "1", "-q")
    assert code == 2 and not out and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {examples} holds one group of examples only")
    assert not (tmp_path / "model" / "best.pt").exists()
