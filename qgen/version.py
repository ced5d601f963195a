"""The code version recorded in every output file (git commit when available)."""
from __future__ import annotations

import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

PACKAGE_VERSION = "0.1.0"


@lru_cache(maxsize=1)
def code_version() -> str:
    """``<package version>+<short commit>[.dirty]`` inside a git checkout, else the package version.

    ``QGEN_COMMIT`` names the commit outright: a working tree copied to another machine may carry
    no git history, or the history of another commit than the one copied."""
    given = os.environ.get("QGEN_COMMIT", "").strip()
    if given:
        return f"{PACKAGE_VERSION}+{given}"
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
        # Results files are tracked and rewritten by the runs that record this version: not "dirty".
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)benchmarks/results"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # a copy without git history
        return PACKAGE_VERSION
    return f"{PACKAGE_VERSION}+{commit}{'.dirty' if dirty else ''}"


def invocation() -> str:
    """The command line of this process as its user typed it (the program's name, not its path), for the
    ``command`` of a results file: ``qgen benchmark hotel-char --models ...``, ``qgen_bench.py --dataset ...``."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if program.endswith(".py"):
        program = f"python {sys.argv[0]}"
    return " ".join([program, *sys.argv[1:]])
