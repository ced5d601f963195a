"""synthesize: every input accounted for, four readers agree, kill -9 and resume gives the same rows."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import torch

from parsers import tokenize_lf
from parsers.tokens import nl_tokens
from qgen.checkpoint import file_checksum
from qgen.data import Pair
from qgen.datasets.records import RawExample
from qgen.metrics import immediate_repeat_share
from qgen.model import ModelConfig
from qgen.synth import CorpusError, synthesize
from qgen.synth.config import SynthesisConfig
from qgen.train import TrainConfig, train

REPO = Path(__file__).resolve().parents[3]
TRAIN_NAMES = ["bali", "paris", "new york", "porto", "las palmas", "seville", "nantes", "san jose", "krakow", "budapest"]
RELATIONS = [("capital", "what is the capital of {} ?"), ("mayor", "who is the mayor of {} ?")]
UNSEEN = ["oslo", "zagreb", "lima", "kuala lumpur", "rome", "quito", "bern"]
RUN = dict(shard_size=20, beam=4, seed=7, batch_size=8, device="cpu")
CONFIG = SynthesisConfig(**RUN)
N_INPUTS = 200


def sparql(i: int, relation: str) -> str:
    return f"PREFIX ns: <http://rdf.freebase.com/ns/> SELECT ?x WHERE {{ ns:m.0{i:04d} ns:location.{relation} ?x }}"


def toy_input(i: int) -> RawExample:
    """Mostly good LFs (seen and unseen names), and at fixed positions each kind of bad input."""
    relation = RELATIONS[i % 2][0]
    name = "what" if i % 10 == 4 else (UNSEEN + TRAIN_NAMES)[i % 17]  # "what is the capital of what ?" over-copies
    ident = "q10" if i == 150 else "" if i == 177 else f"q{i}"  # a duplicate id and a missing one
    record = RawExample(ident, "test", "sparql", sparql(i, relation), None, "toy", "{}",
                        names={f"m.0{i:04d}": name}, answers=[f"answer {i}"])
    if i % 50 == 13:
        return replace(record, logical_form="SELECT ?x WHERE { ?x ns:")
    if i % 50 == 27:
        return replace(record, names={})
    if i % 50 == 41:
        return replace(record, load_error="TimeoutError: the KB query timed out after 30 s")
    return record


def read_inputs(path: Path) -> list[RawExample]:
    return [RawExample(**json.loads(line)) for line in path.read_text().splitlines()]


def train_toy_generator(out: Path, epochs: int, metadata: dict | None = None) -> Path:
    """A tiny Copy + Scratchpad (extended) generator on the toy pairs; its best.pt."""
    torch.set_num_threads(1)
    pairs = [Pair(f"{n}-{r}", tokenize_lf(sparql(i, r), "sparql", names={f"m.0{i:04d}": n}).tokens,
                  nl_tokens(q.format(n)), n) for i, n in enumerate(TRAIN_NAMES) for r, q in RELATIONS]
    cfg = ModelConfig(embedding_dim=16, hidden_size=32, num_layers=1, dropout=0.0, copy="extended",
                      coverage_dim=10, memory="scratchpad")
    train(pairs, pairs[:4], cfg, TrainConfig(epochs=epochs, batch_size=20, learning_rate=1e-2, teacher_forcing=1.0,
                                             seed=3), out, log=lambda _: None, metadata=metadata)
    return out / "best.pt"


def write_toy_inputs(path: Path, count: int) -> Path:
    path.write_text("".join(json.dumps(asdict(toy_input(i))) + "\n" for i in range(count)))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny Copy + Scratchpad (extended) checkpoint, the inputs as JSON Lines, one uninterrupted run."""
    root = tmp_path_factory.mktemp("synth")
    train_toy_generator(root / "model", epochs=80)
    inputs = write_toy_inputs(root / "inputs.jsonl", N_INPUTS)
    synthesize(read_inputs(inputs), root / "model" / "best.pt", root / "straight", CONFIG, log=lambda _: None)
    return {"root": root, "checkpoint": root / "model" / "best.pt", "inputs": inputs, "straight": root / "straight"}


