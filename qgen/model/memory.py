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

All of the above is ``ModelConfig.gates = "linear"``. The other form, ``"mlp"`` (seed 000's f_alpha
and seed 001 Eq. 14; the paper rows), has ReLU hidden layers of ``gate_hidden`` units:

    alpha_t,i = sigmoid(w_2 . ReLU(W_s [s_t ; a_t] + W_h h_i + b_1) + b_2)
    u_t       = tanh(W_3 ReLU(W_4 [s_t ; a_t]))

The MLP gate's step term passes through the ReLU with each position's W_h h_i, so one step can
rewrite some positions more than others by what it is writing. It stays O(T·A) per step: the
decoder keeps P = W_h h in its state and updates it with the same gate (``write``), since the
write is linear in h.
"""
from __future__ import annotations

import torch
from torch import nn


class Scratchpad(nn.Module):
    def __init__(self, hidden_size: int, focus_gate: bool = False, gate_hidden: int = 0) -> None:
        super().__init__()
        width = gate_hidden or 1  # the linear gate is the MLP's first layer with one unit and no second
        self.gate_step = nn.Linear(2 * hidden_size, width)  # the [s_t ; a_t] part of W_a (W_s and b_1)
        self.gate_memory = nn.Linear(hidden_size, width, bias=False)  # the h_i part of W_a (W_h)
        if gate_hidden:
            self.gate_out = nn.Linear(gate_hidden, 1)  # w_2, b_2
            self.update: nn.Module = nn.Sequential(nn.Linear(2 * hidden_size, gate_hidden), nn.ReLU(),
                                                   nn.Linear(gate_hidden, hidden_size))  # W_3 ReLU(W_4 .)
        else:
            self.gate_out = None
            self.update = nn.Linear(2 * hidden_size, hidden_size)  # W_u
        self.gate_focus = None
        if focus_gate:  # W_beta, b_beta: zero at the start so training begins from Eq. 13 itself
            self.gate_focus = nn.Linear(2 * hidden_size, 1)
            nn.init.zeros_(self.gate_focus.weight)
            nn.init.zeros_(self.gate_focus.bias)

    def project(self, memory: torch.Tensor) -> torch.Tensor:
        """memory (batch, src_len, h) -> P = W_h h (batch, src_len, gate width), the gate's memory term."""
        return self.gate_memory(memory)

    def gate(self, state: torch.Tensor, context: torch.Tensor, projected: torch.Tensor,
             focus: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """state/context (batch, h), projected = ``project(memory)`` (batch, src_len, width), focus
        (batch, src_len) -> gate alpha (batch, src_len, 1) and update u (batch, 1, h)."""
        step = torch.cat([state, context], dim=-1)  # (batch, 2h)
        logit = self.gate_step(step).unsqueeze(1) + projected  # (batch, src_len, width)
        if self.gate_out is not None:
            logit = self.gate_out(torch.relu(logit))  # (batch, src_len, 1)
        if self.gate_focus is not None:
            if focus is None:
                raise ValueError("the focus gate needs the step's attention weights (focus)")
            logit = logit + self.gate_focus(step).unsqueeze(1) * focus.unsqueeze(-1)
        alpha = torch.sigmoid(logit)
        update = torch.tanh(self.update(step)).unsqueeze(1)  # (batch, 1, h)
        return alpha, update

    def forward(self, memory: torch.Tensor, state: torch.Tensor, context: torch.Tensor,
                mask: torch.Tensor, focus: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """memory (batch, src_len, h), state/context (batch, h), focus (batch, src_len): the attention
        whose context was written (copy, else read), used by the focus gate only
        -> new memory, gate (batch, src_len)."""
        alpha, update = self.gate(state, context, self.project(memory), focus)
        return write(memory, alpha, update, mask), alpha.squeeze(-1)


def write(values: torch.Tensor, alpha: torch.Tensor, update: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Eq. 12 on the memory or on any linear projection of it (with ``update`` projected alike):
    values (batch, src_len, d), alpha (batch, src_len, 1), update (batch, 1, d); padding is never written.

    Written as lerp(h, u, 1 - alpha) = h + (1 - alpha)(u - h), which is alpha h + (1 - alpha) u, in
    one pass over the memory instead of five (decoding a big batch is bound by these passes, not by
    arithmetic); a padding position gets weight 0, so it keeps its values exactly.
    """
    weight = (1 - alpha).masked_fill(~mask.unsqueeze(-1), 0.0)  # (batch, src_len, 1)
    # One dtype for lerp (under autocast the update may be bf16 beside float32 values).
    update, weight = update.to(values.dtype), weight.to(values.dtype)
    # Broadcast by lerp itself: on a CPU twice as fast as on expanded (stride-0) views of the same shape.
    return torch.lerp(values, update, weight)  # (batch, src_len, d)
