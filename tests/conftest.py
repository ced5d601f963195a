"""Shared fixtures: where the real datasets are (tests that need them skip when absent)."""
from __future__ import annotations

from pathlib import Path

import pytest

from qgen.datasets.paths import datasets_dir

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The datasets root, or skip: set QGEN_DATASETS or put shared/ beside the checkout."""
    root = datasets_dir()
    if root is None or not root.is_dir():
        pytest.skip("real datasets not found: set QGEN_DATASETS or place shared/datasets beside the repo")
    return root


@pytest.fixture(scope="session")
def demo_sample() -> Path:
    return REPO / "data" / "demo" / "sample.jsonl"
