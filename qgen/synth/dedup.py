"""``--dedup-against``: leave out the logical forms that earlier corpora already hold, so that corpora
written one after another (scheduled runs) grow instead of repeating themselves.

A folder given is either a corpus (it has ``pairs/``) or a folder of corpora (each subfolder that has
``pairs/``, e.g. ``qgen-out/scheduled``); the run's own output folder is never counted. A corpus holds
the logical forms of its pairs and of the rejects its filters judged (stages ``filter`` and
``round_trip``): the same model would mostly reject them again, and each would count as an input of both
corpora. Rejects of a failure that may pass another time (a timeout, out of memory) are drawn again. Logical forms
compare as written with whitespace collapsed (the samplers write the same query the same way). A
left-out logical form never becomes an input, so inputs = pairs + rejects still holds; how many were
left out is recorded in ``source.json`` and the card. They are left out before ``--count`` is applied
(``qgen.synth.sources.open_source``), so a sampler draws new ones in their place and ``--count 30`` gives 30
inputs while the source has that many new ones.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from qgen.datasets.records import RawExample

JUDGED_STAGES = ("filter", "round_trip")  # reject stages that judged the question (qgen.synth.schema.STAGES)


def known_logical_forms(folders: Sequence[str | Path], own: str | Path | None = None,
                        missing_ok: bool = False) -> tuple[set[str], list[str]]:
    """The logical forms (whitespace collapsed) of the pairs and judged rejects of every corpus under ``folders``, and
    the corpora read. A folder that holds no corpus yet gives none (a schedule's folder before its first
    run); one that does not exist raises ``ValueError`` unless ``missing_ok`` (scheduled runs: the first
    run makes it), and so does a file."""
    import pyarrow.dataset as ds

    own_folder = Path(own).resolve() if own is not None else None
    known: set[str] = set()
    corpora: list[str] = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            if missing_ok and not folder.exists():
                continue
            raise ValueError(f"--dedup-against {folder}: {'not a folder' if folder.exists() else 'no such folder'} "
                             "(give a corpus folder, with pairs/, or a folder of them)")
        found = [folder] if (folder / "pairs").is_dir() else sorted(p for p in folder.glob("*") if (p / "pairs").is_dir())
        for corpus in found:
            if own_folder is not None and corpus.resolve() == own_folder:
                continue
            shards = list((corpus / "pairs").glob("*.parquet"))
            if shards:
                column = ds.dataset(shards, format="parquet").to_table(columns=["logical_form"]).column(0)
                known.update(_key(text) for text in column.to_pylist() if text)
            rejected = list((corpus / "rejects").glob("*.parquet"))
            if rejected:
                rows = ds.dataset(rejected, format="parquet").to_table(columns=["stage", "input"]).to_pylist()
                known.update(_key(text) for text in (_rejected_logical_form(row["input"]) for row in rows
                                                     if row["stage"] in JUDGED_STAGES) if text)
            corpora.append(str(corpus))
    return known, corpora


def leave_out_known(records: Iterable[RawExample], known: set[str], options: dict[str, Any]) -> Iterator[RawExample]:
    """``records`` without those whose logical form ``known`` holds, counted in ``options["left_out_as_known"]``."""
    options.setdefault("left_out_as_known", 0)
    for record in records:
        if record.load_error is None and _key(record.logical_form) in known:
            options["left_out_as_known"] += 1
            continue
        yield record


def _rejected_logical_form(row_input: str | None) -> str | None:
    """The logical form in a reject row's ``input`` (``qgen.synth.schema.record_json``), if it has one."""
    import json

    try:
        data = json.loads(row_input or "")
    except ValueError:
        return None
    form = data.get("logical_form") if isinstance(data, dict) else None
    return form if isinstance(form, str) else None


def _key(logical_form: str) -> str:
    return " ".join(logical_form.split())
