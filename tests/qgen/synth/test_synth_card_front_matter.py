"""The corpus card's Hugging Face front matter: two configurations (pairs, the default; rejects) whose
globs match the shard files, one front matter after a rewrite, and ``datasets.load_dataset`` reading
each configuration with its own schema when ``datasets`` is installed (issue 21)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from test_synth_corpus import read_inputs, train_toy_generator, write_toy_inputs

from qgen.synth import synthesize
from qgen.synth.card import size_category, write_card
from qgen.synth.config import SynthesisConfig
from qgen.synth.schema import PAIR_SCHEMA, REJECT_SCHEMA

yaml = pytest.importorskip("yaml")

RUN = dict(shard_size=20, beam=2, seed=7, batch_size=8, device="cpu")
N_INPUTS = 60  # three shards; the toy inputs at 4, 13, 27, 41, 54 are rejects of each kind


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small corpus from a tiny generator trained as test_synth_corpus's (fewer epochs: its
    questions need not be good, only some pairs and some rejects)."""
    root = tmp_path_factory.mktemp("card")
    checkpoint = train_toy_generator(root / "model", epochs=30, metadata={"task": "generate", "lf_types": ["sparql"]})
    inputs = write_toy_inputs(root / "inputs.jsonl", N_INPUTS)
    synthesize(read_inputs(inputs), checkpoint, root / "corpus", SynthesisConfig(**RUN), log=lambda _: None)
    return root / "corpus"


def front_matter(card: str) -> tuple[dict[str, Any], str]:
    """The YAML block at the very start of the card, parsed, and the text after it."""
    assert card.startswith("---\n")
    block, body = card[4:].split("\n---\n", 1)
    return yaml.safe_load(block), body


def test_the_front_matter_declares_pairs_and_rejects_with_globs_matching_the_shards(corpus: Path) -> None:
    manifest = json.loads((corpus / "manifest.json").read_text())
    card = (corpus / "README.md").read_text()
    meta, body = front_matter(card)
    counts = manifest["counts"]
    assert counts["pairs"] > 0 and counts["rejects"] > 0
    assert meta["pretty_name"] == f"Synthetic questions: {corpus.name}"
    assert meta["license"] == "unknown" and meta["language"] == ["en"]
    assert {"kbqa", "synthetic"} <= set(meta["tags"])
    assert {"text2text-generation", "question-answering"} <= set(meta["task_categories"])
    assert meta["size_categories"] == [size_category(counts["pairs"])] == ["n<1K"]
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {"pairs", "rejects"} and configs["pairs"].get("default") is True
    assert not configs["rejects"].get("default")
    for kind in ("pairs", "rejects"):
        (files,) = configs[kind]["data_files"]
        assert files["split"] == "train"
        matched = sorted(str(p.relative_to(corpus)) for p in corpus.glob(files["path"]))
        assert matched == [entry[kind]["path"] for entry in manifest["shards"]] and len(matched) == 3
    info = {c["config_name"]: c for c in meta["dataset_info"]}
    for kind, schema in (("pairs", PAIR_SCHEMA), ("rejects", REJECT_SCHEMA)):
        assert [f["name"] for f in info[kind]["features"]] == schema.names
    assert {f["name"]: f.get("dtype") or f.get("sequence") for f in info["pairs"]["features"]} == {
        "id": "string", "lf_type": "string", "logical_form": "string", "lf_tokens": "string", "question": "string",
        "score": "float64", "overcopy": "int32", "copy_fraction": "float64", "audit_failures": "string", "answers": "string", "source": "string",
        "model_id": "string", "created_at": "timestamp[us, tz=UTC]"}
    # The body is the card as before, after the front matter; the model beyond its checksum.
    assert body.lstrip().startswith(f"# Synthetic questions: {corpus.name}")
    assert f"inputs {N_INPUTS} = pairs {counts['pairs']} + rejects {counts['rejects']}" in body
    assert "## Model" in body and manifest["model"]["model_id"] in body
    assert "- task: generate" in body and "logical-form types it was trained on: sparql" in body
    assert "- training data: not recorded in the checkpoint" in body
    assert manifest["model"]["about"]["lf_types"] == ["sparql"]


