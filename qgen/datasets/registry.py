"""Dataset name -> loader, and :func:`load_dataset`, the one entry point the pipeline calls.

``data_dir`` is the datasets root (``shared/datasets`` or ``$QGEN_DATASETS``), where each dataset
has its folder (``webqsp/``, ``wen2015_sf/``, ...); a dataset's own folder is accepted too.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from qgen.datasets import cwq, e2e, webqsp, wen, wikisql
from qgen.datasets.paths import ENV_VAR, datasets_dir
from qgen.datasets.records import RawExample

Loader = Callable[[Path, str | None], Iterator[RawExample]]


@dataclass(frozen=True)
class DatasetSpec:
    """One loadable dataset: its folder under the datasets root, splits and loader."""

    name: str
    folder: str
    lf_type: str
    splits: tuple[str, ...]
    load: Loader


def _load_cwq(data_dir: Path, split: str | None = None) -> Iterator[RawExample]:
    """CWQ with entity names borrowed from a sibling ``webqsp/`` folder when there is one."""
    names = None
    try:
        names = cwq.webqsp_names(Path(data_dir).parent / "webqsp")
    except FileNotFoundError:
        pass  # no WebQSP beside CWQ: records keep empty names
    return cwq.load(data_dir, split, webqsp_names=names)


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec("webqsp", "webqsp", "sparql", webqsp.SPLITS, webqsp.load),
        DatasetSpec("wikisql", "wikisql", "sql", wikisql.SPLITS, wikisql.load),
        DatasetSpec("cwq", "cwq", "sparql", cwq.SPLITS, _load_cwq),
        DatasetSpec("e2e", "e2e", "mr", e2e.SPLITS, e2e.load),
        DatasetSpec("e2e_plus", "e2e_plus", "mr", e2e.PLUS_SPLITS, e2e.load_plus),
        DatasetSpec("wen2015_hotel", "wen2015_sf", "da", wen.SPLITS, wen.load_hotel),
        DatasetSpec("wen2015_restaurant", "wen2015_sf", "da", wen.SPLITS, wen.load_restaurant),
    )
}


class UnknownDatasetError(ValueError):
    """A dataset name qgen does not know."""


def dataset_spec(name: str) -> DatasetSpec:
    """The spec of ``name``, or an UnknownDatasetError listing the known datasets."""
    try:
        return DATASETS[name]
    except KeyError:
        raise UnknownDatasetError(f"unknown dataset {name!r}; known datasets: {', '.join(sorted(DATASETS))}") from None


def dataset_folder(name: str, data_dir: str | Path | None = None) -> Path:
    """The folder of dataset ``name``: ``<root>/<folder>`` if present, else ``data_dir`` itself."""
    spec = dataset_spec(name)
    root = datasets_dir(data_dir)
    if root is None:
        raise FileNotFoundError(
            f"no datasets directory for {name!r}: pass data_dir or set ${ENV_VAR}"
        )
    nested = root / spec.folder
    return nested if nested.is_dir() else root


def load_dataset(
    name: str, data_dir: str | Path | None = None, split: str | None = None
) -> Iterator[RawExample]:
    """The RawExamples of dataset ``name`` (every split for None) under ``data_dir``."""
    spec = dataset_spec(name)
    return spec.load(dataset_folder(name, data_dir), split)
