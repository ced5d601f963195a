"""Output layers: a softmax over the output vocabulary (seed Eq. 5) or the copy mixture (Eq. 6-11).

Copy: a separate copy attention over the (possibly rewritten) encoder states, computed from the
post-read state, gives beta; p_gen = sigmoid(w [s_t ; c_copy ; y_t-1]) mixes
    p(w) = p_gen * p_vocab(w) + (1 - p_gen) * sum_{i: x_i = w} beta_i
over the output vocabulary plus the example's extended OOV slots. Source positions that cannot be
copied (``copy_ids`` = -1 in the paper's V_i ∩ V_o mode) get no copy attention; a row with no
copyable position generates only. PAD and BOS never get probability.
"""
from __future__ import annotations

import torch
from torch import nn

from qgen.model.attention import GeneralAttention
from qgen.model.vocab import BOS_ID, PAD_ID

_LOG_FLOOR = 1e-12


class SoftmaxGenerator(nn.Module):
    def __init__(self, hidden_size: int, vocab_size: int) -> None:
        super().__init__()
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        """state (batch, h) -> log-probabilities (batch, vocab)."""
        return torch.log_softmax(_mask_specials(self.out(state).float()), dim=-1)


class CopyGenerator(nn.Module):
    def __init__(self, hidden_size: int, embedding_dim: int, vocab_size: int, coverage_dim: int = 0) -> None:
        super().__init__()
        self.out = nn.Linear(hidden_size, vocab_size)
        self.copy_attention = GeneralAttention(hidden_size, hidden_size, coverage_dim)
        self.switch = nn.Linear(2 * hidden_size + embedding_dim, 1)

    def forward(self, state: torch.Tensor, prev_embedded: torch.Tensor, memory: torch.Tensor,
                copy_mask: torch.Tensor, copy_ids: torch.Tensor, extended_size: int,
                coverage: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """Log-probabilities (batch, extended_size), attentions {copy, p_gen}, copy context (batch, h).

        state (batch, h) post-read; prev_embedded (batch, emb); memory (batch, src_len, h);
        copy_mask (batch, src_len) bool; copy_ids (batch, src_len) ids in [0, extended_size).
        """
        beta, copy_context = self.copy_attention(state, memory, copy_mask, coverage)  # (batch, src_len), (batch, h)
        p_gen = torch.sigmoid(self.switch(torch.cat([state, copy_context, prev_embedded], dim=-1))).float()  # (batch, 1)
        p_gen = torch.where(copy_mask.any(dim=1, keepdim=True), p_gen, torch.ones_like(p_gen))
        vocab = torch.softmax(_mask_specials(self.out(state).float()), dim=-1)  # (batch, vocab)
        probs = torch.zeros(state.size(0), extended_size, device=state.device, dtype=torch.float32)
        probs[:, : vocab.size(1)] = p_gen * vocab
        probs.scatter_add_(1, copy_ids, (1 - p_gen) * beta.float())
        return probs.clamp_min(_LOG_FLOOR).log(), {"copy": beta, "p_gen": p_gen.squeeze(1)}, copy_context


def _mask_specials(logits: torch.Tensor) -> torch.Tensor:
    """PAD and BOS are never generated."""
    logits = logits.clone()
    logits[:, PAD_ID] = float("-inf")
    logits[:, BOS_ID] = float("-inf")
    return logits