def rows(corpus: Path, kind: str, keep_created_at: bool = False) -> pa.Table:
    table = pq.read_table(corpus / kind)
    if kind == "pairs" and not keep_created_at:
        table = table.drop_columns(["created_at"])  # the run's timestamp: one per run
    return table.sort_by([("id", "ascending"), ("reason", "ascending")] if kind == "rejects" else "id")


def test_every_input_is_a_pair_or_a_reject_with_its_reason(setup: dict[str, Path]) -> None:
    corpus = setup["straight"]
    manifest = json.loads((corpus / "manifest.json").read_text())
    pairs, rejects = rows(corpus, "pairs"), rows(corpus, "rejects")
    counts = manifest["counts"]
    assert counts["inputs"] == N_INPUTS == counts["pairs"] + counts["rejects"] == pairs.num_rows + rejects.num_rows
    assert manifest["status"] == "complete" and len(manifest["shards"]) == N_INPUTS // RUN["shard_size"]
    assert manifest["model"]["checksum"] == file_checksum(setup["checkpoint"]) and manifest["settings"]["seed"] == 7
    assert len(set(pairs.column("id").to_pylist())) == pairs.num_rows  # ids unique
    by_id = {r["id"]: r for r in rejects.to_pylist() if r["id"] != "q10"}
    assert by_id["q13"]["stage"] == "tokenize" and by_id["q13"]["reason"].startswith("SparqlSyntaxError")
    assert by_id["q27"]["stage"] == "unnamed_entity" and "<e0>" in by_id["q27"]["reason"]
    assert by_id["q41"]["stage"] == "load" and "timed out" in by_id["q41"]["reason"]
    # q4's best question over-copies; a later one of its beam passes the audit and the filter and is written
    [q4] = [p for p in pairs.to_pylist() if p["id"] == "q4"]
    assert q4["overcopy"] == 0 and not q4["audit_failures"] and "q4" not in by_id
    best_only = synthesize(read_inputs(setup["inputs"])[:20], setup["checkpoint"], setup["root"] / "best-only",
                           replace(CONFIG, candidates=1), log=lambda _: None)
    assert best_only["counts"]["rejects_by_stage"]["filter"] >= 1
    [q4] = [r for r in rows(setup["root"] / "best-only", "rejects").to_pylist() if r["id"] == "q4"]
    assert q4["stage"] == "filter" and q4["reason"].startswith("overcopy: 1 excess copies")
    assert json.loads(q4["input"])["question"] == "what is the capital of what ?"
    duplicate = [r for r in rejects.to_pylist() if r["id"] == "q10" and r["stage"] == "input"]
    assert len(duplicate) == 1 and "first at input position 10" in duplicate[0]["reason"]
    assert "input-000000177" in set(pairs.column("id").to_pylist()) | set(by_id)
    assert set(pq.read_table(corpus / "pairs").column("model_id").to_pylist()) == {manifest["model"]["model_id"]}
    assert sum(manifest["counts"]["rejects_by_stage"].values()) == rejects.num_rows
    card = (corpus / "README.md").read_text()
    assert f"inputs {N_INPUTS} = pairs {pairs.num_rows} + rejects {rejects.num_rows}" in card
    assert "pd.read_parquet" in card and "## Sample of pairs" in card
    assert "| overcopy |" in (setup["root"] / "best-only" / "README.md").read_text()  # its rejects by reason


def test_each_pair_carries_its_audit_and_the_manifest_counts_the_same(setup: dict[str, Path]) -> None:
    from qgen.synth.audit import audit_pair

    corpus = setup["straight"]
    manifest = json.loads((corpus / "manifest.json").read_text())
    pairs = rows(corpus, "pairs").to_pylist()
    assert manifest["schema_version"] == "synth-1.1"
    for pair in pairs:
        audit = audit_pair(pair["lf_type"], pair["logical_form"], pair["lf_tokens"], pair["question"])
        assert pair["audit_failures"] == list(audit.failures), pair
    passed = sum(not pair["audit_failures"] for pair in pairs)
    assert (manifest["audit"]["audited"], manifest["audit"]["passed"]) == (len(pairs), passed)
    assert 0 < passed < len(pairs)  # the toy model's questions are of both kinds


