"""Where the datasets live, and the small file/record helpers every loader shares.

The real datasets are not part of the repository (see ``shared/datasets/README.md``): a user or
CI points qgen at them with an explicit path or the ``QGEN_DATASETS`` environment variable.
"""
from __future__ import annotations

import io
import lzma
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from qgen.datasets.records import RawExample

ENV_VAR = "QGEN_DATASETS"

# <repo root>/../shared/datasets: the development layout (repository beside the shared folder).
_REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULT_DIR = _REPO_ROOT.parent / "shared" / "datasets"


def datasets_dir(explicit: str | Path | None = None) -> Path | None:
    """The datasets root: ``explicit``, else ``$QGEN_DATASETS``, else ``../shared/datasets`` if it exists.

    Returns None when none is given and the default folder does not exist (tests then skip).
    """
    if explicit is not None and str(explicit) != "":
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return _DEFAULT_DIR if _DEFAULT_DIR.is_dir() else None


class SplitError(ValueError):
    """``--split`` names a split the dataset or file has none of (a usage error)."""


def select_splits(split: str | None, splits: Iterable[str], dataset: str) -> list[str]:
    """``[split]`` if it is one of ``splits``, every split for None; else a SplitError naming them."""
    known = list(splits)
    if split is None:
        return known
    if split not in known:
        raise SplitError(f"{dataset} has no split {split!r}; give --split {' or '.join(known)}, or none for all")
    return [split]


def first_existing(candidates: Iterable[Path]) -> Path | None:
    """The first of ``candidates`` that is a file, or None."""
    for path in candidates:
        if path.is_file():
            return path
    return None


def require_file(candidates: Iterable[Path], what: str) -> Path:
    """The first existing candidate, or a FileNotFoundError that lists where we looked."""
    tried = list(candidates)
    found = first_existing(tried)
    if found is None:
        looked = ", ".join(str(p) for p in tried)
        raise FileNotFoundError(f"{what}: none of these files exists: {looked}")
    return found


def open_text(path: Path, newline: str | None = None) -> TextIO:
    """Open a UTF-8 text file, decompressing ``.xz`` files (lzma) transparently."""
    if path.suffix == ".xz":
        return io.TextIOWrapper(lzma.open(path, "rb"), encoding="utf-8", newline=newline)
    return open(path, encoding="utf-8", newline=newline)  # noqa: SIM115 (caller closes)


def rejected(
    example_id: str, split: str, raw: str, error: str, question: str | None = None,
    *, lf_type: str, source: str,
) -> RawExample:
    """The RawExample of a malformed record: no logical form, ``raw`` kept, ``load_error`` set."""
    return RawExample(
        id=example_id, split=split, lf_type=lf_type, logical_form="", question=question,
        source=source, raw=raw, load_error=error,
    )
