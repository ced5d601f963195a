"""``qgen synthesize`` from a graph, from tables and from a file, through typer's CliRunner."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from qgen.cli import app
from qgen.metrics import immediate_repeat_share
from qgen.synth.template_split import SPLITS

REPO = Path(__file__).resolve().parent.parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "samplers"
runner = CliRunner()


@pytest.fixture(scope="module")
def checkpoint(tiny_checkpoint: Path) -> Path:
    return tiny_checkpoint


@pytest.mark.parametrize("source", [
    ["--from-graph", str(FIXTURES / "small_kg.ttl"), "--count", "12"],
    ["--from-tables", str(FIXTURES / "lighthouses.csv"), "--count", "12"],
    ["--from-file", str(REPO / "data" / "demo" / "sample.jsonl"), "--count", "0"],
])
def test_synthesize_writes_a_loadable_accounted_corpus(source: list[str], checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(out),
                                 "--shard-size", "5", "--beam", "2", *source])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["inputs"] == counts["pairs"] + counts["rejects"] > 0
    pairs, rejects = pd.read_parquet(out / "pairs"), pd.read_parquet(out / "rejects")
    assert len(pairs) == counts["pairs"] and len(rejects) == counts["rejects"]
    assert f"inputs={counts['inputs']}" in result.stdout
    described = json.loads((out / "source.json").read_text())
    if source[0] != "--from-file":
        assert described["sampler_stats"]["kept"] == counts["inputs"]
    assert "## Source" in (out / "README.md").read_text()


def test_dedup_against_leaves_out_what_earlier_corpora_hold(checkpoint: Path, tmp_path: Path) -> None:
    keep_all = ["--max-overcopy", "100", "--max-repeated-ngrams", "100", "--no-round-trip"]
    source = ["--from-tables", str(FIXTURES / "lighthouses.csv"), "--count", "12", "--seed", "4", "--beam", "2"]
    first = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "runs" / "a"),
                                *source, *keep_all])
    assert first.exit_code == 0, first.output
    held = json.loads((tmp_path / "runs" / "a" / "manifest.json").read_text())["counts"]
    assert held["pairs"] > 0
    again = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "runs" / "b"),
                                *source, *keep_all, "--dedup-against", str(tmp_path / "runs")])
    assert again.exit_code == 0, again.output
    counts = json.loads((tmp_path / "runs" / "b" / "manifest.json").read_text())["counts"]
    options = json.loads((tmp_path / "runs" / "b" / "source.json").read_text())["options"]
    assert options["left_out_as_known"] == held["pairs"] and options["dedup_against"] == [str(tmp_path / "runs" / "a")]
    # the sampler drew new queries in the known ones' places: --count holds
    assert counts["inputs"] == 12 == counts["pairs"] + counts["rejects"]
    assert f"left out {held['pairs']} logical forms" in again.stdout
    known = set(pd.read_parquet(tmp_path / "runs" / "a" / "pairs")["logical_form"])
    if counts["pairs"]:
        assert not known & set(pd.read_parquet(tmp_path / "runs" / "b" / "pairs")["logical_form"])
    bad = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "c"), *source,
                              "--dedup-against", str(tmp_path / "nowhere")])
    assert bad.exit_code == 2 and "nowhere: no such folder" in bad.stderr
    # A folder that holds no corpus yet (a schedule's, before its first run) has nothing to leave out.
    (tmp_path / "empty").mkdir()
    first_run = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "empty" / "1"),
                                    *source, *keep_all, "--dedup-against", str(tmp_path / "empty")])
    assert first_run.exit_code == 0, first_run.output
    assert f"--dedup-against: no corpus (a folder with pairs/) under {tmp_path / 'empty'} yet" in first_run.stdout
    counts = json.loads((tmp_path / "empty" / "1" / "manifest.json").read_text())["counts"]
    assert counts["inputs"] == held["inputs"]


def test_split_by_template_writes_the_splits_and_refuses_other_values(checkpoint: Path, tmp_path: Path) -> None:
    source = ["--from-file", str(REPO / "data" / "demo" / "sample.jsonl"), "--count", "0"]
    out = tmp_path / "split"
    result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(out), "--beam", "2",
                                 "--split-by", "template", *source])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert sum(s["pairs"] for s in manifest["splits"]["splits"].values()) == manifest["counts"]["pairs"]
    assert "split by template: train " in result.stdout
    card = (out / "README.md").read_text()  # written again with the splits: the source's section stays
    assert card.count("## Source") == 1 and "- file: " in card
    bad = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "x"),
                              "--split-by", "random", *source])
    assert bad.exit_code == 2 and "--split-by must be none or template" in bad.output


def test_the_run_holds_its_folder_until_the_split_is_written(checkpoint: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Between the run and its split another run could claim the folder and delete the half-written splits.
    import fcntl

    import qgen.synth.template_split as template_split

    split_corpus, held_at_split = template_split.split_corpus, []

    def split_checking_the_lock(corpus: Path, **kwargs: object) -> dict:
        fd = os.open(Path(corpus) / ".qgen.lock", os.O_RDWR)  # a second opener, as another run would be
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held_at_split.append(False)
        except BlockingIOError:
            held_at_split.append(True)
        finally:
            os.close(fd)
        return split_corpus(corpus, **kwargs)

    monkeypatch.setattr(template_split, "split_corpus", split_checking_the_lock)
    out = tmp_path / "held"
    result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(out), "--beam", "2",
                                 "--split-by", "template", "--from-file", str(REPO / "data" / "demo" / "sample.jsonl"),
                                 "--count", "0"])
    assert result.exit_code == 0, result.output
    assert held_at_split == [True] and (out / "splits" / "train.parquet").is_file()


def test_an_extended_split_corpus_is_split_again_to_hold_its_new_pairs(checkpoint: Path, tmp_path: Path) -> None:
    source = ["--from-tables", str(FIXTURES / "lighthouses.csv"), "--seed", "4", "--shard-size", "5", "--beam", "2",
              "--max-overcopy", "100", "--max-repeated-ngrams", "100", "--no-round-trip"]  # keep every question
    out = tmp_path / "grown"
    first = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(out), "--count", "10",
                                "--split-by", "template", *source])
    assert first.exit_code == 0, first.output
    held = json.loads((out / "manifest.json").read_text())["counts"]["pairs"]
    split_of = {name: set(pd.read_parquet(out / "splits" / f"{name}.parquet")["id"]) for name in SPLITS}
    more = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(out), "--count", "15",
                               *source])
    assert more.exit_code == 0, more.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["inputs"] == 15 and manifest["counts"]["pairs"] > held > 0
    assert sum(s["pairs"] for s in manifest["splits"]["splits"].values()) == manifest["counts"]["pairs"]
    split_ids = sorted(pd.read_parquet(out / "splits")["id"])
    assert split_ids == sorted(pd.read_parquet(out / "pairs")["id"])
    for name in SPLITS:  # the earlier pairs stay in their split
        assert split_of[name] <= set(pd.read_parquet(out / "splits" / f"{name}.parquet")["id"])
    # Grown again with --split-by on the command too: still no pair changes split (it re-dealt them all).
    split_of = {name: set(pd.read_parquet(out / "splits" / f"{name}.parquet")["id"]) for name in SPLITS}
    again = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(out), "--count", "25",
                                "--split-by", "template", *source])
    assert again.exit_code == 0, again.output
    assert sorted(pd.read_parquet(out / "splits")["id"]) == sorted(pd.read_parquet(out / "pairs")["id"])
    for name in SPLITS:
        assert split_of[name] <= set(pd.read_parquet(out / "splits" / f"{name}.parquet")["id"]), name


def test_synthesize_needs_exactly_one_source(checkpoint: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "give exactly one of --from-file" in result.stderr


def test_generate_prints_questions_and_scores(checkpoint: Path) -> None:
    lf = "SELECT ?x WHERE { ns:m.0a ns:location.country.capital ?x }"
    result = runner.invoke(app, ["generate", "--checkpoint", str(checkpoint), "--name", "m.0a=Oslo",
                                 "--beam", "3", "--num-return", "2", "--json", lf])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["id"], o["lf"], o["lf_type"], o["rank"]) for o in out] == [("1", lf, "sparql", 1), ("1", lf, "sparql", 2)]
    assert all(isinstance(o["score"], float) and o["question"] for o in out)
    blocked = runner.invoke(app, ["generate", "--checkpoint", str(checkpoint), "--name", "m.0a=Oslo", "--beam", "3",
                                  "--num-return", "3", "--no-repeat", "--json", lf])
    assert blocked.exit_code == 0, blocked.output
    questions = [json.loads(line)["question"].split() for line in blocked.stdout.splitlines()]
    assert immediate_repeat_share(questions) == 0, questions
    bad = runner.invoke(app, ["generate", "--checkpoint", str(checkpoint), "SELECT ?x WHERE {"])
    assert bad.exit_code == 1 and bad.stderr.startswith("error: SparqlSyntaxError") and not bad.stdout


@pytest.mark.parametrize("options, message", [
    (["--beam", "0"], "error: --beam must be between 1 and 64, got 0"),
    (["--beam", "100000"], "error: --beam must be between 1 and 64, got 100000"),
    (["--model", "."], "a folder without a qgen model (qgen-model.json)"),
    (["--model", "no/such/model.pt"], "no such file or folder")])
def test_generate_refuses_a_beam_below_one_and_a_path_that_is_not_a_model(tmp_path: Path, options: list[str],
                                                                          message: str) -> None:
    result = runner.invoke(app, ["generate", *options, "SELECT ?x WHERE { dbr:Berlin dbo:leader ?x }"],
                           catch_exceptions=False)
    assert result.exit_code == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1
    assert not result.stdout


def test_generate_reads_the_same_inputs_as_synthesize(checkpoint: Path, tmp_path: Path) -> None:
    """JSON Lines (a file or lines of stdin), Parquet and plain text; the type told from the text when absent."""
    import pandas as pd

    from qgen.generate import read_generate_inputs

    sparql = "SELECT ?x WHERE { ns:m.0a ns:location.country.capital ?x }"
    records = [{"id": "q1", "lf": sparql, "names": {"m.0a": "Oslo"}}, {"id": "q2", "lf": "SELECT a FROM t WHERE b = 1",
                                                                       "lf_type": "sql"}]
    jsonl = tmp_path / "lfs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    parquet = tmp_path / "lfs.parquet"
    pd.DataFrame([{**r, "names": json.dumps(r.get("names", {})), "lf_type": r.get("lf_type")} for r in records]
                 ).to_parquet(parquet)
    for source in (jsonl, parquet):
        result = runner.invoke(app, ["generate", "--checkpoint", str(checkpoint), "--json", "--file", str(source)])
        out = [json.loads(line) for line in result.stdout.splitlines()]
        assert result.exit_code == 0 and [(o["id"], o["lf_type"], o["rank"]) for o in out] == [
            ("q1", "sparql", 1), ("q2", "sql", 1)], (source, result.output)
        [first, _] = read_generate_inputs(None, source)
        assert first.names == {"m.0a": "Oslo"}  # the record's names reach the tokenizer
    text = tmp_path / "lfs.txt"
    text.write_text(f"{sparql}\n{json.dumps(records[1])}\nhello world\n")
    result = runner.invoke(app, ["generate", "--checkpoint", str(checkpoint), "--json", "--file", str(text)])
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1 and [o["id"] for o in out] == ["line-1", "q2", "line-3"]  # a record's own id
    assert out[0]["lf_type"] == "sparql" and out[1]["lf_type"] == "sql"
    assert out[2]["error"].startswith("line 3: cannot tell the logical-form type of 'hello world'")
    assert "give lf_type in the record or --lf-type" in result.stderr


def test_train_and_evaluate_commands(tmp_path: Path, demo_sample: Path) -> None:
    prep = tmp_path / "prep"
    assert runner.invoke(app, ["preprocess", str(demo_sample), "--out", str(prep), "--workers", "1"]).exit_code == 0
    result = runner.invoke(app, ["train", str(prep / "train.parquet"), "--out", str(tmp_path / "m"), "--epochs", "2",
                                 "--hidden", "16", "--embedding", "8", "--batch-size", "16", "--model", "copynet"])
    assert result.exit_code == 0, result.output
    assert "2 epochs on cpu" in result.stdout and (tmp_path / "m" / "best.pt").exists()
    assert "epoch 1: train" in result.stdout
    quiet = runner.invoke(app, ["train", str(prep / "train.parquet"), "--out", str(tmp_path / "q"), "--epochs", "1",
                                "--hidden", "16", "--embedding", "8", "--model", "copynet", "--quiet"])
    assert quiet.exit_code == 0 and len(quiet.stdout.splitlines()) == 1 and "1 epochs on cpu" in quiet.stdout
    from qgen.checkpoint import read_payload

    # the model's card names its training data beside its checksum
    assert read_payload(tmp_path / "m" / "best.pt")["training_data"].startswith("train.parquet (sha256 ")
    result = runner.invoke(app, ["evaluate", str(prep / "train.parquet"), "--checkpoint", str(tmp_path / "m" / "best.pt"),
                                 "--out", str(tmp_path / "eval"), "--beam", "2", "--plots", "--no-repeat"])
    assert result.exit_code == 0, result.output
    assert "n=45  corpus BLEU" in result.stdout
    evaluated = json.loads((tmp_path / "eval" / "metrics.json").read_text())["variant"]  # as the benchmark writes it
    assert (evaluated["beam"], evaluated["no_repeat"], evaluated["model"]["hidden_size"]) == (2, True, 16)
    lines = (tmp_path / "eval" / "predictions.txt").read_text().splitlines()
    assert immediate_repeat_share([line.split() for line in lines]) == 0, lines
    assert (tmp_path / "eval" / "plots" / "cumulative_entropy.png").exists()
    assert (tmp_path / "eval" / "plots" / "loss_curves.png").exists()
    # adaptation: fine-tune the trained model; its sizes, not the options' defaults (hidden 512)
    result = runner.invoke(app, ["train", str(prep / "train.parquet"), "--out", str(tmp_path / "adapted"),
                                 "--epochs", "1", "--batch-size", "16", "--init-from", str(tmp_path / "m" / "best.pt")])
    assert result.exit_code == 0, result.output
    assert "fine-tuning" in result.stdout and "16 hidden" in result.stdout and "1 epochs on cpu" in result.stdout


def test_config_file_gives_options_and_the_command_line_wins(tmp_path: Path, demo_sample: Path) -> None:
    from qgen.checkpoint import read_payload

    prep = tmp_path / "prep"
    assert runner.invoke(app, ["preprocess", str(demo_sample), "--out", str(prep), "--workers", "1"]).exit_code == 0
    config = tmp_path / "run.yaml"
    config.write_text("epochs: 3\nhidden: 16\nembedding: 8\nlayers: 1\nbatch-size: 16\nlearning_rate: 3e-3\n")
    result = runner.invoke(app, ["train", str(prep / "train.parquet"), "--out", str(tmp_path / "m"),
                                 "--config", str(config), "--epochs", "1"])
    assert result.exit_code == 0, result.output
    payload = read_payload(tmp_path / "m" / "best.pt")
    assert (payload["config"]["hidden_size"], payload["config"]["num_layers"]) == (16, 1)  # from the file
    assert payload["train_config"]["epochs"] == 1 and payload["train_config"]["learning_rate"] == 3e-3
    config.write_text("epoch: 3\n")
    bad = runner.invoke(app, ["train", str(prep / "train.parquet"), "--config", str(config)])
    assert bad.exit_code == 2 and "'epoch' is not an option of this command" in " ".join(bad.output.split())


def test_config_file_keys_may_be_the_flags_names(tmp_path: Path, checkpoint: Path) -> None:
    """``format`` for --format and ``model`` for --model, as a user reads them in --help (their parameters are
    input_format and checkpoint)."""
    lfs = tmp_path / "lfs.txt"
    lfs.write_text("".join(f'{{"id": "r{i}", "lf": "SELECT ?x WHERE {{ dbr:Town_{i} dbo:mayor ?x }}"}}\n' for i in range(3)))
    config = tmp_path / "run.yaml"
    config.write_text(f"format: jsonl\nmodel: {checkpoint}\ncount: 2\nno-round-trip: true\n")
    result = runner.invoke(app, ["synthesize", "--config", str(config), "--from-file", str(lfs), "--out",
                                 str(tmp_path / "c"), "-q"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["counts"]["inputs"] == 2 and manifest["model"]["path"] == str(checkpoint)


@pytest.mark.parametrize("count, message", [("0", "--count 0 (all) reads a whole --from-file"),
                                            ("-1", "greater than or equal to 0")])
def test_a_sampler_needs_a_count_of_one_or_more(checkpoint: Path, tmp_path: Path, count: str, message: str) -> None:
    result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "c"),
                                 "--from-graph", str(REPO / "data" / "demo" / "demo_kg.ttl"), "--count", count])
    assert result.exit_code == 2 and message in result.output and not (tmp_path / "c").exists()


@pytest.mark.parametrize("options, message", [(["--beam", "65"], "error: --beam must be at most 64, got 65"),
                                              (["--sampling", "nan"], "error: --sampling is a finite temperature"),
                                              (["--sampling", "inf"], "sampling is a finite temperature")])
def test_synthesize_refuses_a_beam_too_wide_and_a_temperature_that_is_not_finite(
        checkpoint: Path, tmp_path: Path, options: list[str], message: str) -> None:
    result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "c"),
                                 "--from-graph", str(REPO / "data" / "demo" / "demo_kg.ttl"), "--count", "3", *options])
    assert result.exit_code == 2 and message in result.output and not (tmp_path / "c").exists()


def test_a_file_capped_by_count_says_that_more_records_follow(checkpoint: Path, tmp_path: Path) -> None:
    lfs = tmp_path / "lfs.txt"
    lfs.write_text("".join(f"SELECT ?x WHERE {{ dbr:Town_{i} dbo:mayor ?x }}\n" for i in range(5)))
    for count, note in (("3", True), ("5", False), ("0", False)):
        result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--from-file", str(lfs),
                                     "--count", count, "--out", str(tmp_path / f"c{count}"), "-q", "--no-round-trip"])
        assert result.exit_code == 0, result.output
        said = f"note: read the first 3 records of {lfs}; more follow (--count 0 reads them all)"
        assert (said in result.stderr) == note, result.stderr


def test_an_interrupted_run_says_its_corpus_is_unfinished_and_how_to_resume(checkpoint: Path, tmp_path: Path) -> None:
    from unittest.mock import patch

    def interrupted(source, checkpoint, out, *args, **kwargs):  # after the run has started writing
        Path(out).mkdir(parents=True, exist_ok=True)  # claimed (created) by the CLI already
        (Path(out) / "manifest.json").write_text('{"status": "running"}')
        raise KeyboardInterrupt

    with patch("qgen.synth.run.synthesize_from_source", interrupted):
        result = runner.invoke(app, ["synthesize", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "c"),
                                     "--from-tables", str(FIXTURES / "lighthouses.csv"), "--count", "3", "-q"])
    assert result.exit_code != 0
    assert f"interrupted: {tmp_path / 'c'} is unfinished" in result.stderr and "the same command resumes it" in result.stderr
