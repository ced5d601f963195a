"""Neural coverage (Tu et al. 2016; seed Eq. 15-16): a small vector per source position, updated by a
GRU from the attention it received, the decoder state and the position's encoder state."""
from __future__ import annotations

import torch
from torch import nn


class CoverageUpdater(nn.Module):
    """C_t,i = GRU(C_t-1,i, [beta_t,i ; s_t ; h_i]); size ``coverage_dim`` (10 in the paper)."""

    def __init__(self, hidden_size: int, coverage_dim: int) -> None:
        super().__init__()
        self.cell = nn.GRUCell(1 + 2 * hidden_size, coverage_dim)

    def forward(self, coverage: torch.Tensor, weights: torch.Tensor, state: torch.Tensor,
                memory: torch.Tensor) -> torch.Tensor:
        """coverage (batch, src_len, c), weights (batch, src_len), state (batch, h), memory (batch, src_len, h)."""
        batch, src_len, dim = coverage.shape
        inputs = torch.cat([weights.unsqueeze(-1), state.unsqueeze(1).expand(-1, src_len, -1), memory], dim=-1)
        updated = self.cell(inputs.reshape(batch * src_len, -1), coverage.reshape(batch * src_len, dim))
        return updated.view(batch, src_len, dim)  # (batch, src_len, c)
