"""A synthesis run from a ``Source``: the corpus, plus what the sampler drew and why it dropped draws."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from qgen.io.output_folder import write_file, writes_folder
from qgen.synth.corpus import CORPUS_FOLDER, CorpusError, synthesize
from qgen.synth.card import write_card
from qgen.synth.config import SynthesisConfig
from qgen.synth.sources import Source


# The logical-form type each sampler writes (a file may hold any mix: checked per pair instead).
LF_TYPES_BY_KIND = {"graph": ["sparql"], "endpoint": ["sparql"], "substitution": ["sparql"], "tables": ["sql"]}


@writes_folder("out_dir", CORPUS_FOLDER, CorpusError)  # the lock also covers source.json and the card written again
def synthesize_from_source(source: Source, checkpoint: str | Path, out_dir: str | Path,
                           config: SynthesisConfig | None = None, log: Callable[[str], None] = print,
                           **runtime: Any) -> dict[str, Any]:
    """Run ``synthesize`` over the source's records; write ``source.json`` and add it to the card.
    ``runtime``: ``synthesize``'s other arguments (map_shards, progress, ...).

    The sampler's counts (drawn, kept, duplicates dropped, no answer, ...) account for every draw;
    only kept draws become inputs of the corpus, where inputs = pairs + rejects.
    """
    runtime.setdefault("lf_types", LF_TYPES_BY_KIND.get(source.kind))  # checked against a round-trip parser
    manifest = synthesize(source.records, checkpoint, out_dir, config, log=log, **runtime)
    out = Path(out_dir)
    described = {"kind": source.kind, "description": source.description, "options": source.options,
                 "sampler_stats": source.stats()}
    write_file(out / "source.json", json.dumps(described, indent=2) + "\n")
    write_card(out, manifest, manifest["settings"]["seed"])  # again, now with its Source section
    if described["sampler_stats"]:
        log("sampler: " + ", ".join(f"{k}={v}" for k, v in described["sampler_stats"].items()))
    if "left_out_as_known" in source.options:  # qgen.synth.dedup
        log(f"left out {source.options['left_out_as_known']} logical forms that earlier corpora hold")
    return manifest
