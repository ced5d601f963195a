"""Benchmark flow: the results tables, one task per library call.

Preprocess the dataset once (the cached preprocess task), train and evaluate each model of the
tables (``qgen.benchmark.run_variant``: resumable, so a retried or re-run model continues from its
last epoch), then rewrite the dataset's results README (``qgen.results_table.write_results_readme``).
The metrics of every model are published as a markdown table, with a link to the README.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from prefect import flow, get_run_logger, task

from flows.artifacts import metrics_markdown, publish
from flows.preprocess import preprocess_task
from flows.results import json_results, plain


def _run_name(parameters: dict[str, Any]) -> str:
    """The task run's name in Prefect: the run's results folder (model + teacher-forcing / seed / no-repeat suffixes)."""
    from qgen.benchmark import results_folder_name
    from qgen.train import TrainConfig

    return results_folder_name(parameters["variant"].name, TrainConfig(**parameters["train_config"]),
                               parameters.get("no_repeat", False))


@task(name="train-and-evaluate", task_run_name=_run_name, persist_result=True, retries=1, retry_delay_seconds=5,
      **json_results())
def run_variant_task(dataset: str, variant: Any, prep: str, work_dir: str, results: str, train_config: dict[str, Any],
                     data_dir: Optional[str] = None, no_repeat: bool = False) -> dict[str, Any]:
    from qgen.benchmark import run_variant
    from qgen.train import TrainConfig

    return plain(run_variant(dataset, variant, prep, work_dir, results, TrainConfig(**train_config),
                             data_dir=Path(data_dir) if data_dir else None, no_repeat=no_repeat,
                             log=get_run_logger().info))


@task(name="evaluation-plots", task_run_name="plots-{metrics[run]}", retries=1, retry_delay_seconds=2,
      **json_results())
def plots_task(dataset: str, variant: Any, metrics: dict[str, Any], prep: str, results: str,
               data_dir: Optional[str] = None) -> list[str]:
    """Attention heatmaps with the p_gen strip, loss curves, cumulative attention entropy (PNG), drawn
    from the checkpoint the metrics were measured with and decoded the same way, into that run's
    results folder (``metrics["run"]``: the model's name with its teacher-forcing / no-repeat suffix)."""
    from qgen.benchmark import dataset_pairs
    from qgen.plots import write_evaluation_plots

    test_pairs = dataset_pairs(dataset, Path(prep), variant.entity_replacement, Path(data_dir) if data_dir else None)[2]
    return [str(p) for p in write_evaluation_plots(metrics["checkpoint"], test_pairs,
                                                   Path(results) / dataset / metrics["run"] / "plots",
                                                   no_repeat=metrics["variant"]["no_repeat"])]


@task(name="results-readme", retries=2, retry_delay_seconds=2, **json_results())
def results_readme_task(results_dir: str, dataset: str) -> str:
    from qgen.results_table import write_results_readme

    return str(write_results_readme(Path(results_dir), dataset))


@flow(name="qgen-benchmark", log_prints=True)
def benchmark_flow(dataset: str = "webqsp", models: Optional[list[str]] = None, epochs: int = 75,
                   max_seconds: Optional[float] = None, batch_size: int = 32, glove: Optional[str] = None,
                   data_dir: Optional[str] = None, work_dir: str = "out/benchmarks",
                   results: str = "benchmarks/results", hidden: Optional[int] = None,
                   embedding: Optional[int] = None, teacher_forcing: float = 0.5,
                   teacher_forcing_per: str = "step", no_repeat: bool = False,
                   seed: int = 1) -> list[dict[str, Any]]:
    """Train and evaluate ``models`` (default: every row of the tables) on ``dataset``; returns their metrics.

    ``hidden`` / ``embedding`` shrink the models (a smoke run); None keeps the paper's sizes.
    ``teacher_forcing`` / ``teacher_forcing_per`` other than the paper's (0.5, per step) train into
    ``<model>_tf<value>[seq]`` folders; ``no_repeat`` decodes with no word right after itself into
    ``<model>_norepeat``; another ``seed`` than 1 into ``<model>_seed<N>`` (as ``benchmarks/qgen_bench.py``).
    """
    from qgen.benchmark import sized_variant
    from qgen.model import BENCHMARK_MODELS, VARIANTS

    models = models or list(BENCHMARK_MODELS)
    unknown = [m for m in models if m not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    prep = Path(work_dir).resolve() / "prep" / dataset
    preprocess_task.with_options(refresh_cache=not (prep / "counts.json").is_file())(dataset, str(prep), data_dir)
    train_config = {"epochs": epochs, "max_seconds": max_seconds, "batch_size": batch_size, "glove_path": glove,
                    "teacher_forcing": teacher_forcing, "teacher_forcing_per": teacher_forcing_per, "seed": seed}
    sizes = {k: v for k, v in (("hidden_size", hidden), ("embedding_dim", embedding)) if v}
    metrics = []
    for name in models:
        variant = sized_variant(name, sizes)
        run = run_variant_task(dataset, variant, str(prep), str(Path(work_dir).resolve()),
                               str(Path(results).resolve()), train_config, data_dir, no_repeat)
        metrics.append(run)
        pictures = plots_task(dataset, variant, run, str(prep), str(Path(results).resolve()), data_dir)
        images = "\n".join(f"![{Path(p).stem}]({Path(p).resolve().as_uri()})" for p in pictures)
        publish(f"qgen-plots-{dataset}-{run['run']}", images, Path(pictures[0]).parent, f"plots of {run['run']}",
                f"evaluation plots of {run['run']} on {dataset}")
    readme = results_readme_task(str(Path(results).resolve() / dataset), dataset)
    publish(f"qgen-benchmark-{dataset}", metrics_markdown(dataset, metrics), readme, f"results README {readme}",
            "full test set and the no-OOV subset; scores on a 0-100 scale")
    return metrics


@task(name="downstream-row", task_run_name="downstream-{dataset}-{row}", retries=1, retry_delay_seconds=5)
def downstream_row_task(dataset: str, row: str, config: dict[str, Any], prep: str, work_dir: str, results: str,
                        data_dir: Optional[str]) -> dict[str, Any]:
    """One row of the downstream table (``qgen.downstream.run_downstream``: resumable, and it trains the
    generator and draws the synthetic corpus first where the row needs them)."""
    from qgen.downstream import DownstreamConfig, run_downstream

    cfg = DownstreamConfig(**{**config, "curve": tuple(config["curve"])})
    metrics = run_downstream(prep, work_dir, results, cfg, Path(data_dir) if data_dir else None, rows=[row],
                             log=get_run_logger().info)
    return plain({"dataset": dataset, "row": row, "dev_lf_em": metrics["dev_lf_em"].get(row),
                  "train_pairs": metrics["train_pairs"].get(row)})


@flow(name="qgen-downstream", log_prints=True)
def downstream_flow(dataset: str = "wikisql", rows: Optional[list[str]] = None, low_fraction: float = 0.1,
                    synthetic: int = 4000, curve: Optional[list[int]] = None, parser_epochs: int = 20,
                    generator_epochs: int = 25, hidden: int = 256, embedding: int = 128,
                    max_seconds: Optional[float] = 1500.0, seed: int = 1, select_on: str = "loss",
                    generator_candidates: int = 1, questions_per_lf: int = 1, curve_filter: str = "low_synthetic_both",
                    generator_sampling: float = 0.0, judge_with: Optional[str] = None, round_trip_k: int = 4,
                    data_dir: Optional[str] = None, work_dir: str = "out/downstream",
                    results: str = "benchmarks/results") -> list[dict[str, Any]]:
    """The downstream benchmark (``qgen downstream``): a parser trained on ``low_fraction`` of ``dataset``'s
    labels, alone and with each filtered qgen corpus, against the whole training split; one task per row,
    then the results README is published."""
    from dataclasses import asdict

    from qgen.downstream import ROWS, DownstreamConfig

    cfg = DownstreamConfig(dataset=dataset, low_fraction=low_fraction, synthetic=synthetic, seed=seed, hidden=hidden,
                           embedding=embedding, parser_epochs=parser_epochs, generator_epochs=generator_epochs,
                           max_seconds=max_seconds, select_on=select_on, generator_candidates=generator_candidates,
                           questions_per_lf=questions_per_lf, curve_filter=curve_filter,
                           generator_sampling=generator_sampling, judge_with=judge_with, round_trip_k=round_trip_k,
                           **({"curve": tuple(curve)} if curve is not None else {}))
    prep = str(Path(work_dir).resolve() / "prep" / dataset)
    work = str(Path(work_dir).resolve() / dataset)
    out = [downstream_row_task(dataset, row, asdict(cfg), prep, work, str(Path(results).resolve()), data_dir)
           for row in rows or [*ROWS, *(f"curve_{n}" for n in cfg.curve)]]
    readme = Path(results).resolve() / "downstream" / dataset / "README.md"
    publish(f"qgen-downstream-{dataset}", readme.read_text(), readme, f"results README {readme}",
            "dev logical-form exact match of parsers trained with and without a filtered qgen corpus")
    return out
