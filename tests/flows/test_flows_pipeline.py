"""The preprocess, train, synthesize and benchmark flows under Prefect's test harness: results,
the preprocessing cache, retries configured, artifacts published."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest
import torch
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings
from prefect.testing.utilities import prefect_test_harness

from flows.benchmark import benchmark_flow
from flows.preprocess import input_checksum, preprocess_flow, preprocess_task
from flows.synthesize import shard_task, synthesize_flow
from flows.train import train_flow, train_task

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo"
FIXTURES = REPO / "tests" / "fixtures" / "datasets"
TINY = {"hidden": 16, "embedding": 8, "layers": 1, "dropout": 0.0}


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    torch.set_num_threads(1)
    with prefect_test_harness(server_startup_timeout=120):
        with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: tmp_path_factory.mktemp("prefect-results")}):
            yield


def artifacts(key: str) -> list:
    """Every artifact version under ``key``, oldest first, so ``[-1]`` is the latest (Prefect's own
    default order is by id, a random UUID: two flow runs of one worker would come back in any order)."""
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        newest_first = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                             sort=ArtifactSort.CREATED_DESC)
    return newest_first[::-1]


def task_run_names() -> set[str]:
    with get_client(sync_client=True) as client:
        return {run.name for run in client.read_task_runs()}


def test_preprocess_is_cached_on_the_input_checksum_and_code_version(harness: None, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    shutil.copy(DEMO / "sample.jsonl", pairs)
    out = tmp_path / "prep"
    first = preprocess_flow(str(pairs), str(out), workers=1)
    assert (first.inputs, first.total_examples, first.rejects) == (50, 45, 5)
    written = (out / "counts.json").stat().st_mtime_ns
    again = preprocess_flow(str(pairs), str(out), workers=1)  # same input and code: the cached report
    assert again.summary() == first.summary() and (out / "counts.json").stat().st_mtime_ns == written
    pairs.write_text("\n".join(pairs.read_text().splitlines()[:20]) + "\n")  # other input: runs again
    assert preprocess_flow(str(pairs), str(out), workers=1).inputs == 20
    shutil.rmtree(out)  # lost output: the cache is refreshed
    assert preprocess_flow(str(pairs), str(out), workers=1).inputs == 20 and (out / "train.parquet").is_file()
    assert input_checksum(str(pairs)) != input_checksum(str(DEMO / "sample.jsonl"))
    markdown = artifacts("qgen-preprocess-pairs")
    assert markdown and "| inputs | examples |" in markdown[-1].data
    assert preprocess_task.retries >= 1 and preprocess_task.persist_result


def test_train_then_synthesize_from_the_demo_tables_publishes_corpus_statistics(harness: None, tmp_path: Path) -> None:
    prep = tmp_path / "prep"
    preprocess_flow(str(DEMO / "train_pairs.jsonl"), str(prep), workers=1)
    trained = train_flow(str(prep / "train.parquet"), str(tmp_path / "model"), epochs=1, batch_size=64,
                         learning_rate=1e-2, **TINY)
    assert trained["epochs_run"] == 1 and Path(trained["checkpoint"]).is_file()
    assert trained["parser_checkpoint"] == str((tmp_path / "parser" / "best.pt").resolve())  # trained beside it
    tables = [str(DEMO / "ferries.csv"), str(DEMO / "festivals.csv")]
    out = tmp_path / "corpus"
    manifest = synthesize_flow(checkpoint=trained["checkpoint"], out=str(out), from_tables=tables, count=10,
                               shard_size=4, beam=2, seed=2)
    counts = manifest["counts"]
    assert counts["inputs"] == 10 == counts["pairs"] + counts["rejects"] and len(manifest["shards"]) == 3
    assert len(pd.read_parquet(out / "pairs")) == counts["pairs"]
    assert json.loads((out / "source.json").read_text())["kind"] == "tables"
    assert manifest["round_trip_settings"]["parser"] == trained["parser_checkpoint"]  # found beside the model
    assert manifest["round_trip"]["judged"] + counts["rejects_by_stage"].get("filter", 0) <= counts["inputs"]
    table = artifacts("qgen-synthesize-corpus")[-1]
    assert "Over-copy filter" in table.data and "Rejects by stage" in table.data and "| outcome | draws |" in table.data
    link = artifacts("qgen-synthesize-corpus-output")[-1]
    assert (out / "README.md").resolve().as_uri() in link.data  # a link artifact: [text](uri)
    assert artifacts("qgen-train-scratchpad-extended")
    assert shard_task.retries >= 1 and train_task.retries >= 1 and shard_task.persist_result


def test_a_scheduled_run_over_a_source_that_gives_nothing_fails_and_writes_no_corpus(harness: None,
                                                                                     tmp_path: Path) -> None:
    """A flow run fails (so its schedule's alerts see it), as the CLI exits 1, rather than publishing an
    empty corpus as complete."""
    from qgen.synth.sources import SourceError

    table = tmp_path / "ids.csv"
    table.write_text("id\n1\n2\n3\n")  # one column: no query of WikiSQL's shape
    with pytest.raises(SourceError, match="no query could be sampled from it"):
        synthesize_flow(checkpoint="default", out=str(tmp_path / "corpus"), from_tables=[str(table)], count=3,
                        round_trip=False)
    assert not (tmp_path / "corpus").exists()


def test_a_scheduled_runs_first_corpus_is_written_though_its_dedup_folder_is_not_there_yet(harness: None,
                                                                                            tmp_path: Path) -> None:
    runs = tmp_path / "runs"  # --dedup-against the folder the runs write to: missing before the first run
    manifest = synthesize_flow(checkpoint="default", out=str(runs / "first"), from_tables=[str(DEMO / "ferries.csv")],
                               count=3, beam=2, round_trip=False, seed=1, dedup_against=[str(runs)])
    assert manifest["status"] == "complete" and manifest["counts"]["inputs"] == 3
    options = json.loads((runs / "first" / "source.json").read_text())["options"]
    assert options["dedup_against"] == [] and options["left_out_as_known"] == 0


def test_benchmark_flow_trains_and_evaluates_each_model_and_publishes_the_metrics(harness: None, tmp_path: Path) -> None:
    metrics = benchmark_flow("webqsp", ["copynet", "scratchpad"], epochs=1, batch_size=8, data_dir=str(FIXTURES),
                             work_dir=str(tmp_path / "work"), results=str(tmp_path / "results"), hidden=16,
                             embedding=8)
    assert [m["model"] for m in metrics] == ["copynet", "scratchpad"]
    assert all(m["epochs_run"] == 1 and isinstance(m["full"]["bleu_corpus"], float) for m in metrics)
    for name in ("copynet", "scratchpad"):  # the flow also draws each model's plots, as artifacts
        plots = tmp_path / "results" / "webqsp" / name / "plots"
        assert list(plots.glob("attention_*.png")) and (plots / "cumulative_entropy.png").exists(), name
        assert ".png" in artifacts(f"qgen-plots-webqsp-{name}")[-1].data
    readme = (tmp_path / "results" / "webqsp" / "README.md").read_text()
    assert "| copynet | ours | 1 seed | 1 |" in readme and "| scratchpad | ours | 1 seed | 1 |" in readme
    table = artifacts("qgen-benchmark-webqsp")[-1].data
    assert "| copynet |" in table and "| scratchpad |" in table and "BLEU no-OOV" in table


def test_benchmark_flow_keeps_a_teacher_forcing_seed_and_no_repeat_run_apart(harness: None, tmp_path: Path) -> None:
    results = tmp_path / "results" / "webqsp"
    metrics = benchmark_flow("webqsp", ["copynet"], epochs=1, batch_size=8, data_dir=str(FIXTURES),
                             work_dir=str(tmp_path / "work"), results=str(tmp_path / "results"), hidden=16,
                             embedding=8, teacher_forcing=1.0, no_repeat=True, seed=2)
    run = metrics[0]
    assert run["run"] == "copynet_tf1_seed2_norepeat" and run["train_config"]["teacher_forcing"] == 1.0
    assert run["train_config"]["seed"] == 2
    assert run["variant"]["no_repeat"] and (tmp_path / "work" / "webqsp" / "copynet_tf1_seed2" / "best.pt").is_file()
    assert not (results / "copynet").exists()  # the paper-style folder is not touched
    assert list((results / "copynet_tf1_seed2_norepeat" / "plots").glob("attention_*.png"))
    assert "| copynet_tf1_seed2_norepeat |" in artifacts("qgen-benchmark-webqsp")[-1].data
    assert artifacts("qgen-plots-webqsp-copynet-tf1-seed2-norepeat")
    assert {"copynet_tf1_seed2_norepeat", "plots-copynet_tf1_seed2_norepeat"} <= task_run_names()  # named as in the UI


def test_wen_benchmark_flow_runs_each_row_and_publishes_the_table(harness: None, tmp_path: Path) -> None:
    from flows.data_to_text import wen_benchmark_flow

    metrics = wen_benchmark_flow(["hotel"], ["kiddon_checklist"], epochs=1, data_dir=str(FIXTURES),
                                 work_dir=str(tmp_path / "work"), results=str(tmp_path / "results"), java_metrics=False)
    assert [(m["domain"], m["row"], m["epochs_run"]) for m in metrics] == [("hotel", "kiddon_checklist", 1)]
    assert "| kiddon_checklist, seed 1 |" in artifacts("qgen-benchmark-wen-hotel")[-1].data
    assert "hotel-kiddon_checklist" in task_run_names()


def test_char_benchmark_flow_runs_each_row_and_publishes_the_table(harness: None, tmp_path: Path) -> None:
    from flows.data_to_text import char_benchmark_flow

    metrics = char_benchmark_flow(["hotel"], ["roberti_eda_c"], epochs=1, device="cpu", data_dir=str(FIXTURES),
                                  work_dir=str(tmp_path / "work"), results=str(tmp_path / "results"),
                                  java_metrics=False, hidden=16, layers=1)
    assert [(m["dataset"], m["row"], m["epochs_run"]) for m in metrics] == [("hotel", "roberti_eda_c", 1)]
    assert "| roberti_eda_c | ours | folded |" in artifacts("qgen-benchmark-char-hotel")[-1].data
    assert "hotel-roberti_eda_c" in task_run_names()


def test_e2e_benchmark_flow_trains_the_seeds_and_publishes_the_table(harness: None, tmp_path: Path) -> None:
    from flows.data_to_text import e2e_benchmark_flow

    report = e2e_benchmark_flow(["zhang_caencoder"], epochs=1, seeds=[1, 2], device="cpu", data_dir=str(FIXTURES),
                                work_dir=str(tmp_path / "work"), results=str(tmp_path / "results"),
                                java_metrics=False, hidden=16, embedding=8)
    assert set(report["dev"]) == {"zhang_caencoder_seed1", "zhang_caencoder_seed2"} and "zhang_caencoder" in report["test"]
    assert "| test | zhang_caencoder | ours (ensemble of seeds 1, 2) |" in artifacts("qgen-benchmark-e2e")[-1].data


def test_downstream_flow_runs_one_task_per_row_and_publishes_the_table(harness: None, tmp_path: Path) -> None:
    from flows.benchmark import downstream_flow

    out = downstream_flow("wikisql", rows=["low", "full"], low_fraction=0.5, parser_epochs=1, hidden=16, embedding=8,
                          max_seconds=None, data_dir=str(FIXTURES), work_dir=str(tmp_path / "work"),
                          results=str(tmp_path / "results"))
    assert [r["row"] for r in out] == ["low", "full"] and all(0.0 <= r["dev_lf_em"] <= 1.0 for r in out)
    assert out[1]["train_pairs"] > out[0]["train_pairs"]
    assert "| full |" in artifacts("qgen-downstream-wikisql")[-1].data
    assert {"downstream-wikisql-low", "downstream-wikisql-full"} <= set(task_run_names())


def test_the_demo_gives_the_embedded_server_two_minutes_to_start(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """Prefect reads its settings at import: an environment variable set by the demo afterwards was
    ignored, and on a busy 2-core machine `make demo` failed after Prefect's default 20 s. The flow (where
    the embedded server starts) now runs in a settings context; a value the user set wins."""
    import flows.demo
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS as STARTUP

    class Started(Exception):
        pass

    seen: list[int] = []

    def demo_flow(*args, **kwargs):
        seen.append(STARTUP.value())
        raise Started

    monkeypatch.setattr(flows.demo, "demo_flow", demo_flow)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    before = STARTUP.value()
    for users_own in (None, 300):
        lines = flows.demo._demo_lines(tmp_path, True, None, 0, tmp_path)
        with temporary_settings({STARTUP: users_own} if users_own else {}):
            next(lines)  # the header line; the flow runs on the next
            with pytest.raises(Started):
                next(lines)
    assert seen == [flows.demo.SERVER_START_SECONDS, 300] and flows.demo.SERVER_START_SECONDS == 120
    assert STARTUP.value() == before
