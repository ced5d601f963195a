"""Synthesize flow: logical forms from a file, a graph, an endpoint or tables -> a filtered corpus.

The flow opens the source (``qgen.synth.sources.open_source``) and runs
``qgen.synth.run.synthesize_from_source``, handing it a ``map_shards`` that makes every shard a
task calling ``qgen.synth.corpus.write_shard``: run one after another in the flow's process by
default, or submitted to a Dask cluster (``dask_address`` / ``dask_workers``, see
``flows.runners``). Shards are written and recorded by the library exactly as in a plain
``qgen synthesize`` run, so the corpus is the same either way; a shard task that fails is retried
(its files are renamed into place only when complete), and a run started again skips finished
shards. Artifacts: a markdown table of the corpus statistics and filter counts, and a link to it.
"""
from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.artifacts import corpus_markdown, publish
from flows.results import JSON_RESULTS, plain
from flows.runners import dask_task_runner


@task(name="synthesize-shard", task_run_name="shard-{index}", persist_result=True, cache_policy=NO_CACHE,
      retries=2, retry_delay_seconds=2, result_serializer=JSON_RESULTS)
def shard_task(job: Any, index: int) -> dict[str, Any]:
    from qgen.synth.corpus import write_shard

    return plain(write_shard(job))


def shard_mapper(submit: bool, in_flight: int = 32) -> Callable[[Callable, Iterable[Any]], Iterator[dict[str, Any]]]:
    """``map_shards`` for the library: shard tasks called in turn, or submitted to the task runner
    with at most ``in_flight`` shards (their inputs) out at a time; results come back in shard order."""
    def map_shards(_write_shard: Callable, jobs: Iterable[Any]) -> Iterator[dict[str, Any]]:
        if not submit:
            for job in jobs:
                yield shard_task(job, job.index)
            return
        window: deque = deque()
        for job in jobs:
            window.append(shard_task.submit(job, job.index))
            if len(window) >= in_flight:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()

    return map_shards


@flow(name="qgen-synthesize-shards", log_prints=True)
def synthesize_shards_flow(checkpoint: str, out: str, from_file: Optional[str] = None, from_graph: Optional[str] = None,
                           from_endpoint: Optional[str] = None, from_tables: Optional[list[str]] = None,
                           substitute_from: Optional[str] = None, count: int = 1000, seed: int = 0,
                           max_answers: int = 10, beam: int = 4, shard_size: int = 1000, max_overcopy: int = 0,
                           max_repeated_ngrams: int = 0, min_score: Optional[float] = None,
                           data_dir: Optional[str] = None, submit: bool = False,
                           in_flight: int = 32, no_repeat: bool = False,
                           round_trip: Optional[dict[str, Any]] = None,
                           dedup_against: Optional[list[str]] = None,
                           candidates: Optional[int] = None, sampling: float = 0.0) -> dict[str, Any]:
    """The corpus run itself, on whatever task runner the caller gave this flow."""
    from qgen.synth.config import SynthesisConfig
    from qgen.synth.run import synthesize_from_source
    from qgen.synth.sources import open_source

    logger = get_run_logger()
    known, corpora = None, []
    if dedup_against:
        from qgen.synth.dedup import known_logical_forms

        known, corpora = known_logical_forms(dedup_against, out, missing_ok=True)  # a schedule's first run makes it
    source = open_source(from_file, from_graph, from_endpoint, list(from_tables or []), substitute_from, count, seed,
                         max_answers, data_dir=data_dir, known=known)
    if dedup_against:
        source.options["dedup_against"] = corpora
        if not corpora:
            logger.warning(f"dedup_against {', '.join(map(str, dedup_against))}: no corpus there yet; nothing is "
                           "left out")
    config = SynthesisConfig.build(max_overcopy, max_repeated_ngrams, min_score, round_trip, beam=beam,
                                   candidates=candidates, shard_size=shard_size, seed=seed, no_repeat=no_repeat,
                                   sampling=sampling)
    return synthesize_from_source(source, checkpoint, out, config, log=logger.info,
                                  map_shards=shard_mapper(submit, in_flight))


