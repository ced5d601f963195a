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

The updates are kept per example, not per hypothesis: the t x beam updates an example's hypotheses
have written, in the order written (``updates``), and per hypothesis the slots of its own t (``slots``).
A beam's reorder then copies t slot numbers a hypothesis, not its t x h updates, and a write appends
its update in place (see ``_buffer``); the products with the updates take all of an example's at once
(beam x more multiply-adds over the same bytes, which bound them).

State keys: ``memory_base`` (examples, src_len, h) and ``memory_updates`` (examples, capacity, h), the keys
a decoding loop need not expand per beam (``Decoder.unexpanded_keys``); ``memory_scale`` (rows, src_len),
``memory_mix`` (rows, src_len, t), ``memory_slots`` (rows, t). ``rows`` is a multiple of ``examples``:
row r belongs to example r // beam and is its beam r % beam, as in every expansion by ``repeat_interleave``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch.nn import functional as F

KEYS = ("memory_base", "memory_scale", "memory_mix", "memory_updates", "memory_slots")
PER_EXAMPLE_KEYS = {"memory_base", "memory_updates"}
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
    updates: torch.Tensor  # (examples, capacity, h): each example's updates, the first t x beam slots written
    slots: torch.Tensor  # (rows, t): where in its example's updates each of a hypothesis's u_1..u_t is

    @classmethod
    def start(cls, memory: torch.Tensor) -> "FactoredMemory":
        """The encoder's states (batch, src_len, h), not written yet."""
        batch, src_len, h = memory.shape
        return cls(memory, memory.new_ones(batch, src_len), memory.new_zeros(batch, src_len, 0),
                   memory.new_zeros(batch, 0, h), torch.zeros(batch, 0, dtype=torch.long, device=memory.device))

    @classmethod
    def from_state(cls, state: dict[str, torch.Tensor]) -> "FactoredMemory":
        return cls(*(state[key] for key in KEYS))

    def to_state(self) -> dict[str, torch.Tensor]:
        return dict(zip(KEYS, (self.base, self.scale, self.mix, self.updates, self.slots)))

    @property
    def beam(self) -> int:
        return self.scale.size(0) // self.base.size(0)

    @property
    def writes(self) -> int:
        return self.slots.size(1)

    def _per_example(self, rows: torch.Tensor) -> torch.Tensor:
        """(rows, n) -> (examples, beam, n): each example's rows together."""
        return rows.reshape(self.base.size(0), self.beam, rows.size(-1))

    def _written(self) -> torch.Tensor:
        """The updates written so far, (examples, t x beam, h)."""
        self._check_width(self.updates)
        return self.updates[:, : self.writes * self.beam]

    def _check_width(self, updates: torch.Tensor) -> None:
        """The updates are laid out by the hypotheses an example had when they were written: a memory
        expanded to more hypotheses after its first write would read them wrongly (expand before)."""
        width = getattr(updates, "_qgen_beam", None)
        if self.writes and width is not None and width != self.beam:
            raise ValueError(f"a factored memory written with {width} hypotheses an example cannot be read "
                             f"with {self.beam}: expand the decoder state before its first step")

    def _own_slots(self) -> torch.Tensor:
        """(examples, beam, t): each hypothesis's slots, by example."""
        return self.slots.view(self.base.size(0), self.beam, self.writes)

    def scores(self, query: torch.Tensor) -> torch.Tensor:
        """query (rows, h) -> h_i(t) . query (rows, src_len)."""
        queries = self._per_example(query)  # (examples, beam, h)
        base = torch.bmm(queries, self.base.transpose(1, 2))  # (examples, beam, src_len)
        scores = self.scale * base.reshape(self.scale.shape)
        if self.writes:  # u_k . q for each hypothesis's own updates, from all of its example's
            products = torch.bmm(queries, self._written().transpose(1, 2))  # (examples, beam, t x beam)
            mixed = products.gather(2, self._own_slots()).view(-1, self.writes, 1)  # (rows, t, 1)
            scores = scores + torch.bmm(self.mix, mixed).squeeze(2)
        return scores

    def context(self, weights: torch.Tensor) -> torch.Tensor:
        """weights (rows, src_len) -> sum_i weights_i h_i(t) (rows, h)."""
        weights = weights.to(self.base.dtype)
        context = torch.bmm(self._per_example(weights * self.scale), self.base)  # (examples, beam, h)
        context = context.reshape(self.scale.size(0), -1)
        if self.writes:  # each hypothesis's coefficients of its own updates, placed at their slots
            coefficients = torch.bmm(weights.unsqueeze(1), self.mix).view(self._own_slots().shape)  # (ex, beam, t)
            written = self._written()
            spread = coefficients.new_zeros(written.size(0), self.beam, written.size(1))
            spread.scatter_(2, self._own_slots(), coefficients)  # (examples, beam, t x beam)
            context = context + torch.bmm(spread, written).reshape(context.shape)
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
        first = t * self.beam  # this write's slots: first + each row's beam
        updates = self._buffer(first + self.beam)
        updates[:, first:first + self.beam] = update.to(self.base.dtype).view(self.base.size(0), self.beam, -1)
        slot = first + torch.arange(rows, device=self.slots.device) % self.beam
        slots = torch.cat([self.slots, slot.unsqueeze(1)], dim=1)
        return FactoredMemory(self.base, scale, _flush(mix, in_place=True), updates, slots)

    def _buffer(self, needed: int) -> torch.Tensor:
        """The updates tensor to append this write's slots to: this memory's own, in place, when its
        written slots end where this write's begin (the last memory written from it) and it has room;
        else a new one with room to grow, the written slots copied. An earlier memory stays valid: it
        reads only the slots it had. A memory written twice (two branches of one state) gets a copy."""
        written = self.writes * self.beam
        updates = self.updates
        self._check_width(updates)
        if getattr(updates, "_qgen_filled", None) != written or updates.size(1) < needed:
            grown = updates.new_empty(updates.size(0), max(2 * needed, 16 * self.beam), updates.size(2))
            grown[:, :written] = updates[:, :written]
            updates = grown
        updates._qgen_filled = needed  # type: ignore[attr-defined]
        updates._qgen_beam = self.beam  # type: ignore[attr-defined]
        return updates

    def materialise(self) -> torch.Tensor:
        """The explicit memory (rows, src_len, h)."""
        rows, src_len = self.scale.shape
        base = self.base.unsqueeze(1).expand(-1, self.beam, -1, -1).reshape(rows, src_len, -1)
        memory = self.scale.unsqueeze(2) * base
        if self.writes:  # the explicit memory's dtype (autocast would leave baddbmm's product in bf16)
            written = self._written()
            index = self._own_slots().reshape(written.size(0), -1, 1).expand(-1, -1, written.size(2))
            own = written.gather(1, index).view(rows, self.writes, -1)  # (rows, t, h): u_1..u_t of each
            memory = torch.baddbmm(memory, self.mix, own).to(self.base.dtype)
        return memory

    def worth_keeping(self, reads: int) -> bool:
        """Is the next step cheaper in factored form? Counted in elements moved, ``reads`` passes of
        the attentions over the memory a step. Explicit: the reads, the write (read and write) and,
        with several beams, the reorder (read and write), each over src_len x h. Factored: each read
        over src_len / beam states and the t + 1 updates; the write appends one update."""
        src_len, t, beam = self.scale.size(1), self.writes + 1, self.beam
        explicit = reads * src_len + 2 * src_len + (2 * src_len if beam > 1 else 0)
        factored = reads * (src_len / beam + t) + 1
        return factored < explicit


def _flush(values: torch.Tensor, in_place: bool = False) -> torch.Tensor:
    """Values below _TINY set to 0 (coefficients are never negative); one pass, where a comparison and
    a masked fill take several."""
    return (F.threshold_ if in_place else F.threshold)(values, _TINY, 0.0)
