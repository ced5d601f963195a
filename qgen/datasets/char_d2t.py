"""Seed 002's data (Roberti et al. 2019): MR strings and references as characters.

- E2E: the challenge's CSVs (header ``mr,ref``), 42,061 / 4,672 / 4,693 rows.
- E2E+: the published dev/test files (``e2e_plus``) and a train split rebuilt from E2E's
  (qgen.datasets.e2e_plus_train): "E2E+ (train rebuilt)".
- Hotel and Restaurant: Wen et al.'s data in the E2E format (``wen2015_sf/roberti_e2e_format``, no
  header). The authors' loader drops the first line of every file, so we do too: that gives exactly
  the paper's 2,210 / 275 / 275 and 2,874 / 358 / 358 rows.

Characters are those of the raw strings: no tokenisation, no lowercasing, no delexicalisation, but
folded to ASCII as the authors' files were (``£`` -> ``L``, ``é`` -> ``e``; any other character by
its NFKD decomposition, else dropped), so every character is in the model's alphabet
(``string.printable``). A source reads ``<s> c_1 .. c_n </s>`` so that the shifted copy can copy the
first character; references are cut at ``MAX_CHARS`` (the longest E2E+ test reference is 398).
"""
from __future__ import annotations

import csv
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qgen.data import Pair
from qgen.datasets.paths import open_text, require_file
from qgen.model.vocab import BOS, EOS

MAX_CHARS = 400
DATASETS = ("e2e", "e2e_plus", "hotel", "restaurant")
_FOLDS = {"£": "L", "é": "e"}


@dataclass(frozen=True)
class CharSplit:
    """The rows of one split (MR, reference) and the same grouped by MR (first-row order)."""

    rows: tuple[tuple[str, str], ...]
    mrs: tuple[str, ...]
    references: tuple[tuple[str, ...], ...]

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[str, str]]) -> "CharSplit":
        groups: dict[str, list[str]] = {}
        for mr, ref in rows:
            groups.setdefault(mr, []).append(ref)
        return cls(tuple(rows), tuple(groups), tuple(tuple(refs) for refs in groups.values()))


def ascii_fold(text: str) -> str:
    """``£`` -> ``L``, ``é`` -> ``e`` (the authors' files), any other non-ASCII character by NFKD."""
    out = []
    for char in text:
        if ord(char) < 128:
            out.append(char)
        elif char in _FOLDS:
            out.append(_FOLDS[char])
        else:
            out.append(unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode())
    return "".join(out)


def split_path(folder: Path, dataset: str, split: str) -> Path:
    """Where a split lives under the datasets root."""
    if dataset == "e2e":
        names = {"train": ("trainset.csv.xz", "trainset.csv"), "dev": ("devset.csv",), "test": ("testset_w_refs.csv",)}
        return require_file([folder / "e2e" / n for n in names[split]], f"E2E {split}")
    if dataset == "e2e_plus":
        return require_file([folder / "e2e_plus" / f"{split}set_plus.csv"], f"E2E+ {split}")
    return require_file([folder / "wen2015_sf" / "roberti_e2e_format" / f"{dataset}_{split}.csv"],
                        f"{dataset} {split} (E2E format)")


def read_split(folder: Path, dataset: str, split: str, fold: bool = True) -> CharSplit:
    """One split's (MR, reference) rows: E2E after its header, Hotel/Restaurant after their first line."""
    if dataset not in DATASETS:
        raise ValueError(f"unknown character dataset {dataset!r}; one of {', '.join(DATASETS)}")
    if dataset == "e2e_plus" and split == "train":
        return _e2e_plus_train(Path(folder), fold)
    path = split_path(Path(folder), dataset, split)
    with open_text(path, newline="") as handle:
        reader = csv.reader(handle)
        next(reader, None)  # E2E: the header; Hotel/Restaurant: the line the authors' loader drops
        rows = []
        for row in reader:
            if not row:
                continue
            if len(row) != 2 or not row[0].strip() or not row[1].strip():
                raise ValueError(f"{path}: line {reader.line_num} is not one MR and one reference: {row!r}")
            mr, ref = (ascii_fold(c.strip()) if fold else c.strip() for c in row)
            rows.append((mr, ref))
    return CharSplit.from_rows(rows)


def source_chars(mr: str) -> list[str]:
    return [BOS, *mr, EOS]


def to_pairs(split: CharSplit, name: str) -> list[Pair]:
    """One pair per row: ``<s> MR </s>`` -> the reference's first ``MAX_CHARS`` characters; grouped by MR."""
    return [Pair(f"{name}-{i}", source_chars(mr), list(ref[:MAX_CHARS]), mr) for i, (mr, ref) in enumerate(split.rows)]


def _e2e_plus_train(folder: Path, fold: bool) -> CharSplit:
    """E2E+ (train rebuilt): E2E train with values disjoint from E2E and E2E+ dev/test (qgen.datasets.e2e_plus_train)."""
    from qgen.datasets import e2e_plus_train

    train = read_split(folder, "e2e", "train", fold)
    taken_mrs = [*train.mrs, *(mr for d, s in (("e2e", "dev"), ("e2e", "test"), ("e2e_plus", "dev"),
                                               ("e2e_plus", "test")) for mr in read_split(folder, d, s, fold).mrs)]
    lists = e2e_plus_train.value_lists(e2e_plus_train.slot_values(taken_mrs))
    return e2e_plus_train.rebuild(train, lists)
