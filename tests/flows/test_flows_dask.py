"""Synthesis shards on a 2-worker Dask LocalCluster (prefect-dask) give the single-process corpus."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq
import pytest
import torch

from qgen.data import Pair
from qgen.model import ModelConfig
from qgen.synth import synthesize
from qgen.synth.config import SynthesisConfig
from qgen.synth.sources import open_source
from qgen.train import TrainConfig, train

pytest.importorskip("prefect_dask")
from prefect.testing.utilities import prefect_test_harness  # noqa: E402

from flows.synthesize import synthesize_flow  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GRAPH = REPO / "data" / "demo" / "demo_kg.ttl"
RUN = {"count": 60, "seed": 4, "shard_size": 8, "beam": 3}


@pytest.fixture(scope="module")
def harness() -> Iterator[None]:
    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.set_num_threads(1)
    names = ["night ferry", "the salt road", "ilse varga", "port maren", "kelsbury", "greta lind"]
    pairs = [Pair(str(i), ["select", "?", "x", "where", "{", "ent:", *n.split(), "}"], ["what", "is", *n.split(), "?"],
                  str(i)) for i, n in enumerate(names)]
    out = tmp_path_factory.mktemp("model")
    model = ModelConfig(embedding_dim=8, hidden_size=16, num_layers=1, dropout=0.0, copy="extended",
                        coverage_dim=4, memory="scratchpad")
    train(pairs, pairs[:2], model, TrainConfig(epochs=3, batch_size=6, learning_rate=1e-2), out, log=lambda _: None)
    return out / "best.pt"


def rows(corpus: Path, kind: str):
    table = pq.read_table(corpus / kind)
    if kind == "pairs":
        table = table.drop_columns(["created_at"])  # the run's timestamp
    return table.sort_by([("id", "ascending"), ("stage", "ascending")] if kind == "rejects" else "id")


def test_dask_shards_write_the_single_process_corpus(harness: None, checkpoint: Path, tmp_path: Path) -> None:
    single = tmp_path / "single"
    source = open_source(from_graph=str(GRAPH), count=RUN["count"], seed=RUN["seed"])
    config = SynthesisConfig(shard_size=RUN["shard_size"], beam=RUN["beam"], seed=RUN["seed"])
    expected = synthesize(source.records, checkpoint, single, config, log=lambda _: None)
    on_dask = tmp_path / "dask"
    manifest = synthesize_flow(checkpoint=str(checkpoint), out=str(on_dask), from_graph=str(GRAPH), dask_workers=2,
                               in_flight=3, **RUN)  # a window of 3 shards out of 8
    assert manifest["counts"] == expected["counts"] and manifest["counts"]["inputs"] == RUN["count"]
    assert len(manifest["shards"]) == -(-RUN["count"] // RUN["shard_size"]) > 2  # several shards to spread
    for kind in ("pairs", "rejects"):
        assert rows(on_dask, kind).equals(rows(single, kind)), kind
    strip = lambda entries: [{k: v for k, v in e.items() if k not in ("seconds", "pairs", "rejects")}  # noqa: E731
                             for e in entries]
    assert strip(manifest["shards"]) == strip(expected["shards"])
    assert manifest["filter"] == expected["filter"]
    assert json.loads((on_dask / "source.json").read_text())["sampler_stats"]["kept"] == RUN["count"]


def test_an_existing_cluster_given_by_address_runs_the_shards(harness: None, checkpoint: Path, tmp_path: Path) -> None:
    from distributed import LocalCluster
    from prefect.settings import PREFECT_API_URL

    env = {"PREFECT_API_URL": PREFECT_API_URL.value(), "OMP_NUM_THREADS": "1"}  # workers report to this API
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", env=env) as cluster:
        manifest = synthesize_flow(checkpoint=str(checkpoint), out=str(tmp_path / "corpus"), from_graph=str(GRAPH),
                                   dask_address=cluster.scheduler_address, **{**RUN, "count": 20})
        assert cluster.scheduler.transition_counter > 0  # the shards went through this scheduler
    assert manifest["counts"]["inputs"] == 20 and len(manifest["shards"]) == 3
