"""What each flow run publishes as Prefect artifacts: markdown tables of its figures and a link to its output.

The tables are built from what the library already wrote (``counts.json``, the corpus manifest,
``metrics.json``); the functions here only format them, so every flow reports the same way.
Artifact keys must be lowercase letters, digits and dashes.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from prefect.artifacts import create_link_artifact, create_markdown_artifact


def artifact_key(*parts: str) -> str:
    """``qgen-synthesize-corpus`` from any text (Prefect's key rule: ``[a-z0-9-]``)."""
    text = "-".join(p for p in parts if p).lower()
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text)).strip("-")[:100]


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A markdown table; ``|`` inside a cell is escaped."""
    def cell(value: Any) -> str:
        if isinstance(value, float):
            value = f"{value:.3f}"
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)


def corpus_markdown(manifest: dict[str, Any], source: dict[str, Any] | None, samples: Sequence[tuple[str, str]],
                    out: Path) -> str:
    """Corpus statistics, rejects by stage, filter counts, sampler counts and a few pairs."""
    counts, stats = manifest["counts"], manifest.get("filter") or {}
    parts = [f"# Synthetic corpus `{out}`", "",
             table(["inputs", "pairs", "rejects", "shards", "mean score"],
                   [[counts["inputs"], counts["pairs"], counts["rejects"], len(manifest["shards"]),
                     stats.get("mean_score") if stats.get("mean_score") is not None else "-"]]), "",
             "## Rejects by stage", "", table(["stage", "rejects"], sorted(counts["rejects_by_stage"].items())), "",
             "## Over-copy filter", "",
             table(["judged", "kept", "filtered"], [[stats.get("judged", 0), stats.get("kept", 0),
                                                     stats.get("filtered", 0)]]), "",
             table(["leading reason", "pairs"], sorted((stats.get("by_reason") or {}).items())), ""]
    if source and source.get("sampler_stats"):
        parts += ["## Sampler", "", f"{source['kind']}: `{source['description']}`", "",
                  table(["outcome", "draws"], source["sampler_stats"].items()), ""]
    if samples:
        parts += ["## Sample of pairs", "", table(["logical form", "question"], samples), ""]
    return "\n".join(parts)


def metrics_markdown(dataset: str, metrics: Sequence[dict[str, Any]]) -> str:
    """The benchmark's table: one row per run (the model, with its teacher-forcing / no-repeat suffix),
    full test set and the no-OOV subset."""
    rows = []
    for m in metrics:
        full, no_oov = m["full"], m.get("no_oov", {})
        rows.append([m.get("run", m["model"]), full.get("n"), full.get("bleu_corpus"), full.get("bleu_sentence_mean"),
                     full.get("meteor_corpus") if full.get("meteor_corpus") is not None else "-",
                     full.get("rouge_l_corpus"), full.get("overcopy"), no_oov.get("bleu_corpus", "-"),
                     m.get("epochs_run"), m.get("device")])
    return "\n".join([f"# Benchmark: {dataset}", "",
                      table(["model", "n", "BLEU", "sentence BLEU", "METEOR", "ROUGE-L", "OverCopy",
                             "BLEU no-OOV", "epochs", "device"], rows)])


def counts_markdown(title: str, counts: dict[str, Any]) -> str:
    """A one-row table of a preprocessing run's counts (inputs = examples + rejects)."""
    examples = counts.get("examples") or {}
    per_split = ", ".join(f"{k} {v}" for k, v in sorted(examples.items()))
    return "\n".join([f"# {title}", "", table(["inputs", "examples", "per split", "rejects"],
                                             [[counts["inputs"], sum(examples.values()), per_split,
                                               counts["rejects"]]])])


def publish(key: str, markdown: str, link: str | Path, link_text: str, description: str) -> None:
    """A markdown artifact and a link artifact (a local path becomes a ``file://`` URI)."""
    target = Path(link).resolve().as_uri() if not str(link).startswith(("http://", "https://", "s3://", "gs://")) \
        else str(link)
    create_markdown_artifact(markdown=markdown, key=artifact_key(key), description=description)
    create_link_artifact(link=target, link_text=link_text, key=artifact_key(key, "output"), description=description)
