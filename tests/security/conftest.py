"""Shared by the security tests: the console entry point run in-process (``tiny_checkpoint``: tests/conftest.py)."""
from __future__ import annotations

import sys
from typing import Callable

import pytest


@pytest.fixture
def qgen(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``qgen(*args)`` runs the console script (``qgen.cli.run``) here: (exit code, stdout, stderr)."""
    from qgen.cli import run

    def invoke(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["qgen", *map(str, args)])
        with pytest.raises(SystemExit) as stopped:
            run()
        captured = capsys.readouterr()
        return stopped.value.code or 0, captured.out, captured.err

    return invoke
