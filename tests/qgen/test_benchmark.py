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
    assert saved["epochs_run"] == 2 and saved["variant"]["beam"] == 2 and saved["commit"] and saved["command"]
    trained = saved["variant"]["model"]  # the configuration as trained, vocabulary sizes included
    assert trained["hidden_size"] == 16 and trained["src_vocab_size"] > 4 and trained["tgt_vocab_size"] > 4
    for key in ("bleu_corpus", "bleu_sentence_mean", "bleu_sentence_unsmoothed_mean", "rouge_l_corpus", "overcopy",
                "overcopy_source", "overcopy_duplicates", "overcopy_literal", "attention_entropy"):
        assert isinstance(saved["full"][key], float), key
    # the paper's subset: its ids beside ids.txt, in ids.txt's order, as many as the no_oov part scored
    no_oov = (out / "no_oov_ids.txt").read_text().splitlines()
    assert len(no_oov) == saved["no_oov"]["n"] and set(no_oov) <= set(ids)
    assert no_oov == [i for i in ids if i in set(no_oov)]
    from qgen.benchmark import dataset_pairs, no_oov_pairs
    from qgen.train import build_vocabularies

    train_pairs, _, test_pairs = dataset_pairs("webqsp", prep, True)
    src_vocab, tgt_vocab = build_vocabularies(train_pairs)
    assert no_oov == [p.id for p in no_oov_pairs(test_pairs, src_vocab, tgt_vocab)]
    assert all(all(t in src_vocab for t in p.src) and all(t in tgt_vocab for t in p.tgt)
               for p in test_pairs if p.id in set(no_oov))
    assert (tmp_path / "work" / "webqsp" / "scratchpad" / "best.pt").exists()
    table = write_results_readme(tmp_path / "results" / "webqsp", "webqsp").read_text()
    assert "| scratchpad | ours | 1 seed | 2 | cpu |" in table and "| | paper | | 75 | | | 15.29" in table
    assert "| copynet | ours | not run |" in table
    # rescoring from predictions.txt alone gives the same numbers
    (out / "no_oov_ids.txt").unlink()
    rescored = rescore_results("webqsp", out, prep)
    for part in ("full", "no_oov"):
        for key in ("bleu_corpus", "bleu_sentence_unsmoothed_mean", "rouge_l_corpus", "overcopy", "overcopy_source",
                    "overcopy_duplicates", "attention_entropy"):
            assert rescored[part].get(key) == saved[part].get(key), (part, key)
    assert (out / "no_oov_ids.txt").read_text().splitlines() == no_oov
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
    experiments = tmp_path / "results" / "webqsp" / "experiments"
    assert (experiments / "scratchpad_tf1" / "no_oov_ids.txt").exists()  # not a row of the paper's table
    table = write_results_readme(tmp_path / "results" / "webqsp", "webqsp").read_text()
    assert "scratchpad_tf1" not in table and "| scratchpad | ours | 1 seed | 2/5 |" in table
    page = (experiments / "README.md").read_text()
    assert "| scratchpad_tf1 | `scratchpad`" in page and "teacher forcing 1 per step" in page
    # decoding with no word right after itself: the same checkpoint, its own results folder
    blocked = run_variant("webqsp", variant, prep, tmp_path / "work", tmp_path / "results",
                          TrainConfig(epochs=2, batch_size=4, learning_rate=1e-2, max_seconds=0), no_repeat=True,
                          log=lambda _: None)
    assert blocked["run"] == "scratchpad_norepeat" and blocked["variant"]["no_repeat"] and blocked["epochs_run"] == 2
    assert blocked["variant"]["beam"] == 2 and "decoding" not in blocked and "model_config" not in blocked
    lines = (experiments / "scratchpad_norepeat" / "predictions.txt").read_text().splitlines()
    assert len(lines) == len(ids) and immediate_repeat_share([line.split() for line in lines]) == 0
    assert json.loads((out / "metrics.json").read_text())["variant"].get("no_repeat") is False
    write_results_readme(tmp_path / "results" / "webqsp", "webqsp")
    page = (experiments / "README.md").read_text()
    assert "| scratchpad_norepeat |" in page and "no word right after itself" in page


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


def _fake_run(folder: Path, bleu: float, seed: int = 1, epochs: int = 75, device: str = "cuda",
              model: str | None = None) -> None:
    folder.mkdir(parents=True)
    part = {"n": 10, "bleu_corpus": bleu, "bleu_sentence_unsmoothed_mean": bleu / 2, "meteor_sentence_mean": None,
            "rouge_l_sentence_mean": 50.0, "meteor_corpus": 30.0, "rouge_l_corpus": 50.0, "overcopy": 2.5,
            "overcopy_duplicates": 0.5}
    (folder / "metrics.json").write_text(json.dumps({
        "model": model or folder.name.split("_seed")[0], "full": part, "no_oov": {**part, "n": 6}, "epochs_run": epochs,
        "epochs_planned": 75, "device": device, "train_config": {"seed": seed}, "variant": {"no_repeat": False}}))


def test_readme_holds_the_paper_rows_with_seed_means_and_spread(tmp_path: Path) -> None:
    _fake_run(tmp_path / "coverage", 20.0)
    _fake_run(tmp_path / "coverage_seed2", 24.0, seed=2, epochs=69)
    _fake_run(tmp_path / "scratchpad", 22.0)
    _fake_run(tmp_path / "experiments" / "scratchpad_masked_norepeat", 21.0, model="scratchpad_masked")
    table = write_results_readme(tmp_path, "webqsp").read_text()
    no_oov, full = table.split("## No-OOV subset")[1].split("## Full test set")
    # two seeds: mean ± sample standard deviation; epochs and device per row
    assert "| coverage | ours | 2 seeds | 75, 69/75 | cuda | 6 | 11.00 ± 1.41 | – | 50.00 ± 0.00 | 22.00 ± 2.83 |" in no_oov
    assert "| scratchpad | ours | 1 seed | 75 | cuda | 10 | 11.00 | – | 50.00 | 22.00 | 30.00 | 50.00 | 2.500 | 0.500 |" \
        in full
    assert "| seq2seq | ours | not run |" in no_oov and "| | paper | | 75 | | | 15.29" in no_oov
    assert "paper" not in full.split("\n", 1)[1].split("\n\n")[0].replace("paper's", "")  # paper rows: its subset only
    assert "masked" not in table and "[experiments/](experiments/README.md)" in table
    page = (tmp_path / "experiments" / "README.md").read_text()
    assert "| scratchpad_masked_norepeat | `scratchpad_masked`: the first Scratchpad" in page
    wikisql = write_results_readme(tmp_path, "wikisql").read_text()
    assert "seq2seq_priors" not in wikisql and "| | paper | | | | | | | | 26.10 |" in wikisql


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
    assert "| copynet | ours | 1 seed | 1 | cpu |" in readme and "| scratchpad | ours | 1 seed | 1 | cpu |" in readme
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


def test_evaluation_reports_its_progress_after_each_batch(tiny_checkpoint: Path, tmp_path: Path) -> None:
    from qgen.benchmark import evaluate_checkpoint
    from qgen.data import Pair

    pairs = [Pair(str(i), ["select", "?", "x", "where", "{", "ent:", w, "}"], ["what", "is", w, "?"], str(i))
             for i, w in enumerate(["bali", "lyon", "porto", "oslo", "riga"])]
    seen: list[tuple[int, int | None]] = []
    evaluate_checkpoint(tiny_checkpoint, pairs, 1, tmp_path, batch_size=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(2, 5), (4, 5), (5, 5)]
