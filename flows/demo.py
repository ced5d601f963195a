"""The demo as Prefect flows: preprocess -> train -> synthesize from the demo graph and tables.

``run_demo(out)`` (behind ``qgen demo``) runs ``demo_flow`` and yields the lines to print. Each
step is one of the project's flows, run as a subflow: ``qgen-preprocess`` on
``data/demo/train_pairs.jsonl``, ``qgen-train`` (a small Copy + Scratchpad model with See et al.'s
extended-vocabulary copy, on the CPU), and ``qgen-synthesize`` twice: logical forms sampled from
``demo_kg.ttl`` and from the demo tables; beside synthesis, ``qgen-train`` again adapts the
shipped default model to the demo's pairs (``--init-from default``). Without ``PREFECT_API_URL``
the flows report to Prefect's embedded server, started for the run and stopped after it.
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, ContextManager, Iterator, Optional

from prefect import flow

from flows.preprocess import preprocess_flow
from flows.synthesize import synthesize_flow
from flows.train import train_arguments, train_task
from qgen.demo import (DEMO_DIR, DEMO_FOLDER, FULL, QUICK, DemoSizes, adaptation_examples, corpus_lines, demo_files,
                       mark_demo_folder, reset_demo_folder)
from qgen.io.output_folder import claimed_folder

MODEL = "scratchpad_extended"  # Copy + Scratchpad; the extended vocabulary copies names unseen in training
PARSER = "copynet_extended"  # the round-trip filter's parser: question -> logical form, copying names and values
SEED = 3


@flow(name="qgen-demo", log_prints=True)
def demo_flow(out: str = "qgen-out", sizes: Optional[dict[str, Any]] = None, demo_dir: Optional[str] = None,
              dask_address: Optional[str] = None, dask_workers: int = 0) -> dict[str, Any]:
    """The whole pipeline on the bundled demo data; returns what each step wrote."""
    s = DemoSizes(**(sizes or {}))
    files = demo_files(Path(demo_dir) if demo_dir else DEMO_DIR)
    root = Path(out).resolve()
    report = preprocess_flow(str(files.pairs), str(root / "preprocessed"), workers=1)
    examples = str(root / "preprocessed" / "train.parquet")
    # The generator and the parser train side by side (one CPU thread each), from the same Parquet.
    common_sizes = {"batch_size": s.batch_size, "learning_rate": s.learning_rate, "teacher_forcing": s.teacher_forcing,
                    "hidden": s.hidden, "embedding": s.embedding, "layers": s.layers, "dropout": s.dropout, "seed": SEED}
    generator = train_task.submit(examples, str(root / "model"), *train_arguments(
        MODEL, epochs=s.epochs, max_seconds=s.max_train_seconds, **common_sizes), task="generate")
    parser = train_task.submit(examples, str(root / "parser"), *train_arguments(
        PARSER, epochs=s.parser_epochs, max_seconds=s.max_parser_seconds, **common_sizes), task="parse")
    trained, parsed = generator.result(), parser.result()
    # The path of a user with their own knowledge base: the shipped default model fine-tuned on their
    # pairs (`qgen train --init-from default`), here on the second core while synthesis runs on the first.
    adapting = train_task.submit(examples, str(root / "adapted"), *train_arguments(
        MODEL, epochs=s.adapt_epochs, max_seconds=s.max_adapt_seconds, init_from="default", **common_sizes),
        task="generate")
    common = {"checkpoint": trained["checkpoint"], "seed": SEED, "beam": s.beam, "shard_size": s.shard_size,
              "dask_address": dask_address, "dask_workers": dask_workers, "parser": parsed["checkpoint"]}
    graph = synthesize_flow(out=str(root / "corpus" / "graph"), from_graph=str(files.graph), count=s.graph_count,
                            **common)
    tables = synthesize_flow(out=str(root / "corpus" / "tables"), from_tables=[str(t) for t in files.tables],
                             count=s.table_count, **common)
    adapted = adapting.result()
    examples_shown = adaptation_examples(root / "corpus" / "graph", adapted["checkpoint"], s.adapt_examples, s.beam)
    return {"preprocess": report.summary(), "files": report.files, "train": trained, "parser": parsed,
            "adapted": {**adapted, "examples": examples_shown},
            "corpora": {"graph": str(root / "corpus" / "graph"), "tables": str(root / "corpus" / "tables")},
            "counts": {"graph": graph["counts"], "tables": tables["counts"]}}


def run_demo(out: str | Path = "qgen-out", quick: bool = False, dask_address: Optional[str] = None,
             dask_workers: int = 0, demo_dir: Path = DEMO_DIR) -> Iterator[str]:
    """Run the demo flow into ``out`` (its previous demo output is replaced); yield lines to print.

    ``out`` must be empty, absent or an earlier demo's output (``qgen.demo.DEMO_FOLDER``); it is locked
    for the run."""
    root = Path(out).resolve()
    with claimed_folder(root, DEMO_FOLDER):
        reset_demo_folder(root)  # a fresh run: a resumed model would not match its corpus
        yield from _demo_lines(root, quick, dask_address, dask_workers, demo_dir)
        mark_demo_folder(root, "complete")


# Prefect gives its embedded server 20 s to start; on a busy 2-core machine it took longer, and the demo
# failed before its first step ("Timed out while attempting to connect to ephemeral Prefect API server").
SERVER_START_SECONDS = 120


def slow_server_start() -> ContextManager[Any]:
    """A settings context in which the embedded server may take ``SERVER_START_SECONDS`` to start, unless
    the user set a value (environment, profile, prefect.toml). A context, not the environment: Prefect
    reads its settings when it is imported, before this module's code runs."""
    from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, temporary_settings

    return temporary_settings(set_defaults={PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: SERVER_START_SECONDS})


