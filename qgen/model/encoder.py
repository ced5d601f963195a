"""Encoder: a 2-layer bidirectional GRU whose two directions are concatenated (seed section 2)."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from qgen.model.config import ModelConfig
from qgen.model.rnn import length_agnostic_here, run_length_agnostic
from qgen.model.vocab import PAD_ID


class Encoder(nn.Module):
    """Each direction has ``hidden_size / 2`` units, so outputs and final states are ``hidden_size``.

    The GRU runs over packed rows (``pack_padded_sequence``, lengths read on the host) or length-agnostic
    (qgen/model/rnn.py: the same numbers, needed by captured training steps and faster on a CPU).
    ``length_agnostic`` None (the default): length-agnostic when training on a CPU, else packed.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.num_layers = cfg.num_layers
        self.embedding = nn.Embedding(cfg.src_vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(cfg.dropout)
        self.gru = nn.GRU(cfg.embedding_dim, cfg.hidden_size // 2, cfg.num_layers, batch_first=True,
                          bidirectional=True, dropout=cfg.dropout if cfg.num_layers > 1 else 0.0)
        self.length_agnostic: bool | None = None  # None: by device (see above)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src (batch, src_len) -> outputs (batch, src_len, hidden), final (layers, batch, hidden)."""
        embedded = self.dropout(self.embedding(src))  # (batch, src_len, emb)
        if length_agnostic_here(self.length_agnostic, embedded):
            outputs, final = run_length_agnostic(self.gru, embedded, lengths.to(src.device), self.training)
        else:
            packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
            outputs, final = self.gru(packed)
            outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.size(1))
        batch = src.size(0)
        # (layers * 2, batch, hidden/2) -> (layers, batch, hidden): forward and backward side by side,
        # the decoder's initial state "from the encoder's final states in both directions".
        final = final.view(self.num_layers, 2, batch, -1).permute(0, 2, 1, 3).reshape(self.num_layers, batch, -1)
        return outputs, final
