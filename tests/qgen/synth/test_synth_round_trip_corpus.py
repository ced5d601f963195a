"""The round-trip filter inside synthesis: what it removes becomes ``round_trip`` rejects with the
parser's verdict, the manifest and the card report it and the audit; a parser that cannot judge the
run's logical forms is refused before anything is written."""
from __future__ import annotations

import json
import sys
from itertools import repeat
from pathlib import Path

import pandas as pd
import pytest
from tiny_parser import CITIES, RELATIONS, sparql, train_tiny_parser

from qgen import cli
from qgen.datasets.records import RawExample
from qgen.synth import FilterThresholds, synthesize
from qgen.synth.config import SynthesisConfig
from qgen.synth.round_trip import RoundTripOptions, RoundTripSetupError

REPO = Path(__file__).resolve().parents[3]
RUN = dict(shard_size=4, beam=2, seed=3, batch_size=8, device="cpu")
QUIET = {"log": lambda _: None}
LENIENT = FilterThresholds(max_repeated_ngrams=1)  # the tiny generator repeats itself


def records() -> list[RawExample]:
    """Ten SPARQL inputs over seen and unseen names, and one that does not parse (a ``tokenize`` reject)."""
    names = CITIES + ["quito", "lima", "rome", "zagreb"]
    good = [RawExample(f"q{i}", "test", "sparql", sparql(i, RELATIONS[i % 2][0]), None, "toy", "{}",
                       names={f"m.0{i:04d}": name}) for i, name in enumerate(names)]
    return good + [RawExample("broken", "test", "sparql", "SELECT ?x WHERE { ?x ns:", None, "toy", "{}")]


