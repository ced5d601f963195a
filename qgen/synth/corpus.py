"""The synthetic corpus on disk: sharded, resumable, every input accounted for (issue 4).

Layout of ``out_dir``::

    pairs/part-NNNNN.parquet     PAIR_SCHEMA rows (qgen.synth.schema)
    rejects/part-NNNNN.parquet   REJECT_SCHEMA rows: id, stage, reason, input
    manifest.json                settings, counts, one entry per finished shard (rows, sha256)
    README.md                    the dataset card (qgen.synth.card)

Sharding is by input position: shard ``k`` holds inputs ``k * shard_size`` to ``(k + 1) *
shard_size - 1``, and both of its files are written (even when empty) in input order. A shard's
files are written under ``.tmp/`` and renamed into ``pairs/`` and ``rejects/`` when complete; the
manifest (also written to a temporary name and renamed) is updated after them. A shard counts as
finished only when the manifest lists it, both files exist and their sha256 match the manifest;
a run started again re-reads the input, skips finished shards by position (checking that their
inputs hash as before) and redoes the rest, so a run killed at any moment ends, once restarted,
with exactly the rows of an uninterrupted run. ``created_at`` is the run's timestamp, fixed in the
manifest at the first start and reused on every resume. Batches never straddle shards, so a shard's
rows do not depend on what ran before it. Resuming needs the same settings (model checksum, shard
size, beam, batch size, thresholds, seed, device type: checked against the manifest); bitwise equal
scores also need the same torch build and thread count (and, on a GPU, deterministic kernels).
Renames protect against a killed process, not against power loss (no fsync).

The folder is qgen's only when empty or marked by a corpus ``manifest.json``; a run holds its lock
throughout (``qgen.io.output_folder``). A manifest still "running" with the lock free was left by a
dead run: resumed with the same settings, replaced (its shards deleted) with other ones; a
"complete" corpus is never replaced. Inputs are compared by content: the name of the file they came
from (a record's ``source``, and the prefix of an id its loader made up) is left out of a shard's
``input_sha256``, so a renamed input file still resumes.

Shards elsewhere: ``map_shards`` hands the shards to a caller's map (a Dask cluster through the
Prefect flows): each is a picklable ``ShardJob`` and ``write_shard(job)`` writes its two files and
returns its manifest entry; the manifest and the card are still written here, in this process, as
the entries come back. A shard's rows depend only on its job, so the corpus is the one this
function writes by itself.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from itertools import chain, islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch

from qgen.checkpoint import file_checksum, read_payload
from qgen.datasets.records import RawExample
from qgen.model_match import check_generator, model_record, unknown_lf_type
from qgen.io.output_folder import FolderKind, OutputFolderError, write_file, writes_folder
from qgen.io.parquet import ParquetSink
from qgen.synth.card import model_facts, write_card
from qgen.synth.config import SynthesisConfig
from qgen.synth.filter import FilterThresholds, OverCopyFilter, Verdict, filter_statistics, merge_statistics
from qgen.synth.audit import audit_pair, audit_statistics, merge_audit_statistics
from qgen.synth.generator import ROUND_TRIP_TRIES, QuestionWriter
from qgen.synth.round_trip import (RoundTripFilter, RoundTripOptions, RoundTripVerdict, cached_filter, judge_pairs,
                                   merge_counts, round_trip_statistics)
from qgen.synth.schema import PAIR_SCHEMA, REJECT_SCHEMA, SCHEMA_VERSION, PairRow, RejectRow, record_json
from qgen.train import resolve_device
from qgen.version import code_version

FORMAT = "qgen-synth-corpus-1"


class CorpusError(OutputFolderError):
    """The output directory cannot be (re)used for this run: other settings, other input, stray files."""


CORPUS_FOLDER = FolderKind("synthetic corpus", "manifest.json", FORMAT,
                           ("manifest.json", "README.md", "source.json", "pairs", "rejects", "splits", ".tmp"))


def shard_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


@dataclass(frozen=True)
class ShardJob:
    """One shard and everything needed to write it on another process or machine (picklable).

    ``items``: (input position, record with a stable id, duplicate-id message or None);
    ``writer_options``: ``QuestionWriter`` keyword arguments; ``meta``: the shard files' footer.
    """

    index: int
    items: tuple[tuple[int, RawExample, str | None], ...]
    input_sha256: str
    out_dir: str
    checkpoint: str
    writer_options: dict[str, Any]
    thresholds: FilterThresholds
    seed: int
    meta: dict[str, Any]
    labels: Callable[[str], str | None] | None = field(default=None, compare=False)
    round_trip: RoundTripOptions | None = None  # the round-trip filter's parser, if any


ShardMap = Callable[[Callable[[ShardJob], dict[str, Any]], Iterable[ShardJob]], Iterable[dict[str, Any]]]


@writes_folder("out_dir", CORPUS_FOLDER, CorpusError)
def synthesize(records: Iterable[RawExample], checkpoint: str | Path, out_dir: str | Path,
               config: SynthesisConfig | None = None, labels: Callable[[str], str | None] | None = None,
               sample_size: int = 10, log: Callable[[str], None] = print, map_shards: ShardMap | None = None,
               progress: Callable[[int], None] | None = None, lf_types: Sequence[str] | None = None) -> dict[str, Any]:
    """Generate, filter and write the corpus for ``records`` as ``config`` says; returns the final manifest.

    Generation batches hold at most ``config.max_tokens`` padded source tokens (default: what fits
    the device, ``qgen.batching``) and, if given, at most ``config.batch_size`` logical forms.

    Starting it again on the same ``out_dir`` with the same input and settings resumes (see the
    module docstring); other settings raise ``CorpusError``. ``map_shards(write_shard, jobs)``, if
    given, must call ``write_shard`` once per job (anywhere: threads, processes, a cluster) and yield
    every returned entry (in any order); by default each shard is written here, one after another.
    ``progress(inputs_done)`` is called after each finished shard (a progress bar's feed).
    ``config.round_trip``: the round-trip filter's parser and rules (``qgen.synth.round_trip``),
    applied to the pairs the over-copy filter keeps; ``lf_types`` (when the source knows them) are
    checked against the parser's before anything is written.
    """
    config = config or SynthesisConfig()
    out = Path(out_dir)
    thresholds, seed, round_trip = config.thresholds, config.seed, config.round_trip
    checksum = file_checksum(checkpoint)
    device_type = resolve_device(config.device).type
    settings = {"model_checksum": checksum, "shard_size": config.shard_size, "beam": config.beam,
                "alpha": config.alpha, "max_len": config.max_len, "max_src_len": config.max_src_len,
                "batch_size": config.batch_size, "seed": seed, "tokenize_timeout_s": config.tokenize_timeout_s,
                "device_type": device_type, "thresholds": thresholds.as_dict(), "schema_version": SCHEMA_VERSION}
    if config.no_repeat:  # only when set, so a corpus begun before this setting existed still resumes
        settings["no_repeat"] = True
    if config.max_tokens is not None:  # as no_repeat
        settings["max_tokens"] = config.max_tokens
    if config.candidate_count > 1:  # as no_repeat
        settings["candidates"] = config.candidate_count
    if config.sampling:  # as no_repeat
        settings["sampling"] = config.sampling
    facts, mixed = model_record(checkpoint), not lf_types
    if mixed:  # a file of logical forms: the types of its first records, checked up front
        lf_types, records = leading_types(records)
    # Refused before anything is written: a parser as the model, or a model for none of the logical forms
    # the file begins with (a record of a type the model lacks becomes a reject row, qgen.synth.generator).
    check_generator(checkpoint, lf_types, facts, any_fits=mixed)
    lf_types = [t for t in lf_types if unknown_lf_type(facts, t) is None]  # what the round-trip parser must take
    if round_trip is not None:  # the parse runs where the generation does
        round_trip = replace(round_trip, device=device_type)
    judge = _round_trip_judge(round_trip, checkpoint, lf_types)
    if judge is not None:  # only when set, as no_repeat
        settings["round_trip"] = {**judge.settings(), "parser": file_checksum(judge.checkpoint)}
        if config.candidate_count > 1:  # the writer chooses among the candidates by round trip: a corpus
            settings["round_trip_tries"] = ROUND_TRIP_TRIES  # begun with another rule does not resume with this
    manifest = _open_manifest(out, settings, log)
    created_at = datetime.fromisoformat(manifest["created_at"])
    writer_options = {**config.writer_options(), "created_at": created_at}
    writer = QuestionWriter(checkpoint, labels=labels, **writer_options)
    manifest["model"] = {"path": str(checkpoint), "checksum": checksum, "model_id": writer.model_id,
                         "copy": writer.copy_mode, "config": writer.model.cfg.as_dict(),
                         "about": model_facts(read_payload(checkpoint))}  # for the card: what the checkpoint records
    if judge is not None:  # with several candidates the writer parses back up to ROUND_TRIP_TRIES of them
        manifest["round_trip_settings"] = {**judge.settings(),
                                           **({"tries": ROUND_TRIP_TRIES} if config.candidate_count > 1 else {})}
    done = {entry["index"]: entry for entry in manifest["shards"]}
    counted = {"shards": 0}

    def jobs() -> Iterator[ShardJob]:
        """The shards still to write (finished ones are skipped after checking their input)."""
        for index, items in enumerate(_shards(records, config.shard_size, {})):
            counted["shards"] += 1
            digest = _input_digest(items)
            entry = done.get(index)
            if entry is not None and entry["inputs"] < len(items) and entry["input_sha256"] in (
                    _input_digest(items[:entry["inputs"]]), _input_digest(items[:entry["inputs"]], by_name=True)):
                # The same input, more of it (a larger --count), where the last shard was not full (30 of 1000)
                raise CorpusError(f"{out}: shard {index} was written with {entry['inputs']} inputs and would now "
                                  f"hold {len(items)}: a finished corpus grows by whole shards (--shard-size "
                                  f"{config.shard_size}) only; write the larger corpus to another folder (--out)")
            if entry is not None and (entry["inputs"] != len(items) or entry["input_sha256"] not in (
                    digest, _input_digest(items, by_name=True))):  # by name: shards of older runs
                raise CorpusError(f"{out}: the input of shard {index} (positions {items[0][0]}-{items[-1][0]}) "
                                  "differs from the run that wrote it; use another output folder (--out) for other input")
            if entry is not None and _finished(out, entry):
                continue
            meta = {"schema_version": SCHEMA_VERSION, "shard": index, "created_at": manifest["created_at"],
                    "model": manifest["model"]["model_id"], "settings": manifest["settings"]}
            yield ShardJob(index, tuple(items), digest, str(out), str(checkpoint), writer_options, thresholds, seed,
                           meta, labels, round_trip)

    if map_shards is None:
        overcopy_filter = OverCopyFilter(thresholds)
        entries: Iterable[dict[str, Any]] = (_write_job(job, writer, overcopy_filter, judge) for job in jobs())
    else:
        entries = map_shards(write_shard, jobs())
    for entry in entries:
        done[entry["index"]] = entry
        manifest["shards"] = [done[i] for i in sorted(done)]
        _write_json(out / "manifest.json", manifest)  # last: the shard is finished from here on
        log(f"shard {entry['index']}: {entry['inputs']} inputs -> {entry['pairs']['rows']} pairs + "
            f"{entry['rejects']['rows']} rejects")
        if progress is not None:  # inputs in finished shards so far (for a progress bar)
            progress(sum(e["inputs"] for e in done.values()))
    return _finish(out, manifest, counted["shards"], seed, sample_size, log)


_writers: dict[tuple, QuestionWriter] = {}  # per process: the last checkpoint loaded by write_shard
# A writer holds one shard's state while it writes (its round-trip judge, over-copy filter and verdicts),
# and a task runner may call write_shard from several threads of one process (Prefect's thread pool, a
# Dask worker's threads): one shard at a time per process. The model's own ops use the intra-op threads.
_writer_lock = threading.Lock()


def write_shard(job: ShardJob) -> dict[str, Any]:
    """Write one shard's two files (see ``synthesize``'s ``map_shards``); returns its manifest entry."""
    key = (job.checkpoint, repr(sorted(job.writer_options.items())), id(job.labels) if job.labels else None)
    with _writer_lock:
        writer = _writers.get(key)
        if writer is None:
            _writers.clear()
            writer = _writers[key] = QuestionWriter(job.checkpoint, labels=job.labels, **job.writer_options)
        judge = cached_filter(job.round_trip) if job.round_trip is not None else None
        return _write_job(job, writer, OverCopyFilter(job.thresholds), judge)


def leading_types(records: Iterable[RawExample], peek: int = 1000) -> tuple[list[str], Iterable[RawExample]]:
    """The logical-form types of a file's first ``peek`` readable records, and the records, none consumed."""
    records = iter(records)
    head = list(islice(records, peek))
    return sorted({r.lf_type for r in head if r.load_error is None and r.lf_type}), chain(head, records)


