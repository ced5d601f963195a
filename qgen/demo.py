"""The demo's data and sizes, and how its results are shown: plain helpers, no Prefect.

The demo itself runs as Prefect flows (``flows/demo.py``, behind ``qgen demo``): preprocess
``data/demo/train_pairs.jsonl``, train a small Copy + Scratchpad model on the CPU, sample logical
forms from ``data/demo/demo_kg.ttl`` and the demo tables, and synthesize a corpus for each.

The output folder is the demo's only when empty or marked by its ``qgen-demo.json`` (written first,
so that a failed demo can be run again into it); a rerun replaces what the previous one wrote there.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from qgen.io.output_folder import FolderKind, remove_tree, write_file

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"
TABLES = ("ferries.csv", "festivals.csv")
MARKER = "qgen-demo.json"
OUTPUTS = ("preprocessed", "model", "parser", "corpus", "adapted")  # what the demo writes beside its marker
DEMO_FOLDER = FolderKind("demo output", MARKER, "qgen-demo-1", (MARKER, *OUTPUTS))


@dataclass(frozen=True)
class DemoSizes:
    """How big the demo's model and corpora are (the full demo stays under 5 minutes on 2 cores)."""

    epochs: int = 40
    hidden: int = 128
    embedding: int = 64
    layers: int = 1
    dropout: float = 0.1
    learning_rate: float = 3e-3
    batch_size: int = 16
    teacher_forcing: float = 1.0
    max_train_seconds: float = 180.0  # no new epoch after this; the demo's time guard on slow machines
    parser_epochs: int = 25  # the round-trip parser, trained beside the generator
    max_parser_seconds: float = 150.0
    # The shipped default model adapted to the demo's pairs (`qgen train --init-from default`), trained
    # beside synthesis; its questions are shown next to the default model's on a few corpus inputs.
    adapt_epochs: int = 4
    max_adapt_seconds: float = 60.0
    adapt_examples: int = 3
    graph_count: int = 300  # logical forms sampled from the graph
    table_count: int = 200  # and from the tables
    shard_size: int = 100
    # Synthesis writes the first of the beam's questions that passes the faithfulness audit: of 8 rather
    # than 4, 1-5 points more of the graph corpus pass it (three samples of one trained demo), for 2-3 s.
    beam: int = 8
    torch_threads: int = 1  # small matrices: one thread is as fast, and never oversubscribes a busy machine


FULL = DemoSizes()
# The smoke run: models just big and trained enough to write some pairs that pass both filters
# (one epoch of a hidden-16 model wrote none: every question was unfinished or over-copied).
QUICK = DemoSizes(epochs=6, hidden=32, embedding=16, graph_count=30, table_count=30, shard_size=10, beam=2,
                  parser_epochs=4, adapt_epochs=1, adapt_examples=1)


@dataclass(frozen=True)
class DemoFiles:
    pairs: Path
    graph: Path
    tables: tuple[Path, ...]


def demo_files(demo_dir: Path = DEMO_DIR) -> DemoFiles:
    """The demo's inputs; a clear error outside a qgen checkout."""
    files = DemoFiles(demo_dir / "train_pairs.jsonl", demo_dir / "demo_kg.ttl", tuple(demo_dir / t for t in TABLES))
    for path in (files.pairs, files.graph, *files.tables):
        if not path.is_file():
            raise FileNotFoundError(f"demo data not found at {path} (run from a qgen checkout)")
    return files


def mark_demo_folder(root: Path, status: str) -> None:
    """Write the marker that makes ``root`` the demo's (the caller holds it: ``claimed_folder``)."""
    marker = {"format": DEMO_FOLDER.format, "status": status, "written_at": datetime.now(timezone.utc).isoformat(),
              "outputs": list(OUTPUTS)}
    write_file(root / MARKER, json.dumps(marker, indent=2) + "\n")


def reset_demo_folder(root: Path) -> None:
    """Mark ``root`` as the demo's, then remove what an earlier demo wrote there (links refused, never followed)."""
    mark_demo_folder(root, "running")
    for name in OUTPUTS:
        remove_tree(root / name)


def brief(logical_form: str) -> str:
    """A logical form on one line without its PREFIX and FILTER lines (what a reader looks at)."""
    lines = [line for line in logical_form.splitlines() if not line.lstrip().startswith(("PREFIX", "FILTER"))]
    return " ".join(" ".join(lines).split())


def corpus_lines(corpus: str | Path, label: str, samples: int = 4) -> Iterator[str]:
    """The counts of a synthesized corpus and a few of its pairs (spread over it), as lines to print."""
    import json

    import pyarrow.dataset as ds

    corpus = Path(corpus)
    manifest = json.loads((corpus / "manifest.json").read_text())
    counts = manifest["counts"]
    stages = ", ".join(f"{k} {v}" for k, v in counts["rejects_by_stage"].items()) or "none"
    yield f"{label}: inputs {counts['inputs']} = pairs {counts['pairs']} + rejects {counts['rejects']} ({stages})"
    trip, audit = manifest.get("round_trip") or {}, manifest.get("audit") or {}
    if manifest.get("round_trip_settings"):
        yield (f"  round-trip filter: judged {trip.get('judged', 0)}, removed {trip.get('removed', 0)}; "
               f"faithfulness audit of the kept pairs: {audit.get('passed', 0)} of {audit.get('audited', 0)} pass")
        from qgen.synth.card import sample_rejects

        for row in sample_rejects(corpus, manifest, "round_trip", 0, 1):
            yield f"  rejected Q: {row['question']}"
            yield f"     LF: {brief(row['logical_form'])}"
            yield f"     the parser read: {row['round_trip']['parse']}"
    if counts["pairs"]:
        rows = ds.dataset(corpus / "pairs", format="parquet").to_table(columns=["logical_form", "question"]).to_pylist()
        for row in rows[:: max(1, len(rows) // samples)][:samples]:
            yield f"  Q: {row['question']}"
            yield f"     LF: {brief(row['logical_form'])}"


def adaptation_examples(corpus: str | Path, adapted: str | Path, count: int, beam: int) -> list[dict[str, str]]:
    """The first ``count`` logical forms of a corpus, each with the default model's question and the
    adapted model's (``qgen.generate.decode_token_lists``: the corpus's own tokens, beam ``beam``)."""
    import pyarrow.dataset as ds

    from qgen.generate import decode_token_lists

    pairs = Path(corpus) / "pairs"
    rows = ds.dataset(pairs, format="parquet").head(count, columns=["logical_form", "lf_tokens"]).to_pylist() \
        if any(pairs.glob("*.parquet")) else []
    tokens = [row["lf_tokens"] for row in rows]
    before, after = (decode_token_lists(tokens, model, beam) for model in ("default", adapted))
    return [{"lf": brief(row["logical_form"]), "default": b[0][0], "adapted": a[0][0]}
            for row, b, a in zip(rows, before, after)]
