"""Data-to-text benchmark flow: Kiddon et al.'s neural checklist (seed 004) on Wen et al.'s SF Hotel
and SF Restaurant, one task per (domain, row), then the results README beside the paper's Table 3.

Each row trains with selection on dev BLEU and is resumable (``qgen.wen_benchmark.run_row`` keeps
its checkpoints and skips a finished row), so a retried task continues where it stopped.
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
