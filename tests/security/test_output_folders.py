"""Output folders: qgen writes only into an empty folder or its own, never through a link it did not
make, one run at a time (a lock), and a dead run's folder can be reused (issue 17)."""
from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

import flows.demo as demo_module
from flows.demo import run_demo
from qgen.io.output_folder import OutputFolderError, write_file

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "demo" / "sample.jsonl"
Qgen = Callable[..., "tuple[int, str, str]"]


@pytest.fixture
def lfs(tmp_path: Path) -> Path:
    """Six logical forms without ids (the loader names them after the file: ``lfs-0``, ...)."""
    lines = []
    for line in SAMPLE.read_text().splitlines()[:6]:
        record = json.loads(line)
        del record["id"]
        lines.append(json.dumps(record))
    path = tmp_path / "lfs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def synthesize_args(checkpoint: Path, out: Path, lfs: Path, beam: int = 2) -> list[Any]:
    return ["synthesize", "--checkpoint", checkpoint, "--out", out, "--from-file", lfs, "--count", 0,
            "--shard-size", 3, "--beam", beam]


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_synthesize_refuses_a_folder_that_qgen_did_not_write(qgen: Qgen, tiny_checkpoint: Path, lfs: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "mine"
    (out / ".tmp").mkdir(parents=True)
    files = {"README.md": "my notes", "source.json": "{\"mine\": true}", ".tmp/keep.txt": "keep", "notes.txt": "n"}
    for name, text in files.items():
        (out / name).write_text(text)
    code, _, err = qgen(*synthesize_args(tiny_checkpoint, out, lfs))
    assert code == 1
    assert "no manifest of a qgen synthetic corpus" in one_error_line(err)
    assert {name: (out / name).read_text() for name in files} == files
    assert sorted(p.name for p in out.iterdir()) == sorted([".tmp", "README.md", "notes.txt", "source.json"])


def test_synthesize_never_writes_through_a_planted_link(qgen: Qgen, tiny_checkpoint: Path, lfs: Path,
                                                        tmp_path: Path) -> None:
    out, victim = tmp_path / "corpus", tmp_path / "victim.txt"
    assert qgen(*synthesize_args(tiny_checkpoint, out, lfs))[0] == 0
    victim.write_text("precious")
    (out / "source.json").unlink()
    (out / "source.json").symlink_to(victim)
    code, _, err = qgen(*synthesize_args(tiny_checkpoint, out, lfs))
    assert code == 1 and "symbolic link" in one_error_line(err)
    assert victim.read_text() == "precious" and (out / "source.json").is_symlink()


def test_a_second_run_on_a_folder_stops_with_the_pid_that_holds_it(qgen: Qgen, tiny_checkpoint: Path, lfs: Path,
                                                                   tmp_path: Path, folder_lock_holder) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    with folder_lock_holder(out) as holder:
        code, _, err = qgen(*synthesize_args(tiny_checkpoint, out, lfs))
    assert code == 1 and f"{out} is already being written by PID {holder}" in one_error_line(err)
    assert not (out / "manifest.json").exists()
    assert qgen(*synthesize_args(tiny_checkpoint, out, lfs))[0] == 0  # the holder is gone: the folder is free


def test_a_dead_runs_manifest_is_reused_and_a_complete_one_kept(qgen: Qgen, tiny_checkpoint: Path, lfs: Path,
                                                                tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    assert qgen(*synthesize_args(tiny_checkpoint, out, lfs, beam=2))[0] == 0
    code, _, err = qgen(*synthesize_args(tiny_checkpoint, out, lfs, beam=3))  # a finished corpus stays
    assert code == 1 and "other settings (beam: 2 -> 3, candidates: 2 -> 3)" in one_error_line(err)  # the beam sets the candidates too
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["status"] = "running"  # as a killed run leaves it (its lock went with it)
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, stdout, err = qgen(*synthesize_args(tiny_checkpoint, out, lfs, beam=3))
    assert code == 0, err
    assert "replacing the shards of a run that died unfinished" in stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["status"], manifest["settings"]["beam"], manifest["counts"]["inputs"]) == ("complete", 3, 6)


def test_a_manifest_left_half_written_is_removed_not_kept(qgen: Qgen, tiny_checkpoint: Path, lfs: Path,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "corpus"
    out.mkdir()
    (out / ".manifest.json.tmp-4242").write_text('{"format": "qgen-synth-corp')  # a run that hit ENOSPC
    code, _, err = qgen(*synthesize_args(tiny_checkpoint, out, lfs))
    assert code == 0, err
    assert not list(out.glob(".*.tmp-*")) and json.loads((out / "manifest.json").read_text())["status"] == "complete"

    class Full:  # the disk fills up while the new manifest is written
        def __init__(self, fd: int, *_: Any, **__: Any) -> None:
            os.close(fd)

        def __enter__(self) -> "Full":
            return self

        def __exit__(self, *_: Any) -> None:
            return None

        def write(self, _: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    before = (out / "manifest.json").read_text()
    monkeypatch.setattr("qgen.io.output_folder.os.fdopen", Full)
    with pytest.raises(OSError, match="No space left"):
        write_file(out / "manifest.json", "{}")
    assert (out / "manifest.json").read_text() == before and not list(out.glob(".*.tmp-*"))


def test_a_renamed_input_file_still_resumes(qgen: Qgen, tiny_checkpoint: Path, lfs: Path, tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    assert qgen(*synthesize_args(tiny_checkpoint, out, lfs))[0] == 0
    renamed = lfs.rename(lfs.with_name("renamed.jsonl"))
    code, stdout, err = qgen(*synthesize_args(tiny_checkpoint, out, renamed))
    assert code == 0, err
    assert not [line for line in stdout.splitlines() if line.startswith("shard ")]  # nothing redone


class DemoStarted(RuntimeError):
    pass


def fake_demo_flow(out: str, *_: Any) -> None:
    """Stands in for the flows: writes where training would, then stops the demo."""
    (Path(out) / "model").mkdir(parents=True, exist_ok=True)
    (Path(out) / "model" / "best.pt").write_text("a model")
    raise DemoStarted


def test_the_demo_refuses_a_folder_that_is_not_its_output(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(demo_module, "demo_flow", fake_demo_flow)
    out = tmp_path / "mine"
    files = {"model/weights.bin": "w", "corpus/data.csv": "c", "preprocessed/x.parquet": "p", "notes.txt": "n"}
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    with pytest.raises(OutputFolderError, match="no manifest of a qgen demo output"):
        list(run_demo(out, quick=True))
    assert {name: (out / name).read_text() for name in files} == files
    assert not (out / "model" / "best.pt").exists()


def test_the_demo_replaces_its_own_output_but_never_follows_a_link(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setattr(demo_module, "demo_flow", fake_demo_flow)
    out = tmp_path / "demo"
    (out / "corpus" / "graph").mkdir(parents=True)
    (out / "qgen-demo.json").write_text(json.dumps({"format": "qgen-demo-1", "status": "complete"}))
    with pytest.raises(DemoStarted):
        list(run_demo(out, quick=True))
    assert not (out / "corpus").exists() and (out / "model" / "best.pt").read_text() == "a model"
    assert json.loads((out / "qgen-demo.json").read_text())["status"] == "running"  # a failed demo may run again
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    (out / "model" / "best.pt").unlink()
    (out / "model").rmdir()
    (out / "model").symlink_to(victim, target_is_directory=True)
    with pytest.raises(OutputFolderError, match="symbolic link"):
        list(run_demo(out, quick=True))
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]
