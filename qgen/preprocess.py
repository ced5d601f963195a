"""Preprocessing: dataset records -> tokenized examples and rejects, as Parquet.

One Parquet file of examples per split and one ``rejects.parquet``; every input record ends in
exactly one of them (inputs = examples + rejects), and the counts are checked before returning.
Tokenization (and rdflib validation, cached per query shape) runs in a pool of worker processes.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from qgen.datasets.paths import SplitError
from qgen.datasets.records import RawExample
from qgen.io.parquet import ParquetSink
from qgen.schema import EXAMPLE_SCHEMA, REJECT_SCHEMA, SCHEMA_VERSION, ExampleRow, RejectRow
from qgen.version import code_version

CHUNK = 128


@dataclass
class PreprocessReport:
    dataset: str
    inputs: int = 0
    examples: dict[str, int] = field(default_factory=dict)  # split -> count
    rejects: int = 0
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total_examples(self) -> int:
        return sum(self.examples.values())

    def summary(self) -> str:
        per_split = ", ".join(f"{s} {n}" for s, n in sorted(self.examples.items()))
        return (f"{self.dataset}: inputs {self.inputs} = examples {self.total_examples}"
                f"{f' ({per_split})' if per_split else ''} + rejects {self.rejects}  [{self.seconds:.1f} s]")


def tokenizer_settings() -> dict[str, object]:
    """The tokenization rules in force, stored with every file (so a change is visible)."""
    from parsers import token_rules

    return {
        "emitted_separators": token_rules.EMITTED_SEPARATORS,
        "dropped_separators": token_rules.DROPPED_SEPARATORS,
        "entity_token": token_rules.ENTITY_TOKEN,
        "nl_token_pattern": token_rules.NL_TOKEN_PATTERN.pattern,
        "camel_boundary": token_rules.CAMEL_BOUNDARY.pattern,
        "unnamed_entity": token_rules.UNNAMED_ENTITY,
    }


def process_record(record: RawExample, labels: Callable[[str], str | None] | None = None) -> ExampleRow | RejectRow:
    """Tokenize one record; a bad one becomes a RejectRow, never an exception.

    ``labels`` names entities the record itself does not name (see ``parsers.sparql.entities``).
    """
    from parsers import LogicalFormError, tokenize_lf
    from parsers.tokens import nl_tokens

    if record.load_error:
        return RejectRow(record.id, record.split, record.source, "load", record.load_error, record.raw)
    bad_split = _bad_split(record.split)
    if bad_split:  # the split names the file its example goes to: it must stay a plain name in --out
        return RejectRow(record.id, str(record.split), record.source, "load", bad_split, record.raw)
    try:
        parsed = tokenize_lf(record.logical_form, record.lf_type, names=record.names, labels=labels)
    except LogicalFormError as err:
        return RejectRow(record.id, record.split, record.source, err.stage, str(err), record.raw)
    except ValueError as err:  # unknown lf_type
        return RejectRow(record.id, record.split, record.source, "parse", f"{type(err).__name__}: {err}", record.raw)
    return ExampleRow(
        id=record.id, split=record.split, source=record.source, lf_type=record.lf_type,
        logical_form=record.logical_form, normalized_lf=parsed.normalized, lf_tokens=parsed.tokens,
        lf_tokens_raw=parsed.raw_entity_tokens if parsed.raw_entity_tokens is not None else parsed.tokens,
        question=record.question, question_tokens=nl_tokens(record.question or ""),
        entities=[asdict(e) for e in parsed.entities],
        answers=[str(a) for a in record.answers],
    )


# A split becomes the file <out>/<split>.parquet: a plain name, and none of the files written beside the splits.
_SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_RESERVED_SPLITS = {"rejects"}


def _bad_split(split: object) -> str | None:
    """Why ``split`` cannot name an output file, or None."""
    if not isinstance(split, str) or not _SPLIT_NAME.fullmatch(split):
        return (f"split {split!r} is not a plain name (letters, digits, '_' or '-', at most 64, starting with a "
                "letter or digit)")
    if split in _RESERVED_SPLITS:
        return f"split {split!r} is reserved: {split}.parquet holds the rejected records"
    return None


def preprocess_records(records: Iterable[RawExample], dataset: str, out_dir: str | Path,
                       workers: int | None = None, labels: Mapping[str, str] | None = None,
                       config: Mapping[str, object] | None = None,
                       progress: Callable[[int], None] | None = None) -> PreprocessReport:
    """Write ``<out_dir>/<split>.parquet`` and ``<out_dir>/rejects.parquet`` for ``records``."""
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _remove_earlier_run(out_dir)
    report = PreprocessReport(dataset)
    metadata = {"schema_version": SCHEMA_VERSION, "dataset": dataset, "code_version": code_version(),
                "tokenizer": tokenizer_settings(), "config": dict(config or {})}
    sinks: dict[str, ParquetSink] = {}
    rejects = ParquetSink(out_dir / "rejects.parquet", REJECT_SCHEMA, {**metadata, "kind": "rejects"})
    try:
        for row in _map_records(records, labels, workers):
            report.inputs += 1
            if progress is not None and report.inputs % 256 == 0:
                progress(report.inputs)
            if isinstance(row, RejectRow):
                rejects.write(row.as_dict())
                report.rejects += 1
                continue
            if row.split not in sinks:
                sinks[row.split] = ParquetSink(out_dir / f"{row.split}.parquet", EXAMPLE_SCHEMA,
                                               {**metadata, "kind": "examples", "split": row.split})
            sinks[row.split].write(row.as_dict())
            report.examples[row.split] = report.examples.get(row.split, 0) + 1
    except BaseException:
        for sink in [*sinks.values(), rejects]:
            sink.abort()
        raise
    counts = {"inputs": report.inputs, "examples": report.examples, "rejects": report.rejects}
    for sink in [*sinks.values(), rejects]:
        report.files.append(str(sink.close({"counts": counts})))
    if report.inputs != report.total_examples + report.rejects:  # cannot happen; guard the promise
        raise RuntimeError(f"lost records: {report.summary()}")
    report.seconds = time.perf_counter() - started
    (out_dir / "counts.json").write_text(json.dumps({**counts, "seconds": round(report.seconds, 2)}, indent=2))
    return report


class NoRecordsError(ValueError):
    """An input that holds no records at all."""


def _remove_earlier_run(out_dir: Path) -> None:
    """The split files that an earlier run wrote into ``out_dir`` (its counts.json names them): a split this
    run does not write would otherwise stay beside the new ones, and ``qgen train`` read stale data."""
    counts = out_dir / "counts.json"
    if not counts.is_file():
        return
    try:
        written = json.loads(counts.read_text())
    except (OSError, ValueError):
        return
    if not isinstance(written, dict) or not {"inputs", "examples", "rejects"} <= written.keys():
        return  # not one of ours: leave the folder as it is
    splits = written["examples"]
    for split in splits if isinstance(splits, dict) else ():
        if _bad_split(split) is None:  # a plain name, as written
            (out_dir / f"{split}.parquet").unlink(missing_ok=True)
    counts.unlink()


def _map_records(records: Iterable[RawExample], labels: Mapping[str, str] | None,
                 workers: int | None) -> Iterator[ExampleRow | RejectRow]:
    workers = workers or os.cpu_count() or 1
    if workers <= 1:
        _init_worker(dict(labels or {}))
        for record in records:
            yield process_record(record, _worker_labels)
        return
    with _pool_context().Pool(workers, initializer=_init_worker, initargs=(dict(labels or {}),)) as pool:
        for rows in pool.imap(_process_chunk, _chunks(records, CHUNK)):
            yield from rows


def _pool_context() -> multiprocessing.context.BaseContext:
    """Worker processes started from a clean server process, never forked from the caller.

    The caller is often multithreaded (a Prefect flow run has its event-loop and log threads), and
    a child forked from it inherits any lock another thread held at that instant, then waits on it
    forever: a CI run hung so, in a pytest worker that had served a Prefect flow before. The fork
    server is a fresh single-threaded process; it imports the tokenizers once (preload) and forks
    the workers from there. Windows and macOS builds without it use spawn.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["qgen.preprocess", "parsers.sparql", "parsers.sql"])
        return context
    return multiprocessing.get_context("spawn")


