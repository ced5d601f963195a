"""The Scratchpad encoder (seed Eq. 12-14): after every step the decoder writes to all encoder states.

    alpha_t,i = sigmoid(W_a [s_t ; a_t ; h_i])      (a_t: the copy context, or the read context without copy)
    u_t       = tanh(W_u [s_t ; a_t])
    h_i      <- alpha_t,i h_i + (1 - alpha_t,i) u_t

alpha is one gate per position (a scalar), so W_a [s; a; h_i] splits into a per-step term and
w_h . h_i: the write costs O(T·H) per step. Padding positions are never written.
A consequence of the equation as written (linear inside the sigmoid): the step's term is the same
for every position, so which positions a step writes more is set by w_h . h_i alone; a step cannot
single out the position it just copied except through what earlier writes left in h_i.

``focus_gate=True`` (the ``scratchpad_focus`` variant; not the paper's) departs from Eq. 13 to try
exactly that: the gate also sees this step's copy weight beta_t,i of its position,

    alpha_t,i = sigmoid(W_a [s_t ; a_t ; h_i] + beta_t,i * (W_beta [s_t ; a_t] + b_beta))

so each step decides how strongly to rewrite the positions it copied from (most repeats are written
while the copy attention stays where it was: benchmarks/repeat_anatomy.py). W_beta and b_beta start
at 0, so training begins from Eq. 13 itself. Why a step-dependent weight and not one learned scalar
w_beta: Adam moves each parameter about one learning rate (1e-4) per update, so a lone scalar could
not go past about 0.4 in a 40-epoch WebQSP run (~3,600 updates), too little to move a sigmoid.
"""
from __future__ import annotations

import torch
from torch import nn


class Scratchpad(nn.Module):
    def __init__(self, hidden_size: int, focus_gate: bool = False) -> None:
        super().__init__()
        self.gate_step = nn.Linear(2 * hidden_size, 1)  # the [s_t ; a_t] part of W_a
        self.gate_memory = nn.Linear(hidden_size, 1, bias=False)  # the h_i part of W_a
        self.update = nn.Linear(2 * hidden_size, hidden_size)  # W_u
        self.gate_focus = None
        if focus_gate:  # W_beta, b_beta: zero at the start so training begins from Eq. 13 itself
            self.gate_focus = nn.Linear(2 * hidden_size, 1)
            nn.init.zeros_(self.gate_focus.weight)
            nn.init.zeros_(self.gate_focus.bias)

    def forward(self, memory: torch.Tensor, state: torch.Tensor, context: torch.Tensor,
                mask: torch.Tensor, focus: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """memory (batch, src_len, h), state/context (batch, h), focus (batch, src_len): the attention
        whose context was written (copy, else read), used by the focus gate only
        -> new memory, gate (batch, src_len)."""
        step = torch.cat([state, context], dim=-1)  # (batch, 2h)
        logit = self.gate_step(step).unsqueeze(1) + self.gate_memory(memory)  # (batch, src_len, 1)
        if self.gate_focus is not None:
            if focus is None:
                raise ValueError("the focus gate needs the step's attention weights (focus)")
            logit = logit + self.gate_focus(step).unsqueeze(1) * focus.unsqueeze(-1)
        alpha = torch.sigmoid(logit)
        update = torch.tanh(self.update(step)).unsqueeze(1)  # (batch, 1, h)
        written = alpha * memory + (1 - alpha) * update  # (batch, src_len, h)
        return torch.where(mask.unsqueeze(-1), written, memory), alpha.squeeze(-1)
