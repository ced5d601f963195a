"""Data-to-text benchmark flows, each publishing its results README beside the paper's table:

- ``e2e_benchmark_flow``: Zhang et al.'s three rows on E2E (seed 003), every seed's run resumable;
- ``wen_benchmark_flow``: Kiddon et al.'s neural checklist and the attention encoder-decoder on
  Wen et al.'s SF Hotel and SF Restaurant (seed 004), one task per (domain, row);
- ``char_benchmark_flow``: Roberti et al.'s character-level rows (seed 002) on E2E, E2E+ (train
  rebuilt), Hotel and Restaurant, one task per (dataset, row), E2E+ first (the transfer row starts there).

Rows train with selection on dev BLEU and are resumable (a finished row is skipped, a stopped one
continues), so a retried task goes on where it stopped.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from prefect import flow, get_run_logger, task

from flows.artifacts import publish
from flows.results import json_results, plain


@task(name="wen-row", task_run_name="{domain}-{row}", retries=1, retry_delay_seconds=5, **json_results())
def wen_row_task(domain: str, row: str, config: dict[str, Any], work_dir: str, results: str,
                 data_dir: Optional[str] = None) -> dict[str, Any]:
    from qgen.wen_benchmark import WenBenchConfig, run_wen_benchmark

    run_wen_benchmark(domain, [row], WenBenchConfig(**config), work_dir, results, data_dir, log=get_run_logger().info)
    return plain(json.loads((Path(results) / f"wen-{domain}" / row / "metrics.json").read_text()))


@flow(name="qgen-benchmark-wen", log_prints=True)
def wen_benchmark_flow(domains: Optional[list[str]] = None, rows: Optional[list[str]] = None, epochs: int = 50,
                       patience: int = 10, data_dir: Optional[str] = None, work_dir: str = "out/benchmarks/wen",
                       results: str = "benchmarks/results", java_metrics: bool = True,
                       seed: int = 1) -> list[dict[str, Any]]:
    """Train and score ``rows`` (default: the checklist and the attention encoder-decoder) on ``domains``
    (default: hotel and restaurant); returns their metrics and publishes each domain's table."""
    from qgen.wen_benchmark import DOMAINS, ROWS

    config = {"epochs": epochs, "patience": patience, "java_metrics": java_metrics, "seed": seed}
    out = []
    for domain in domains or list(DOMAINS):
        metrics = [wen_row_task(domain, row, config, str(Path(work_dir).resolve()), str(Path(results).resolve()),
                                data_dir) for row in rows or list(ROWS)]
        readme = Path(results).resolve() / f"wen-{domain}" / "README.md"
        publish(f"qgen-benchmark-wen-{domain}", readme.read_text(), readme, f"results README {readme}",
                f"Kiddon et al. Table 3 ({domain}) beside our rows; BLEU and METEOR on 0-100")
        out += metrics
    return out


@task(name="e2e-rows", task_run_name="e2e-{rows}", retries=1, retry_delay_seconds=5, **json_results())
def e2e_rows_task(rows: list[str], config: dict[str, Any], work_dir: str, results: str,
                  data_dir: Optional[str] = None) -> dict[str, Any]:
    from qgen.e2e_benchmark import E2EBenchConfig, run_e2e_benchmark

    run_e2e_benchmark(rows, E2EBenchConfig(**config), work_dir, results, data_dir, log=get_run_logger().info)
    return plain(json.loads((Path(results) / "e2e-zhang" / "metrics.json").read_text()))


@flow(name="qgen-benchmark-e2e", log_prints=True)
def e2e_benchmark_flow(rows: Optional[list[str]] = None, epochs: int = 5, seeds: Optional[list[int]] = None,
                       device: str = "auto", data_dir: Optional[str] = None, work_dir: str = "out/benchmarks/e2e",
                       results: str = "benchmarks/results", java_metrics: bool = True,
                       hidden: Optional[int] = None, embedding: Optional[int] = None) -> dict[str, Any]:
    """Zhang et al.'s rows (default: all three) on E2E, each seed's run resumable; publishes the table.
    ``hidden`` / ``embedding`` shrink the models (a smoke run); None keeps the paper's sizes."""
    from qgen.e2e_benchmark import ROWS

    config = {"epochs": epochs, "seeds": tuple(seeds or (1, 2)), "device": device, "java_metrics": java_metrics,
              "hidden": hidden, "embedding": embedding}
    report = e2e_rows_task(list(rows or ROWS), config, str(Path(work_dir).resolve()), str(Path(results).resolve()),
                           data_dir)
    readme = Path(results).resolve() / "e2e-zhang" / "README.md"
    publish("qgen-benchmark-e2e", readme.read_text(), readme, f"results README {readme}",
            "Zhang et al. Table 1 beside our rows; official E2E metrics")
    return report


@task(name="char-row", task_run_name="{dataset}-{row}", retries=1, retry_delay_seconds=5, **json_results())
def char_row_task(dataset: str, row: str, config: dict[str, Any], work_dir: str, results: str,
                  data_dir: Optional[str] = None) -> dict[str, Any]:
    from qgen.char_benchmark import CharBenchConfig, run_char_benchmark

    readme = run_char_benchmark(dataset, [row], CharBenchConfig(**config), work_dir, results, data_dir,
                                log=get_run_logger().info)
    return plain({"dataset": dataset, "row": row,
                  **json.loads((readme.parent / "metrics.json").read_text())["rows"][row]})


@flow(name="qgen-benchmark-char", log_prints=True)
def char_benchmark_flow(datasets: Optional[list[str]] = None, rows: Optional[list[str]] = None, epochs: int = 100,
                        patience: int = 10, device: str = "auto", data_dir: Optional[str] = None,
                        work_dir: str = "out/benchmarks/char", results: str = "benchmarks/results",
                        java_metrics: bool = True, seed: int = 1, hidden: Optional[int] = None,
                        layers: Optional[int] = None, max_seconds: Optional[float] = None) -> list[dict[str, Any]]:
    """Roberti et al.'s ``rows`` (default: EDA, EDA_C, EDA_S, EDA_CS) on ``datasets`` (default: e2e_plus,
    e2e, hotel, restaurant; e2e_plus runs first); publishes each dataset's table. ``hidden`` / ``layers``
    shrink the models (a smoke run); None keeps the paper's sizes."""
    from qgen.char_benchmark import ROWS, TRANSFER
    from qgen.datasets.char_d2t import DATASETS

    config = {"epochs": epochs, "patience": patience, "device": device, "java_metrics": java_metrics, "seed": seed,
              "hidden": hidden, "layers": layers, "max_seconds": max_seconds}
    ordered = sorted(datasets or list(DATASETS), key=lambda d: d != "e2e_plus")
    out = []
    for dataset in ordered:
        chosen = [r for r in rows or ROWS[:4] if not (dataset == "e2e_plus" and r in TRANSFER)]
        out += [char_row_task(dataset, row, config, str(Path(work_dir).resolve()), str(Path(results).resolve()),
                              data_dir) for row in chosen]
        readme = Path(results).resolve() / f"roberti-{dataset}" / "README.md"
        publish(f"qgen-benchmark-char-{dataset.replace('_', '-')}", readme.read_text(), readme,
                f"results README {readme}", f"Roberti et al. Table 3 ({dataset}) beside our rows")
    return out
