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

    def project(self, memory: torch.Tensor) -> torch.Tensor:
        """memory (batch, src_len, h) -> W_h h (batch, src_len, 3c), the input projection's memory part.
        Linear in h, so the decoder keeps it in its state and the scratchpad's write updates it."""
        hidden = memory.size(-1)
        return torch.nn.functional.linear(memory, self.cell.weight_ih[:, -hidden:])

    def forward(self, coverage: torch.Tensor, weights: torch.Tensor, state: torch.Tensor,
                projected: torch.Tensor) -> torch.Tensor:
        """coverage (batch, src_len, c), weights (batch, src_len), state (batch, h), projected =
        ``project(memory)`` (batch, src_len, 3c).

        The GRU cell's equations (torch.nn.GRUCell's, with its parameters), its input projection split
        by parts: W [beta; s; h_i] = w_beta beta_i + W_s s + W_h h_i, so the decoder state is projected
        once per example instead of once per position, the memory once per run (``project``), and no
        (batch, src_len, 1 + 2h) input is built.
        """
        cell = self.cell
        w_beta, w_state = cell.weight_ih[:, :1], cell.weight_ih[:, 1:1 + state.size(-1)]
        per_step = torch.nn.functional.linear(state, w_state, cell.bias_ih).unsqueeze(1)  # (batch, 1, 3c)
        gates_in = projected + weights.unsqueeze(-1) * w_beta.squeeze(1) + per_step
        gates_hidden = torch.nn.functional.linear(coverage, cell.weight_hh, cell.bias_hh)  # (batch, src_len, 3c)
        in_r, in_z, in_n = gates_in.chunk(3, dim=-1)
        hid_r, hid_z, hid_n = gates_hidden.chunk(3, dim=-1)
        reset = torch.sigmoid(in_r + hid_r)
        keep = torch.sigmoid(in_z + hid_z)
        new = torch.tanh(in_n + reset * hid_n)
        return torch.lerp(new, coverage.to(new.dtype), keep)  # (1 - z) n + z C: (batch, src_len, c)
