"""Shared fixtures: where the real datasets are (tests that need them skip when absent), a tiny trained
checkpoint, a Python without the parsers and Prefect (as on the GPU image), and the time budgets a
test's training runs were given."""
from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

from qgen.datasets.paths import datasets_dir

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """absl's logging handler (absl comes with rouge-score, which ``qgen.metrics`` imports) keeps the
    stream it was made with: under pytest, pytest's capture of stderr. When Prefect first configures
    logging (importing ``prefect.main``) it closes every handler alive, and absl's closes its stream
    unless that is still ``sys.stderr``. Inside a ``CliRunner`` it is not, so a test that first imported
    Prefect there (the demo) closed pytest's stderr, and every later test in that process failed writing
    to it. The real stderr is one absl never closes."""
    try:
        from absl import logging as absl_logging
    except ImportError:
        return
    absl_logging.get_absl_handler().python_handler.setStream(sys.__stderr__)


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


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Copy + Scratchpad (extended) model trained for a second on six pairs: it runs, its questions need not be good."""
    import torch

    from qgen.data import Pair
    from qgen.model import ModelConfig
    from qgen.train import TrainConfig, train

    torch.set_num_threads(1)
    pairs = [Pair(str(i), ["select", "?", "x", "where", "{", "ent:", w, "}"], ["what", "is", w, "?"], str(i))
             for i, w in enumerate(["bali", "lyon", "porto", "oslo", "riga", "kyiv"])]
    out = tmp_path_factory.mktemp("model")
    model = ModelConfig(embedding_dim=8, hidden_size=16, num_layers=1, dropout=0.0, copy="extended", memory="scratchpad")
    train(pairs, pairs[:2], model, TrainConfig(epochs=3, batch_size=6, learning_rate=1e-2), out, log=lambda _: None)
    return out / "best.pt"


# Makes prefect, rdflib and sqlglot unimportable, as they are on the GPU machine's image.
BLOCK_PARSERS = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('prefect', 'rdflib', 'sqlglot'):
            raise ImportError('blocked for this test: ' + name)
sys.meta_path.insert(0, Block())
"""


@pytest.fixture(scope="session")
def run_without_parsers() -> Callable[[str], subprocess.CompletedProcess]:
    """Runs a Python snippet in a fresh interpreter where prefect, rdflib and sqlglot cannot be imported."""
    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", BLOCK_PARSERS + code], capture_output=True, text=True,
                              timeout=120, cwd=REPO)
    return run


@pytest.fixture
def training_budgets(monkeypatch: pytest.MonkeyPatch) -> list:
    """The ``max_seconds`` of every ``qgen.train.train`` call made during the test, in order (the
    benchmarks' time budgets: what each start of a run is given)."""
    import qgen.train

    budgets: list = []
    real_train = qgen.train.train

    def recording_train(*args, **kwargs):
        budgets.append(args[3].max_seconds)
        return real_train(*args, **kwargs)

    monkeypatch.setattr(qgen.train, "train", recording_train)
    return budgets


@pytest.fixture
def folder_lock_holder() -> Callable[[Path], contextlib.AbstractContextManager[int]]:
    """``with folder_lock_holder(folder) as pid:`` another process holds ``folder``'s qgen lock
    (``.qgen.lock``, as a running synthesis does) until the block ends; ``pid`` is that process's."""
    @contextlib.contextmanager
    def hold(folder: Path) -> Iterator[int]:
        holder = subprocess.Popen([sys.executable, "-c", (
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "os.write(fd, str(os.getpid()).encode())\n"
            "print('locked', flush=True)\n"
            "time.sleep(120)\n"), str(folder / ".qgen.lock")], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            yield holder.pid
        finally:
            holder.kill()
            holder.wait()

    return hold