_worker_labels: Callable[[str], str | None] | None = None


def _init_worker(labels: dict[str, str]) -> None:
    """Build the label source once per process (a dataset-wide id -> name table)."""
    from parsers.sparql import TableLabels

    global _worker_labels
    _worker_labels = TableLabels(labels) if labels else None


def _process_chunk(chunk: list[RawExample]) -> list[ExampleRow | RejectRow]:
    return [process_record(record, _worker_labels) for record in chunk]


def _chunks(records: Iterable[RawExample], size: int) -> Iterator[list[RawExample]]:
    chunk: list[RawExample] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def dataset_names(records: Iterable[RawExample]) -> dict[str, str]:
    """A dataset-wide entity id -> name table from every record's own names.

    Hand-written queries mention entities that their own annotation does not name but another
    record's does (WebQSP: m.04ztj "Marriage" is a constraint of other parses); this table is the
    label source for them. The first name seen for an id wins.
    """
    table: dict[str, str] = {}
    for record in records:
        for ident, name in record.names.items():
            if name and name.strip():
                table.setdefault(ident, name.strip())
    return table


def _unique_ids(records: Iterable[RawExample]) -> Iterator[RawExample]:
    """A user's file: a record whose id an earlier one has is a reject (load), not a second example under it."""
    first: dict[str, int] = {}
    for position, record in enumerate(records, 1):
        if record.load_error is None and record.id in first:
            yield replace(record, load_error=f"duplicate id {record.id!r} (first at record {first[record.id]})")
            continue
        first.setdefault(record.id, position)
        yield record


