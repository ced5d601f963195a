"""The training path must import on a GPU box that has only torch, pandas and pyarrow."""
from __future__ import annotations

from typing import Callable


def test_training_path_imports_without_prefect_rdflib_sqlglot(run_without_parsers: Callable) -> None:
    proc = run_without_parsers("import qgen.train, qgen.benchmark, qgen.decode, qgen.checkpoint, qgen.metrics, "
                               "qgen.model\nprint('ok')\n")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
