"""The results-table path end to end on the bundled WebQSP-format fixture, with a tiny model."""
from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Callable

from qgen.benchmark import rescore_results, run_variant
from qgen.metrics import immediate_repeat_share
from qgen.model import ModelConfig, Variant
from qgen.preprocess import preprocess_dataset
from qgen.results_table import write_results_readme
from qgen.train import TrainConfig

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "datasets"


def test_train_evaluate_and_table(tmp_path: Path) -> None:
    prep = tmp_path / "prep"
    preprocess_dataset("webqsp", prep, data_dir=FIXTURES, workers=1)
    variant = Variant("scratchpad", ModelConfig(embedding_dim=8, hidden_size=16, num_layers=1, copy="intersection",
                                                coverage_dim=4, memory="scratchpad"), True, False, 2)
    metrics = run_variant("webqsp", variant, prep, tmp_path / "work", tmp_path / "results",
                          TrainConfig(epochs=2, batch_size=4, learning_rate=1e-2), log=lambda _: None)
    out = tmp_path / "results" / "webqsp" / "scratchpad"
    ids = (out / "ids.txt").read_text().splitlines()
    assert len(ids) == len((out / "predictions.txt").read_text().splitlines()) == metrics["sizes"]["test"]
    assert len((out / "references.txt").read_text().splitlines()) == len(ids)
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["epochs_run"] == 2 and saved["variant"]["beam"] == 2 and saved["commit"]
    trained = saved["variant"]["model"]  # the configuration as trained, vocabulary sizes included
    assert trained["hidden_size"] == 16 and trained["src_vocab_size"] > 4 and trained["tgt_vocab_size"] > 4
    for key in ("bleu_corpus", "bleu_sentence_mean", "rouge_l_corpus", "overcopy", "overcopy_source", "attention_entropy"):
        assert isinstance(saved["full"][key], float), key
    assert (tmp_path / "work" / "webqsp" / "scratchpad" / "best.pt").exists()
    table = write_results_readme(tmp_path / "results" / "webqsp", "webqsp").read_text()
    assert "| scratchpad | ours | 2/2 |" in table and "| scratchpad | paper | 75 | 15.29" in table
    # rescoring from predictions.txt alone gives the same numbers
    rescored = rescore_results("webqsp", out, prep)
    for part in ("full", "no_oov"):
        for key in ("bleu_corpus", "rouge_l_corpus", "overcopy", "overcopy_source", "attention_entropy"):
            assert rescored[part].get(key) == saved[part].get(key), (part, key)
    assert rescored["variant"]["model"] == trained
    # a finished run asked again with a zero time budget only re-evaluates
    again = run_variant("webqsp", variant, prep, tmp_path / "work", tmp_path / "results",
                        TrainConfig(epochs=5, batch_size=4, learning_rate=1e-2, max_seconds=0), log=lambda _: None)
    assert again["epochs_run"] == 2 and again["epochs_planned"] == 5
    # another teacher forcing than the paper's trains and reports beside it, never over it
    forced = run_variant("webqsp", variant, prep, tmp_path / "work", tmp_path / "results",
                         TrainConfig(epochs=1, batch_size=4, learning_rate=1e-2, teacher_forcing=1.0),
                         log=lambda _: None)
    assert forced["run"] == "scratchpad_tf1" and forced["model"] == "scratchpad" and forced["epochs_run"] == 1
    assert (tmp_path / "work" / "webqsp" / "scratchpad_tf1" / "best.pt").exists()
    assert json.loads((out / "metrics.json").read_text())["epochs_run"] == 2
    table = write_results_readme(tmp_path / "results" / "webqsp", "webqsp").read_text()
    assert "| scratchpad_tf1 | ours | 1/1 |" in table and "teacher forcing 1 per step" in table
    # decoding with no word right after itself: the same checkpoint, its own results folder
    blocked = run_variant("webqsp", variant, prep, tmp_path / "work", tmp_path / "results",
                          TrainConfig(epochs=2, batch_size=4, learning_rate=1e-2, max_seconds=0), no_repeat=True,
                          log=lambda _: None)
    assert blocked["run"] == "scratchpad_norepeat" and blocked["variant"]["no_repeat"] and blocked["epochs_run"] == 2
    assert blocked["variant"]["beam"] == 2 and "decoding" not in blocked and "model_config" not in blocked
    lines = (tmp_path / "results" / "webqsp" / "scratchpad_norepeat" / "predictions.txt").read_text().splitlines()
    assert len(lines) == len(ids) and immediate_repeat_share([line.split() for line in lines]) == 0
    assert json.loads((out / "metrics.json").read_text())["variant"].get("no_repeat") is False
    table = write_results_readme(tmp_path / "results" / "webqsp", "webqsp").read_text()
    assert "| scratchpad_norepeat | ours | 2/2 |" in table and "no word right after itself" in table


