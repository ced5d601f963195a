"""dl4mt's conditional GRU decoder (seed 003 Eq. 5-8, as the CAEncoder-NMT code runs it), on the
skeleton's step contract (qgen/model/decoder.py):

    s_0   = tanh(W_init mean_i(h_i) + b)                     (masked mean of the annotations)
    s'_j  = GRU_1(s_j-1, E_y_j-1)                            (E_y_0 = 0: BOS embeds as zeros)
    a_j,c_j = MLP attention from s'_j over the annotations   (e_ji = u . tanh(W s'_j + U h_i + b))
    s_j   = GRU_2(s'_j, c_j)
    p(y_j) = readout(s_j, E_y_j-1, c_j)                      (qgen.model.generator.ReadoutGenerator)

The paper writes the attention query as s_j-1; the code queries with s'_j, which has read y_j-1 (we
follow the code). The score's output bias c cancels in the softmax and is left out. The attention's
hidden width is ``mlp_hidden``, or the annotation width when 0 (dl4mt: the context size).
"""
from __future__ import annotations

import torch
from torch import nn

from qgen.model.attention import MLPAttention
from qgen.model.config import ModelConfig
from qgen.model.generator import ReadoutGenerator
from qgen.model.vocab import BOS_ID, PAD_ID, UNK_ID

State = dict[str, torch.Tensor]


class ConditionalGRUDecoder(nn.Module):
    def __init__(self, cfg: ModelConfig, memory_dim: int) -> None:
        super().__init__()
        h, emb = cfg.hidden_size, cfg.embedding_dim
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.tgt_vocab_size, emb, padding_idx=PAD_ID)
        self.init = nn.Linear(memory_dim, h)  # W_init, b
        self.gru1 = nn.GRUCell(emb, h)
        self.read_attention = MLPAttention(h, memory_dim, cfg.mlp_hidden or memory_dim)
        self.gru2 = nn.GRUCell(memory_dim, h)
        self.generator = ReadoutGenerator(h, emb, memory_dim, cfg.tgt_vocab_size, cfg.dropout)

    def per_example_keys(self) -> set[str]:
        """Passed on unchanged by every step: a beam search need not reorder them."""
        return {"memory", "keys_read", "src_mask"}

    def init_state(self, encoder_out: torch.Tensor, encoder_final: torch.Tensor, src_mask: torch.Tensor,
                   copy_ids: torch.Tensor, extended_size: int) -> State:
        """encoder_out (batch, src_len, m); the final states and copy arguments are not used (no copy)."""
        weights = src_mask.unsqueeze(-1).to(encoder_out.dtype)  # (batch, src_len, 1)
        mean = (encoder_out * weights).sum(1) / weights.sum(1).clamp_min(1.0)  # (batch, m)
        return {
            "hidden": torch.tanh(self.init(mean)),  # (batch, h): s_0
            "memory": encoder_out,
            "keys_read": self.read_attention.project(encoder_out),  # (batch, src_len, A): U h_i, once
            "src_mask": src_mask,
        }

    def step(self, prev_tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State, dict[str, torch.Tensor]]:
        """prev_tokens (batch,) -> log-probs (batch, vocab), the new state, {"read": alpha_j (batch, src_len)}."""
        inputs = prev_tokens.masked_fill(prev_tokens >= self.cfg.tgt_vocab_size, UNK_ID)
        embedded = self.embedding(inputs).masked_fill((inputs == BOS_ID).unsqueeze(-1), 0.0)  # E_y_0 = 0
        middle = self.gru1(embedded, state["hidden"])  # s'_j
        read, context = self.read_attention(middle, state["memory"], state["src_mask"], keys=state["keys_read"])
        hidden = self.gru2(context, middle)  # s_j
        log_probs = self.generator(hidden, embedded, context)
        return log_probs, {**state, "hidden": hidden}, {"read": read}