def _canonical(records: list[dict[str, Any]]) -> list[tuple]:
    return sorted((r["id"], r["question"], r["score"], r["overcopy"], r["copy_fraction"], tuple(r["lf_tokens"]),
                   tuple(r["answers"]), pd.Timestamp(r["created_at"]).tz_convert("UTC")) for r in records)


def test_pandas_pyarrow_duckdb_and_polars_read_the_same_rows(setup: dict[str, Path]) -> None:
    pairs_dir = setup["straight"] / "pairs"
    frame = pd.read_parquet(pairs_dir)
    by_pandas = _canonical([{**r, "lf_tokens": list(r["lf_tokens"]), "answers": list(r["answers"])}
                            for r in frame.to_dict("records")])
    by_pyarrow = _canonical(ds.dataset(pairs_dir, format="parquet").to_table().to_pylist())
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    result = con.execute(f"SELECT * FROM read_parquet('{pairs_dir}/*.parquet')")
    names = [d[0] for d in result.description]
    by_duckdb = _canonical([dict(zip(names, row)) for row in result.fetchall()])
    by_polars = _canonical(pl.read_parquet(f"{pairs_dir}/*.parquet").to_dicts())
    assert len(by_pandas) > 100 and by_pandas == by_pyarrow == by_duckdb == by_polars
    created = json.loads((setup["straight"] / "manifest.json").read_text())["created_at"]
    assert {row[-1] for row in by_pandas} == {pd.Timestamp(created)}
    assert len(pd.read_parquet(setup["straight"] / "rejects")) == N_INPUTS - len(by_pandas)


KILLABLE = """
import json, sys, time
import torch
torch.set_num_threads(1)
from qgen.datasets.records import RawExample
from qgen.synth import synthesize
from qgen.synth.config import SynthesisConfig
inputs, checkpoint, out, run = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
def records():  # slowed down after two shards, so that the kill lands mid-run
    for position, line in enumerate(open(inputs)):
        if position >= 40:
            time.sleep(0.02)
        yield RawExample(**json.loads(line))
synthesize(records(), checkpoint, out, SynthesisConfig(**run), log=lambda _: None)
"""


def test_kill_9_mid_run_then_resume_writes_the_uninterrupted_rows(setup: dict[str, Path]) -> None:
    out = setup["root"] / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(setup["inputs"]), str(setup["checkpoint"]), str(out),
                             json.dumps(RUN)], cwd=REPO, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    finished = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            finished = len(json.loads((out / "manifest.json").read_text())["shards"])
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            finished = 0
        if finished >= 2:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"  # type: ignore[union-attr]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = json.loads((out / "manifest.json").read_text())
    assert killed["status"] == "running" and 2 <= len(killed["shards"]) < N_INPUTS // RUN["shard_size"]
    log: list[str] = []
    manifest = synthesize(read_inputs(setup["inputs"]), setup["checkpoint"], out, CONFIG, log=log.append)
    redone = [line for line in log if line.startswith("shard ")]
    assert len(redone) == N_INPUTS // RUN["shard_size"] - len(killed["shards"])  # finished shards were skipped
    assert manifest["created_at"] == killed["created_at"] and manifest["status"] == "complete"
    for kind in ("pairs", "rejects"):
        assert rows(out, kind).equals(rows(setup["straight"], kind)), kind
    resumed = rows(out, "pairs", keep_created_at=True)
    assert set(resumed.column("created_at").to_pylist()) == {pd.Timestamp(killed["created_at"]).to_pydatetime()}
    assert len(set(resumed.column("id").to_pylist())) == resumed.num_rows
    assert not (out / ".tmp").exists()


