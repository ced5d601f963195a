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


def known_logical_forms(folders: Sequence[str | Path], own: str | Path | None = None) -> tuple[set[str], list[str]]:
    """The logical forms (whitespace collapsed) of the pairs of every corpus under ``folders``, and
    the corpora read; a folder that is neither a corpus nor holds one raises ``ValueError``."""
    import pyarrow.dataset as ds

    own_folder = Path(own).resolve() if own is not None else None
    known: set[str] = set()
    corpora: list[str] = []
    for folder in map(Path, folders):
        found = [folder] if (folder / "pairs").is_dir() else sorted(p for p in folder.glob("*") if (p / "pairs").is_dir())
        if not found:
            raise ValueError(f"--dedup-against {folder}: not a corpus folder (with pairs/) nor a folder of them")
        for corpus in found:
            if own_folder is not None and corpus.resolve() == own_folder:
                continue
            shards = list((corpus / "pairs").glob("*.parquet"))
            if shards:
                column = ds.dataset(shards, format="parquet").to_table(columns=["logical_form"]).column(0)
                known.update(_key(text) for text in column.to_pylist() if text)
            corpora.append(str(corpus))
    return known, corpora


def skip_known(source: Source, folders: Sequence[str | Path], own: str | Path | None = None) -> Source:
    """``source`` without the logical forms of the corpora under ``folders`` (counted in its options)."""
    known, corpora = known_logical_forms(folders, own)
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