def _of_split(records: list[RawExample], split: str, path: Path) -> list[RawExample]:
    """``--split`` on a file: its records of that split (a record that could not be read has no split to
    tell, and stays: a reject). None of that split is an error naming the splits there are."""
    kept = [r for r in records if r.split == split or r.load_error is not None]
    if not any(r.load_error is None for r in kept):
        there = sorted({r.split for r in records if r.load_error is None})
        raise SplitError(f"{path}: no records of split {split!r} (its splits: {', '.join(there) or 'none'})")
    return kept


def preprocess_dataset(dataset: str, out_dir: str | Path, data_dir: str | Path | None = None,
                       split: str | None = None, workers: int | None = None,
                       progress: Callable[[int, int], None] | None = None, fmt: str = "auto",
                       fields: Any = None) -> PreprocessReport:
    """Preprocess a named dataset (see ``qgen.datasets.registry``), a file of LFs (JSON Lines, Parquet,
    text, or a public dataset's format ``fmt``: ``qgen.samplers.formats``) or a folder of LC-QuAD/QALD files."""
    from qgen.datasets.registry import DATASETS, load_dataset
    from qgen.samplers.files import read_logical_forms

    path = Path(dataset)
    if path.is_file() or fmt != "auto":  # a file, read as generate reads it; ids must be unique in it
        # A dataset's file (a .json one too) takes the split its name says, else --split, else train:
        # preprocess prepares training data. --split then keeps that split's records, whatever the format.
        records = list(_unique_ids(read_logical_forms(path, "auto", split=split or "train", fmt=fmt, fields=fields)))
        records, name = (_of_split(records, split, path) if split else records), path.stem
    elif path.is_dir() and any(path.glob("*.json")):  # a folder of such files named by split
        from qgen.datasets import sparql_json

        records, name = list(sparql_json.load(path, split)), path.name
    elif dataset not in DATASETS and (path.suffix or len(path.parts) > 1):
        raise FileNotFoundError(f"{dataset}: no such file or folder (a .jsonl, .parquet or text file of logical "
                                f"forms, an LC-QuAD/QALD .json, or a dataset name: {', '.join(sorted(DATASETS))})")
    else:
        records, name = list(load_dataset(dataset, data_dir, split)), dataset
    if not records:  # an empty file or folder: a mistake, not an empty dataset written with success
        raise NoRecordsError(f"{dataset}: no records in it (a .jsonl, .parquet or text file of logical forms, an "
                             "LC-QuAD/QALD .json, or a dataset name)")
    config = {"dataset": dataset, "data_dir": str(data_dir or ""), "split": split, "workers": workers,
              **({"format": fmt} if fmt != "auto" else {})}
    report_progress = (lambda done: progress(done, len(records))) if progress else None
    return preprocess_records(records, name, out_dir, workers=workers, labels=dataset_names(records), config=config,
                              progress=report_progress)
