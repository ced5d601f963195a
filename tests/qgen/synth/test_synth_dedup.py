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
