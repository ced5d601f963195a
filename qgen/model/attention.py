"""Attention over the encoder states (seed Eq. 1-3), with an optional coverage input (Eq. 15-16).

Score choice: Luong's "general" score e_ti = (W s_t) . h_i. The decoder state is projected once per
step, so a step costs O(T·H) even though the scratchpad rewrites every h_i at every step; an MLP
over [s_t; h_i] would cost O(T·H²) per step and could not be precomputed.
"""
from __future__ import annotations

import torch
from torch import nn


class GeneralAttention(nn.Module):
    def __init__(self, query_dim: int, key_dim: int, coverage_dim: int = 0) -> None:
        super().__init__()
        self.project = nn.Linear(query_dim, key_dim, bias=False)
        self.coverage = nn.Linear(coverage_dim, 1, bias=False) if coverage_dim else None

    def forward(self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor,
                coverage: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """query (batch, q), keys (batch, src_len, k), mask (batch, src_len) bool.

        Returns weights (batch, src_len) summing to 1 over unmasked positions (all zero for a row
        with none) and the context (batch, k).
        """
        scores = torch.bmm(keys, self.project(query).unsqueeze(2)).squeeze(2)  # (batch, src_len)
        if self.coverage is not None and coverage is not None:
            scores = scores + self.coverage(coverage).squeeze(-1)  # (batch, src_len)
        scores = scores.float().masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0).to(keys.dtype)  # (batch, src_len)
        context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # (batch, k)
        return weights, context
