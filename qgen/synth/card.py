"""The dataset card (README.md) of a synthetic corpus, written from its manifest (issue 4).

It opens with a Hugging Face dataset-card YAML front matter (issue 21): two configurations, ``pairs``
(the default) and ``rejects``, each with its own ``data_files`` glob, split and features,
so ``datasets.load_dataset(corpus_dir)`` gives the pairs and ``load_dataset(corpus_dir, "rejects")``
the rejects (one folder holding both schemas, read as one dataset, failed before). Then it states
the model (its checksum and what its checkpoint records: task, logical-form types, architecture,
training settings), the counts per stage (inputs = pairs + rejects), the filter's thresholds and
statistics, a seeded sample of pairs, the columns, and how to load the pairs with pandas, pyarrow,
duckdb, polars and ``datasets``. The card is always written whole, so a resumed or repeated run
leaves exactly one front matter.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from qgen.io.output_folder import write_file
from qgen.synth.schema import PAIR_SCHEMA, REJECT_SCHEMA, STAGES

SAMPLE_COLUMNS = ["id", "logical_form", "question", "score", "overcopy", "copy_fraction"]

# The configurations of the corpus folder: name, files (the shard names of qgen.synth.corpus), schema.
CONFIGS = (("pairs", "pairs/part-*.parquet", PAIR_SCHEMA), ("rejects", "rejects/part-*.parquet", REJECT_SCHEMA))


def written_before_audit_column(manifest: dict[str, Any]) -> bool:
    """A corpus of schema synth-1.0: its pairs have no ``audit_failures`` column, and each question was the
    first audit-passing candidate whether or not the over-copy filter kept it."""
    return manifest.get("schema_version") == "synth-1.0"


def pair_schema(manifest: dict[str, Any]) -> pa.Schema:
    """The pairs' columns as this corpus's schema version wrote them (a card rewritten for an older corpus,
    e.g. by a template split, declares what its files hold)."""
    if written_before_audit_column(manifest):
        return PAIR_SCHEMA.remove(PAIR_SCHEMA.get_field_index("audit_failures"))
    return PAIR_SCHEMA
SPLIT = "train"  # the corpus is training data; its one split holds every row (see the card's text)
# The Hugging Face size categories (upper bounds, exclusive), the last one open.
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (10**9, "100M<n<1B"),
                   (10**10, "1B<n<10B"), (10**11, "10B<n<100B"), (10**12, "100B<n<1T"))


def size_category(rows: int) -> str:
    """The Hugging Face ``size_categories`` value for ``rows`` rows."""
    return next((name for bound, name in SIZE_CATEGORIES if rows < bound), "n>1T")


def _yaml_str(value: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one)."""
    return json.dumps(value, ensure_ascii=False)


def _feature(arrow_type: pa.DataType) -> list[str] | None:
    """The YAML lines of a Hugging Face feature (after ``name:``) for an Arrow column type; None if unknown."""
    if pa.types.is_string(arrow_type):
        return ["dtype: string"]
    if pa.types.is_floating(arrow_type):
        return [f"dtype: float{arrow_type.bit_width}"]  # Arrow says "double" for float64
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return [f"dtype: {arrow_type}"]  # int32, bool: the same names in both
    if pa.types.is_timestamp(arrow_type):
        return [f"dtype: {arrow_type}"]  # timestamp[us, tz=UTC]
    if pa.types.is_list(arrow_type) and pa.types.is_string(arrow_type.value_type):
        return ["sequence: string"]
    return None


def _dataset_info(name: str, schema: pa.Schema) -> list[str]:
    """One ``dataset_info`` entry: the configuration's features (none if a column type has no feature
    here: ``datasets`` then reads the types from the files). No ``splits``: ``datasets`` wants their
    size in bytes as Arrow, which only reading every shard would tell; the row counts are in the body."""
    features = [(f.name, _feature(f.type)) for f in schema]
    if any(lines is None for _, lines in features):
        return []
    lines = [f"- config_name: {name}", "  features:"]
    for field_name, feature in features:
        lines += [f"  - name: {field_name}", *(f"    {line}" for line in feature or [])]
    return lines