@pytest.fixture(scope="module")
def parser(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tiny_parser(tmp_path_factory.mktemp("parser"))


def rejects_of(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "rejects")


def test_a_threshold_no_pair_can_reach_removes_every_kept_pair(tiny_checkpoint: Path, parser: Path,
                                                               tmp_path: Path) -> None:
    plain = synthesize(records(), tiny_checkpoint, tmp_path / "plain", SynthesisConfig(thresholds=LENIENT, **RUN), **QUIET)
    generated = pd.read_parquet(tmp_path / "plain" / "pairs")
    assert plain["counts"]["pairs"] == len(generated) == 10
    floor = float(generated["score"].median())  # the over-copy filter's score floor now drops about half
    passing = set(generated.loc[generated["score"] >= floor, "id"])
    out = tmp_path / "corpus"
    config = SynthesisConfig(thresholds=FilterThresholds(max_repeated_ngrams=1, min_score=floor),
                             round_trip=RoundTripOptions(str(parser), {"sparql": "score"}, threshold=0.0 + 1), **RUN)
    manifest = synthesize(records(), tiny_checkpoint, out, config, lf_types=["sparql"], **QUIET)
    counts = manifest["counts"]
    assert manifest["filter"]["kept"] == len(passing) and 0 < len(passing) < 10
    # length-normalised log-probabilities are <= 0 < 1: every pair the filter kept goes
    assert counts["pairs"] == 0 and counts["inputs"] == counts["pairs"] + counts["rejects"] == 11
    assert counts["rejects_by_stage"] == {"filter": 10 - len(passing), "round_trip": len(passing), "tokenize": 1}
    assert manifest["round_trip"] == {"judged": len(passing), "kept": 0, "removed": len(passing),
                                      "by_rule": {"score": {"judged": len(passing), "kept": 0}}}
    assert manifest["audit"]["audited"] == 0 and manifest["audit"]["pass_rate"] is None  # the audit reads kept pairs
    assert manifest["settings"]["round_trip"]["threshold"] == 1.0
    rejects = rejects_of(out)
    assert len(rejects) == counts["rejects"] and rejects["id"].is_unique
    tripped = rejects[rejects["stage"] == "round_trip"]
    assert set(tripped["id"]) == passing
    for _, row in tripped.iterrows():
        data = json.loads(row["input"])
        verdict = data["round_trip"]
        assert verdict["rule"] == "score" and isinstance(verdict["parse"], str)
        assert verdict["score"] < 1.0 and f"{verdict['score']:.4f} below 1.0000" in row["reason"]
        assert data["question"] and data["logical_form"].startswith("PREFIX ns:")
    card = (out / "README.md").read_text()
    assert "## Round-trip filter" in card and f"removed {len(passing)}" in card
    assert "## Faithfulness audit" in card
    # A sample of each filter's removed pairs, with what exposed them.
    assert "Sample of pairs the over-copy filter removed:" in card and "Sample of removed pairs:" in card
    overcopied = rejects[rejects["stage"] == "filter"]["reason"].iloc[0]
    assert overcopied.split(":")[0] in card


def test_a_threshold_every_pair_reaches_removes_nothing(tiny_checkpoint: Path, parser: Path, tmp_path: Path) -> None:
    config = SynthesisConfig(thresholds=LENIENT, round_trip=RoundTripOptions(str(parser), {"sparql": "score"},
                                                                             threshold=-1e9), **RUN)
    manifest = synthesize(records(), tiny_checkpoint, tmp_path / "corpus", config, **QUIET)
    counts = manifest["counts"]
    assert "round_trip" not in counts["rejects_by_stage"]
    assert counts["pairs"] == manifest["filter"]["kept"] > 0
    assert manifest["round_trip"]["judged"] == manifest["round_trip"]["kept"] == counts["pairs"]
    assert manifest["audit"]["audited"] == counts["pairs"]
    assert 0.0 <= manifest["audit"]["pass_rate"] <= 1.0
    assert len(pd.read_parquet(tmp_path / "corpus" / "pairs")) == counts["pairs"]
    assert "## Faithfulness audit" in (tmp_path / "corpus" / "README.md").read_text()


def test_a_parser_for_other_logical_forms_is_refused_before_the_run(tiny_checkpoint: Path, parser: Path,
                                                                    tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    with pytest.raises(RoundTripSetupError, match="cannot judge sql"):
        synthesize(records(), tiny_checkpoint, out, SynthesisConfig(round_trip=RoundTripOptions(str(parser)), **RUN),
                   lf_types=["sql"], **QUIET)
    assert not (out / "manifest.json").exists() and not (out / "pairs").exists()


def test_synthesize_command_refuses_a_sparql_parser_for_tables(tiny_checkpoint: Path, parser: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "corpus"
    monkeypatch.setattr(sys, "argv", ["qgen", "synthesize", "--checkpoint", str(tiny_checkpoint), "--out", str(out),
                                      "--parser", str(parser), "--count", "5", "--from-tables",
                                      str(REPO / "tests" / "fixtures" / "samplers" / "lighthouses.csv")])
    with pytest.raises(SystemExit) as exited:
        cli.run()  # the console entry point: one line on stderr, no traceback
    assert exited.value.code != 0
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: RoundTripSetupError: ") and "cannot judge sql" in lines[0]
    assert "wrote" not in captured.out
    assert not (out / "manifest.json").exists() and not (out / "pairs").exists()


@pytest.mark.parametrize("rule, message", [("sql=bogus", "must be one of exact, score, token, answers"),
                                           ("graph=exact", "unknown logical-form type"),
                                           ("sparql=answers", "answers runs SQL parses only")])
def test_a_bad_round_trip_rule_is_a_usage_error_before_the_run(tiny_checkpoint: Path, parser: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str], rule: str,
                                                               message: str) -> None:
    out = tmp_path / "corpus"
    line = _usage_error(tiny_checkpoint, out, ["--parser", str(parser), "--round-trip-rule", rule], monkeypatch, capsys)
    assert line.startswith("error: --round-trip-rule: ") and message in line


@pytest.mark.parametrize("options, message", [
    (["--round-trip-rule", "sparql=exact", "--no-round-trip"], "but --no-round-trip is given"),
    (["--round-trip-rule", "sparql=bogus"], "but no parser is beside the model"),
    (["--round-trip-threshold", "token=-6"], "but no parser is beside the model"),
    (["--round-trip-threshold", "exact=-6"], "the floor of the score or token rule, got exact='-6'"),
    (["--round-trip-threshold", "token=low"], "with a number, got token='low'")])
def test_round_trip_options_that_cannot_apply_are_usage_errors(tiny_checkpoint: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str], options: list[str],
                                                              message: str) -> None:
    """Without a parser the filter cannot run: its options are refused, not silently left unused."""
    out = tmp_path / "corpus"
    line = _usage_error(tiny_checkpoint, out, options, monkeypatch, capsys)
    assert line.startswith("error: --round-trip-") and message in line


def _usage_error(checkpoint: Path, out: Path, options: list[str], monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> str:
    """``qgen synthesize`` over the lighthouse table with ``options``: it must exit 2 with one line on
    stderr (returned) and write nothing."""
    monkeypatch.setattr(sys, "argv", ["qgen", "synthesize", "--checkpoint", str(checkpoint), "--out", str(out),
                                      "--count", "5", *options, "--from-tables",
                                      str(REPO / "tests" / "fixtures" / "samplers" / "lighthouses.csv")])
    with pytest.raises(SystemExit) as exited:
        cli.run()
    assert exited.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and not out.exists()
    return lines[0]


@pytest.mark.parametrize(("threshold", "removed"), [(1.0, True), (-1e9, False)])
def test_with_candidates_the_writer_judges_and_the_corpus_reports_its_verdicts(
        tiny_checkpoint: Path, parser: Path, tmp_path: Path, threshold: float, removed: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With several candidates a logical form's questions are judged in the writer (qgen.synth.generator);
    the corpus keeps or rejects each written question by that verdict, and counts it once."""
    import qgen.synth.round_trip as round_trip_module

    in_writer: list[int] = []  # the writer reads judge_pairs from the module when it judges
    real_judge_pairs = round_trip_module.judge_pairs
    monkeypatch.setattr(round_trip_module, "judge_pairs",
                        lambda judge, pairs: in_writer.append(len(pairs)) or real_judge_pairs(judge, pairs))
    config = SynthesisConfig(thresholds=LENIENT, candidates=2, round_trip=RoundTripOptions(
        str(parser), {"sparql": "score"}, threshold=threshold), **RUN)
    manifest = synthesize(records(), tiny_checkpoint, tmp_path / "corpus", config, **QUIET)
    counts = manifest["counts"]
    kept_by_filter = manifest["filter"]["kept"]
    assert counts["inputs"] == counts["pairs"] + counts["rejects"] == 11 and kept_by_filter > 0
    assert manifest["round_trip"]["judged"] == kept_by_filter  # one verdict per written question
    assert sum(in_writer) >= 10  # every generated question at least, judged in the writer
    if removed:
        assert counts["pairs"] == 0 and counts["rejects_by_stage"]["round_trip"] == kept_by_filter
        tripped = rejects_of(tmp_path / "corpus").query("stage == 'round_trip'")
        verdicts = [json.loads(row)["round_trip"] for row in tripped["input"]]
        assert all(v["rule"] == "score" and v["score"] < 1.0 for v in verdicts)
    else:
        assert counts["pairs"] == kept_by_filter == manifest["round_trip"]["kept"]


def test_the_card_says_how_the_round_trip_chose_among_the_candidates(tiny_checkpoint: Path, parser: Path,
                                                                     tmp_path: Path) -> None:
    config = SynthesisConfig(thresholds=LENIENT, candidates=2, round_trip=RoundTripOptions(
        str(parser), {"sparql": "score"}, threshold=-1e9), **RUN)
    manifest = synthesize(records(), tiny_checkpoint, tmp_path / "corpus", config, **QUIET)
    assert manifest["round_trip_settings"]["tries"] == 3
    card = (tmp_path / "corpus" / "README.md").read_text()
    assert ("the first that passes the faithfulness audit (with the round-trip filter on: of the first 3 distinct "
            "ones that pass and that the over-copy filter keeps, the first that the parser reads back), else the best") in card
    assert "the writer parsed back up to 3 distinct ones that pass the audit and the over-copy filter" in card
    assert manifest["settings"]["round_trip_tries"] == 3  # a corpus begun with another rule does not resume


def test_shards_written_from_threads_of_one_process_give_the_serial_corpus(
        tiny_checkpoint: Path, parser: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task runner may write shards from several threads of one process; they share the process's
    writer (and its per-shard round-trip state), so ``write_shard`` writes one shard at a time there and
    the corpus is the serial one."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import qgen.synth.corpus as corpus_module

    config = SynthesisConfig(thresholds=LENIENT, candidates=2, round_trip=RoundTripOptions(
        str(parser), {"sparql": "score"}, threshold=-1.5), **RUN)
    serial = synthesize(records(), tiny_checkpoint, tmp_path / "serial", config, **QUIET)
    running, most, writers = [0], [0], set()
    real_write_job = corpus_module._write_job

    def counted(*args, **kwargs):
        writers.add(threading.get_ident())  # the thread that writes (and judges) this shard
        running[0] += 1
        most[0] = max(most[0], running[0])
        try:
            return real_write_job(*args, **kwargs)
        finally:
            running[0] -= 1

    monkeypatch.setattr(corpus_module, "_write_job", counted)
    # 11 inputs in shards of 4: three shards, each handed to its own pool thread (they meet at the barrier
    # before write_shard, whose lock then lets one write at a time)
    started = threading.Barrier(3, timeout=60)

    def in_its_own_thread(write, job):
        started.wait()
        return write(job)

    with ThreadPoolExecutor(3) as pool:
        threaded = synthesize(records(), tiny_checkpoint, tmp_path / "threaded", config,
                              map_shards=lambda write, jobs: pool.map(in_its_own_thread, repeat(write), list(jobs)),
                              **QUIET)
    assert len(writers) == 3 and threading.get_ident() not in writers  # map_shards ignored: one thread, this one
    assert most[0] == 1  # one shard at a time
    assert threaded["counts"] == serial["counts"] and threaded["round_trip"] == serial["round_trip"]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "serial" / "pairs").drop(columns="created_at"),
                                  pd.read_parquet(tmp_path / "threaded" / "pairs").drop(columns="created_at"))


def test_a_generator_or_a_missing_path_as_the_parser_is_a_usage_error(tiny_checkpoint: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """As a parser given as --model is: refused before any work, exit 2."""
    out = tmp_path / "corpus"
    line = _usage_error(tiny_checkpoint, out, ["--parser", str(tiny_checkpoint)], monkeypatch, capsys)
    assert line == (f"error: --parser {tiny_checkpoint}: a question generator, not a parser (train one with qgen "
                    "train --task parse, or leave --parser out)")
    line = _usage_error(tiny_checkpoint, out, ["--parser", str(tmp_path / "nonesuch.pt")], monkeypatch, capsys)
    assert line == f"error: --parser {tmp_path / 'nonesuch.pt'}: no such file or folder"
