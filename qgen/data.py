"""Training data: preprocessed Parquet -> (source tokens, target tokens) pairs, splits and batches."""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow.parquet as pq


@dataclass(frozen=True)
class Pair:
    id: str
    src: list[str]
    tgt: list[str]
    group: str  # examples of one group (parses of one question, one table) stay in one split


def read_pairs(path: str | Path, entity_replacement: bool = True) -> list[Pair]:
    """Pairs from a preprocessed examples file (``qgen preprocess``); ``entity_replacement`` picks
    ``lf_tokens`` (ent: + name) or ``lf_tokens_raw`` (ids as written, the Seq2Seq baseline)."""
    column = "lf_tokens" if entity_replacement else "lf_tokens_raw"
    table = pq.read_table(path, columns=["id", column, "question_tokens", "source"])
    pairs = []
    for ident, src, tgt, source in zip(*(table.column(c).to_pylist() for c in ("id", column, "question_tokens", "source"))):
        pairs.append(Pair(ident, src, tgt, group_of(ident, source)))
    return pairs


def group_of(ident: str, source: str) -> str:
    """WebQSP ``WebQTrn-12.P1`` -> ``WebQTrn-12`` (parses of one question); else the id itself."""
    if source == "webqsp" and ".P" in ident:
        return ident.rsplit(".P", 1)[0]
    return ident


def holdout(pairs: Sequence[Pair], fraction: float = 0.1, seed: int = 1) -> tuple[list[Pair], list[Pair]]:
    """Split off ``fraction`` of the groups (seeded) as a validation set; groups never straddle."""
    groups = sorted({p.group for p in pairs})
    random.Random(seed).shuffle(groups)
    held = set(groups[: max(1, round(fraction * len(groups)))])
    return [p for p in pairs if p.group not in held], [p for p in pairs if p.group in held]


def bucketed_batches(pairs: Sequence[Pair], batch_size: int, rng: random.Random,
                     bucket_factor: int = 50) -> Iterator[list[Pair]]:
    """Length bucketing: shuffle, sort chunks of ``bucket_factor`` batches by source length, cut
    them into batches and shuffle the batch order, so padding stays small and order stays random."""
    order = list(pairs)
    rng.shuffle(order)
    chunk = batch_size * bucket_factor
    batches: list[list[Pair]] = []
    for start in range(0, len(order), chunk):
        block = sorted(order[start : start + chunk], key=lambda p: (len(p.src), len(p.tgt)))
        batches.extend(block[i : i + batch_size] for i in range(0, len(block), batch_size))
    rng.shuffle(batches)
    yield from batches


def sequential_batches(pairs: Sequence[Pair], batch_size: int) -> Iterator[list[Pair]]:
    """Batches in a fixed order (evaluation), sorted by length for speed, original order recoverable."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].src))
    for start in range(0, len(order), batch_size):
        yield [pairs[i] for i in order[start : start + batch_size]]
