"""Batches for generation filled by a token budget, and the budget that fits a device.

Logical forms are sorted by length (so a batch pads little) and a batch takes logical forms while
``rows x longest source`` stays within ``max_tokens`` (fairseq's ``--max-tokens``): short inputs
travel in big batches, long ones in small, and the device does the same work per batch. Results go
back to their input positions, so a shard's output does not depend on how it was batched.
"""
from __future__ import annotations

from typing import Iterator, Sequence, TypeVar

import torch

from qgen.model.config import ModelConfig

T = TypeVar("T")

CPU_MAX_TOKENS = 4096  # source tokens per batch on a CPU: past this, bigger batches gain nothing (synth_bench)
GPU_MEMORY_SHARE = 0.3  # of the free GPU memory a batch's decoding may take by the estimate below
GPU_MAX_TOKENS = 1_000_000


def token_batches(items: Sequence[tuple[int, Sequence[str]]], max_tokens: int,
                  max_rows: int | None = None) -> Iterator[list[tuple[int, Sequence[str]]]]:
    """Split ``(index, tokens)`` items, already sorted by length, into batches of at most
    ``max_tokens`` padded source tokens (and ``max_rows`` items); an item longer than the budget
    goes alone."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    chunk: list[tuple[int, Sequence[str]]] = []
    width = 0
    for item in items:
        wider = max(width, len(item[1]), 1)
        if chunk and ((len(chunk) + 1) * wider > max_tokens or (max_rows is not None and len(chunk) >= max_rows)):
            yield chunk
            chunk, wider = [], max(len(item[1]), 1)
        chunk.append(item)
        width = wider
    if chunk:
        yield chunk


def default_max_tokens(device: torch.device, cfg: ModelConfig, beam: int) -> int:
    """What fits the device: a fixed budget on a CPU; on a GPU, a share of the free memory over an
    estimate of what one source token costs while decoding (per beam: the encoder states and the
    scratchpad's rewritten copy, their projections, coverage; float32, a few live copies each) plus
    the output distribution's temporaries, spread over a short source of 16 tokens."""
    if device.type != "cuda":
        return CPU_MAX_TOKENS
    free, _ = torch.cuda.mem_get_info(device)
    per_token = beam * 4 * (8 * cfg.hidden_size + 4 * cfg.coverage_dim)
    per_row = beam * 4 * 8 * cfg.tgt_vocab_size
    budget = int(free * GPU_MEMORY_SHARE / (per_token + per_row / 16))
    return max(256, min(budget, GPU_MAX_TOKENS))
