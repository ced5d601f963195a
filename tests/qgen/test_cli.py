"""The qgen command line, through typer's CliRunner (and once as a real process)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from qgen.cli import app

runner = CliRunner()
FIG2 = ("SELECT DISTINCT ?x WHERE { FILTER (?x != ns:m.01bkb) ns:m.01bkb "
        "ns:travel.travel_destination.how_to_get_here ?y . }")


def test_tokenize_one_lf_with_names() -> None:
    result = runner.invoke(app, ["tokenize", "--lf-type", "sparql", "--name", "m.01bkb=Bali", FIG2])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        "select distinct ? x where { filter ( ? x ! = ent: bali ) ent: bali ns travel . travel _ destination . "
        "how _ to _ get _ here ? y . }"
    )


def test_tokenize_sql() -> None:
    result = runner.invoke(app, ["tokenize", "--lf-type", "sql", "SELECT name FROM t WHERE age > 3"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "select name from t where age > 3"


def test_tokenize_stream_survives_bad_lines() -> None:
    lines = "\n".join([
        json.dumps({"id": "a", "lf": FIG2, "names": {"m.01bkb": "Bali"}}),
        "{not json",
        json.dumps({"id": "b", "lf": "DELETE WHERE { ?s ?p ?o }"}),
        json.dumps({"id": "c"}),
        json.dumps({"id": "d", "lf": "SELECT ?x WHERE { ?x ns:p ns:m.02 }"}),
        json.dumps({"id": "e", "lf": "SELECT name FROM t WHERE age > 3", "lf_type": "sql"}),
        json.dumps({"id": "f", "lf": "x", "lf_type": "cypher"}),
    ])
    result = runner.invoke(app, ["tokenize", "--lf-type", "sparql"], input=lines + "\n")
    assert result.exit_code == 1, result.output  # every line is answered; some failed
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o.get("id") for o in out] == ["a", "line-2", "b", "c", "d", "e", "f"]  # by its line, as --file names it
    assert "tokens" in out[0] and out[0]["tokens"][:2] == ["select", "distinct"]
    assert "not JSON" in out[1]["error"] and "SPARQL Update (DELETE)" in out[2]["error"]
    assert "no 'lf'" in out[3]["error"] and out[4]["tokens"][-3:] == ["ent:", "<e0>", "}"]
    assert out[5]["tokens"] == ["select", "name", "from", "t", "where", "age", ">", "3"]  # its own lf_type
    assert out[6]["error"] == "line 7: unknown lf_type 'cypher' (sparql, sql, mr or da)"


def test_tokenize_reads_a_file_as_generate_does(tmp_path: Path) -> None:
    path = tmp_path / "forms.txt"
    path.write_text("SELECT name FROM t\n" + json.dumps({"id": "r", "lf": "SELECT ?x WHERE { ?x ns:p ns:m.02 }",
                                                         "names": {"m.02": "Oslo"}}) + "\nhello\n")
    result = runner.invoke(app, ["tokenize", "--file", str(path)])
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and [o["id"] for o in out] == ["line-1", "r", "line-3"]
    assert out[0]["tokens"] == ["select", "name", "from", "t"] and out[1]["tokens"][-3:] == ["ent:", "oslo", "}"]
    assert out[2]["error"].startswith("line 3: cannot tell the logical-form type")
    result = runner.invoke(app, ["tokenize", "--file", str(tmp_path / "none.txt")])
    assert result.exit_code == 2 and "none.txt: no such file" in result.stderr


def test_tokenize_tells_the_type_from_the_text() -> None:
    lines = [json.dumps({"id": "s", "lf": "SELECT name FROM t"}), json.dumps({"id": "h", "lf": "hello"})]
    result = runner.invoke(app, ["tokenize"], input="\n".join(lines) + "\n")
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and out[0]["tokens"] == ["select", "name", "from", "t"]
    assert out[1]["error"].startswith("line 2: cannot tell the logical-form type of 'hello'")
    assert runner.invoke(app, ["tokenize", "SELECT name FROM t"]).stdout == "select name from t\n"


def test_tokenize_bad_lf_is_one_line_and_nonzero() -> None:
    result = runner.invoke(app, ["tokenize", "SELECT ?x WHERE { ?x ?p"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: SparqlSyntaxError") and result.stderr.count("\n") == 1


def test_bad_options_are_refused() -> None:
    assert runner.invoke(app, ["tokenize", "--lf-type", "cypher", "x"]).exit_code == 2
    assert runner.invoke(app, ["tokenize", "--name", "noequals", "SELECT ?x {}"]).exit_code == 2


def test_preprocess_prints_the_three_counts(tmp_path: Path, demo_sample: Path) -> None:
    result = runner.invoke(app, ["preprocess", str(demo_sample), "--out", str(tmp_path), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "inputs=50 examples=45 rejects=5" in result.stdout
    assert (tmp_path / "train.parquet").exists() and (tmp_path / "rejects.parquet").exists()


def test_demo_runs_and_says_where_the_parquet_went(tmp_path: Path) -> None:
    """The demo through its flows (quick sizes; Prefect's test harness stands in for the embedded server)."""
    import pandas as pd
    import torch
    from prefect.testing.utilities import prefect_test_harness

    torch.set_num_threads(1)
    with prefect_test_harness(server_startup_timeout=120):
        result = runner.invoke(app, ["demo", "--out", str(tmp_path), "--quick"])
    assert result.exit_code == 0, result.output
    assert f"wrote {(tmp_path / 'preprocessed' / 'train.parquet').resolve()}" in result.stdout
    assert f"wrote {(tmp_path / 'model' / 'best.pt').resolve()}" in result.stdout
    written = 0
    for corpus, inputs in (("graph", 30), ("tables", 30)):
        folder = (tmp_path / "corpus" / corpus).resolve()
        assert f"wrote {folder}/pairs/*.parquet" in result.stdout
        pairs, rejects = pd.read_parquet(folder / "pairs"), pd.read_parquet(folder / "rejects")
        assert len(pairs) + len(rejects) == inputs
        assert f"inputs {inputs} = pairs {len(pairs)} + rejects {len(rejects)}" in result.stdout
        written += len(pairs)
    assert written > 0  # even the smoke run's small models write some pairs
    # the default model, adapted to the demo's pairs (new tokens, new rows), beside the default on a corpus input
    assert f"wrote {(tmp_path / 'adapted' / 'best.pt').resolve()}" in result.stdout
    assert "adapted the default model to the demo's pairs (qgen train --init-from default): 1 epochs" in result.stdout
    lines = result.stdout.splitlines()
    shown = next(i for i, line in enumerate(lines) if line.startswith("adapted the default model"))
    assert lines[shown + 1].startswith("  LF: ") and lines[shown + 2].startswith("     default: ")
    assert lines[shown + 3].startswith("     adapted: ")
    payload = torch.load(tmp_path / "adapted" / "best.pt", weights_only=True)
    assert payload["config"]["hidden_size"] == 256 and payload["train_config"]["init_from"].endswith("default")


def test_console_script_turns_exceptions_into_one_line(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import qgen.cli as cli

    def fails(**_: object) -> None:
        raise ValueError("something\nunforeseen")

    monkeypatch.setattr(cli, "app", fails)
    monkeypatch.setattr(sys, "argv", ["qgen", "preprocess", "x"])
    with pytest.raises(SystemExit) as exited:
        cli.run()
    assert exited.value.code == 1 and capsys.readouterr().err == "error: ValueError: something unforeseen\n"


def test_unknown_names_are_usage_errors() -> None:
    for command, says in ((["preprocess", "no-such-dataset"], "error: unknown dataset 'no-such-dataset'; known "),
                          (["tokenize", "--dialect", "klingon", "SELECT a FROM t"], "error: --dialect: Unknown dialect")):
        proc = subprocess.run([sys.executable, "-c", "from qgen.cli import run; run()", *command],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.startswith(says) and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_console_script_exits_nonzero_when_it_refuses_an_option() -> None:
    proc = subprocess.run([sys.executable, "-c", "from qgen.cli import run; run()", "benchmark", "webqsp",
                           "--teacher-forcing", "2"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "error: --teacher-forcing must be in [0, 1], got 2.0"


def test_benchmark_refuses_an_unknown_model(tmp_path: Path) -> None:
    result = runner.invoke(app, ["benchmark", "webqsp", "--models", "scratchpad,gpt", "--work-dir", str(tmp_path)])
    assert result.exit_code == 2 and result.output.startswith("error: unknown model(s) gpt; known: seq2seq,")
    assert not list(tmp_path.iterdir())  # refused before anything is prepared


@pytest.mark.parametrize("dataset", ["nosuch", "cwq", "wen2015_hotel"])
def test_benchmark_refuses_an_unknown_benchmark_and_names_the_known_ones(dataset: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["benchmark", dataset, "--work-dir", str(tmp_path), "--results", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: unknown benchmark '{dataset}'; give one of: webqsp, wikisql, e2e, wen-hotel")


@pytest.mark.parametrize("dataset", ["webqsp", "e2e", "wen-hotel", "hotel-char"])
def test_benchmark_refuses_fewer_than_one_epoch(dataset: str, tmp_path: Path) -> None:
    """0 was taken for the default before (75, 5, 50 or 100 epochs at the paper's size), and -1 gave an
    error about a time budget that was never set."""
    for epochs in ("0", "-1"):
        result = runner.invoke(app, ["benchmark", dataset, "--epochs", epochs, "--work-dir", str(tmp_path),
                                     "--results", str(tmp_path)])
        assert result.exit_code == 2 and "--epochs" in result.output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "cuda:99"] + ([] if torch.cuda.is_available() else ["cuda"]))
def test_train_refuses_a_device_it_cannot_use(device: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", str(tmp_path / "train.parquet"), "--device", device, "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--device" in result.output
    assert not (tmp_path / "last.pt").exists()


def test_synthesize_refuses_a_device_it_cannot_use(tmp_path: Path) -> None:
    result = runner.invoke(app, ["synthesize", "--checkpoint", str(tmp_path / "best.pt"), "--device", "tpu",
                                 "--from-file", str(tmp_path / "lfs.jsonl"), "--out", str(tmp_path / "corpus")])
    assert result.exit_code == 2 and "--device" in result.output


@pytest.mark.parametrize(("source", "counts", "splits"), [
    ("lcquad1/train-data.json", (2, 2, 0), {"train": 2}),
    ("qald/qald-9-train-multilingual.json", (3, 2, 1), {"train": 2}),  # one QALD question lacks a query
    ("lcquad1", (3, 3, 0), {"train": 2, "test": 1}),
])
def test_preprocess_reads_lcquad_and_qald_json(source: str, counts: tuple[int, int, int], splits: dict[str, int],
                                               tmp_path: Path) -> None:
    import pandas as pd

    path = Path(__file__).resolve().parents[1] / "fixtures" / "datasets" / "sparql_json" / source
    result = runner.invoke(app, ["preprocess", str(path), "--out", str(tmp_path), "--workers", "1"])
    assert result.exit_code == 0, result.output
    inputs, examples, rejects = counts
    assert f"inputs={inputs} examples={examples} rejects={rejects}" in result.output.splitlines()
    written = {p.stem: len(pd.read_parquet(p)) for p in tmp_path.glob("*.parquet")}
    assert written == {**splits, "rejects": rejects}


def test_a_split_the_dataset_lacks_is_a_usage_error(tmp_path: Path) -> None:
    """`--split dev` on WebQSP (train and test only) exits 2 naming the splits there are; nothing is written."""
    data = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"
    result = runner.invoke(app, ["preprocess", "webqsp", "--data-dir", str(data), "--split", "dev",
                                 "--out", str(tmp_path / "out"), "--workers", "1"])
    assert result.exit_code == 2
    assert "error: webqsp has no split 'dev'; give --split train or test, or none for all" in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_out_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    examples = tmp_path / "lfs.jsonl"
    examples.write_text('{"id": "a", "lf": "SELECT name FROM t WHERE x = 1", "question": "q"}\n')
    for command in (["preprocess", str(examples)], ["train", str(examples)], ["evaluate", str(examples)]):
        proc = subprocess.run([sys.executable, "-c", "from qgen.cli import run; run()", *command, "--out", str(afile)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (command, proc.stderr)
        assert proc.stderr == f"error: --out {afile} is a file; it names the folder to write into\n", proc.stderr
    assert afile.read_text() == "mine"
    proc = subprocess.run([sys.executable, "-c", "from qgen.cli import run; run()", "evaluate", str(examples),
                           "--out", str(afile / "sub")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr == f"error: --out {afile / 'sub'}: {afile} is a file, not a folder\n"


def test_a_missing_init_from_model_is_named_by_its_option(tmp_path: Path) -> None:
    from qgen.preprocess import preprocess_dataset

    preprocess_dataset(str(Path(__file__).resolve().parents[2] / "data" / "demo" / "train_pairs.jsonl"), tmp_path / "pre",
                       workers=1)
    result = runner.invoke(app, ["train", str(tmp_path / "pre" / "train.parquet"), "--init-from",
                                 str(tmp_path / "nosuch.pt"), "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --init-from {tmp_path / 'nosuch.pt'}: no such file or folder"), result.stderr


def test_a_run_resumed_on_other_examples_is_refused(tmp_path: Path) -> None:
    """Its epochs and validation losses would mix two data sets, and its card name only the last."""
    import pyarrow.parquet as pq

    from qgen.preprocess import preprocess_dataset

    preprocess_dataset(str(Path(__file__).resolve().parents[2] / "data" / "demo" / "train_pairs.jsonl"), tmp_path / "pre",
                       workers=1)
    pq.write_table(pq.read_table(tmp_path / "pre" / "train.parquet").slice(0, 40), tmp_path / "small.parquet")
    tiny = ["--hidden", "16", "--embedding", "8", "--layers", "1", "--device", "cpu", "--out", str(tmp_path / "m")]
    first = runner.invoke(app, ["train", str(tmp_path / "pre" / "train.parquet"), "--epochs", "1", *tiny])
    assert first.exit_code == 0, first.output
    other = runner.invoke(app, ["train", str(tmp_path / "small.parquet"), "--epochs", "2", *tiny])
    assert other.exit_code != 0 and "another configuration (examples: 'train.parquet (sha256" in str(other.exception)
    same = runner.invoke(app, ["train", str(tmp_path / "pre" / "train.parquet"), "--epochs", "2", *tiny])
    assert same.exit_code == 0 and "resuming from" in same.output, same.output


def test_a_glove_file_that_is_no_glove_text_is_said_so(tmp_path: Path) -> None:
    """Its first line has no values: "set --embedding 0" would be advice the option refuses."""
    garbage = tmp_path / "vectors.bin"
    garbage.write_bytes(b"PAR1\x00\x01binary\n")
    examples = tmp_path / "train.parquet"
    examples.write_bytes(b"")  # never read: the option is refused first
    result = runner.invoke(app, ["train", str(examples), "--glove", str(garbage), "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert f"--glove {garbage}: not a GloVe text file" in result.stderr and "--embedding 0" not in result.stderr
