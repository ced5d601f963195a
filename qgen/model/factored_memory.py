"""The scratchpad's memory in factored form, for decoding on a CPU: shared by the beams, never rewritten.

Each write (Eq. 12, ``memory.write``) is h_i <- (1 - w_i) h_i + w_i u_t, with w_i = 1 - alpha_i (0 on
padding). After t writes every state is therefore the encoder's state scaled, plus a mix of the t
updates:

    h_i(t) = c_i h_i(0) + sum_k C_ik u_k      (c_i = prod_k (1 - w_ik), C_ik = w_ik prod_(j>k) (1 - w_ij))

and the attentions need the memory only through products with it:

    scores  h_i(t) . q = c_i (h_i(0) . q) + sum_k C_ik (u_k . q)
    context sum_i a_i h_i(t) = sum_i (a_i c_i) h_i(0) + sum_k (sum_i a_i C_ik) u_k

Why: a beam search over the explicit memory reads and writes (hypotheses, src_len, h) several times a
step (two attentions, the write, the beams' reorder) and on a CPU those memory passes, not the
arithmetic, bound it. In factored form h(0) is one per example, read once for all its beams; a step
writes and reorders only the (src_len, t) coefficients and the (t, h) updates. It pays while t is small
next to src_len (``worth_keeping``); past that the decoder writes the memory out (``materialise``) and
goes on with the explicit form. The numbers are the explicit form's up to float rounding.

Only where nothing is trained (inference mode) and on a CPU: a captured CUDA step needs fixed shapes,
and on a GPU the explicit passes are cheap. ``QGEN_FACTORED_MEMORY=off`` turns it off.

State keys: ``memory_base`` (examples, src_len, h), the one key a decoding loop need not expand per
beam (``Decoder.unexpanded_keys``); ``memory_scale`` (rows, src_len), ``memory_mix`` (rows, src_len, t),
``memory_updates`` (rows, t, h). ``rows`` is a multiple of ``examples``: row r belongs to example
r // (rows / examples), as in every expansion by ``repeat_interleave``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch.nn import functional as F

KEYS = ("memory_base", "memory_scale", "memory_mix", "memory_updates")
# Coefficients that small are 0 for all purposes; keeping them would turn long products into
# subnormal numbers, which a CPU computes with slowly.
_TINY = 1e-30


def applies(memory: torch.Tensor) -> bool:
    """Decode with the factored memory here? (a CPU, inference mode, not switched off)."""
    return (memory.device.type == "cpu" and torch.is_inference_mode_enabled()
            and os.environ.get("QGEN_FACTORED_MEMORY", "auto") != "off")


@dataclass
class FactoredMemory:
    base: torch.Tensor  # (examples, src_len, h): the encoder states, one per example
    scale: torch.Tensor  # (rows, src_len): c
    mix: torch.Tensor  # (rows, src_len, t): C
    updates: torch.Tensor  # (rows, t, h): u_1..u_t

    @classmethod
    def start(cls, memory: torch.Tensor) -> "FactoredMemory":
        """The encoder's states (batch, src_len, h), not written yet."""
        batch, src_len, h = memory.shape
        return cls(memory, memory.new_ones(batch, src_len), memory.new_zeros(batch, src_len, 0),
                   memory.new_zeros(batch, 0, h))

    @classmethod
    def from_state(cls, state: dict[str, torch.Tensor]) -> "FactoredMemory":
        return cls(*(state[key] for key in KEYS))

    def to_state(self) -> dict[str, torch.Tensor]:
        return dict(zip(KEYS, (self.base, self.scale, self.mix, self.updates)))

    @property
    def beam(self) -> int:
        return self.scale.size(0) // self.base.size(0)

    @property
    def writes(self) -> int:
        return self.updates.size(1)

    def _per_example(self, rows: torch.Tensor) -> torch.Tensor:
        """(rows, n) -> (examples, beam, n): each example's rows together."""
        return rows.reshape(self.base.size(0), self.beam, rows.size(-1))

    def scores(self, query: torch.Tensor) -> torch.Tensor:
        """query (rows, h) -> h_i(t) . query (rows, src_len)."""
        base = torch.bmm(self._per_example(query), self.base.transpose(1, 2))  # (examples, beam, src_len)
        scores = self.scale * base.reshape(self.scale.shape)
        if self.writes:
            mixed = torch.bmm(self.updates, query.unsqueeze(2))  # (rows, t, 1)
            scores = scores + torch.bmm(self.mix, mixed).squeeze(2)
        return scores

    def context(self, weights: torch.Tensor) -> torch.Tensor:
        """weights (rows, src_len) -> sum_i weights_i h_i(t) (rows, h)."""
        weights = weights.to(self.base.dtype)
        context = torch.bmm(self._per_example(weights * self.scale), self.base)  # (examples, beam, h)
        context = context.reshape(self.scale.size(0), -1)
        if self.writes:
            coefficients = torch.bmm(weights.unsqueeze(1), self.mix)  # (rows, 1, t)
            context = context + torch.bmm(coefficients, self.updates).squeeze(1)
        return context

    def write(self, alpha: torch.Tensor, update: torch.Tensor, mask: torch.Tensor) -> "FactoredMemory":
        """``memory.write`` in factored form: alpha (rows, src_len, 1), update (rows, 1, h), mask (rows, src_len)."""
        weight = (1 - alpha.squeeze(-1)).masked_fill(~mask, 0.0).to(self.base.dtype)  # w (rows, src_len)
        keep = 1 - weight
        scale = _flush(self.scale * keep)
        # C <- [C * (1 - w), w], written into one new tensor and flushed there: two passes over it, where
        # a product, a flush and a concatenation of their own took seven times as long.
        rows, src_len, t = self.mix.shape
        mix = self.mix.new_empty(rows, src_len, t + 1)
        torch.mul(self.mix, keep.unsqueeze(2), out=mix[:, :, :t])
        mix[:, :, t] = weight
        updates = torch.cat([self.updates, update.to(self.base.dtype)], dim=1)
        return FactoredMemory(self.base, scale, _flush(mix, in_place=True), updates)

    def materialise(self) -> torch.Tensor:
        """The explicit memory (rows, src_len, h)."""
        rows, src_len = self.scale.shape
        base = self.base.unsqueeze(1).expand(-1, self.beam, -1, -1).reshape(rows, src_len, -1)
        memory = self.scale.unsqueeze(2) * base
        if self.writes:  # the explicit memory's dtype (autocast would leave baddbmm's product in bf16)
            memory = torch.baddbmm(memory, self.mix, self.updates).to(self.base.dtype)
        return memory

    def worth_keeping(self, reads: int) -> bool:
        """Is the next step cheaper in factored form? Counted in elements moved, ``reads`` passes of
        the attentions over the memory a step. Explicit: the reads, the write (read and write) and,
        with several beams, the reorder (read and write), each over src_len x h. Factored: each read
        over src_len / beam states and the t + 1 updates; the write and the reorder copy the updates."""
        src_len, t, beam = self.scale.size(1), self.writes + 1, self.beam
        copies = 2 if beam > 1 else 1
        explicit = reads * src_len + 2 * src_len + (2 * src_len if beam > 1 else 0)
        factored = reads * (src_len / beam + t) + 2 * copies * t
        return factored < explicit


def _flush(values: torch.Tensor, in_place: bool = False) -> torch.Tensor:
    """Values below _TINY set to 0 (coefficients are never negative); one pass, where a comparison and
    a masked fill take several."""
    return (F.threshold_ if in_place else F.threshold)(values, _TINY, 0.0)
