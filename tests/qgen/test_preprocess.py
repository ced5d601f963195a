"""Preprocessing: every input is an example or a reject, and the Parquet reads back everywhere."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from qgen.datasets.records import RawExample
from qgen.io.parquet import read_metadata
from qgen.preprocess import dataset_names, preprocess_dataset, preprocess_records


def test_demo_sample_reconciles(tmp_path: Path, demo_sample: Path) -> None:
    report = preprocess_dataset(str(demo_sample), tmp_path, workers=1)
    lines = [line for line in demo_sample.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert report.inputs == len(lines) == report.total_examples + report.rejects
    assert report.rejects == 5
    rejects = pd.read_parquet(tmp_path / "rejects.parquet")
    assert set(rejects["stage"]) == {"load", "input", "validate"}
    assert rejects["error"].str.len().min() > 10 and not rejects["error"].str.contains("\n").any()
    assert json.loads((tmp_path / "counts.json").read_text())["inputs"] == report.inputs


def test_readers_agree(tmp_path: Path, demo_sample: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    preprocess_dataset(str(demo_sample), tmp_path, workers=1)
    path = tmp_path / "train.parquet"
    arrow = pq.read_table(path).to_pylist()
    frame = pd.read_parquet(path)
    assert [list(t) for t in frame["lf_tokens"]] == [r["lf_tokens"] for r in arrow]
    assert frame["id"].tolist() == [r["id"] for r in arrow]
    ducked = duckdb.sql(f"SELECT id, lf_tokens, entities FROM read_parquet('{path}')").fetchall()
    assert [(r[0], r[1]) for r in ducked] == [(r["id"], r["lf_tokens"]) for r in arrow]
    assert [r[2] for r in ducked] == [r["entities"] for r in arrow]
    meta = read_metadata(path)
    assert meta["schema_version"] and meta["tokenizer"]["entity_token"] == "ent:"


def test_parallel_equals_serial(tmp_path: Path, demo_sample: Path) -> None:
    preprocess_dataset(str(demo_sample), tmp_path / "a", workers=1)
    preprocess_dataset(str(demo_sample), tmp_path / "b", workers=2)
    for name in ("train.parquet", "rejects.parquet"):
        assert pq.read_table(tmp_path / "a" / name).equals(pq.read_table(tmp_path / "b" / name))


def test_dataset_names_name_entities_the_record_does_not(tmp_path: Path) -> None:
    lf = "SELECT ?x WHERE { ns:m.01 ns:p ?x . ?x ns:q ns:m.02 }"
    records = [
        RawExample("a", "train", "sparql", lf, "q?", "t", "{}", names={"m.01": "Bali"}),
        RawExample("b", "train", "sparql", "SELECT ?x WHERE { ns:m.02 ns:p ?x }", "q?", "t", "{}",
                   names={"m.02": "Male"}),
    ]
    preprocess_records(records, "t", tmp_path, workers=1, labels=dataset_names(records))
    first = pq.read_table(tmp_path / "train.parquet").to_pylist()[0]
    assert [(e["name"], e["name_source"]) for e in first["entities"]] == [("Bali", "given"), ("Male", "labels")]


def test_webqsp_every_parse_is_accounted_for(tmp_path: Path, shared_datasets: Path) -> None:
    report = preprocess_dataset("webqsp", tmp_path, data_dir=shared_datasets, workers=2)
    assert report.inputs == 3453 + 1815
    assert report.inputs == report.total_examples + report.rejects
    assert report.rejects <= 0.01 * report.inputs
    assert report.examples == {"train": 3453 - _rejected(tmp_path, "train"), "test": 1815 - _rejected(tmp_path, "test")}


def _rejected(out: Path, split: str) -> int:
    return int((pd.read_parquet(out / "rejects.parquet")["split"] == split).sum())


def test_wikisql_every_question_is_accounted_for(tmp_path: Path, shared_datasets: Path) -> None:
    report = preprocess_dataset("wikisql", tmp_path, data_dir=shared_datasets, workers=2)
    assert report.inputs == 8421 + 15878
    assert report.inputs == report.total_examples + report.rejects
    row = pq.read_table(tmp_path / "dev.parquet").slice(0, 1).to_pylist()[0]
    assert row["lf_type"] == "sql" and row["lf_tokens"][0] == "select"


@pytest.mark.skipif(sys.platform != "linux", reason="the fork server is what Linux offers")
def test_workers_are_not_forked_from_the_caller() -> None:
    # A child forked from a multithreaded caller (a Prefect flow run) can inherit a lock held by
    # another thread and hang: a CI run did. The workers' parent must be a clean server process.
    from qgen.preprocess import _pool_context

    context = _pool_context()
    assert context.get_start_method() == "forkserver"
    with context.Pool(1) as pool:
        assert pool.apply(os.getppid) != os.getpid()


def test_a_split_that_is_not_a_plain_name_is_a_reject_and_nothing_is_written_outside(tmp_path: Path) -> None:
    """A record's split names its output file: '../x', 'a/b' and 'rejects' would write outside --out,
    into a subfolder, or over the rejects (losing examples)."""
    lf = "SELECT ?x WHERE { dbr:Rome dbo:leader ?x }"
    splits = ["train", "../../escaped", "a/b", "rejects", "", "test"]
    records = [RawExample(id=f"r{i}", split=split, lf_type="sparql", logical_form=lf, question="who leads rome ?",
                          source="jsonl", raw="{}") for i, split in enumerate(splits)]
    out = tmp_path / "deep" / "out"
    report = preprocess_records(records, "jsonl", out, workers=1)
    assert report.inputs == 6 and report.examples == {"train": 1, "test": 1} and report.rejects == 4
    assert sorted(p.name for p in out.iterdir()) == ["counts.json", "rejects.parquet", "test.parquet", "train.parquet"]
    assert not (tmp_path / "escaped.parquet").exists()
    rejects = pd.read_parquet(out / "rejects.parquet")
    assert sorted(rejects["id"]) == ["r1", "r2", "r3", "r4"]
    assert all(error.startswith("split ") for error in rejects["error"])


def test_a_file_of_any_input_format_with_split_and_duplicate_ids(tmp_path: Path) -> None:
    """preprocess reads what generate reads (text lines too); --split picks a file's records of that split;
    a repeated id is a reject, not a second example under one id."""
    path = tmp_path / "forms.txt"
    path.write_text("\n".join([
        json.dumps({"id": "a", "lf": "SELECT name FROM t", "question": "which names ?"}),
        json.dumps({"id": "a", "lf": "SELECT x FROM t", "question": "which x ?"}),
        json.dumps({"id": "d", "lf": "SELECT y FROM t", "question": "which y ?", "split": "dev"}),
        "SELECT z FROM t"]) + "\n")
    report = preprocess_dataset(str(path), tmp_path / "all", workers=1)
    assert (report.inputs, report.examples, report.rejects) == (4, {"train": 1, "dev": 1, "unlabelled": 1}, 1)
    [reject] = pd.read_parquet(tmp_path / "all" / "rejects.parquet").to_dict("records")
    assert reject["id"] == "a" and reject["error"] == "duplicate id 'a' (first at record 1)"
    assert preprocess_dataset(str(path), tmp_path / "dev", split="dev", workers=1).examples == {"dev": 1}
    with pytest.raises(ValueError, match=r"no records of split 'test' \(its splits: dev, train, unlabelled\)"):
        preprocess_dataset(str(path), tmp_path / "test", split="test", workers=1)
    with pytest.raises(FileNotFoundError, match="nosuch.jsonl: no such file or folder"):
        preprocess_dataset(str(tmp_path / "nosuch.jsonl"), tmp_path / "none", workers=1)


@pytest.mark.parametrize("name, fmt", [("questions.json", "auto"), ("questions.json", "lcquad1"),
                                       ("questions.data", "lcquad1")])
def test_a_dataset_file_has_one_split_rule_and_unique_ids(tmp_path: Path, name: str, fmt: str) -> None:
    """A dataset's file (by --format or a .json's content) whose name says no split is train, as preprocess
    prepares training data; --split names its split; a repeated id in a released file is kept apart
    (``id#index``, as the dataset readers do), never two examples under one id."""
    path = tmp_path / name
    record = {"_id": "1", "corrected_question": "who leads berlin ?",
              "sparql_query": "SELECT ?x WHERE { <http://dbpedia.org/resource/Berlin> <http://dbpedia.org/ontology/leader> ?x }"}
    path.write_text(json.dumps([record, {**record, "corrected_question": "again ?"}]))
    report = preprocess_dataset(str(path), tmp_path / "p", workers=1, fmt=fmt)
    assert (report.inputs, report.examples, report.rejects) == (2, {"train": 2}, 0)
    assert sorted(pd.read_parquet(tmp_path / "p" / "train.parquet")["id"]) == ["train-1", "train-1#1"]
    assert preprocess_dataset(str(path), tmp_path / "t", split="test", workers=1, fmt=fmt).examples == {"test": 2}


def test_preprocess_refuses_a_worker_count_it_cannot_start(tmp_path: Path, demo_sample: Path) -> None:
    from typer.testing import CliRunner

    from qgen.cli import app

    for workers in ("0", "-3", "100000"):
        result = CliRunner().invoke(app, ["preprocess", str(demo_sample), "--workers", workers, "--out", str(tmp_path)])
        assert result.exit_code == 2 and "--workers must be between 1 and" in result.stderr


def test_a_second_run_into_the_same_folder_leaves_no_split_of_the_first(tmp_path: Path) -> None:
    """``qgen train out/test.parquet`` must not read what an earlier run wrote for another input."""
    lf = "SELECT ?x WHERE { dbr:Rome dbo:leader ?x }"

    def records(splits: list[str]) -> list[RawExample]:
        return [RawExample(id=f"r{i}", split=split, lf_type="sparql", logical_form=lf, question="who leads rome ?",
                           source="jsonl", raw="{}") for i, split in enumerate(splits)]

    out = tmp_path / "out"
    preprocess_records(records(["train", "test", "banana"]), "first", out, workers=1)
    (out / "notes.txt").write_text("mine")  # not preprocess's: stays
    preprocess_records(records(["train"]), "second", out, workers=1)
    assert sorted(p.name for p in out.iterdir()) == ["counts.json", "notes.txt", "rejects.parquet", "train.parquet"]
    assert read_metadata(out / "train.parquet")["dataset"] == "second"


def test_an_input_without_records_or_without_an_lf_column_is_refused(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from qgen.cli import app

    (tmp_path / "empty.jsonl").write_text("")
    pd.DataFrame({"query": ["SELECT a FROM t"]}).to_parquet(tmp_path / "queries.parquet")
    for name, says in (("empty.jsonl", "no records in it"), ("queries.parquet", "no 'lf' column (it has query)")):
        result = CliRunner().invoke(app, ["preprocess", str(tmp_path / name), "--out", str(tmp_path / "out"), "-q"])
        assert result.exit_code == 1 and result.stderr.strip() == result.stderr.strip().splitlines()[0], result.stderr
        assert result.stderr.startswith(f"error: {tmp_path / name}: {says}"), result.stderr
    assert not (tmp_path / "out").exists()


def test_the_summary_lists_splits_only_where_there_are_examples() -> None:
    from qgen.preprocess import PreprocessReport

    assert PreprocessReport("x.jsonl", inputs=2, rejects=2).summary().startswith(
        "x.jsonl: inputs 2 = examples 0 + rejects 2  [")  # every line rejected: no empty "()"
    assert PreprocessReport("d", inputs=3, examples={"train": 2, "test": 1}).summary().startswith(
        "d: inputs 3 = examples 3 (test 1, train 2) + rejects 0  [")