def _round_trip_judge(options: RoundTripOptions | None, checkpoint: str | Path,
                      lf_types: Sequence[str] | None) -> RoundTripFilter | None:
    """The round-trip filter, refused before the run when its parser cannot judge this run's pairs."""
    if options is None:
        return None
    from qgen.checkpoint import read_payload

    judge = cached_filter(options)
    judge.check_compatible(list(lf_types or ()), read_payload(checkpoint))
    return judge


def _write_job(job: ShardJob, writer: QuestionWriter, overcopy_filter: OverCopyFilter,
               judge: RoundTripFilter | None = None) -> dict[str, Any]:
    """Generate, filter and write one shard; its manifest entry."""
    started = time.perf_counter()
    torch.manual_seed(job.seed * 1_000_003 + job.index)  # per shard: a shard's rows never depend on the others
    items = list(job.items)
    pairs, rejects, verdicts, round_trips = _make_rows(items, writer, overcopy_filter, judge)
    audits = [audit_pair(p.lf_type, p.logical_form, p.lf_tokens, p.question) for p in pairs]
    pairs = [replace(p, audit_failures=list(a.failures)) for p, a in zip(pairs, audits)]  # each row says its own
    return {"index": job.index, "first_position": items[0][0], "inputs": len(items), "input_sha256": job.input_sha256,
            **_write_shard(Path(job.out_dir), job.index, pairs, rejects, job.meta),
            "rejects_by_stage": _count_stages(rejects), "filter": filter_statistics(verdicts),
            "round_trip": round_trip_statistics(round_trips), "audit": audit_statistics(audits),
            "seconds": round(time.perf_counter() - started, 3)}


