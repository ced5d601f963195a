"""Preprocess flow: one task, ``qgen.preprocess.preprocess_dataset``, cached on the input and the code.

The cache key is the sha256 of the input (a JSON Lines file, or every file of a named dataset's
folder), the code version (``qgen.version.code_version``: package version + commit, ``.dirty`` for
uncommitted changes), the output folder and the options (not the worker count, which changes
nothing in the output). A run with the same key reuses the
persisted report instead of tokenizing again; if the output folder lost its files, the cache is
refreshed. The task returns the report as a plain JSON dict (stored as JSON, see ``flows.results``);
the flow returns it as a ``PreprocessReport``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional

from prefect import flow, get_run_logger, task
from prefect.cache_policies import CachePolicy
from prefect.context import TaskRunContext

from flows.artifacts import counts_markdown, publish
from flows.results import json_results, plain


def input_checksum(dataset: str, data_dir: str | None = None) -> str:
    """sha256 of a .jsonl file, or of every file (path and content) of a named dataset's folder."""
    path = Path(dataset)
    if path.is_file():
        files, root = [path], path.parent
    else:
        from qgen.datasets.registry import dataset_folder

        root = dataset_folder(dataset, data_dir)
        files = sorted(p for p in root.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(root)).encode() + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def preprocess_cache_key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    """Input checksum + code version + where and how: equal keys mean equal output."""
    from qgen.version import code_version

    options = {k: str(v) for k, v in sorted(parameters.items()) if k not in ("dataset", "workers")}
    checksum = input_checksum(str(parameters["dataset"]), parameters.get("data_dir"))
    return "preprocess-" + hashlib.sha256(json.dumps([checksum, code_version(), options]).encode()).hexdigest()


@task(name="preprocess", persist_result=True, retries=2, retry_delay_seconds=2,
      **json_results(CachePolicy.from_cache_key_fn(preprocess_cache_key)))
def preprocess_task(dataset: str, out: str, data_dir: Optional[str] = None, split: Optional[str] = None,
                    workers: Optional[int] = None) -> dict[str, Any]:
    """The ``PreprocessReport``'s fields, as plain JSON."""
    from qgen.preprocess import preprocess_dataset

    report = preprocess_dataset(dataset, out, data_dir=data_dir, split=split, workers=workers)
    get_run_logger().info(report.summary())
    return plain(report)


@flow(name="qgen-preprocess", log_prints=True)
def preprocess_flow(dataset: str, out: str = "out/preprocessed", data_dir: Optional[str] = None,
                    split: Optional[str] = None, workers: Optional[int] = None) -> Any:
    """Tokenize a dataset (or a .jsonl of logical forms) into Parquet; returns the PreprocessReport."""
    done = (Path(out) / "counts.json").is_file()
    run = preprocess_task.with_options(refresh_cache=not done)
    from qgen.preprocess import PreprocessReport

    report = PreprocessReport(**run(dataset, str(Path(out).resolve()), data_dir, split, workers))
    counts = json.loads((Path(out) / "counts.json").read_text())
    publish(f"qgen-preprocess-{Path(dataset).stem}", counts_markdown(f"Preprocessed `{dataset}`", counts), out,
            f"preprocessed Parquet of {Path(dataset).name}", "examples = inputs - rejects")
    return report
