"""Fixtures shared by the synthesis tests."""
from __future__ import annotations

from typing import Any

import pytest

import qgen.synth.generator as generator_module


@pytest.fixture
def no_repeat_seen(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``no_repeat`` of every beam search the question writer runs (the real search still runs)."""
    real, seen = generator_module.beam_search, []

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("no_repeat"))
        return real(*args, **kwargs)

    monkeypatch.setattr(generator_module, "beam_search", spy)
    return seen
