"""Zhang et al.'s context-aware encoder (CAEncoder; seed 003 Eq. 1-4, their CAEncoder-NMT code).

    (1) h^c_i = GRU(h^c_i-1, E_x_i),              i = 1..n, h^c_0 = 0      (forward, the context)
    (3) h~_i  = GRU_lower(h^a_i+1, E_x_i),        i = n..1, h^a_n+1 = 0    (backward, lower cell)
    (4) h^a_i = GRU_higher(h~_i, h^c_i)                                    (backward, higher cell)

The annotation of x_i is h^a_i alone (hidden_size wide, no concatenation with h^c): the backward pass
reads the whole forward summary h^c_i, so every annotation has seen the whole source.
Padding sits after each row's last token: the forward GRU's states at real positions never see it,
and the backward pass keeps its zero state until it reaches a row's last real token.
"""
from __future__ import annotations

import torch
from torch import nn

from qgen.model.config import ModelConfig
from qgen.model.vocab import PAD_ID


class CAEncoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h = cfg.hidden_size
        self.embedding = nn.Embedding(cfg.src_vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.forward_gru = nn.GRU(cfg.embedding_dim, h, batch_first=True)  # (1)
        self.lower = nn.GRUCell(cfg.embedding_dim, h)  # (3): input E_x_i, state h^a_i+1
        self.higher = nn.GRUCell(h, h)  # (4): input h^c_i, state h~_i

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src (batch, src_len) -> annotations h^a (batch, src_len, h) (zero at padding), and h^a_1
        (1, batch, h) in the place of the skeleton encoder's final states."""
        embedded = self.embedding(src)  # (batch, src_len, emb)
        context, _ = self.forward_gru(embedded)  # (batch, src_len, h): h^c_i
        real = (src != PAD_ID).unsqueeze(-1)  # (batch, src_len, 1)
        state = context.new_zeros(src.size(0), context.size(-1))  # h^a_n+1 = 0
        annotations = []
        for i in range(src.size(1) - 1, -1, -1):
            lower = self.lower(embedded[:, i], state)  # h~_i
            higher = self.higher(context[:, i], lower)  # h^a_i
            state = torch.where(real[:, i], higher, state)  # padding leaves the zero state as it is
            annotations.append(state)
        outputs = torch.stack(annotations[::-1], dim=1) * real  # (batch, src_len, h)
        return outputs, outputs[:, 0].unsqueeze(0)