def front_matter(out: Path, manifest: dict[str, Any]) -> list[str]:
    """The Hugging Face dataset-card YAML block (between ``---`` lines) of the corpus in ``out``."""
    counts = manifest["counts"]
    info = [line for name, _, schema in CONFIGS
            for line in _dataset_info(name, pair_schema(manifest) if name == "pairs" else schema)]
    lines = ["---", f"pretty_name: {_yaml_str(f'Synthetic questions: {out.name}')}",
             "license: unknown  # the logical forms' source and the model's training data set it; qgen does not know it",
             "language:", "- en", "task_categories:", "- text2text-generation", "- question-answering",
             "tags:", "- kbqa", "- synthetic", "- question-generation", "- qgen",
             "size_categories:", f"- {size_category(counts['pairs'])}", "configs:"]
    splits = manifest.get("splits")  # qgen.synth.template_split: the pairs as train / validation / test
    filled = [split for split, size in (splits or {}).get("splits", {}).items() if size["pairs"]]
    for name, glob, _ in CONFIGS:
        lines += [f"- config_name: {name}", *(["  default: true"] if name == "pairs" else []), "  data_files:"]
        if name == "pairs" and filled:  # datasets cannot read an empty split's file; no pairs: the glob, valid YAML
            lines += [line for split in filled for line in (f"  - split: {split}",
                                                            f"    path: {splits['folder']}/{split}.parquet")]
        else:
            lines += [f"  - split: {SPLIT}", f"    path: {glob}"]
    if info:
        lines += ["dataset_info:", *info]
    return lines + ["---", ""]


