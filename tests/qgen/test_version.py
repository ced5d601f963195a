"""The code version written into every output file."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from qgen.version import PACKAGE_VERSION, code_version

REPO = Path(__file__).resolve().parents[2]


def test_inside_the_checkout_the_version_names_the_commit() -> None:
    assert code_version().startswith(f"{PACKAGE_VERSION}+") and len(code_version()) > len(PACKAGE_VERSION) + 8


def test_a_copy_without_git_takes_the_commit_it_is_given(tmp_path: Path) -> None:
    """A working tree copied to another machine without .git: QGEN_COMMIT names the commit."""
    (tmp_path / "qgen").mkdir()
    (tmp_path / "qgen" / "__init__.py").write_text("")
    shutil.copy(REPO / "qgen" / "version.py", tmp_path / "qgen" / "version.py")
    probe = "from qgen.version import code_version; print(code_version())"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CEILING_DIRECTORIES"] = str(tmp_path.parent)  # no repository above the copy either
    given = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={**env, "QGEN_COMMIT": "0f29c4b12345"},
                           capture_output=True, text=True, check=True).stdout.strip()
    bare = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()
    assert (given, bare) == (f"{PACKAGE_VERSION}+0f29c4b12345", PACKAGE_VERSION)


def test_the_commit_given_wins_over_the_checkouts_own() -> None:
    """A copy may carry another commit's git metadata: the commit named outright is the one recorded."""
    probe = "from qgen.version import code_version; print(code_version())"
    found = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env={**os.environ, "QGEN_COMMIT": "0f29c4b12345"},
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found == f"{PACKAGE_VERSION}+0f29c4b12345"


def test_invocation_names_the_program_not_its_path(monkeypatch) -> None:
    from qgen.version import invocation

    monkeypatch.setattr("sys.argv", ["/venv/bin/qgen", "benchmark", "hotel-char", "--models", "roberti_eda_cs"])
    assert invocation() == "qgen benchmark hotel-char --models roberti_eda_cs"
    monkeypatch.setattr("sys.argv", ["benchmarks/qgen_bench.py", "--dataset", "webqsp"])
    assert invocation() == "python benchmarks/qgen_bench.py --dataset webqsp"
