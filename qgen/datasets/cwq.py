"""ComplexWebQuestions 1.1 (Talmor & Berant, NAACL 2018), test split only (3,531 questions).

The file is a JSON list. Records carry no entity names: they are borrowed from the WebQSP parses
of the seed question (``webqsp_ID``), see :func:`webqsp_names`. ``answer`` is a list of MIDs.
Leakage: 2,328 test questions derive from WebQSP *train* (``webqsp_ID`` starting ``WebQTrn-``);
the id stays in ``raw`` so that callers can filter (``shared/datasets/cwq/SOURCE.md``).
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from qgen.datasets import webqsp
from qgen.datasets.paths import open_text, rejected, require_file, select_splits
from qgen.datasets.records import RawExample

SOURCE = "cwq"
SPLITS = ("test",)  # train/dev are absent from the shared copy; see SOURCE.md
LF_TYPE = "sparql"
_FILES = {"train": "ComplexWebQuestions_train.json", "dev": "ComplexWebQuestions_dev.json",
          "test": "ComplexWebQuestions_test.json"}


def load(
    data_dir: Path,
    split: str | None = None,
    webqsp_names: Mapping[str, Mapping[str, str]] | None = None,
) -> Iterator[RawExample]:
    """Every record of ``ComplexWebQuestions_{split}.json``; names from ``webqsp_names[webqsp_ID]``."""
    for name in select_splits(split, SPLITS, SOURCE):
        path = require_file([Path(data_dir) / _FILES[name]], f"CWQ {name}")
        yield from _file_examples(path, name, webqsp_names or {})


def webqsp_names(webqsp_dir: Path, include_partial: bool = True) -> dict[str, dict[str, str]]:
    """WebQSP question id (``WebQTrn-1259``) -> MID -> name, over every parse of that question.

    The partial files are read too where present (their parses often lack SPARQL but still name
    the topic entity). When two parses name one MID differently, the first wins.
    """
    examples = list(webqsp.load(webqsp_dir))
    partial_files = [Path(webqsp_dir) / f"WebQSP.{s}.partial.json" for s in webqsp.SPLITS]
    if include_partial and all(p.is_file() for p in partial_files):
        examples.extend(webqsp.load_partial(webqsp_dir))
    names: dict[str, dict[str, str]] = {}
    for example in examples:
        merged = names.setdefault(webqsp.question_id(example.id), {})
        for mid, name in example.names.items():
            merged.setdefault(mid, name)
    return names


def _file_examples(
    path: Path, split: str, names_by_question: Mapping[str, Mapping[str, str]]
) -> Iterator[RawExample]:
    with open_text(path) as handle:
        text = handle.read()
    try:
        records = json.loads(text)
        if not isinstance(records, list):
            raise TypeError(f"the top level is a {type(records).__name__}, not a list")
    except (ValueError, TypeError) as exc:
        yield _error(f"{split}-{path.name}", split, text, f"malformed CWQ file {path.name}: {exc}")
        return
    seen: set[str] = set()
    for index, record in enumerate(records):
        example = _record_example(record, split, index, names_by_question)
        if example.id in seen:  # ids must stay unique even if a record repeats an ID
            example = replace(example, id=f"{example.id}#{index}")
        seen.add(example.id)
        yield example


def _record_example(
    record: Any, split: str, index: int, names_by_question: Mapping[str, Mapping[str, str]]
) -> RawExample:
    raw = json.dumps(record, ensure_ascii=False)
    if not isinstance(record, dict):
        return _error(f"{split}-{index}", split, raw, f"record is a {type(record).__name__}, not an object")
    record_id = record.get("ID")
    example_id = record_id if isinstance(record_id, str) and record_id else f"{split}-{index}"
    question = record.get("question")
    question = question if isinstance(question, str) else None
    seed = record.get("webqsp_ID")
    names = dict(names_by_question.get(seed, {})) if isinstance(seed, str) else {}
    answer = record.get("answer")
    answers = [str(a) for a in answer if a is not None] if isinstance(answer, list) else []
    sparql = record.get("sparql")
    error = None
    if not isinstance(sparql, str) or not sparql.strip():
        sparql, error = "", "no SPARQL in the record"
    return RawExample(
        id=example_id, split=split, lf_type=LF_TYPE, logical_form=sparql, question=question,
        source=SOURCE, raw=raw, names=names, answers=answers, load_error=error,
    )


def _error(example_id: str, split: str, raw: str, message: str, question: str | None = None) -> RawExample:
    return rejected(example_id, split, raw, message, question, lf_type=LF_TYPE, source=SOURCE)