def test_a_rewritten_or_resumed_card_keeps_one_front_matter(corpus: Path, tmp_path: Path) -> None:
    manifest = json.loads((corpus / "manifest.json").read_text())
    before = (corpus / "README.md").read_text()
    write_card(corpus, manifest, seed=7)
    assert (corpus / "README.md").read_text() == before  # the same card, not a second front matter
    inputs = corpus.parent / "inputs.jsonl"
    synthesize(read_inputs(inputs), corpus.parent / "model" / "best.pt", corpus, SynthesisConfig(**RUN), log=lambda _: None)
    after = (corpus / "README.md").read_text()
    assert after.startswith("---\n") and after.splitlines().count("---") == 2
    assert after.splitlines().count("configs:") == 1
    assert front_matter(after)[0] == front_matter(before)[0]


def test_size_categories() -> None:
    assert [size_category(n) for n in (0, 999, 1000, 12_345, 999_999, 1_000_000, 5 * 10**9, 10**12)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "1B<n<10B", "n>1T"]


def test_datasets_loads_the_pairs_by_default_and_the_rejects_by_name(corpus: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    manifest = json.loads((corpus / "manifest.json").read_text())
    cache = str(tmp_path / "hf-cache")
    pairs = datasets.load_dataset(str(corpus), cache_dir=cache)
    assert list(pairs) == ["train"]
    assert pairs["train"].num_rows == manifest["counts"]["pairs"]
    assert pairs["train"].column_names == PAIR_SCHEMA.names
    assert pairs["train"].features["lf_tokens"].feature.dtype == "string"  # a list of strings, as in the files
    assert pairs["train"].features["created_at"].dtype == "timestamp[us, tz=UTC]"
    assert sorted(pairs["train"]["id"]) == sorted(pq.read_table(corpus / "pairs").column("id").to_pylist())
    rejects = datasets.load_dataset(str(corpus), "rejects", cache_dir=cache)
    assert rejects["train"].num_rows == manifest["counts"]["rejects"]
    assert rejects["train"].column_names == REJECT_SCHEMA.names
    assert sorted(rejects["train"]["stage"]) == sorted(pq.read_table(corpus / "rejects").column("stage").to_pylist())


def test_the_card_of_a_corpus_written_before_the_audit_column_declares_what_its_files_hold(
        corpus: Path, tmp_path: Path) -> None:
    """A synth-1.0 corpus (no ``audit_failures``; each question the first audit-passing one) whose card is
    rewritten (as a template split does) declares its own columns and its own choice rule."""
    import shutil

    old = tmp_path / "old"
    shutil.copytree(corpus, old)
    for shard in (old / "pairs").glob("*.parquet"):
        pq.write_table(pq.read_table(shard).drop_columns(["audit_failures"]), shard)
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["schema_version"] = manifest["settings"]["schema_version"] = "synth-1.0"
    write_card(old, manifest, seed=7)
    meta, body = front_matter((old / "README.md").read_text())
    [pairs] = [c for c in meta["dataset_info"] if c["config_name"] == "pairs"]
    assert [f["name"] for f in pairs["features"]] == [n for n in PAIR_SCHEMA.names if n != "audit_failures"]
    assert "audit_failures" not in body and "the over-copy filter keeps (else" not in body
    assert "the first that passes the faithfulness audit, else the best" in body
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset(str(old), cache_dir=str(tmp_path / "hf-cache"))
    assert loaded["train"].num_rows == manifest["counts"]["pairs"]


def test_the_cards_loading_code_runs_from_the_corpus_folder(corpus: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The "How to load" block, as a reader pastes it, in the corpus folder (``load_dataset(".")`` fails)."""
    pytest.importorskip("datasets")
    pytest.importorskip("duckdb")
    pytest.importorskip("polars")
    card = (corpus / "README.md").read_text()
    code = card.split("## How to load", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(corpus)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    names: dict = {}
    exec(compile(code, "card", "exec"), names)  # noqa: S102 - the card's own example
    pairs = json.loads((corpus / "manifest.json").read_text())["counts"]["pairs"]
    assert len(names["table"]) == pairs and names["pairs"]["train"].num_rows == pairs


def test_a_split_corpus_without_pairs_still_declares_its_files(corpus: Path) -> None:
    """Every split empty (a deduplicated run that kept nothing): the pairs configuration names the shards'
    glob, not an empty list that ``datasets`` cannot iterate."""
    from qgen.synth.card import front_matter as card_front_matter

    manifest = json.loads((corpus / "manifest.json").read_text())
    manifest["splits"] = {"by": "template", "folder": "splits",
                          "splits": {name: {"pairs": 0, "templates": 0} for name in ("train", "validation", "test")}}
    meta, _ = front_matter("\n".join(card_front_matter(corpus, manifest)) + "\n")
    pairs = next(c for c in meta["configs"] if c["config_name"] == "pairs")
    assert pairs["data_files"] == [{"split": "train", "path": "pairs/part-*.parquet"}]