def _shards(records: Iterable[RawExample], size: int, seen_ids: dict[str, int]
            ) -> Iterator[list[tuple[int, RawExample, str | None]]]:
    """Consecutive chunks of (position, record with a stable id, duplicate-id message or None)."""
    iterator = iter(records)
    position = 0
    while chunk := list(islice(iterator, size)):
        items = []
        for record in chunk:
            if not record.id:
                record = replace(record, id=f"input-{position:09d}")
            first = seen_ids.setdefault(record.id, position)
            duplicate = f"duplicate id {record.id!r}: first at input position {first}" if first != position else None
            items.append((position, record, duplicate))
            position += 1
        yield items


def _input_digest(items: list[tuple[int, RawExample, str | None]], by_name: bool = False) -> str:
    """sha256 of a shard's inputs, to check on resume that skipped positions hold the same input.

    The inputs' content only: not the name of their file (``source``, and an id made from it as
    ``<source>-<line>``). ``by_name``: the digest of older runs, which hashed those too."""
    digest = hashlib.sha256()
    for position, record, _ in items:
        if not by_name:
            unnamed = record.id[len(record.source):] if record.source and record.id.startswith(record.source + "-") \
                else record.id
            record = replace(record, id=unnamed, source="")
        digest.update(record_json(record, position).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _make_rows(items: list[tuple[int, RawExample, str | None]], writer: QuestionWriter,
               overcopy_filter: OverCopyFilter, judge: RoundTripFilter | None = None
               ) -> tuple[list[PairRow], list[RejectRow], list[Verdict], list[RoundTripVerdict]]:
    """Generate and filter one shard (over-copy, then round trip on what it keeps); rows in input order."""
    fresh = [(position, record) for position, record, duplicate in items if duplicate is None]
    # With several candidates per logical form the writer judges them by round trip itself and writes the
    # first that holds (qgen.synth.generator), leaving the verdicts here; with one it is judged below.
    writer.round_trip = judge if judge is not None and writer.candidates > 1 else None
    writer.overcopy = overcopy_filter
    writer.round_trip_verdicts = {}
    results = iter(writer.write([r for _, r in fresh], [p for p, _ in fresh]))
    outcomes: list[tuple[int, RawExample, PairRow | RejectRow, Verdict | None]] = []
    for position, record, duplicate in items:
        if duplicate is not None:
            outcomes.append((position, record, RejectRow(record.id, "input", duplicate, record_json(record, position)), None))
            continue
        result = next(results)
        outcomes.append((position, record, result, None if isinstance(result, RejectRow) else overcopy_filter.judge_pair(result)))
    verdicts = [v for *_, v in outcomes if v is not None]
    candidates = [result for *_, result, v in outcomes if v is not None and v.keep]
    if writer.round_trip is not None:  # judged in the writer; a question it could not judge is judged here
        unjudged = [c for c in candidates if c.id not in writer.round_trip_verdicts]
        late = dict(zip((c.id for c in unjudged), judge_pairs(judge, unjudged) if unjudged else []))
        round_trips = [writer.round_trip_verdicts.get(c.id) or late[c.id] for c in candidates]
    else:
        round_trips = judge_pairs(judge, candidates) if judge is not None and candidates else []
    trips = iter(round_trips)  # in the candidates' order, which is the outcomes' order
    pairs: list[PairRow] = []
    rejects: list[RejectRow] = []
    for position, record, result, verdict in outcomes:
        trip = next(trips, None) if verdict is not None and verdict.keep else None
        if verdict is None:
            rejects.append(result)  # type: ignore[arg-type]
        elif not verdict.keep:
            rejects.append(RejectRow(result.id, "filter", verdict.reason or "", record_json(
                record, position, question=result.question, score=result.score)))
        elif trip is not None and not trip.keep:
            threshold = judge.thresholds.get(trip.rule) if judge is not None else None
            rejects.append(RejectRow(result.id, "round_trip", trip.reason(threshold), record_json(
                record, position, question=result.question, score=result.score,
                round_trip={"rule": trip.rule, "score": trip.score, "parse": trip.parse})))
        else:
            pairs.append(result)  # type: ignore[arg-type]
    return pairs, rejects, verdicts, round_trips


def _write_shard(out: Path, index: int, pairs: list[PairRow], rejects: list[RejectRow],
                 meta: dict[str, Any]) -> dict[str, Any]:
    """Both files of a shard, each complete under .tmp/ before it is renamed into place."""
    files = {}
    for kind, rows, schema in (("pairs", pairs, PAIR_SCHEMA), ("rejects", rejects, REJECT_SCHEMA)):
        staged = out / ".tmp" / kind / shard_name(index)
        sink = ParquetSink(staged, schema, {**meta, "kind": kind})
        try:
            sink.write_all(row.as_dict() for row in rows)
        except BaseException:
            sink.abort()
            raise
        sink.close()
        final = out / kind / shard_name(index)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged, final)
        files[kind] = {"path": f"{kind}/{final.name}", "rows": len(rows), "sha256": file_checksum(final)}
    return files


