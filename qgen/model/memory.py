"""The Scratchpad encoder (seed Eq. 12-14): after every step the decoder writes to all encoder states.

    alpha_t,i = sigmoid(W_a [s_t ; a_t ; h_i])      (a_t: the copy context, or the read context without copy)
    u_t       = tanh(W_u [s_t ; a_t])
    h_i      <- alpha_t,i h_i + (1 - alpha_t,i) u_t

alpha is one gate per position (a scalar), so W_a [s; a; h_i] splits into a per-step term and
w_h . h_i: the write costs O(T·H) per step. Padding positions are never written.
A consequence of the equation as written (linear inside the sigmoid): the step's term is the same
for every position, so which positions a step writes more is set by w_h . h_i alone; a step cannot
single out the position it just copied except through what earlier writes left in h_i.
"""
from __future__ import annotations

import torch
from torch import nn


class Scratchpad(nn.Module):
    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.gate_step = nn.Linear(2 * hidden_size, 1)  # the [s_t ; a_t] part of W_a
        self.gate_memory = nn.Linear(hidden_size, 1, bias=False)  # the h_i part of W_a
        self.update = nn.Linear(2 * hidden_size, hidden_size)  # W_u

    def forward(self, memory: torch.Tensor, state: torch.Tensor, context: torch.Tensor,
                mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """memory (batch, src_len, h), state/context (batch, h) -> new memory, gate (batch, src_len)."""
        step = torch.cat([state, context], dim=-1)  # (batch, 2h)
        alpha = torch.sigmoid(self.gate_step(step).unsqueeze(1) + self.gate_memory(memory))  # (batch, src_len, 1)
        update = torch.tanh(self.update(step)).unsqueeze(1)  # (batch, 1, h)
        written = alpha * memory + (1 - alpha) * update  # (batch, src_len, h)
        return torch.where(mask.unsqueeze(-1), written, memory), alpha.squeeze(-1)