def _demo_lines(root: Path, quick: bool, dask_address: Optional[str], dask_workers: int,
                demo_dir: Path) -> Iterator[str]:
    import torch

    sizes = QUICK if quick else FULL
    torch.set_num_threads(sizes.torch_threads)
    # The embedded server (started for this run when no PREFECT_API_URL is set) inherits this:
    # no usage telemetry from a demo, and no failing calls to it on a machine without internet.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from prefect.settings import PREFECT_API_URL

    api = PREFECT_API_URL.value()
    yield (f"qgen demo: preprocess -> train -> synthesize as Prefect flows, reporting to "
           f"{api or 'an embedded Prefect server (set PREFECT_API_URL to use yours)'}")
    started = time.perf_counter()
    with slow_server_start():
        result = demo_flow(str(root), asdict(sizes), str(demo_dir), dask_address, dask_workers)
    seconds = time.perf_counter() - started
    yield f"preprocessed {result['preprocess']}"
    t = result["train"]
    yield (f"trained {MODEL} (Copy + Scratchpad, hidden {sizes.hidden}) for {t['epochs_run']} epochs on {t['device']}; "
           f"best epoch {t['best_epoch']} (validation loss {t['best_valid_loss']:.3f})")
    p = result["parser"]
    yield (f"trained the round-trip parser {PARSER} (question -> logical form) for {p['epochs_run']} epochs beside it; "
           f"best epoch {p['best_epoch']} (validation loss {p['best_valid_loss']:.3f})")
    for name, corpus in result["corpora"].items():
        yield from corpus_lines(corpus, f"corpus from the demo {'graph' if name == 'graph' else 'tables'}")
    a = result["adapted"]
    yield (f"adapted the default model to the demo's pairs (qgen train --init-from default): {a['epochs_run']} epochs, "
           f"best epoch {a['best_epoch']} (validation loss {a['best_valid_loss']:.3f}); on corpus inputs:")
    for example in a["examples"]:
        yield f"  LF: {example['lf']}"
        yield f"     default: {example['default']}"
        yield f"     adapted: {example['adapted']}"
    for path in result["files"]:
        yield f"wrote {Path(path).resolve()}"
    yield f"wrote {t['checkpoint']}"
    yield f"wrote {p['checkpoint']}"
    yield f"wrote {a['checkpoint']}"
    for corpus in result["corpora"].values():
        yield f"wrote {corpus}/pairs/*.parquet, rejects/*.parquet, manifest.json, README.md"
    yield f"done in {seconds:.0f} s; load a corpus with pandas.read_parquet('{result['corpora']['graph']}/pairs')"
