"""E2E NLG challenge (Novikova et al. 2017) and E2E+ (Roberti et al. 2019): MR -> restaurant text.

One RawExample per CSV row (one MR and one reference; group by MR for multi-reference BLEU).
E2E: ``trainset.csv.xz`` (or ``trainset.csv``), ``devset.csv``, ``testset_w_refs.csv``,
42,061 / 4,672 / 4,693 rows. E2E+: ``devset_plus.csv`` / ``testset_plus.csv``, 4,672 / 4,693 rows,
no train split. Quoting is inconsistent and headers vary (``mr,ref`` / ``"mr","ref"`` / ``MR``),
so rows are read with the csv module and columns found by name (``shared/datasets/e2e/SOURCE.md``).
"""
from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from qgen.datasets.paths import open_text, rejected, require_file, select_splits
from qgen.datasets.records import RawExample

SOURCE = "e2e"
PLUS_SOURCE = "e2e_plus"
SPLITS = ("train", "dev", "test")
PLUS_SPLITS = ("dev", "test")
LF_TYPE = "mr"
_FILES = {
    "train": ("trainset.csv.xz", "trainset.csv"),
    "dev": ("devset.csv",),
    "test": ("testset_w_refs.csv",),
}
_PLUS_FILES = {"dev": ("devset_plus.csv",), "test": ("testset_plus.csv",)}


def load(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """E2E rows, id ``{split}-{row}`` (0-based data row), question = the reference text."""
    for name in select_splits(split, SPLITS, SOURCE):
        path = require_file([Path(data_dir) / f for f in _FILES[name]], f"E2E {name}")
        yield from read_csv(path, name, SOURCE)


def load_plus(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """E2E+ rows (dev/test only), source ``e2e_plus``; row order differs from E2E's."""
    for name in select_splits(split, PLUS_SPLITS, PLUS_SOURCE):
        path = require_file([Path(data_dir) / f for f in _PLUS_FILES[name]], f"E2E+ {name}")
        yield from read_csv(path, name, PLUS_SOURCE)


def read_csv(path: Path, split: str, source: str) -> Iterator[RawExample]:
    """Rows of an E2E-format CSV with a header naming the ``mr`` and (optional) ``ref`` columns."""
    with open_text(path, newline="") as handle:
        reader = csv.reader(handle)
        header = _next_row(reader)
        if not isinstance(header, list) or not header:
            raw = json.dumps(header if isinstance(header, list) else str(header))
            yield _error(f"{split}-header", split, source, raw, f"{path.name}: no header row")
            return
        columns = [c.strip().lower() for c in header]
        if "mr" not in columns:
            yield _error(f"{split}-header", split, source, json.dumps(header, ensure_ascii=False),
                         f"{path.name}: the header has no 'mr' column")
            return
        mr_col = columns.index("mr")
        ref_col = columns.index("ref") if "ref" in columns else None
        index = 0
        while True:
            row = _next_row(reader)
            if row is None:
                return
            yield _row_example(row, header, mr_col, ref_col, f"{split}-{index}", split, source)
            index += 1


def _next_row(reader: Iterator[list[str]]) -> list[str] | str | None:
    """The next row, None at the end, or the csv module's error text for an unreadable row."""
    try:
        return next(reader)
    except StopIteration:
        return None
    except csv.Error as exc:
        return f"unreadable CSV row: {exc}"


def _row_example(
    row: list[str] | str, header: Sequence[str], mr_col: int, ref_col: int | None,
    example_id: str, split: str, source: str,
) -> RawExample:
    if isinstance(row, str):  # csv.Error text: the raw line is not recoverable from the reader
        return _error(example_id, split, source, json.dumps(row), row)
    if len(row) != len(header):
        raw = json.dumps(row, ensure_ascii=False)
        return _error(example_id, split, source, raw, f"row has {len(row)} fields, expected {len(header)}")
    raw = json.dumps(dict(zip(header, row)), ensure_ascii=False)
    mr = row[mr_col]
    ref = row[ref_col] if ref_col is not None else None
    if not mr.strip():
        return _error(example_id, split, source, raw, "empty MR", ref)
    return RawExample(
        id=example_id, split=split, lf_type=LF_TYPE, logical_form=mr, question=ref, source=source, raw=raw,
    )


def _error(
    example_id: str, split: str, source: str, raw: str, message: str, question: str | None = None
) -> RawExample:
    return rejected(example_id, split, raw, message, question, lf_type=LF_TYPE, source=source)
