"""Attention over the encoder states (seed Eq. 1-3), with an optional coverage input (Eq. 15-16).

Two score functions (``ModelConfig.attention``):

- ``GeneralAttention`` (``"luong"``, seed 000's "attention mechanism from 4.1"): Luong's general
  score e_ti = (W s_t) . h_i. Coverage, when given, adds w . C_t,i outside the score.
- ``MLPAttention`` (``"bahdanau"``, seed 001 Eq. 1-2, 8, 16): e_ti = v . tanh(W_s s + W_h h_i [+ W_c C_i]),
  coverage inside the tanh.

Both cost O(T·A) per step although the scratchpad rewrites every h_i each step: the MLP's keys
K = W_h h live in the decoder state (``project``), and since the write h_i' = a_i h_i + (1 - a_i) u is
linear in h, the decoder updates them with the same gate (K_i' = a_i K_i + (1 - a_i) W_h u) instead of
projecting the whole memory again.
"""
from __future__ import annotations

import torch
from torch import nn

from qgen.model.factored_memory import FactoredMemory

Memory = torch.Tensor | FactoredMemory  # the explicit states, or their factored form when decoding on a CPU


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """scores (batch, src_len) -> weights summing to 1 over unmasked positions (all zero for a row with none)."""
    scores = scores.float().masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0).to(dtype)  # (batch, src_len)


class GeneralAttention(nn.Module):
    def __init__(self, query_dim: int, key_dim: int, coverage_dim: int = 0) -> None:
        super().__init__()
        self.project = nn.Linear(query_dim, key_dim, bias=False)
        self.coverage = nn.Linear(coverage_dim, 1, bias=False) if coverage_dim else None

    def forward(self, query: torch.Tensor, keys: Memory, mask: torch.Tensor,
                coverage: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """query (batch, q), keys (batch, src_len, k), mask (batch, src_len) bool.

        Returns weights (batch, src_len) summing to 1 over unmasked positions (all zero for a row
        with none) and the context (batch, k).
        """
        projected = self.project(query)  # (batch, k)
        if isinstance(keys, FactoredMemory):
            scores = keys.scores(projected)
        else:
            scores = torch.bmm(keys, projected.unsqueeze(2)).squeeze(2)  # (batch, src_len)
        if self.coverage is not None and coverage is not None:
            scores = scores + self.coverage(coverage).squeeze(-1)  # (batch, src_len)
        weights = masked_softmax(scores, mask, dtype_of(keys))  # (batch, src_len)
        return weights, context_of(weights, keys)  # context (batch, k)


class MLPAttention(nn.Module):
    """Bahdanau's score v . tanh(W_s s + W_h h_i [+ W_c C_i]); ``key`` (W_h, no bias) projects the memory."""

    def __init__(self, query_dim: int, key_dim: int, attention_dim: int, coverage_dim: int = 0) -> None:
        super().__init__()
        self.query = nn.Linear(query_dim, attention_dim)  # W_s (and the MLP's bias)
        self.key = nn.Linear(key_dim, attention_dim, bias=False)  # W_h: linear, so the write can update W_h h
        self.coverage = nn.Linear(coverage_dim, attention_dim, bias=False) if coverage_dim else None  # W_c
        self.score = nn.Linear(attention_dim, 1, bias=False)  # v

    def project(self, memory: torch.Tensor) -> torch.Tensor:
        """memory (batch, src_len, k) -> keys W_h h (batch, src_len, attention_dim), kept in the decoder state."""
        return self.key(memory)

    def forward(self, query: torch.Tensor, memory: Memory, mask: torch.Tensor,
                coverage: torch.Tensor | None = None,
                keys: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """query (batch, q), memory (batch, src_len, k), mask (batch, src_len) bool, coverage
        (batch, src_len, c), keys = ``project(memory)`` when the caller keeps them (else computed here).

        Returns weights (batch, src_len) and the context (batch, k), as ``GeneralAttention``.
        """
        if keys is None:
            if isinstance(memory, FactoredMemory):
                raise ValueError("a factored memory needs its keys kept in the decoder state")
            keys = self.project(memory)  # (batch, src_len, a)
        hidden = keys + self.query(query).unsqueeze(1)  # (batch, src_len, a)
        if self.coverage is not None and coverage is not None:
            hidden = hidden + self.coverage(coverage)  # Eq. 16: coverage inside the score
        scores = self.score(torch.tanh(hidden)).squeeze(-1)  # (batch, src_len)
        weights = masked_softmax(scores, mask, dtype_of(memory))  # (batch, src_len)
        return weights, context_of(weights, memory)  # context (batch, k)


def dtype_of(memory: Memory) -> torch.dtype:
    return memory.base.dtype if isinstance(memory, FactoredMemory) else memory.dtype


def context_of(weights: torch.Tensor, memory: Memory) -> torch.Tensor:
    """weights (batch, src_len) -> sum_i weights_i memory_i (batch, k)."""
    if isinstance(memory, FactoredMemory):
        return memory.context(weights)
    return torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
