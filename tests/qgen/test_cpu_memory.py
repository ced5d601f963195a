"""Freed blocks stay in the heap for reuse on glibc; elsewhere nothing changes and nothing fails."""
from __future__ import annotations

import subprocess
import sys

import pytest

from qgen import cpu_memory


def test_elsewhere_than_linux_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_memory, "_done", False)
    monkeypatch.setattr(cpu_memory.sys, "platform", "darwin")
    assert cpu_memory.reuse_freed_memory() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_on_glibc_the_thresholds_are_raised_once_in_a_fresh_process() -> None:
    code = ("from qgen import cpu_memory; import torch; "
            "first = cpu_memory.reuse_freed_memory(); again = cpu_memory.reuse_freed_memory(); "
            "x = torch.ones(64, 64, 1024); del x; y = torch.zeros(64, 64, 1024); "  # a 16 MiB block, freed, reused
            "print(first, again, float(y.sum()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "0.0"]  # a reused block is zeroed all the same where asked
