"""Where ``qgen synthesize`` takes its logical forms from: one of a file, a graph, an endpoint or tables.

Each choice yields ``RawExample`` records; the samplers' counts (drawn, kept, duplicates, no
answer, ...) are returned beside them so that the corpus can report them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from qgen.datasets.records import RawExample
from qgen.synth.dedup import leave_out_known


class SourceError(ValueError):
    """A source that gives nothing to work on (a file that cannot be read or holds nothing, a sampler that
    keeps no query): the message names the option, the file and why."""


def _why(err: Exception) -> str:
    """The reader's reason, in one line."""
    text = " ".join(str(err).split())
    if text.startswith(f"{type(err).__name__}: "):  # a LogicalFormError names its type itself
        return text[:300]
    return f"{type(err).__name__}: {text[:300]}" if text else type(err).__name__


@dataclass
class Source:
    records: Iterator[RawExample]
    kind: str  # file | graph | endpoint | tables | substitution
    description: str
    sampler: Any = None  # a sampler with ``stats`` (None for files)
    options: dict[str, Any] = field(default_factory=dict)
    # A file read up to ``count``: whether records are left after what was read (ask once it is read).
    left_unread: Callable[[], bool] | None = None

    def stats(self) -> dict[str, Any] | None:
        return None if self.sampler is None else self.sampler.stats.as_dict()


def open_source(from_file: str | None = None, from_graph: str | None = None, from_endpoint: str | None = None,
                from_tables: Sequence[str] = (), substitute_from: str | None = None, count: int = 1000,
                seed: int = 0, max_answers: int = 10, lf_type: str | None = None,
                data_dir: str | Path | None = None, fmt: str = "auto", fields: Any = None,
                known: set[str] | None = None) -> Source:
    """The one source named; ``count`` caps sampled records (files are read whole unless capped); ``fmt``
    and ``fields``: the file's format (``qgen.samplers.formats``); ``known``: logical forms that earlier
    corpora hold (``qgen.synth.dedup``), left out before the count, so that new ones take their places."""
    chosen = [x for x in (from_file, from_graph, from_endpoint, list(from_tables) or None) if x]
    if len(chosen) != 1:
        raise ValueError("give exactly one of --from-file, --from-graph, --from-endpoint, --from-tables")
    options: dict[str, Any] = {"count": count, "seed": seed, "max_answers": max_answers}
    if known is not None:
        options["left_out_as_known"] = 0  # counted as the records are read

    def new(records: Iterator[RawExample]) -> Iterator[RawExample]:
        return records if known is None else leave_out_known(records, known, options)

    # A sampler keeps each query once, so at most len(known) of what it keeps are known ones.
    wanted = count + len(known or ())
    if from_file:
        from qgen.datasets.sparql_json import UnknownJsonError
        from qgen.samplers.files import MissingColumnError, read_logical_forms

        from parsers.lf_type import AUTO

        # A record without lf_type gets the one its text shows (refused, as a reject row, when unclear).
        records = read_logical_forms(from_file, lf_type or AUTO, data_dir=data_dir, fmt=fmt, fields=fields)
        records = iter(records)
        try:
            first = next(records, None)  # an empty file is a mistake, not an empty corpus written with success
        except UnknownJsonError:  # the CLI says which formats there are
            raise
        except MissingColumnError as err:
            raise SourceError(f"--from-file {err}") from None
        except (OSError, ValueError) as err:  # a file its reader cannot open (a broken Parquet file, ...)
            raise SourceError(f"--from-file {from_file}: cannot be read ({_why(err)})") from None
        if first is None:
            raise SourceError(f"--from-file {from_file}: it holds no logical forms (one per line, or one record "
                              "each in JSON Lines or Parquet)")
        records = chain([first], records)
        if not count:
            return Source(new(records), "file", str(from_file), options=options)
        return Source(islice(new(records), count), "file", str(from_file), options=options,
                      left_unread=lambda: _more_follow(records))
    if from_tables:
        from qgen.samplers.tables import TableSampler, TableSamplerConfig, connect_tables, table_files

        config = TableSamplerConfig(seed=seed, max_answers=max_answers)
        paths = list(from_tables)
        for path in paths:
            if not Path(path).exists():
                raise SourceError(f"--from-tables {path}: no such file or folder")
        try:
            files = table_files(paths)  # folders as their files; one without any, said so
        except ValueError as err:
            raise SourceError(f"--from-tables {err}") from None
        try:
            sampler = TableSampler(connect_tables(files), config)
        except Exception as err:  # noqa: BLE001 - pandas, pyarrow, sqlite: whichever reader refused the file
            raise SourceError(f"--from-tables {', '.join(paths)}: not readable as CSV/Parquet tables or one "
                              f"SQLite database ({_why(err)})") from None
        return _sampled_something(Source(islice(new(sampler.sample(wanted)), count), "tables", ", ".join(paths),
                                         sampler, options))
    from qgen.samplers.kg import KGSampler, KGSamplerConfig

    config = KGSamplerConfig(seed=seed, max_answers=max_answers)
    if from_endpoint:
        from qgen.samplers.readonly import endpoint_graph

        sampler = KGSampler.from_endpoint(endpoint_graph(from_endpoint), config)
        return _sampled_something(Source(islice(new(sampler.sample(wanted)), count), "endpoint", from_endpoint,
                                         sampler, options))
    graph = load_graph(str(from_graph))
    if substitute_from:
        from qgen.samplers.files import read_logical_forms
        from qgen.samplers.substitution import EntitySubstitution, SubstitutionConfig

        substitution = EntitySubstitution(graph, SubstitutionConfig(seed=seed, max_answers=max_answers))
        seeds = read_logical_forms(substitute_from, "sparql", data_dir=data_dir)
        records = islice(new(substitution.substitute(seeds)), count)
        return _sampled_something(Source(records, "substitution", f"{from_graph} with seeds {substitute_from}",
                                         substitution, options))
    sampler = KGSampler.from_graph(graph, config)
    return _sampled_something(Source(islice(new(sampler.sample(wanted)), count), "graph", str(from_graph),
                                     sampler, options))


