"""``--dedup-against``: leave out the logical forms that earlier corpora already hold, so that corpora
written one after another (scheduled runs) grow instead of repeating themselves.

A folder given is either a corpus (it has ``pairs/``) or a folder of corpora (each subfolder that has
``pairs/``, e.g. ``qgen-out/scheduled``); the run's own output folder is never counted. Logical forms
compare as written with whitespace collapsed (the samplers write the same query the same way). A
left-out logical form never becomes an input, so inputs = pairs + rejects still holds; how many were
left out is recorded in ``source.json`` and the card.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Iterator, Sequence

from qgen.datasets.records import RawExample
from qgen.synth.sources import Source


def known_logical_forms(folders: Sequence[str | Path], own: str | Path | None = None,
                        missing_ok: bool = False) -> tuple[set[str], list[str]]:
    """The logical forms (whitespace collapsed) of the pairs of every corpus under ``folders``, and
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
            corpora.append(str(corpus))
    return known, corpora


def skip_known(source: Source, folders: Sequence[str | Path], own: str | Path | None = None,
               missing_ok: bool = False) -> Source:
    """``source`` without the logical forms of the corpora under ``folders`` (counted in its options)."""
    known, corpora = known_logical_forms(folders, own, missing_ok)
    options = {**source.options, "dedup_against": corpora, "left_out_as_known": 0}

    def records() -> Iterator[RawExample]:
        for record in source.records:
            if record.load_error is None and _key(record.logical_form) in known:
                options["left_out_as_known"] += 1
                continue
            yield record

    return replace(source, records=records(), options=options)


def _key(logical_form: str) -> str:
    return " ".join(logical_form.split())
