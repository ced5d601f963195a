"""SF Hotel / SF Restaurant (Wen et al., EMNLP 2015, RNNLG release): dialogue act -> utterance.

``{hotel,restaurant}/{train,valid,test}.json``: 5 comment lines (a ``####`` banner), then a JSON
list of ``[dialogue act, human utterance, HDC baseline utterance]``. The baseline is a template
output, not a second reference: it stays in ``raw`` (element 2 of the record).
Counts: hotel 3,223 / 1,075 / 1,075, restaurant 3,114 / 1,039 / 1,039 (``valid`` -> ``dev``).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qgen.datasets.paths import open_text, rejected, require_file, select_splits
from qgen.datasets.records import RawExample

DOMAINS = ("hotel", "restaurant")
SPLITS = ("train", "dev", "test")
LF_TYPE = "da"
HEADER_LINES = 5
_FILES = {"train": "train.json", "dev": "valid.json", "test": "test.json"}


def source_name(domain: str) -> str:
    """``hotel`` -> ``wen2015_hotel``."""
    return f"wen2015_{domain}"


def load(
    data_dir: Path, split: str | None = None, domain: str | None = None
) -> Iterator[RawExample]:
    """Records of one domain (both for None), id ``{split}-{index}``, source ``wen2015_{domain}``.

    ``data_dir`` is the folder holding ``hotel/`` and ``restaurant/``, or (with ``domain`` given)
    the domain folder itself.
    """
    if domain is not None and domain not in DOMAINS:
        raise ValueError(f"unknown Wen domain {domain!r}; the domains are {', '.join(DOMAINS)}")
    split = "dev" if split == "valid" else split  # the files' own name for dev
    for name in DOMAINS if domain is None else (domain,):
        folder = _domain_dir(Path(data_dir), name)
        for split_name in select_splits(split, SPLITS, source_name(name)):
            path = require_file([folder / _FILES[split_name]], f"Wen {name} {split_name}")
            yield from _file_examples(path, split_name, source_name(name))


def load_hotel(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """The SF Hotel records (source ``wen2015_hotel``)."""
    return load(data_dir, split, "hotel")


def load_restaurant(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """The SF Restaurant records (source ``wen2015_restaurant``)."""
    return load(data_dir, split, "restaurant")


def _domain_dir(data_dir: Path, domain: str) -> Path:
    nested = data_dir / domain
    if nested.is_dir():
        return nested
    if (data_dir / _FILES["train"]).is_file() or data_dir.name == domain:
        return data_dir
    return nested  # require_file then names the missing file


def _file_examples(path: Path, split: str, source: str) -> Iterator[RawExample]:
    with open_text(path) as handle:
        text = handle.read()
    lines = text.split("\n")
    banner, body = lines[:HEADER_LINES], "\n".join(lines[HEADER_LINES:])
    try:
        if not all(line.startswith("#") for line in banner):
            raise ValueError(f"expected {HEADER_LINES} '#' comment lines before the JSON")
        records = json.loads(body)
        if not isinstance(records, list):
            raise TypeError(f"the JSON is a {type(records).__name__}, not a list")
    except (ValueError, TypeError) as exc:
        yield _error(f"{split}-{path.name}", split, source, text, f"malformed Wen file {path.name}: {exc}")
        return
    for index, record in enumerate(records):
        yield _record_example(record, f"{split}-{index}", split, source)


def _record_example(record: Any, example_id: str, split: str, source: str) -> RawExample:
    raw = json.dumps(record, ensure_ascii=False)
    if not isinstance(record, list) or len(record) < 2 or not all(isinstance(x, str) for x in record):
        return _error(example_id, split, source, raw, "record is not a list [DA, utterance, baseline]")
    act, utterance = record[0], record[1]
    if not act.strip():
        return _error(example_id, split, source, raw, "empty dialogue act", utterance)
    return RawExample(
        id=example_id, split=split, lf_type=LF_TYPE, logical_form=act, question=utterance,
        source=source, raw=raw,
    )


def _error(
    example_id: str, split: str, source: str, raw: str, message: str, question: str | None = None
) -> RawExample:
    return rejected(example_id, split, raw, message, question, lf_type=LF_TYPE, source=source)