@flow(name="qgen-synthesize", log_prints=True)
def synthesize_flow(checkpoint: str = "default", out: str = "qgen-out/corpus", from_file: Optional[str] = None,
                    from_graph: Optional[str] = None, from_endpoint: Optional[str] = None,
                    from_tables: Optional[list[str]] = None, substitute_from: Optional[str] = None,
                    count: int = 1000, seed: Optional[int] = None, max_answers: int = 10, beam: int = 4,
                    shard_size: int = 1000, max_overcopy: int = 0, max_repeated_ngrams: int = 0, min_score: Optional[float] = None,
                    data_dir: Optional[str] = None, dask_address: Optional[str] = None,
                    dask_workers: int = 0, in_flight: int = 32, no_repeat: bool = False,
                    parser: Optional[str] = None, round_trip: bool = True,
                    round_trip_rules: Optional[dict[str, str]] = None, round_trip_k: int = 4,
                    round_trip_threshold: Optional[float] = None,
                    dedup_against: Optional[list[str]] = None,
                    candidates: Optional[int] = None, sampling: float = 0.0) -> dict[str, Any]:
    """Write a (logical form, question) corpus to ``out``; returns its manifest.

    ``checkpoint``: a best.pt, an exported model folder, or ``default`` (the model that ships with qgen).
    Exactly one of ``from_file``, ``from_graph`` (optionally with ``substitute_from``),
    ``from_endpoint``, ``from_tables``. ``dask_address``: an existing Dask scheduler;
    ``dask_workers`` > 0: a LocalCluster of that many workers; neither: shards run here.
    ``in_flight``: at most this many shards submitted to the cluster at a time (bounds memory).
    ``out`` may hold ``{date}`` (the run's scheduled day, YYYY-MM-DD) and ``{time}`` (its scheduled
    time, HHMMSS, UTC): one corpus per scheduled run.
    ``seed``: of the samplers and the generator; without one, the run's scheduled time gives it (recorded
    in the manifest), so that scheduled runs over the same source write different corpora.
    ``no_repeat``: decode with no word right after itself.
    ``candidates``: of the beam's N best questions (default: all of the beam), write the first that passes
    the faithfulness audit and that the over-copy filter keeps (else the first that passes the audit, else
    the best); 1: the beam's best. ``sampling`` T > 0: the candidates are drawn at temperature T.
    ``parser``: the round-trip filter's parser (default: ``../parser/best.pt`` beside the checkpoint's
    folder, where the train flows put it); ``round_trip=False`` turns the filter off.
    ``dedup_against``: corpora, or folders of corpora (earlier scheduled runs), whose logical forms this
    run leaves out (``qgen.synth.dedup``).
    """
    from qgen.exported_model import resolve_model
    from qgen.synth.round_trip import default_parser

    checkpoint = str(resolve_model(checkpoint))
    parser = (parser or default_parser(checkpoint)) if round_trip else None
    trip = ({"checkpoint": str(parser), "rules": tuple(sorted((round_trip_rules or {}).items())), "k": round_trip_k,
             "threshold": round_trip_threshold, "tables": tuple(from_tables or ())} if parser else None)
    out = str(Path(run_folder(out)).resolve())
    seed = run_seed(seed)
    runner = dask_task_runner(dask_address, dask_workers)
    shards = synthesize_shards_flow if runner is None else synthesize_shards_flow.with_options(task_runner=runner)
    manifest = shards(checkpoint, out, from_file, from_graph, from_endpoint, from_tables, substitute_from, count,
                      seed, max_answers, beam, shard_size, max_overcopy, max_repeated_ngrams, min_score, data_dir,
                      submit=runner is not None, in_flight=in_flight, no_repeat=no_repeat, round_trip=trip,
                      dedup_against=dedup_against, candidates=candidates, sampling=sampling)
    source_file = Path(out) / "source.json"
    source = json.loads(source_file.read_text()) if source_file.is_file() else None
    publish(f"qgen-synthesize-{Path(out).name}", corpus_markdown(manifest, source, sample_pairs(out), Path(out)),
            Path(out) / "README.md", f"corpus card {Path(out) / 'README.md'}",
            "inputs = pairs + rejects; pairs/ and rejects/ hold the Parquet shards")
    return manifest


def run_folder(out: str) -> str:
    """``out`` with ``{date}`` and ``{time}`` replaced by the flow run's scheduled day and time (UTC;
    now outside a run)."""
    if "{date}" not in out and "{time}" not in out:
        return out
    when = _scheduled_time()
    return out.replace("{date}", when.strftime("%Y-%m-%d")).replace("{time}", when.strftime("%H%M%S"))


def run_seed(seed: Optional[int]) -> int:
    """``seed`` if given, else the run's scheduled time in whole seconds since 1970 (now outside a run)."""
    return seed if seed is not None else int(_scheduled_time().timestamp())


def _scheduled_time() -> Any:
    from datetime import datetime, timezone

    from prefect.runtime import flow_run

    when = flow_run.scheduled_start_time or datetime.now(timezone.utc)
    return when.astimezone(timezone.utc)


def sample_pairs(out: str | Path, n: int = 5) -> list[tuple[str, str]]:
    """(tokenized logical form, question) of the first ``n`` pairs, for the artifact."""
    import pyarrow.dataset as ds

    pairs = Path(out) / "pairs"
    if not pairs.is_dir() or not any(pairs.iterdir()):
        return []
    rows = ds.dataset(pairs, format="parquet").head(n, columns=["lf_tokens", "question"]).to_pylist()
    return [(" ".join(r["lf_tokens"])[:160], r["question"]) for r in rows]
