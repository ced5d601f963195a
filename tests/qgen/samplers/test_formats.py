"""``--format``: the public datasets' own files read from any path, by generate, synthesize and preprocess
alike (issue 21, one input format everywhere)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qgen.cli import app
from qgen.samplers.files import read_logical_forms
from qgen.samplers.formats import FormatError, check_format

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
runner = CliRunner()


@pytest.mark.parametrize("fmt, path, lf_type, split", [
    ("webqsp", "webqsp/WebQSP.test.json", "sparql", "test"),
    ("wikisql", "wikisql_official/train.jsonl", "sql", "train"),  # its train.tables.jsonl beside it
    ("wikisql", "wikisql/dev.jsonl", "sql", "dev"),  # a tables_columns.json beside it
    ("lcquad1", "sparql_json/lcquad1/train-data.json", "sparql", "train"),
    ("lcquad2", "sparql_json/lcquad2/train.json", "sparql", "train"),
    ("qald", "sparql_json/qald/qald-9-test-multilingual.json", "sparql", "test"),
    ("auto", "sparql_json/qald/qald-9-train-multilingual.json", "sparql", "train"),  # .json: told from the data
])
def test_a_public_format_from_any_path(fmt: str, path: str, lf_type: str, split: str, tmp_path: Path) -> None:
    source = FIXTURES / path
    copy = tmp_path / "elsewhere" / source.name
    shutil.copytree(source.parent, copy.parent)  # the file and what lies beside it, away from the datasets root
    records = list(read_logical_forms(copy, fmt=fmt))
    good = [r for r in records if r.load_error is None]
    assert good and all(r.lf_type == lf_type and r.split == split and r.logical_form for r in good)
    assert len({r.id for r in records}) == len(records)


def test_the_generic_sparql_json_format_takes_field_names() -> None:
    fields = check_format("sparql-json", "id=_id, question=corrected_question, sparql=sparql_query")
    records = list(read_logical_forms(FIXTURES / "sparql_json/lcquad1/train-data.json", fmt="sparql-json",
                                      fields=fields))
    preset = list(read_logical_forms(FIXTURES / "sparql_json/lcquad1/train-data.json", fmt="lcquad1"))
    assert [(r.logical_form, r.question) for r in records] == [(r.logical_form, r.question) for r in preset]
    assert records[0].source == "sparql_json"


@pytest.mark.parametrize("fmt, fields, says", [
    ("csv", None, "--format must be one of auto, jsonl"),
    ("sparql-json", None, "--format sparql-json needs it"),
    ("lcquad1", "id=_id", "--json-fields goes with --format sparql-json"),
    ("sparql-json", "id=_id,sparql=q", "--json-fields needs question=FIELD too"),
    ("sparql-json", "id=_id,question=q,sparql=s,colour=red", "KEY one of id, question, sparql, records, answers"),
])
def test_bad_format_options_are_refused(fmt: str, fields: str | None, says: str) -> None:
    with pytest.raises(FormatError, match=says):
        check_format(fmt, fields)
    args = ["generate", "--format", fmt, "--file", "x.json", *(["--json-fields", fields] if fields else [])]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and says in result.stderr


def test_generate_and_preprocess_read_a_wikisql_file(tiny_checkpoint: Path, tmp_path: Path) -> None:
    questions = FIXTURES / "wikisql_official" / "train.jsonl"
    result = runner.invoke(app, ["generate", "--model", str(tiny_checkpoint), "--format", "wikisql", "--file",
                                 str(questions), "--json", "-q"])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    count = sum(1 for line in questions.read_text().splitlines() if line.strip())
    assert result.exit_code == 0, result.output
    assert len(lines) == count and {line["lf_type"] for line in lines} == {"sql"}
    assert lines[0]["id"] == "train-0" and lines[0]["lf"].startswith("SELECT")

    result = runner.invoke(app, ["preprocess", str(questions), "--format", "wikisql", "--out", str(tmp_path / "p"),
                                 "--workers", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert f"inputs={count}" in result.stdout and (tmp_path / "p" / "train.parquet").is_file()

    result = runner.invoke(app, ["synthesize", "--model", str(tiny_checkpoint), "--format", "wikisql",
                                 "--from-tables", str(FIXTURES / "wikisql_official" / "train.tables.jsonl")])
    assert result.exit_code == 2 and "--format is the format of --from-file" in result.stderr


@pytest.mark.parametrize("fmt", ["auto", "webqsp", "qald"])
def test_a_file_that_is_not_utf8_is_one_reject_naming_it(fmt: str, tmp_path: Path) -> None:
    path = tmp_path / "questions-test.json"
    path.write_bytes(b"\xff\xfe[1]")
    [record] = list(read_logical_forms(path, fmt=fmt))
    assert record.load_error == "questions-test.json is not UTF-8 text (invalid start byte at byte 0)"


def test_a_json_file_of_json_lines_is_read_as_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "queries.json"
    path.write_text('{"id": "a", "lf": "SELECT name FROM t"}\n{"id": "b", "lf": "SELECT x FROM t"}\n')
    assert [r.id for r in read_logical_forms(path, "auto")] == ["a", "b"]
    path.write_text('{"lf": "SELECT name FROM t"}\n')  # one line, one record: still JSON Lines
    assert [(r.logical_form, r.lf_type) for r in read_logical_forms(path, "auto")] == [("SELECT name FROM t", "sql")]


def test_a_json_file_of_no_known_format_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"foo": [1]}')
    with pytest.raises(ValueError, match=r"other.json: cannot detect the SPARQL JSON format.*jsonl for JSON Lines"):
        list(read_logical_forms(path))
