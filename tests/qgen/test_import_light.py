"""The training path must import on a GPU box that has only torch, pandas and pyarrow."""
from __future__ import annotations

import subprocess
import sys

BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('prefect', 'rdflib', 'sqlglot'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
import qgen.train, qgen.benchmark, qgen.decode, qgen.checkpoint, qgen.metrics, qgen.model
print('ok')
"""


def test_training_path_imports_without_prefect_rdflib_sqlglot() -> None:
    proc = subprocess.run([sys.executable, "-c", BLOCKER], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