def _sampled_something(source: Source) -> Source:
    """``source`` as it was, once its sampler has kept a first query; else a SourceError with the sampler's
    counts, so that no corpus of nothing is written with success (an endpoint that cannot be reached, tables
    of one column), whether the CLI or a scheduled flow run asked."""
    first = next(source.records, None)
    if first is None and source.options.get("left_out_as_known"):
        return source  # every query it gave is in an earlier corpus: a run with nothing new, not an error
    if first is None:
        counts = source.stats() or {}
        why = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]) if v and k != "drawn")
        option = "--from-graph" if source.kind == "substitution" else f"--from-{source.kind}"
        # Why, where queries failed (an unreachable host): the first error of the most frequent such outcome.
        errors = getattr(source.sampler, "first_errors", {})
        outcome = max(errors, key=lambda name: counts.get(name, 0), default=None)
        raise SourceError(f"{option} {source.description}: no query could be sampled from it "
                          f"({counts.get('drawn', 0)} drawn{': ' + why if why else ''})"
                          + (f"; the first of the {outcome}: {errors[outcome]}" if outcome else ""))
    source.records = chain([first], source.records)
    return source


def _more_follow(records: Iterator[RawExample]) -> bool:
    """Whether ``records`` has one more; a record that fails to read counts as none (the run is over: this
    only decides whether a note is printed)."""
    try:
        return next(records, None) is not None
    except Exception:  # noqa: BLE001 - whichever reader's error, on a record the run never needed
        return False


def load_graph(path: str) -> Any:
    """An rdflib Graph from a file; the format follows the file name (Turtle, N-Triples, RDF/XML...)."""
    from rdflib import Graph
    from rdflib.util import guess_format

    if not Path(path).is_file():
        raise SourceError(f"--from-graph {path}: no such file")
    graph = Graph()
    try:
        graph.parse(path, format=guess_format(path) or "turtle")
    except Exception as err:  # noqa: BLE001 - rdflib's parsers raise many kinds
        raise SourceError(f"--from-graph {path}: not a readable RDF file (Turtle, N-Triples, RDF/XML ... by its "
                          f"extension; {_why(err)})") from None
    if len(graph) == 0:
        raise SourceError(f"--from-graph {path}: the graph holds no triples; nothing to sample")
    return graph
