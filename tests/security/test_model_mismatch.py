"""A model that does not fit its inputs is refused before work starts (issue 21, bad input): a parser
given as the question generator, a model trained on other logical forms. In a batch, a later input of a
type the model lacks is a reject row; and a usage error is one line, not click's usage block."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest
import torch

from qgen.checkpoint import read_payload
from qgen.datasets.records import RawExample
from qgen.generate import generate_questions
from qgen.model_match import ModelMismatchError, check_generator
from qgen.synth.corpus import synthesize

Qgen = Callable[..., "tuple[int, str, str]"]
SPARQL = "SELECT ?x WHERE { dbr:Berlin dbo:leader ?x }"
SQL = "SELECT name FROM t WHERE year = 1990"


def _variant(tiny_checkpoint: Path, to: Path, **recorded: object) -> Path:
    """The tiny model, recording another task or other logical-form types."""
    payload = read_payload(tiny_checkpoint)
    payload.update(recorded)
    torch.save(payload, to)
    return to


def _raw(ident: str, lf_type: str, lf: str) -> RawExample:
    return RawExample(ident, "input", lf_type, lf, None, "file", "{}")


@pytest.fixture()
def sql_model(tiny_checkpoint: Path, tmp_path: Path) -> Path:
    return _variant(tiny_checkpoint, tmp_path / "sql.pt", task="generate", lf_types=["sql"])


def test_check_generator_refuses_a_parser_and_other_types(tiny_checkpoint: Path, sql_model: Path,
                                                           tmp_path: Path) -> None:
    parser = _variant(tiny_checkpoint, tmp_path / "parser.pt", task="parse")
    with pytest.raises(ModelMismatchError, match="is a parser .* not a question generator"):
        check_generator(parser)
    with pytest.raises(ModelMismatchError, match="trained on sql logical forms, not sparql"):
        check_generator(sql_model, ["sql", "sparql"])
    check_generator(sql_model, ["sql"])
    check_generator(tiny_checkpoint, ["sparql", "sql"])  # a model that records no types is taken at its word


def test_cli_refuses_the_mismatch_before_work(qgen: Qgen, tiny_checkpoint: Path, sql_model: Path,
                                              tmp_path: Path) -> None:
    code, out, err = qgen("generate", "--model", sql_model, SPARQL)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: model {sql_model}: the model was trained on sql logical forms, not sparql")

    parser = _variant(tiny_checkpoint, tmp_path / "parser.pt", task="parse")
    code, _, err = qgen("generate", "--model", parser, SPARQL)
    assert code == 2 and "is a parser" in err and len(err.strip().splitlines()) == 1

    graph = tmp_path / "kg.ttl"
    graph.write_text("<http://e/a> <http://e/p> <http://e/b> .\n")
    corpus = tmp_path / "corpus"
    code, _, err = qgen("synthesize", "--model", sql_model, "--from-graph", graph, "--count", "2", "--out", corpus)
    assert code == 2 and "not sparql" in err and not corpus.exists()


def test_a_file_the_model_fits_none_of_is_refused(sql_model: Path, tmp_path: Path) -> None:
    records = [_raw("a", "sparql", SPARQL), _raw("b", "sparql", SPARQL)]
    with pytest.raises(ModelMismatchError, match="not sparql"):
        synthesize(records, sql_model, tmp_path / "corpus", log=lambda _: None)
    assert not (tmp_path / "corpus" / "manifest.json").exists()


@pytest.mark.parametrize("order", [("sql", "sparql"), ("sparql", "sql")])
def test_a_mixed_file_is_judged_whatever_comes_first(sql_model: Path, tmp_path: Path, order: tuple) -> None:
    """The records of a type the model lacks are reject rows, whether or not the file begins with one."""
    import pandas as pd

    records = [_raw(kind, kind, SQL if kind == "sql" else SPARQL) for kind in order]
    counts = synthesize(records, sql_model, tmp_path / "corpus", log=lambda _: None)["counts"]
    assert counts["inputs"] == 2 == counts["pairs"] + counts["rejects"]
    rejects = pd.read_parquet(tmp_path / "corpus" / "rejects")
    assert list(rejects.loc[rejects["stage"] == "input", "id"]) == ["sparql"]


def test_generate_refuses_a_file_only_when_the_model_fits_none_of_it(qgen: Qgen, sql_model: Path,
                                                                     tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.txt"
    mixed.write_text(f"{SPARQL}\n{SQL}\n")
    code, out, err = qgen("generate", "--model", sql_model, "--file", mixed)
    assert code == 1 and len(out.strip().splitlines()) == 1  # the SQL line's question
    assert err.strip() == ("error: line 1: lf_type sparql: the model was trained on sql logical forms, not sparql; "
                           "give a model trained on sparql (qgen train on such pairs, or --init-from default to "
                           "adapt one)")
    only_sparql = tmp_path / "sparql.txt"
    only_sparql.write_text(f"{SPARQL}\n")
    code, out, err = qgen("generate", "--model", sql_model, "--file", only_sparql)
    assert code == 2 and not out and "not sparql" in err


def test_a_later_input_of_another_type_is_a_reject_row(sql_model: Path, tmp_path: Path) -> None:
    import pandas as pd

    records = [_raw("a", "sql", SQL), _raw("b", "sparql", SPARQL)]
    manifest = synthesize(records, sql_model, tmp_path / "corpus", log=lambda _: None)
    counts = manifest["counts"]
    assert counts["inputs"] == 2 == counts["pairs"] + counts["rejects"]
    rejects = pd.read_parquet(tmp_path / "corpus" / "rejects")
    row = rejects[rejects["id"] == "b"].iloc[0]
    assert row["stage"] == "input" and row["reason"].startswith("lf_type sparql: the model was trained on sql")
    assert json.loads(row["input"])["logical_form"] == SPARQL


def test_generate_questions_marks_the_input_of_another_type(sql_model: Path) -> None:
    from qgen.generate import GenerateInput

    results = list(generate_questions([GenerateInput("q1", SPARQL, "sparql")], sql_model))
    assert list(generate_questions([SQL], sql_model, lf_type="auto"))[0]["lf_type"] == "sql"  # told from the text
    assert results == [{"id": "q1", "lf": SPARQL, "error": "lf_type sparql: the model was trained on sql logical "
                        "forms, not sparql; give a model trained on sparql (qgen train on such pairs, or "
                        "--init-from default to adapt one)"}]


def test_a_usage_error_is_one_line_naming_the_help(qgen: Qgen) -> None:
    code, out, err = qgen("generate", "--beam", "abc", SPARQL)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1
    assert err.startswith("error: Invalid value for '--beam'") and "(see: qgen generate --help)" in err


def test_no_arguments_print_the_help_and_no_empty_error(qgen: Qgen) -> None:
    code, out, err = qgen()
    assert code == 2 and "Commands" in out + err and "error:" not in err