def _finished(out: Path, entry: dict[str, Any]) -> bool:
    """Both files exist and hash as the manifest says (a truncated or half-written file does not)."""
    for kind in ("pairs", "rejects"):
        path = out / entry[kind]["path"]
        if not path.is_file() or file_checksum(path) != entry[kind]["sha256"]:
            return False
    return True


def _count_stages(rejects: list[RejectRow]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rejects:
        counts[row.stage] = counts.get(row.stage, 0) + 1
    return dict(sorted(counts.items()))


def _changed_settings(before: dict[str, Any], now: dict[str, Any], prefix: str = "") -> list[str]:
    """The settings that differ, nested ones by their path (``round_trip.k: 1 -> 4``)."""
    changed = []
    for key in sorted(before.keys() | now.keys()):
        old, new = before.get(key), now.get(key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            changed += _changed_settings(old, new, f"{prefix}{key}.")
        else:
            changed.append(f"{prefix}{key}: {old!r} -> {new!r}" if not isinstance(old, (dict, list))
                           and not isinstance(new, (dict, list)) else f"{prefix}{key}")
    return changed


def _open_manifest(out: Path, settings: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    """The manifest of a run to resume (same settings), or a new one written before any shard
    (replacing a dead run's with other settings; the caller holds the folder's lock)."""
    path = out / "manifest.json"
    manifest = json.loads(path.read_text()) if path.exists() else None
    if manifest is not None:
        if manifest.get("format") != FORMAT:
            raise CorpusError(f"{path} is not a qgen synthetic-corpus manifest")
        if manifest["settings"] != settings:
            changed = _changed_settings(manifest["settings"], settings)
            if manifest.get("status") != "running":
                raise CorpusError(f"{out} was written with other settings ({', '.join(changed)}); "
                                  "use another output folder (--out) or the same settings to resume")
            log(f"{out}: replacing the shards of a run that died unfinished with other settings ({', '.join(changed)})")
            for kind in ("pairs", "rejects"):
                for shard in (out / kind).glob("part-*.parquet"):
                    if re.fullmatch(r"part-\d{5}\.parquet", shard.name):
                        shard.unlink()  # a link is removed itself, never followed
            manifest = None
    if manifest is None:
        if any((out / kind).exists() and any((out / kind).iterdir()) for kind in ("pairs", "rejects")):
            raise CorpusError(f"{out} holds shards but no manifest.json: not a run this function can resume")
        manifest = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "status": "running",
                    "created_at": datetime.now(timezone.utc).isoformat(), "settings": settings, "shards": []}
        out.mkdir(parents=True, exist_ok=True)
        _write_json(path, manifest)
    shutil.rmtree(out / ".tmp", ignore_errors=True)  # what a killed run left half-written
    manifest["code_version"] = code_version()
    return manifest


def _finish(out: Path, manifest: dict[str, Any], shards: int, seed: int, sample_size: int,
            log: Callable[[str], None]) -> dict[str, Any]:
    """Totals, checks (pairs + rejects = inputs; no stray shard), the card, then the manifest."""
    entries = manifest["shards"]
    if [e["index"] for e in entries] != list(range(shards)):
        raise CorpusError(f"{out}: the manifest lists shards {[e['index'] for e in entries]} but the input made "
                          f"{shards}; the input changed since the first run")
    for kind in ("pairs", "rejects"):
        (out / kind).mkdir(parents=True, exist_ok=True)
        stray = {p.name for p in (out / kind).iterdir()} - {Path(e[kind]["path"]).name for e in entries}
        if stray:
            raise CorpusError(f"{out / kind} holds files the manifest does not list ({', '.join(sorted(stray)[:5])}); "
                              "remove them")
    counts = {"inputs": sum(e["inputs"] for e in entries), "pairs": sum(e["pairs"]["rows"] for e in entries),
              "rejects": sum(e["rejects"]["rows"] for e in entries), "rejects_by_stage": {}}
    for entry in entries:
        for stage, n in entry["rejects_by_stage"].items():
            counts["rejects_by_stage"][stage] = counts["rejects_by_stage"].get(stage, 0) + n
    if counts["inputs"] != counts["pairs"] + counts["rejects"]:  # cannot happen; guard the promise
        raise CorpusError(f"lost inputs: {counts}")
    manifest.update(counts=counts, filter=merge_statistics(e["filter"] for e in entries), status="complete",
                    round_trip=merge_counts((e.get("round_trip", {}) for e in entries),
                                            {"judged": 0, "kept": 0, "removed": 0, "by_rule": {}}),
                    audit=merge_audit_statistics(e.get("audit", {"audited": 0, "passed": 0, "failures": {}})
                                                 for e in entries))
    shutil.rmtree(out / ".tmp", ignore_errors=True)
    splits = manifest.get("splits")
    if splits and sum(s["pairs"] for s in splits["splits"].values()) != counts["pairs"]:
        # An extended corpus (a larger --count) that was split before: deal the added pairs' new templates to
        # the splits, the earlier ones staying where they were, so the card's splits hold every pair.
        from qgen.synth.template_split import write_template_splits

        manifest["splits"] = write_template_splits(out, splits["fractions"], splits["seed"], keep_earlier=True)
        log(f"{out}: the added pairs dealt to the template splits (earlier templates keep their split)")
    write_card(out, manifest, seed, sample_size)
    _write_json(out / "manifest.json", manifest)
    log(f"{out}: inputs {counts['inputs']} = pairs {counts['pairs']} + rejects {counts['rejects']}")
    return manifest


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write to a temporary name and rename: a reader sees the old manifest or the new one."""
    write_file(path, json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n")
