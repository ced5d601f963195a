"""WebQuestionsSP (Yih et al., ACL 2016): one RawExample per SPARQL parse.

Files (``shared/datasets/webqsp/SOURCE.md``): ``WebQSP.{train,test}.json.xz`` (the official
``.json`` is read too), 3,453 / 1,815 parses of 3,098 / 1,639 questions, and
``WebQSP.{train,test}.partial.json`` (680 / 393 questions, mostly without SPARQL).
Entity names come with the parse: the topic entity and the ``Entity`` constraints, keyed by MID.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qgen.datasets.paths import open_text, rejected, require_file, select_splits
from qgen.datasets.records import RawExample

SOURCE = "webqsp"
SPLITS = ("train", "test")
LF_TYPE = "sparql"
NO_SPARQL = "no SPARQL parse"


def load(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """Every parse of the complete files (``WebQSP.{split}.json[.xz]``), id = ParseId."""
    for name in select_splits(split, SPLITS, SOURCE):
        stem = Path(data_dir) / f"WebQSP.{name}.json"
        path = require_file([stem.with_name(stem.name + ".xz"), stem], f"WebQSP {name}")
        yield from _file_examples(path, name, partial=False)


def load_file(path: str | Path, split: str) -> Iterator[RawExample]:
    """Every parse of one WebQSP file anywhere (``--format webqsp``); a ``*.partial.json`` is read as such."""
    path = Path(path)
    yield from _file_examples(path, split, partial=".partial." in path.name)


def load_partial(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """Every parse of ``WebQSP.{split}.partial.json``; one with null Sparql gets a load_error."""
    for name in select_splits(split, SPLITS, SOURCE):
        path = require_file([Path(data_dir) / f"WebQSP.{name}.partial.json"], f"WebQSP {name} partial")
        yield from _file_examples(path, name, partial=True)


def parse_names(parse: dict[str, Any]) -> dict[str, str]:
    """MID -> name for the topic entity and every ``Entity`` constraint (null mids/names skipped)."""
    names: dict[str, str] = {}
    mid, name = parse.get("TopicEntityMid"), parse.get("TopicEntityName")
    if isinstance(mid, str) and mid and isinstance(name, str) and name:
        names[mid] = name
    for constraint in parse.get("Constraints") or []:
        if not isinstance(constraint, dict) or constraint.get("ArgumentType") != "Entity":
            continue
        mid, name = constraint.get("Argument"), constraint.get("EntityName")
        if isinstance(mid, str) and mid and isinstance(name, str) and name:
            names.setdefault(mid, name)
    return names


def parse_answers(parse: dict[str, Any]) -> list[str]:
    """Each answer's EntityName, or its AnswerArgument (a MID or a value) where the name is null."""
    answers: list[str] = []
    for answer in parse.get("Answers") or []:
        if not isinstance(answer, dict):
            continue
        value = answer.get("EntityName") or answer.get("AnswerArgument")
        if value is not None:
            answers.append(str(value))
    return answers


def question_id(parse_id: str) -> str:
    """``WebQTrn-1259.P0`` -> ``WebQTrn-1259`` (the id CWQ's ``webqsp_ID`` refers to)."""
    head, dot, tail = parse_id.rpartition(".")
    return head if dot and tail.startswith("P") and tail[1:].isdigit() else parse_id


def _file_examples(path: Path, split: str, partial: bool) -> Iterator[RawExample]:
    try:
        with open_text(path) as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:  # one reject that names the file, as for a malformed one
        yield _error(f"{split}-{path.name}", split, "", f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.start})")
        return
    try:
        questions = json.loads(text)["Questions"]
        if not isinstance(questions, list):
            raise TypeError(f"'Questions' is a {type(questions).__name__}, not a list")
    except (ValueError, KeyError, TypeError) as exc:
        yield _error(f"{split}-{path.name}", split, text, f"malformed WebQSP file {path.name}: {exc}")
        return
    for index, question in enumerate(questions):
        yield from _question_examples(question, split, index, partial)


def _question_examples(question: Any, split: str, index: int, partial: bool) -> Iterator[RawExample]:
    parses = question.get("Parses") if isinstance(question, dict) else None
    if not isinstance(parses, list) or not parses:
        qid = question.get("QuestionId") if isinstance(question, dict) else None
        raw = json.dumps(question, ensure_ascii=False)
        yield _error(str(qid or f"{split}-q{index}"), split, raw, "question has no list of Parses")
        return
    header = {k: v for k, v in question.items() if k != "Parses"}
    for number, parse in enumerate(parses):
        raw = json.dumps({**header, "Parses": [parse]}, ensure_ascii=False)
        fallback = f"{header.get('QuestionId') or f'{split}-q{index}'}.P{number}"
        yield _parse_example(parse, header, split, raw, fallback, partial)


def _parse_example(
    parse: Any, header: dict[str, Any], split: str, raw: str, fallback_id: str, partial: bool
) -> RawExample:
    if not isinstance(parse, dict):
        return _error(fallback_id, split, raw, f"parse is a {type(parse).__name__}, not an object")
    parse_id = parse.get("ParseId")
    example_id = parse_id if isinstance(parse_id, str) and parse_id else fallback_id
    question = header.get("RawQuestion")
    question = question if isinstance(question, str) else None
    sparql = parse.get("Sparql")
    error = None
    if not isinstance(sparql, str) or not sparql.strip():
        error = NO_SPARQL + (" (partial annotation)" if partial else "")
        sparql = ""
    try:
        names, answers = parse_names(parse), parse_answers(parse)
    except (AttributeError, TypeError) as exc:  # Constraints/Answers of the wrong shape
        names, answers, error = {}, [], f"malformed parse: {exc}"
    return RawExample(
        id=example_id, split=split, lf_type=LF_TYPE, logical_form=sparql, question=question,
        source=SOURCE, raw=raw, names=names, answers=answers, load_error=error,
    )


def _error(example_id: str, split: str, raw: str, message: str, question: str | None = None) -> RawExample:
    return rejected(example_id, split, raw, message, question, lf_type=LF_TYPE, source=SOURCE)