def test_wikisql_split_is_kept_beside_the_parquet(tmp_path: Path, run_without_parsers: Callable) -> None:
    """The table-disjoint validation ids are stored once, then read without the raw dataset (GPU box)."""
    from qgen.benchmark import dataset_pairs

    prep = tmp_path / "prep"
    preprocess_dataset("wikisql", prep, data_dir=FIXTURES, workers=1)
    train, valid, test = dataset_pairs("wikisql", prep, True, FIXTURES)
    assert (prep / "valid_ids.txt").exists() and valid and train and test
    assert not {p.id for p in train} & {p.id for p in valid}
    again = dataset_pairs("wikisql", prep, True, tmp_path / "no-such-datasets-dir")
    assert [p.id for p in again[1]] == [p.id for p in valid]
    # ... and without the parsers, as on the GPU image (no rdflib, sqlglot, prefect)
    proc = run_without_parsers(f"from pathlib import Path\nfrom qgen.benchmark import dataset_pairs\n"
                               f"print(len(dataset_pairs('wikisql', Path({str(prep)!r}), True)[1]))\n")
    assert proc.returncode == 0 and proc.stdout.strip() == str(len(valid)), proc.stderr[-2000:]


def test_results_rows_follow_table_one_with_each_setting_after_its_model() -> None:
    from qgen.results_table import _row_order

    names = ["scratchpad_norepeat", "zz_other", "copynet_norepeat", "scratchpad_extended", "scratchpad",
             "seq2seq_priors", "copynet", "seq2seq", "scratchpad_extended_norepeat", "scratchpad_tf1"]
    assert sorted(names, key=_row_order) == [
        "seq2seq", "seq2seq_priors", "copynet", "copynet_norepeat", "scratchpad", "scratchpad_norepeat",
        "scratchpad_tf1", "scratchpad_extended", "scratchpad_extended_norepeat", "zz_other"]


def test_parallel_benchmark_runs_one_process_per_model_and_archives_the_results(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "qgen_bench.py"
    archive = tmp_path / "results.tar.gz"
    done = subprocess.run(
        [sys.executable, str(script), "--dataset", "webqsp", "--data-dir", str(FIXTURES), "--models",
         "copynet,scratchpad", "--epochs", "1", "--hidden", "16", "--embedding", "8", "--threads", "1", "--parallel",
         "--work-dir", str(tmp_path / "work"), "--results", str(tmp_path / "results"), "--archive", str(archive)],
        capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "copynet: exit 0" in done.stdout and "scratchpad: exit 0" in done.stdout
    for model in ("copynet", "scratchpad"):
        saved = json.loads((tmp_path / "results" / "webqsp" / model / "metrics.json").read_text())
        assert saved["epochs_run"] == 1 and saved["variant"]["model"]["hidden_size"] == 16
        assert f"== webqsp / {model}" in (tmp_path / "work" / "logs" / f"webqsp-{model}.log").read_text()
    readme = (tmp_path / "results" / "webqsp" / "README.md").read_text()
    assert "| copynet | ours | 1/1 |" in readme and "| scratchpad | ours | 1/1 |" in readme
    with tarfile.open(archive) as packed:
        names = set(packed.getnames())
    assert {"results/webqsp/README.md", "results/webqsp/scratchpad/predictions.txt",
            "results/webqsp/copynet/metrics.json", "logs/webqsp-copynet.log"} <= names


def test_parallel_benchmark_refuses_an_unknown_model_before_starting_anything(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "qgen_bench.py"
    done = subprocess.run([sys.executable, str(script), "--models", "copynet,copynte", "--parallel",
                           "--work-dir", str(tmp_path / "work")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown model(s) copynte" in done.stderr
    assert not (tmp_path / "work").exists()


def test_parallel_benchmark_archives_the_logs_when_every_run_fails(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "qgen_bench.py"
    archive = tmp_path / "results.tar.gz"
    done = subprocess.run(  # copynet starts from GloVe vectors: a missing file fails the run
        [sys.executable, str(script), "--dataset", "webqsp", "--data-dir", str(FIXTURES), "--models", "copynet",
         "--epochs", "1", "--hidden", "16", "--embedding", "8", "--threads", "1", "--glove", str(tmp_path / "none.txt"),
         "--parallel", "--work-dir", str(tmp_path / "work"), "--results", str(tmp_path / "results"),
         "--archive", str(archive)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 1 and "failed: copynet" in done.stderr, done.stdout + done.stderr
    with tarfile.open(archive) as packed:
        assert packed.getnames() == ["logs/webqsp-copynet.log"]
        log = packed.extractfile("logs/webqsp-copynet.log").read().decode()
    assert "none.txt" in log  # the child's error, which is all a device run would bring back


def test_a_smoke_run_may_not_write_into_the_real_folders(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "qgen_bench.py"
    done = subprocess.run([sys.executable, str(script), "--models", "copynet", "--hidden", "16",
                           "--work-dir", str(tmp_path / "work")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "its own --work-dir and --results" in done.stderr