def test_half_written_or_damaged_shards_are_redone(setup: dict[str, Path]) -> None:
    out = setup["root"] / "damaged"
    shutil.copytree(setup["straight"], out)
    before = {kind: rows(out, kind, keep_created_at=True) for kind in ("pairs", "rejects")}
    damaged = out / "pairs" / "part-00003.parquet"
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])  # truncated
    (out / "rejects" / "part-00005.parquet").unlink()  # killed between the two files of a shard
    (out / ".tmp" / "pairs").mkdir(parents=True)
    (out / ".tmp" / "pairs" / "part-00006.parquet.tmp-999").write_bytes(b"PAR1 half")  # a sink killed mid-write
    log: list[str] = []
    manifest = synthesize(read_inputs(setup["inputs"]), setup["checkpoint"], out, CONFIG, log=log.append)
    assert [line.split(":")[0] for line in log if line.startswith("shard ")] == ["shard 3", "shard 5"]
    for kind in ("pairs", "rejects"):
        assert rows(out, kind, keep_created_at=True).equals(before[kind]), kind
    for entry in manifest["shards"]:
        assert all(file_checksum(out / entry[k]["path"]) == entry[k]["sha256"] for k in ("pairs", "rejects"))
    assert not (out / ".tmp").exists()


def test_no_repeat_decodes_every_shard_with_it_and_says_so(setup: dict[str, Path], no_repeat_seen: list) -> None:
    out = setup["root"] / "no_repeat"
    manifest = synthesize(read_inputs(setup["inputs"])[:30], setup["checkpoint"], out, replace(CONFIG, no_repeat=True),
                          log=lambda _: None)
    assert no_repeat_seen and set(no_repeat_seen) == {True}
    assert manifest["settings"]["no_repeat"] is True and "no word right after itself" in (out / "README.md").read_text()
    questions = rows(out, "pairs").column("question").to_pylist()
    assert immediate_repeat_share([q.split() for q in questions]) == 0, questions


def test_a_finished_run_is_a_no_op_and_other_settings_or_input_are_refused(setup: dict[str, Path]) -> None:
    out = setup["root"] / "refused"
    shutil.copytree(setup["straight"], out)
    inputs = read_inputs(setup["inputs"])
    log: list[str] = []
    synthesize(inputs, setup["checkpoint"], out, CONFIG, log=log.append)
    assert not [line for line in log if line.startswith("shard ")]
    with pytest.raises(CorpusError, match=r"other settings \(beam: 4 -> 2, "):  # what changed, and how
        synthesize(inputs, setup["checkpoint"], out, replace(CONFIG, beam=2), log=lambda _: None)
    with pytest.raises(CorpusError, match="other settings .*no_repeat"):
        synthesize(inputs, setup["checkpoint"], out, replace(CONFIG, no_repeat=True), log=lambda _: None)
    changed = inputs[:5] + [replace(inputs[5], logical_form=sparql(5, "capital"))] + inputs[6:]
    with pytest.raises(CorpusError, match="input of shard 0"):
        synthesize(changed, setup["checkpoint"], out, CONFIG, log=lambda _: None)
    with pytest.raises(CorpusError, match="input changed"):
        synthesize(inputs[:100], setup["checkpoint"], out, CONFIG, log=lambda _: None)
    small = setup["root"] / "small"
    synthesize(inputs[:10], setup["checkpoint"], small, CONFIG, log=lambda _: None)  # one shard of 10, not full
    with pytest.raises(CorpusError, match=r"shard 0 was written with 10 inputs and would now hold 15: a finished "
                                          r"corpus grows by whole shards \(--shard-size 20\) only"):
        synthesize(inputs[:15], setup["checkpoint"], small, CONFIG, log=lambda _: None)
    stray = setup["root"] / "stray"
    (stray / "pairs").mkdir(parents=True)
    (stray / "pairs" / "part-00000.parquet").write_bytes(b"")
    with pytest.raises(CorpusError, match="no manifest"):
        synthesize(inputs, setup["checkpoint"], stray, CONFIG, log=lambda _: None)