def model_facts(payload: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint's payload (``qgen.checkpoint``) records about its model, beyond the checksum:
    only keys it holds (``train`` stores the task, logical-form types and preprocessing when it is
    given them, its training settings and history; nothing names the training data's files)."""
    facts: dict[str, Any] = {}
    for key in ("name", "training_data", "task", "lf_types", "preprocessing", "pretrained_vectors"):
        if payload.get(key) not in (None, "", [], {}):
            facts[key] = payload[key]
    facts["vocabulary"] = {"source": len(payload["src_vocab"]), "target": len(payload["tgt_vocab"])}
    train_config = payload.get("train_config") or {}
    if train_config:
        facts["training"] = {k: train_config[k] for k in ("epochs", "batch_size", "learning_rate",
                                                          "teacher_forcing", "seed") if k in train_config}
    if "epoch" in payload:
        facts["epoch"] = int(payload["epoch"])
        history = {h.get("epoch"): h for h in payload.get("history") or [] if isinstance(h, dict)}
        if facts["epoch"] in history:
            facts["valid_loss"] = history[facts["epoch"]].get("valid_loss")
    return facts


def _model_section(model: dict[str, Any]) -> list[str]:
    """The model: its checksum and what its checkpoint records (never more)."""
    cfg, facts = model.get("config") or {}, model.get("about") or {}
    lines = ["## Model", "", f"- id: `{model['model_id']}` (sha256 of the checkpoint file)"]
    if facts.get("name"):
        lines.append(f"- name: {facts['name']}")
    lines.append(f"- training data: {facts['training_data']}" if facts.get("training_data") else
                 "- training data: not recorded in the checkpoint")
    if facts.get("task"):
        lines.append(f"- task: {facts['task']}")
    if facts.get("lf_types"):
        lines.append(f"- logical-form types it was trained on: {', '.join(facts['lf_types'])}")
    if facts.get("preprocessing"):
        lines.append("- preprocessing: " + ", ".join(f"{k} {v}" for k, v in facts["preprocessing"].items()))
    if cfg:
        lines.append(f"- architecture: copy `{cfg.get('copy')}`, memory `{cfg.get('memory')}`, coverage "
                     f"{cfg.get('coverage_dim')}, GRU layers {cfg.get('num_layers')}, hidden {cfg.get('hidden_size')}, "
                     f"embedding {cfg.get('embedding_dim')}")
    if facts.get("vocabulary"):
        lines.append(f"- vocabularies: {facts['vocabulary']['source']} source and {facts['vocabulary']['target']} "
                     "target tokens")
    if facts.get("training"):
        lines.append("- training: " + ", ".join(f"{k} {v}" for k, v in facts["training"].items())
                     + (f"; pretrained vectors {facts['pretrained_vectors']}" if facts.get("pretrained_vectors") else ""))
    if "epoch" in facts:
        loss = facts.get("valid_loss")
        lines.append(f"- checkpoint of epoch {facts['epoch']}"
                     + (f" (validation loss {loss:.3f} per target token)" if isinstance(loss, (int, float)) else ""))
    return lines + [""]


def sample_pairs(out: Path, manifest: dict[str, Any], seed: int, size: int) -> list[dict[str, Any]]:
    """``size`` pairs drawn with ``seed`` over the whole corpus; only the shards that hold them are read."""
    entries = manifest["shards"]
    total = sum(e["pairs"]["rows"] for e in entries)
    picks = sorted(random.Random(seed).sample(range(total), min(size, total)))
    rows: list[dict[str, Any]] = []
    start = 0
    for entry in entries:
        count = entry["pairs"]["rows"]
        wanted = [p - start for p in picks if start <= p < start + count]
        if wanted:
            table = pq.read_table(out / entry["pairs"]["path"], columns=SAMPLE_COLUMNS).take(wanted)
            rows.extend(table.to_pylist())
        start += count
    return rows


def _cell(value: Any, limit: int = 100) -> str:
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]


def _question_choice(settings: dict[str, Any], round_trip_tries: int | None = None, overcopy_aware: bool = True
                     ) -> str:
    """How each pair's question was chosen from the beam search, as one sentence; ``round_trip_tries``:
    how many audit-passing candidates the writer parsed back (a run with a round-trip parser);
    ``overcopy_aware``: without a round trip, the over-copy filter took part in the choice (synth-1.1 on)."""
    search = (f"a beam search of width {settings['beam']} (length-normalised log-probability, alpha "
              f"{settings['alpha']}{'; no word right after itself' if settings.get('no_repeat') else ''})")
    candidates = settings.get("candidates", 1)
    round_trip = (f" (with the round-trip filter on: of the first {round_trip_tries} distinct ones that pass and that "
                  "the over-copy filter keeps, the first that the parser reads back)"
                  if round_trip_tries and candidates > 1 else "")
    kept = ("" if round_trip or not overcopy_aware
            else " and that the over-copy filter keeps (else the first that passes the audit)")
    if settings.get("sampling"):
        drawn = f"{candidates} question(s) drawn from the model at temperature {settings['sampling']:g}"
        return (f"Each pair's question is, of {drawn}, the first that passes the faithfulness audit{kept}"
                f"{round_trip}, else the first")
    if candidates <= 1:
        return f"Each pair's question is the best of {search}"
    return (f"Each pair's question is, of the {candidates} best of {search}, the first that passes the "
            f"faithfulness audit{kept}{round_trip}, else the best")


def render_card(out: Path, manifest: dict[str, Any], seed: int, sample_size: int) -> str:
    counts, stats, settings, model = manifest["counts"], manifest["filter"], manifest["settings"], manifest["model"]
    thresholds = settings["thresholds"]
    tries = (manifest.get("round_trip_settings") or {}).get("tries")  # candidates the writer parsed back
    choice = _question_choice(settings, tries, overcopy_aware=not written_before_audit_column(manifest))
    lines = [
        *front_matter(out, manifest),
        f"# Synthetic questions: {out.name}", "",
        "Questions generated by qgen for logical forms without one (KBQA training data). "
        f"{choice}, written by the model `{model['model_id']}` (copy mode `{model['copy']}`); "
        "a pair is kept only when it passes the "
        "over-copy filter and, when a parser is given, the round-trip filter. Nothing was dropped silently: every input is a pair or a reject.", "",
        f"- created: {manifest['created_at']} (one timestamp per run, the `created_at` column)",
        f"- schema version: {manifest['schema_version']}; code version: {manifest.get('code_version', '')}",
        f"- seed: {settings['seed']}; shards: {len(manifest['shards'])} of up to {settings['shard_size']} inputs", "",
        *_model_section(model),
        "## Counts", "",
        f"inputs {counts['inputs']} = pairs {counts['pairs']} + rejects {counts['rejects']}", "",
        *_table(["stage", "rows"], [["pairs", counts["pairs"]]] + [
            [f"rejected: {stage}", counts["rejects_by_stage"][stage]] for stage in STAGES
            if stage in counts["rejects_by_stage"]]), "",
        "## Over-copy filter", "",
        "A question over-copies when a copyable token of the logical form (a word, not a function word) "
        "appears in it more often than in the logical form, or when an n-gram repeats.", "",
        *_table(["threshold", "value"], [[k, v] for k, v in thresholds.items() if k != "ignore_tokens"]), "",
        f"Ignored (never copyable) tokens: {' '.join(thresholds['ignore_tokens'])}", "",
        f"Judged {stats['judged']}, kept {stats['kept']}, filtered {stats['filtered']}; mean score of the "
        f"judged questions {_cell(stats['mean_score']) if stats['mean_score'] is not None else 'n/a'}.", "",
        *_table(["filter reason (leading)", "pairs"], sorted(stats["by_reason"].items())), "",
        *_table(["excess copies", "questions"], list(stats["overcopy"].items())), "",
        *_table(["repeated n-grams", "questions"], list(stats["repeated_ngrams"].items())), "",
        *_removed_sample(out, manifest, seed),
        *_round_trip_section(out, manifest, seed),
        *_audit_section(manifest),
        f"## Sample of pairs (seed {seed})", "",
        *_table(["id", "logical form", "question", "score", "copy fraction"],
                [[r["id"], r["logical_form"], r["question"], r["score"], r["copy_fraction"]]
                 for r in sample_pairs(out, manifest, seed, sample_size)]), "",
        "## Files and columns", "",
        "- `pairs/part-NNNNN.parquet`: " + ", ".join(f"`{f.name}` ({f.type})" for f in pair_schema(manifest)),
        "- `rejects/part-NNNNN.parquet`: " + ", ".join(f"`{f.name}` ({f.type})" for f in REJECT_SCHEMA),
        "- `manifest.json`: settings, counts, the model checksum, and per shard its rows and sha256", "",
        "## How to load", "",
        "```python",
        "import pandas as pd",
        'pairs = pd.read_parquet("pairs")  # from this directory; rejects the same way',
        "import pyarrow.dataset as ds",
        'table = ds.dataset("pairs", format="parquet").to_table()',
        "import duckdb",
        "duckdb.sql(\"SELECT question, logical_form FROM read_parquet('pairs/*.parquet')\")",
        "import polars as pl",
        'pl.read_parquet("pairs/*.parquet")',
        "import os",
        "from datasets import load_dataset  # its path in full: it refuses \".\"",
        'pairs = load_dataset(os.getcwd())  # train (or the template splits); load_dataset(os.getcwd(), "rejects")',
        "```", "",
        *_splits_text(manifest),
        "License: unknown. The logical forms come from this run's input (`source.json` describes it when a "
        "source sampled them) and the questions from the model above; their licenses, which qgen does not "
        "know, apply.", "",
        *_source_section(out),
    ]
    return "\n".join(lines)


def _source_section(out: Path) -> list[str]:
    """What sampled the logical forms, from ``source.json`` (``qgen.synth.run``): in the card whenever it
    is written, so that a card written again (``split_corpus``) keeps it."""
    path = out / "source.json"
    if not path.is_file() or path.is_symlink():
        return []
    source = json.loads(path.read_text(encoding="utf-8"))
    lines = ["## Source", "", f"- {source['kind']}: {source['description']}", f"- options: {source['options']}"]
    if source.get("sampler_stats"):
        lines.append("- sampler counts (every draw has one outcome): " +
                     ", ".join(f"{k} {v}" for k, v in source["sampler_stats"].items()))
    return lines + [""]


def _splits_text(manifest: dict[str, Any]) -> list[str]:
    """How ``datasets`` sees the corpus: one split of every pair, or the template splits."""
    splits = manifest.get("splits")
    if not splits:
        return ["With Hugging Face `datasets`, the front matter above declares two configurations: `pairs` (the "
                "default, `pairs/part-*.parquet`) and `rejects` (`rejects/part-*.parquet`); the two schemas differ, "
                f"so neither folder is read with the other. Each has one split, `{SPLIT}`, holding all its rows: the "
                "corpus is synthetic training data for a question-answering or semantic-parsing model, to be "
                "evaluated on real held-out questions, not on a part of itself.", ""]
    rows = [[name, s["pairs"], s["templates"]] for name, s in splits["splits"].items()]
    return ["With Hugging Face `datasets`, the front matter above declares two configurations: `pairs` (the "
            f"default) in three splits by logical-form template (`{splits['folder']}/<split>.parquet`: no template "
            "is in two splits, so a parser's test score is on query shapes it did not train on; fractions "
            f"{splits['fractions']}, seed {splits['seed']}; a split without pairs is left out), and `rejects` (`rejects/part-*.parquet`, one split "
            f"`{SPLIT}`). The pair shards under `pairs/` hold every pair as well.", "",
            *_table(["split", "pairs", "templates"], rows), ""]


def _removed_sample(out: Path, manifest: dict[str, Any], seed: int, size: int = 5) -> list[str]:
    """A sample of the pairs the over-copy filter removed, with the reason."""
    removed = sample_rejects(out, manifest, "filter", seed, size)
    if not removed:
        return []
    return ["Sample of pairs the over-copy filter removed:", "",
            *_table(["logical form", "question", "reason"],
                    [[r["logical_form"], r.get("question", ""), r["reject_reason"]] for r in removed]),
            ""]


def _round_trip_section(out: Path, manifest: dict[str, Any], seed: int, size: int = 5) -> list[str]:
    settings, stats = manifest.get("round_trip_settings"), manifest.get("round_trip") or {}
    if not settings:
        return ["## Round-trip filter", "", "Off: no parser was given (`--parser`).", ""]
    rules = ", ".join(f"{lf_type}: `{rule}`" for lf_type, rule in sorted(settings["rules"].items()))
    thresholds = settings.get("thresholds") or {"score": settings.get("threshold")}
    lines = ["## Round-trip filter", "",
             "Each question the over-copy filter kept was parsed back by a semantic parser trained on the same "
             f"data (`{settings['parser']}`) and kept when the parser reads it as its logical form"
             + (f" (with several candidates, the writer parsed back up to {settings['tries']} distinct ones that "
                "pass the audit and the over-copy filter, and wrote the first that the parser reads back)"
                if settings.get("tries") else "") + ". Rules per "
             f"logical-form type: {rules} (`exact`: a parse among the {settings['k']} best equals the logical form "
             "in canonical form; `score`: log p(logical form | question), length-normalised, is at least "
             f"{_cell(thresholds.get('score'))}; `token`: the least probable token of the logical form has log p "
             f"at least {_cell(thresholds.get('token'))}; `answers`: as `exact`, or a parse that counts another "
             "column over the same rows of the sampled table to the same answers; thresholds: the "
             f"{(settings.get('calibration') or {}).get('percentile', 5):g}th percentile of the parser's "
             "held-out real pairs, unless given).", "",
             f"Judged {stats.get('judged', 0)}, kept {stats.get('kept', 0)}, removed {stats.get('removed', 0)}.", ""]
    rejected = sample_rejects(out, manifest, "round_trip", seed, size)
    if rejected:
        lines += ["Sample of removed pairs:", "",
                  *_table(["logical form", "question", "parse", "score"],
                          [[r["logical_form"], r["question"], r["round_trip"]["parse"], r["round_trip"]["score"]]
                           for r in rejected]), ""]
    return lines


def _audit_section(manifest: dict[str, Any]) -> list[str]:
    audit = manifest.get("audit") or {}
    rate = audit.get("pass_rate")
    return ["## Faithfulness audit (kept pairs)", "",
            "Rule checks without a model (`qgen.synth.audit`): every condition value and entity name of the "
            "logical form is in the question, each comparison is stated in the right direction, each aggregate "
            "is stated.", "",
            f"Passed {audit.get('passed', 0)} of {audit.get('audited', 0)}"
            + (f" ({rate:.1%})." if rate is not None else ".")
            + ("" if written_before_audit_column(manifest) else " Each pair's `audit_failures` lists the checks its question fails (empty: passed); to keep only"
            " the audited pairs: `df[df.audit_failures.str.len() == 0]`."), "",
            *_table(["failed check", "pairs"], sorted((audit.get("failures") or {}).items())), ""]


def sample_rejects(out: Path, manifest: dict[str, Any], stage: str, seed: int, size: int) -> list[dict[str, Any]]:
    """Up to ``size`` rejects of ``stage``, seeded: each its input JSON (with question and verdict)
    plus ``reject_reason``."""
    import json

    found = []
    for entry in manifest["shards"]:
        table = pq.read_table(out / entry["rejects"]["path"], columns=["stage", "reason", "input"])
        for st, reason, text in zip(*(table.column(c).to_pylist() for c in ("stage", "reason", "input"))):
            if st == stage:
                found.append({**json.loads(text), "reject_reason": reason})
    random.Random(seed).shuffle(found)
    return found[:size]


def write_card(out: Path, manifest: dict[str, Any], seed: int, sample_size: int = 10) -> Path:
    """``out/README.md``, written through a temporary file (never through a link, see ``write_file``)."""
    return write_file(out / "README.md", render_card(out, manifest, seed, sample_size))
