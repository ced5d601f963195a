"""The decoder's step function: the one contract shared by training and every decoding algorithm.

    init_state(encoder_out, encoder_final, src_mask, copy_ids, extended_size) -> state
    step(prev_tokens, state) -> (log_probs, state, attns)

Every state tensor is batch-first, so beam search reorders a state it knows nothing about with
``{k: v[idx] for k, v in state.items()}``. State update (seed Eq. 4): the GRU reads the previous
word and the previous post-read state (input feeding); the read attention (Eq. 1-3) over the
encoder states gives the context c_t and the post-read state s'_t = tanh(W [s_t ; c_t]).
"""
from __future__ import annotations

import torch
from torch import nn

from qgen.model.attention import GeneralAttention
from qgen.model.config import ModelConfig
from qgen.model.coverage import CoverageUpdater
from qgen.model.generator import CopyGenerator, SoftmaxGenerator
from qgen.model.memory import Scratchpad
from qgen.model.vocab import PAD_ID, UNK_ID

State = dict[str, torch.Tensor]


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h = cfg.hidden_size
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.tgt_vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(cfg.dropout)
        self.gru = nn.GRU(cfg.embedding_dim + h, h, cfg.num_layers, batch_first=True,
                          dropout=cfg.dropout if cfg.num_layers > 1 else 0.0)
        self.read_attention = GeneralAttention(h, h)
        self.post_read = nn.Linear(2 * h, h)
        if cfg.copy == "none":
            self.generator: nn.Module = SoftmaxGenerator(h, cfg.tgt_vocab_size)
        else:
            self.generator = CopyGenerator(h, cfg.embedding_dim, cfg.tgt_vocab_size, cfg.coverage_dim)
        self.coverage = CoverageUpdater(h, cfg.coverage_dim) if cfg.coverage_dim else None
        self.scratchpad = (Scratchpad(h, focus_gate=cfg.memory == "scratchpad_focus")
                           if cfg.memory != "none" else None)

    def init_state(self, encoder_out: torch.Tensor, encoder_final: torch.Tensor, src_mask: torch.Tensor,
                   copy_ids: torch.Tensor, extended_size: int) -> State:
        batch, src_len, h = encoder_out.shape
        state: State = {
            "hidden": encoder_final.transpose(0, 1).contiguous(),  # (batch, layers, h)
            "memory": encoder_out,  # (batch, src_len, h): the scratchpad rewrites it
            "src_mask": src_mask,  # (batch, src_len) bool
            "feed": encoder_out.new_zeros(batch, h),  # previous post-read state
            "copy_mask": src_mask & (copy_ids >= 0),  # (batch, src_len)
            "copy_ids": copy_ids.clamp_min(0),  # (batch, src_len)
            # Its width is the extended vocabulary's OOV count; a tensor so that beams reorder it.
            "extended": encoder_out.new_zeros(batch, max(extended_size - self.cfg.tgt_vocab_size, 0)),
        }
        if self.coverage is not None:
            state["coverage"] = encoder_out.new_zeros(batch, src_len, self.cfg.coverage_dim)
        return state

    def step(self, prev_tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State, dict[str, torch.Tensor]]:
        """prev_tokens (batch,) ids, extended ids allowed -> log-probs (batch, vocab + OOV slots)."""
        vocab = self.cfg.tgt_vocab_size
        inputs = prev_tokens.masked_fill(prev_tokens >= vocab, UNK_ID)  # a copied OOV is read as UNK
        embedded = self.dropout(self.embedding(inputs))  # (batch, emb)
        gru_in = torch.cat([embedded, state["feed"]], dim=-1).unsqueeze(1)  # (batch, 1, emb + h)
        output, hidden = self.gru(gru_in, state["hidden"].transpose(0, 1).contiguous())
        s = output.squeeze(1)  # (batch, h)
        memory, mask = state["memory"], state["src_mask"]
        read, read_context = self.read_attention(s, memory, mask)  # (batch, src_len), (batch, h)
        post = torch.tanh(self.post_read(torch.cat([s, read_context], dim=-1)))  # (batch, h)
        attns: dict[str, torch.Tensor] = {"read": read}
        new_state = dict(state)
        if isinstance(self.generator, CopyGenerator):
            extended_size = vocab + state["extended"].size(1)
            log_probs, copy_attns, written_context = self.generator(
                post, embedded, memory, state["copy_mask"], state["copy_ids"], extended_size, state.get("coverage"))
            attns.update(copy_attns)
        else:
            log_probs, written_context = self.generator(post), read_context
        if self.coverage is not None:
            new_state["coverage"] = self.coverage(state["coverage"], attns["copy"], post, memory)
            attns["coverage"] = new_state["coverage"]
        if self.scratchpad is not None:
            focus = attns.get("copy", read)  # the attention whose context is written (Eq. 12-14)
            new_state["memory"], attns["write_gate"] = self.scratchpad(memory, post, written_context, mask, focus)
        new_state["hidden"] = hidden.transpose(0, 1).contiguous()
        new_state["feed"] = post
        return log_probs, new_state, attns
