"""Pretrained word vectors in GloVe's text format (``word v1 v2 ...`` per line), given by path.

GloVe 6B.300d cannot be downloaded here; without a file the embeddings start random and the
results say so. Nothing is fetched at run time.
"""
from __future__ import annotations

from pathlib import Path

import torch

from qgen.model.vocab import Vocab


def load_vectors(path: str | Path, vocab: Vocab, embedding: torch.nn.Embedding) -> int:
    """Copy the vectors of ``vocab``'s words found in ``path`` into ``embedding``; returns how many."""
    dim = embedding.embedding_dim
    found = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            word, _, rest = line.rstrip().partition(" ")  # a trailing space or \r is no value
            index = vocab.stoi.get(word)
            # The first line is checked whatever its word: a file of other vectors (another size) is
            # refused, not silently left unused because none of its words happened to be looked at.
            if number > 1 and (index is None or index < 4):
                continue
            values = rest.split()
            if len(values) != dim:
                raise ValueError(f"{path} line {number}: {len(values)} values, the embedding has {dim} "
                                 f"(give vectors of the --embedding size, or set --embedding {len(values)})")
            try:
                vector = torch.tensor([float(v) for v in values])
            except ValueError:
                raise ValueError(f"{path} line {number}: not a word and {dim} numbers (GloVe's text format)") from None
            if index is None or index < 4:
                continue
            with torch.no_grad():
                embedding.weight[index] = vector
            found += 1
    return found


def vector_size(path: str | Path) -> int:
    """The number of values on the file's first line (every line of a GloVe file has as many)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        first = handle.readline().rstrip()  # a trailing space or \r is no value
    return len(first.split()) - 1 if first else 0
