"""--dedup-against's folders: a corpus, a folder of corpora, a folder with none yet, one that is missing."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from qgen.synth.dedup import known_logical_forms


def _corpus(folder: Path, *logical_forms: str) -> Path:
    (folder / "pairs").mkdir(parents=True)
    pd.DataFrame({"logical_form": list(logical_forms)}).to_parquet(folder / "pairs" / "shard-00000.parquet")
    return folder


def test_a_folder_of_corpora_gives_their_logical_forms_and_skips_the_runs_own(tmp_path: Path) -> None:
    _corpus(tmp_path / "runs" / "a", "SELECT  x FROM t", "SELECT y FROM t")
    _corpus(tmp_path / "runs" / "b", "SELECT z FROM t")
    known, corpora = known_logical_forms([tmp_path / "runs"], own=tmp_path / "runs" / "b")
    assert known == {"SELECT x FROM t", "SELECT y FROM t"} and corpora == [str(tmp_path / "runs" / "a")]


def test_the_logical_forms_an_earlier_run_rejected_are_known_too(tmp_path: Path) -> None:
    """Those its filters judged: else they are drawn and rejected again, and counted as inputs of both corpora."""
    import json

    corpus = _corpus(tmp_path / "a", "SELECT x FROM t")
    (corpus / "rejects").mkdir()
    inputs = [json.dumps({"id": "r1", "logical_form": "SELECT  w FROM t"}), "not json", json.dumps({"id": "r2"}),
              json.dumps({"id": "r4", "logical_form": "SELECT v FROM t"}),
              json.dumps({"id": "r5", "logical_form": "SELECT u FROM t"})]
    pd.DataFrame({"id": ["r1", "r2", "r3", "r4", "r5"], "stage": ["round_trip", "filter", "filter", "filter", "generate"],
                  "reason": ["x"] * 5, "input": inputs}).to_parquet(corpus / "rejects" / "part-00000.parquet")
    known, _ = known_logical_forms([corpus])
    # a failure that may pass another time (the model ran out of memory: stage generate) is drawn again
    assert known == {"SELECT x FROM t", "SELECT w FROM t", "SELECT v FROM t"}


def test_a_schedules_folder_before_its_first_run_gives_nothing(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    assert known_logical_forms([tmp_path / "runs"]) == (set(), [])
    assert known_logical_forms([tmp_path / "not-yet"], missing_ok=True) == (set(), [])


@pytest.mark.parametrize("name, why", [("nowhere", "no such folder"), ("file.txt", "not a folder")])
def test_a_missing_folder_or_a_file_is_refused(tmp_path: Path, name: str, why: str) -> None:
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match=f"--dedup-against .*{name}: {why}"):
        known_logical_forms([tmp_path / name])
    with pytest.raises(ValueError, match="not a folder"):
        known_logical_forms([tmp_path / "file.txt"], missing_ok=True)


def test_known_logical_forms_are_left_out_before_the_count_so_new_ones_take_their_places(tmp_path: Path) -> None:
    from qgen.synth.sources import open_source

    queries = tmp_path / "queries.txt"
    queries.write_text("".join(f"SELECT c{i} FROM t\n" for i in range(5)))
    known = {"SELECT c0 FROM t", "SELECT c2 FROM t"}
    source = open_source(from_file=str(queries), count=3, lf_type="sql", known=known)
    assert [r.logical_form for r in source.records] == ["SELECT c1 FROM t", "SELECT c3 FROM t", "SELECT c4 FROM t"]
    assert source.options["left_out_as_known"] == 2
    whole = open_source(from_file=str(queries), count=0, lf_type="sql", known=set())
    assert len(list(whole.records)) == 5 and whole.options["left_out_as_known"] == 0
    assert "left_out_as_known" not in open_source(from_file=str(queries), count=0, lf_type="sql").options


def test_a_sampler_that_gives_only_known_queries_makes_an_empty_run_not_an_error() -> None:
    from qgen.synth.sources import Source, SourceError, _sampled_something

    nothing_new = Source(iter([]), "tables", "t.csv", options={"left_out_as_known": 3})
    assert list(_sampled_something(nothing_new).records) == []
    with pytest.raises(SourceError, match="no query could be sampled"):  # nothing sampled at all
        _sampled_something(Source(iter([]), "tables", "t.csv", options={"left_out_as_known": 0}))
