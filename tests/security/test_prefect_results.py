"""Prefect task results: stored as plain JSON, and a pickle planted under a cached key is never run (issue 17)."""
from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings
from prefect.testing.utilities import prefect_test_harness

from flows.preprocess import preprocess_flow

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "demo" / "sample.jsonl"


@pytest.fixture(scope="module")
def storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Prefect's test server, and a fresh folder for its stored results."""
    root = tmp_path_factory.mktemp("prefect-results")
    with prefect_test_harness(server_startup_timeout=120):
        with temporary_settings({PREFECT_LOCAL_STORAGE_PATH: root}):
            yield root


def stored_preprocess_files(storage: Path) -> list[Path]:
    return sorted(p for p in storage.rglob("preprocess-*") if p.is_file())


@pytest.fixture
def pairs(storage: Path, tmp_path: Path) -> Path:
    """The demo's sample pairs in a file of their own, and no stored result from an earlier test."""
    for path in stored_preprocess_files(storage):
        path.unlink()
    shutil.copy(SAMPLE, tmp_path / "pairs.jsonl")
    return tmp_path / "pairs.jsonl"


class Payload:
    """Creates ``path`` when unpickled: the proof that a stored pickle ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.mkdir, (str(self.path),))


def test_the_preprocess_result_is_stored_as_plain_json(storage: Path, pairs: Path, tmp_path: Path) -> None:
    report = preprocess_flow(str(pairs), str(tmp_path / "prep"), workers=1)
    assert (report.inputs, report.total_examples, report.rejects) == (50, 45, 5)
    files = stored_preprocess_files(storage)
    assert files
    for path in files:
        content = json.loads(path.read_bytes())  # JSON all through: no pickle, no base64 blob
        text = json.dumps(content)
        assert "pickle" not in text and "__class__" not in text, text[:300]
    serializers = [c["serializer"] for c in (json.loads(p.read_bytes()) for p in files) if "serializer" in c]
    serializers += [c["metadata"]["serializer"] for c in (json.loads(p.read_bytes()) for p in files)
                    if "metadata" in c]
    assert serializers and all(s["type"] == "json" and s["object_decoder"] is None for s in serializers)


def test_a_pickle_planted_under_the_cached_key_is_never_unpickled(storage: Path, pairs: Path, tmp_path: Path) -> None:
    out = tmp_path / "prep"
    first = preprocess_flow(str(pairs), str(out), workers=1)
    ran = tmp_path / "the-pickle-ran"
    blob = base64.encodebytes(pickle.dumps(Payload(ran))).decode()
    serializer = {"type": "pickle", "picklelib": "cloudpickle", "picklelib_version": None}
    planted_files = 0
    for path in stored_preprocess_files(storage):  # whatever qgen stored under the key, replaced by a pickle
        planted_files += 1
        planted = json.loads(path.read_bytes())
        if "metadata" in planted:  # a whole record (result and metadata in one file)
            planted["metadata"]["serializer"] = serializer
            planted["result"] = blob
            path.write_text(json.dumps(planted))
        elif "serializer" in planted:  # metadata kept apart from the result
            planted["serializer"] = serializer
            path.write_text(json.dumps(planted))
            (storage / Path(planted["storage_key"]).name).write_text(blob)
        else:
            path.write_text(blob)
    assert planted_files > 0, "nothing was stored under the cached key: no pickle was planted"
    again = preprocess_flow(str(pairs), str(out), workers=1)  # the output is there: the cache is consulted
    assert not ran.exists(), "a planted pickle was unpickled"
    assert again.summary().split("[")[0] == first.summary().split("[")[0]
    for path in stored_preprocess_files(storage):
        json.loads(path.read_bytes())  # written again, as JSON
