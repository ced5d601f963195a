"""WikiSQL-shaped queries over tables whose cells are unknown: conditions from a value pool.

The WikiSQL copy qgen reads has every table's header but no cell values, so the table sampler
(``qgen.samplers.tables``, which draws a witness row and runs the query) cannot run on it. This
sampler draws honest logical forms another way: per table, the pool is the set of conditions
``(column, operator, value)`` that the given WikiSQL queries (a training split) use on that table.
A draw picks a table, a selected column (uniform over its header), an aggregate and a number of
conditions (both with the frequencies of the given queries), and that many pooled conditions on
distinct columns other than the selected one; the result is rendered with ``render_wikisql`` like
the dataset's own queries. No query is executed (there are no rows), so answers are unknown and a
drawn query may have an empty answer on the real table; duplicates of each other are dropped, and
every draw ends in one ``SamplerStats`` outcome.
"""
from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from typing import Iterator, Mapping, Sequence

from parsers.errors import LogicalFormError
from parsers.sql.wikisql import render_wikisql
from qgen.datasets.records import RawExample
from qgen.samplers import SamplerStats


class ValuePool:
    """Per table: header and pooled conditions; and the aggregate / condition-count frequencies."""

    def __init__(self, queries: Sequence[tuple[str, Mapping, Sequence[str]]]) -> None:
        """``queries``: (table id, WikiSQL ``sql`` dict, header) of each given query."""
        self.headers: dict[str, list[str]] = {}
        self.conditions: dict[str, list[tuple[int, int, object]]] = defaultdict(list)
        aggregates: Counter = Counter()
        counts: Counter = Counter()
        for table, sql, header in queries:
            self.headers[table] = list(header)
            aggregates[int(sql["agg"])] += 1
            counts[len(sql["conds"])] += 1
            for column, op, value in sql["conds"]:
                condition = (int(column), int(op), value)
                if condition not in self.conditions[table]:
                    self.conditions[table].append(condition)
        self.tables = sorted(t for t in self.headers if self.conditions[t])
        self.aggregates = sorted(aggregates.items())
        self.condition_counts = sorted((n, c) for n, c in counts.items() if n > 0)

    @classmethod
    def from_examples(cls, examples: Sequence[RawExample], headers: Mapping[str, Sequence[str]]) -> "ValuePool":
        """From WikiSQL ``RawExample`` records (their ``raw`` line holds table_id and sql)."""
        from parsers.sql.wikisql import wikisql_table_name

        queries = []
        for example in examples:
            record = json.loads(example.raw)
            header = headers.get(wikisql_table_name(record["table_id"]))
            if header is not None:
                queries.append((record["table_id"], record["sql"], header))
        return cls(queries)


def sample_queries(pool: ValuePool, count: int, seed: int = 1, max_draws: int | None = None,
                   stats: SamplerStats | None = None) -> Iterator[RawExample]:
    """Up to ``count`` distinct rendered queries (``RawExample``, split ``synthetic``, no question)."""
    if not pool.tables:
        raise ValueError("the value pool is empty: no given query has a table with a known header and a condition")
    rng = random.Random(seed)
    stats = stats if stats is not None else SamplerStats()
    seen: set[str] = set()
    kept = 0
    budget = max_draws if max_draws is not None else 20 * count
    agg_values, agg_weights = zip(*pool.aggregates)
    n_values, n_weights = zip(*pool.condition_counts)
    while kept < count and stats.drawn < budget and pool.tables:
        stats.drawn += 1
        table = rng.choice(pool.tables)
        header = pool.headers[table]
        sel = rng.randrange(len(header))
        wanted = rng.choices(n_values, n_weights)[0]
        options = [c for c in pool.conditions[table] if c[0] != sel]
        rng.shuffle(options)
        conds, used = [], set()
        for condition in options:
            if condition[0] not in used:
                conds.append(list(condition))
                used.add(condition[0])
            if len(conds) == wanted:
                break
        if len(conds) < wanted:
            stats.unsampleable += 1
            continue
        sql = {"sel": sel, "agg": rng.choices(agg_values, agg_weights)[0], "conds": conds}
        try:
            rendered = render_wikisql(sql, header)
        except LogicalFormError:
            stats.errors += 1
            continue
        if rendered in seen:
            stats.duplicates += 1
            continue
        seen.add(rendered)
        stats.kept += 1
        kept += 1
        raw = json.dumps({"table_id": table, "sql": sql}, ensure_ascii=False)
        yield RawExample(id=f"sampled-{kept:06d}", split="synthetic", lf_type="sql", logical_form=rendered,
                         question=None, source="wikisql-value-pool", raw=raw)
