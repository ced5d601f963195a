"""Freed blocks stay in the heap for reuse on glibc; elsewhere nothing changes and nothing fails."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from qgen import cpu_memory


def test_elsewhere_than_linux_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_memory, "_done", False)
    monkeypatch.setattr(cpu_memory.sys, "platform", "darwin")
    assert cpu_memory.reuse_freed_memory() is False


# In a fresh process (``_done`` is per process): every mallopt call is recorded on its way to glibc's,
# and mallinfo says whether a 64 MiB block (above glibc's own dynamic limit of 32 MiB) is mmapped.
FRESH = """
import ctypes, ctypes.util, json
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
calls = []

class Recorded:
    def mallopt(self, param, value):
        calls.append([param, value])
        return libc.mallopt(param, value)

real_cdll, ctypes.CDLL = ctypes.CDLL, lambda *args, **kwargs: Recorded()
fields = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]  # all ten
info = getattr(libc, "mallinfo2", None) or libc.mallinfo  # mallinfo2 since glibc 2.33
if info is libc.mallinfo:
    fields = [(name, ctypes.c_int) for name, _ in fields]
info.restype = type("Info", (ctypes.Structure,), {"_fields_": fields})
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]

def mmapped_while_held(size=64 << 20):
    before = info().hblkhd
    block = libc.malloc(size)
    held = info().hblkhd - before
    libc.free(block)
    return held >= size

from qgen import cpu_memory
was_mmapped = mmapped_while_held()
first = cpu_memory.reuse_freed_memory()
after_first = list(calls)
again = cpu_memory.reuse_freed_memory()
print(json.dumps({"was_mmapped": was_mmapped, "first": first, "after_first": after_first, "again": again,
                  "calls": calls, "mmapped": mmapped_while_held()}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_on_glibc_the_thresholds_are_raised_once_in_a_fresh_process() -> None:
    out = json.loads(subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, check=True).stdout)
    limit = cpu_memory.LIMIT
    expected = sorted([[cpu_memory.M_MMAP_THRESHOLD, limit], [cpu_memory.M_TRIM_THRESHOLD, limit]])
    assert (cpu_memory.M_MMAP_THRESHOLD, cpu_memory.M_TRIM_THRESHOLD, limit) == (-3, -1, 1 << 30)  # malloc.h
    assert out["first"] is True and sorted(out["after_first"]) == expected  # both thresholds, to the limit
    assert out["again"] is True and out["calls"] == out["after_first"]  # once: the second call sets nothing
    # and glibc took them: a 64 MiB block came from mmap before, from the heap after
    assert out["was_mmapped"] is True and out["mmapped"] is False