def test_candidates_reach_the_writer_the_manifest_and_the_card(setup: dict[str, Path]) -> None:
    out = setup["root"] / "candidates"
    manifest = synthesize(read_inputs(setup["inputs"])[:10], setup["checkpoint"], out,
                          replace(CONFIG, beam=3, candidates=3), log=lambda _: None)
    assert manifest["settings"]["candidates"] == 3 and manifest["counts"]["inputs"] == 10
    card = (out / "README.md").read_text()
    assert "of the 3 best of a beam search of width 3 (length-normalised log-probability, alpha" in card
    assert ("the first that passes the faithfulness audit and that the over-copy filter keeps (else the first "
            "that passes the audit), else the best") in card
    with pytest.raises(ValueError, match="candidates must be between 1 and the beam size 3, got 4"):
        replace(CONFIG, beam=3, candidates=4)
    # by default the whole beam; 1: the beam's best alone, as before candidates existed
    assert [SynthesisConfig(beam=b).writer_options()["candidates"] for b in (2, 4)] == [2, 4]
    assert SynthesisConfig(candidates=1).writer_options()["candidates"] == 1


def test_sampled_candidates_are_recorded_and_each_shard_draws_the_same_again(setup: dict[str, Path]) -> None:
    """With sampling the draws come from torch's generator, seeded per shard: a run written again (the
    writer kept loaded in between) gives the same questions, and so does one shard written again alone;
    the draws are really drawn (not the beam's) and follow the seed."""
    inputs = read_inputs(setup["inputs"])[:12]
    config = replace(CONFIG, candidates=3, sampling=1.5, shard_size=4)
    first = synthesize(inputs, setup["checkpoint"], setup["root"] / "sampled-a", config, log=lambda _: None)
    synthesize(inputs, setup["checkpoint"], setup["root"] / "sampled-b", config, log=lambda _: None)
    assert first["settings"]["sampling"] == 1.5 and first["settings"]["candidates"] == 3
    # the same inputs by beam search (sampling 0) and with sampling under another seed
    synthesize(inputs, setup["checkpoint"], setup["root"] / "sampled-beam", replace(config, sampling=0.0),
               log=lambda _: None)
    synthesize(inputs, setup["checkpoint"], setup["root"] / "sampled-seed", replace(config, seed=8), log=lambda _: None)

    def questions(name: str, part: str = "") -> dict[str, str]:
        table = pd.read_parquet(setup["root"] / name / "pairs" / part)
        return dict(zip(table["id"], table["question"]))

    assert questions("sampled-a") == questions("sampled-b") and len(questions("sampled-a")) >= 6
    assert questions("sampled-a") != questions("sampled-beam")  # sampling ignored: the beam's questions
    assert questions("sampled-a") != questions("sampled-seed")  # the seed ignored: the same draws
    # Shard 1 alone (its files removed, the corpus resumed): the same rows as in the full run, where it
    # came after shard 0's draws; a generator seeded once per run (or not at all) draws other ones.
    shutil.copytree(setup["root"] / "sampled-a", setup["root"] / "sampled-one")
    for kind in ("pairs", "rejects"):
        (setup["root"] / "sampled-one" / kind / "part-00001.parquet").unlink()
    log: list[str] = []
    synthesize(inputs, setup["checkpoint"], setup["root"] / "sampled-one", config, log=log.append)
    assert [line.split(":")[0] for line in log if line.startswith("shard ")] == ["shard 1"]
    alone = questions("sampled-one", "part-00001.parquet")
    assert alone and alone == questions("sampled-a", "part-00001.parquet")
    assert questions("sampled-one") == questions("sampled-a")
    card = (setup["root"] / "sampled-a" / "README.md").read_text()
    assert "of 3 question(s) drawn from the model at temperature 1.5, the first that passes" in card
    assert SynthesisConfig(sampling=0.7, candidates=8).writer_options()["sampling"] == 0.7  # more draws than the beam
    with pytest.raises(ValueError, match="temperature"):
        SynthesisConfig(sampling=-1.0)


def test_a_refused_resume_names_a_nested_setting_by_its_path() -> None:
    from qgen.synth.corpus import _changed_settings

    before = {"beam": 4, "round_trip": {"k": 1, "rules": {"sql": "answers"}}, "filter": [1, 2]}
    now = {"beam": 4, "round_trip": {"k": 4, "rules": {"sql": "answers"}}, "filter": [1, 3], "seed": 2}
    assert _changed_settings(before, now) == ["filter", "round_trip.k: 1 -> 4", "seed: None -> 2"]
