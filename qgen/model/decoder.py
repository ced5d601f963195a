"""The decoder's step function: the one contract shared by training and every decoding algorithm.

    init_state(encoder_out, encoder_final, src_mask, copy_ids, extended_size) -> state
    step(prev_tokens, state) -> (log_probs, state, attns)

Every state tensor is batch-first, so beam search reorders a state it knows nothing about with
``{k: v[idx] for k, v in state.items()}``.

State update, two step orders (``ModelConfig.attention``):
- ``"luong"`` (seed 000): the GRU reads the previous word and the previous post-read state (input
  feeding, state "feed"); the read attention (general score) over the encoder states, from the
  updated state s_t, gives the context c_t.
- ``"bahdanau"`` (seed 001 Eq. 1-4): the read attention (MLP score) from the previous state s_t-1
  (the GRU's top layer) gives c_t; the GRU reads [y_t-1 ; c_t] (no input feeding).
Either way the post-read state s'_t = tanh(W [s_t ; c_t]) feeds the output layer, the copy
attention, p_gen, coverage and the scratchpad write (the "s_t" of Eq. 5-16).

The MLP scores, the write gate (MLP or linear) and coverage keep their projections of the memory in
the state ("keys_*", (batch, src_len, A)); the scratchpad write updates them with its own gate
(memory.write), so a step never projects the whole memory again.
Decoding on a CPU, the scratchpad's memory is kept in factored form (qgen/model/factored_memory.py:
per example the encoder states and the updates written, per hypothesis the writes' coefficients and
which updates are its own)
until writing it out is cheaper; the same numbers up to float rounding.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from qgen.model.attention import GeneralAttention, MLPAttention
from qgen.model.config import ModelConfig
from qgen.model.coverage import CoverageUpdater
from qgen.model import factored_memory
from qgen.model.factored_memory import FactoredMemory
from qgen.model.generator import CopyGenerator, SoftmaxGenerator
from qgen.model.memory import Scratchpad, write
from qgen.model.vocab import PAD_ID, UNK_ID

State = dict[str, torch.Tensor]


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h = cfg.hidden_size
        self.cfg = cfg
        mlp = cfg.attention == "bahdanau"
        units = cfg.mlp_units
        self.embedding = nn.Embedding(cfg.tgt_vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(cfg.dropout)
        self.gru = nn.GRU(cfg.embedding_dim + h, h, cfg.num_layers, batch_first=True,
                          dropout=cfg.dropout if cfg.num_layers > 1 else 0.0)
        self.read_attention: nn.Module = MLPAttention(h, h, units) if mlp else GeneralAttention(h, h)
        self.post_read = nn.Linear(2 * h, h)
        if cfg.copy == "none":
            self.generator: nn.Module = SoftmaxGenerator(h, cfg.tgt_vocab_size)
        else:
            self.generator = CopyGenerator(h, cfg.embedding_dim, cfg.tgt_vocab_size, cfg.coverage_dim,
                                           attention_dim=units if mlp else 0, copy_all=cfg.copy_softmax == "all",
                                           gate_hidden=units if cfg.gates == "mlp" else 0)
        self.coverage = CoverageUpdater(h, cfg.coverage_dim) if cfg.coverage_dim else None
        # Passes of the attentions over the memory a step (read, and copy: scores and context for
        # Luong's score, the context alone for the MLP's), for the factored memory's cost rule.
        self.memory_reads = (2 if cfg.attention == "luong" else 1) * (2 if cfg.copy != "none" else 1)
        self.scratchpad = (Scratchpad(h, focus_gate=cfg.memory == "scratchpad_focus",
                                      gate_hidden=units if cfg.gates == "mlp" else 0)
                           if cfg.memory != "none" else None)

    def projections(self) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
        """The linear maps of the memory kept in the state, by state key: rewritten with the memory."""
        maps: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {}
        if isinstance(self.read_attention, MLPAttention):
            maps["keys_read"] = self.read_attention.key
        if isinstance(self.generator, CopyGenerator) and isinstance(self.generator.copy_attention, MLPAttention):
            maps["keys_copy"] = self.generator.copy_attention.key
        # Kept for the linear gate and coverage too: a few numbers a position are cheaper to keep and
        # write than a pass over the whole memory each step (decoding is bound by such passes).
        if self.scratchpad is not None:
            maps["keys_gate"] = self.scratchpad.gate_memory
        if self.coverage is not None:
            maps["keys_coverage"] = self.coverage.project
        return maps

    def per_example_keys(self) -> set[str]:
        """State keys that the step passes on unchanged: the same in every beam of an example, so a
        beam search need not reorder them (the encoder states too when no scratchpad rewrites them)."""
        keys = {"src_mask", "copy_mask", "copy_ids", "extended"}
        if self.scratchpad is None:
            keys |= {"memory", *self.projections()}
        return keys | self.unexpanded_keys()

    def unexpanded_keys(self) -> set[str]:
        """State keys with one row per example, however many hypotheses an example has (a decoding loop
        may leave them unexpanded): the factored memory's encoder states and updates."""
        return set(factored_memory.PER_EXAMPLE_KEYS) if self.scratchpad is not None else set()

    def init_state(self, encoder_out: torch.Tensor, encoder_final: torch.Tensor, src_mask: torch.Tensor,
                   copy_ids: torch.Tensor, extended_size: int) -> State:
        batch, src_len, h = encoder_out.shape
        state: State = {
            "hidden": encoder_final.transpose(0, 1).contiguous(),  # (batch, layers, h)
            "src_mask": src_mask,  # (batch, src_len) bool
            "copy_mask": src_mask & (copy_ids >= 0),  # (batch, src_len)
            "copy_ids": copy_ids.clamp_min(0),  # (batch, src_len)
            # Its width is the extended vocabulary's OOV count; a tensor so that beams reorder it.
            "extended": encoder_out.new_zeros(batch, max(extended_size - self.cfg.tgt_vocab_size, 0)),
        }
        if self.scratchpad is not None and factored_memory.applies(encoder_out):
            state.update(FactoredMemory.start(encoder_out).to_state())
        else:
            state["memory"] = encoder_out  # (batch, src_len, h): the scratchpad rewrites it
        if self.cfg.attention == "luong":
            state["feed"] = encoder_out.new_zeros(batch, h)  # previous post-read state (input feeding)
        if self.coverage is not None:
            state["coverage"] = encoder_out.new_zeros(batch, src_len, self.cfg.coverage_dim)
        for key, projection in self.projections().items():
            state[key] = projection(encoder_out)  # (batch, src_len, A)
        return state

    def step(self, prev_tokens: torch.Tensor, state: State, distribution: bool = True
             ) -> tuple[torch.Tensor | None, State, dict[str, torch.Tensor]]:
        """prev_tokens (batch,) ids, extended ids allowed -> log-probs (batch, vocab + OOV slots).

        ``distribution=False``: no output distribution (None); the attentions hold the post-read state
        ("post") for ``gold_log_probs``, which computes the output layer of all the steps at once."""
        vocab = self.cfg.tgt_vocab_size
        inputs = prev_tokens.masked_fill(prev_tokens >= vocab, UNK_ID)  # a copied OOV is read as UNK
        embedded = self.dropout(self.embedding(inputs))  # (batch, emb)
        memory = state["memory"] if "memory" in state else FactoredMemory.from_state(state)
        mask = state["src_mask"]
        if self.cfg.attention == "luong":
            gru_in = torch.cat([embedded, state["feed"]], dim=-1).unsqueeze(1)  # (batch, 1, emb + h)
            output, hidden = self.gru(gru_in, state["hidden"].transpose(0, 1).contiguous())
            s = output.squeeze(1)  # (batch, h)
            read, read_context = self.read_attention(s, memory, mask)  # (batch, src_len), (batch, h)
        else:  # Eq. 1-4: read with s_t-1, then s_t = GRU(s_t-1, [y_t-1 ; attn_read])
            read, read_context = self.read_attention(state["hidden"][:, -1], memory, mask, keys=state["keys_read"])
            gru_in = torch.cat([embedded, read_context], dim=-1).unsqueeze(1)  # (batch, 1, emb + h)
            output, hidden = self.gru(gru_in, state["hidden"].transpose(0, 1).contiguous())
            s = output.squeeze(1)  # (batch, h)
        post = torch.tanh(self.post_read(torch.cat([s, read_context], dim=-1)))  # (batch, h)
        attns: dict[str, torch.Tensor] = {"read": read}
        new_state = dict(state)
        log_probs: torch.Tensor | None = None
        if isinstance(self.generator, CopyGenerator):
            extended_size = vocab + state["extended"].size(1)
            copy_attns, written_context = self.generator.attend(
                post, embedded, memory, state["copy_mask"], state.get("coverage"), src_mask=mask,
                keys=state.get("keys_copy"))
            if distribution:
                log_probs = self.generator.distribution(post, copy_attns, state["copy_mask"], state["copy_ids"],
                                                        extended_size)
            attns.update(copy_attns)
        else:
            log_probs, written_context = (self.generator(post) if distribution else None), read_context
        if not distribution:
            attns["post"] = post
        if self.coverage is not None:
            new_state["coverage"] = self.coverage(state["coverage"], attns["copy"], post, state["keys_coverage"])
            attns["coverage"] = new_state["coverage"]
        if self.scratchpad is not None:
            focus = attns.get("copy", read)  # the attention whose context is written (Eq. 12-14)
            projected = state["keys_gate"]
            alpha, update = self.scratchpad.gate(post, written_context, projected, focus)  # (b, T, 1), (b, 1, h)
            for key in factored_memory.KEYS:  # a factored memory may be written out: _written says which keys
                new_state.pop(key, None)
            new_state.update(self._written(memory, alpha, update, mask))
            for key, projection in self.projections().items():  # Eq. 12 on W h: W h' = a W h + (1 - a) W u
                new_state[key] = write(state[key], alpha, projection(update), mask)
            attns["write_gate"] = alpha.squeeze(-1)
        new_state["hidden"] = hidden.transpose(0, 1).contiguous()
        if self.cfg.attention == "luong":
            new_state["feed"] = post
        return log_probs, new_state, attns

    def _written(self, memory: torch.Tensor | FactoredMemory, alpha: torch.Tensor, update: torch.Tensor,
                 mask: torch.Tensor) -> State:
        """The memory's state keys after the write: explicit, or factored while that is cheaper."""
        if not isinstance(memory, FactoredMemory):
            return {"memory": write(memory, alpha, update, mask)}
        written = memory.write(alpha, update, mask)
        if written.worth_keeping(self.memory_reads):
            return written.to_state()
        return {"memory": written.materialise()}

    def step_distribution(self, attns: dict[str, torch.Tensor], state: State) -> torch.Tensor:
        """The log-probabilities ``step`` would have returned, from the attentions of ``step(...,
        distribution=False)`` (its "post" state) and the state it was given."""
        if isinstance(self.generator, CopyGenerator):
            extended_size = self.cfg.tgt_vocab_size + state["extended"].size(1)
            return self.generator.distribution(attns["post"], attns, state["copy_mask"], state["copy_ids"],
                                               extended_size)
        return self.generator(attns["post"])

    def gold_log_probs(self, steps: dict[str, torch.Tensor], state: State, gold: torch.Tensor) -> torch.Tensor:
        """log p(gold) (batch, steps) from the stacked attentions of ``step(..., distribution=False)``
        (each (batch, steps, ...)); the same numbers as each step's distribution at the gold words."""
        if isinstance(self.generator, CopyGenerator):
            return self.generator.gold_log_probs(steps["post"], steps["copy"], steps["p_gen"], state["copy_mask"],
                                                 state["copy_ids"], gold)
        return self.generator.gold_log_probs(steps["post"], gold)
