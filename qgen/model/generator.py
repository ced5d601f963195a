"""Output layers: a softmax over the output vocabulary (seed Eq. 5), the copy mixture (Eq. 6-11), or
dl4mt's readout layer (seed 003 Eq. 6).

Copy: a separate copy attention over the (possibly rewritten) encoder states, computed from the
post-read state, gives beta; p_gen mixes
    p(w) = p_gen * p_vocab(w) + (1 - p_gen) * sum_{i: x_i = w} beta_i
over the output vocabulary plus the example's extended OOV slots. PAD and BOS never get probability.

Two readings of the copy attention's domain (``ModelConfig.copy_softmax``):
- ``"copyable"``: source positions that cannot be copied (``copy_ids`` = -1 in the paper's V_i ∩ V_o
  mode) get no copy attention; a row with no copyable position generates only (p_gen = 1).
- ``"all"`` (seed 001 Eq. 9): beta is a softmax over every source position (padding excluded); the
  mass it puts on a position that cannot be copied is lost, so p(w) sums to less than 1.

Two forms of the switch (``ModelConfig.gates``):
- ``"linear"``: p_gen = sigmoid(w [s_t ; c_copy ; y_t-1]).
- ``"mlp"`` (seed 001 Eq. 11): p_gen = sigmoid(W1 ReLU(W2 [s_t ; c_copy])).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from qgen.model.attention import GeneralAttention, MLPAttention
from qgen.model.vocab import BOS_ID, PAD_ID

_LOG_FLOOR = 1e-12


class SoftmaxGenerator(nn.Module):
    def __init__(self, hidden_size: int, vocab_size: int) -> None:
        super().__init__()
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        """state (batch, h) -> log-probabilities (batch, vocab)."""
        return torch.log_softmax(_mask_specials(self.out(state).float(), in_place=True), dim=-1)

    def gold_log_probs(self, states: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
        """Every step at once: states (batch, steps, h), gold (batch, steps) -> log p(gold) (batch, steps)."""
        log_probs = torch.log_softmax(_mask_specials(self.out(states).float(), in_place=True), dim=-1)
        return log_probs.gather(-1, gold.clamp_max(log_probs.size(-1) - 1).unsqueeze(-1)).squeeze(-1)


class ReadoutGenerator(nn.Module):
    """dl4mt's readout (seed 003 Eq. 6): p(y_j) = softmax(W_o dropout(tanh(W_1 s_j + W_2 E_y_j-1 + W_3 c_j + b)) + b_o).

    The readout layer is ``readout_dim`` wide (dl4mt: the word embedding size) and the dropout acts
    there only (their "final prediction layer")."""

    def __init__(self, hidden_size: int, embedding_dim: int, context_dim: int, vocab_size: int,
                 dropout: float, readout_dim: int = 0) -> None:
        super().__init__()
        width = readout_dim or embedding_dim
        self.state = nn.Linear(hidden_size, width)  # W_1 (and b)
        self.previous = nn.Linear(embedding_dim, width, bias=False)  # W_2
        self.context = nn.Linear(context_dim, width, bias=False)  # W_3
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(width, vocab_size)  # W_o, b_o

    def forward(self, state: torch.Tensor, prev_embedded: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """state (batch, h), prev_embedded (batch, emb), context (batch, c) -> log-probabilities (batch, vocab)."""
        readout = torch.tanh(self.state(state) + self.previous(prev_embedded) + self.context(context))
        return torch.log_softmax(_mask_specials(self.out(self.dropout(readout)).float(), in_place=True), dim=-1)


class CopyGenerator(nn.Module):
    """``attention_dim`` > 0: the MLP copy score (``MLPAttention``), else the general one; ``copy_all``:
    the softmax over every position (Eq. 9); ``gate_hidden`` > 0: the MLP switch (Eq. 11)."""

    def __init__(self, hidden_size: int, embedding_dim: int, vocab_size: int, coverage_dim: int = 0,
                 attention_dim: int = 0, copy_all: bool = False, gate_hidden: int = 0) -> None:
        super().__init__()
        self.out = nn.Linear(hidden_size, vocab_size)
        self.copy_attention: nn.Module = (MLPAttention(hidden_size, hidden_size, attention_dim, coverage_dim)
                                          if attention_dim else GeneralAttention(hidden_size, hidden_size, coverage_dim))
        self.copy_all = copy_all
        if gate_hidden:  # Eq. 11: W1 ReLU(W2 [s ; c_copy])
            self.switch: nn.Module = nn.Sequential(nn.Linear(2 * hidden_size, gate_hidden), nn.ReLU(),
                                                   nn.Linear(gate_hidden, 1))
        else:
            self.switch = nn.Linear(2 * hidden_size + embedding_dim, 1)
        self.switch_sees_previous_word = not gate_hidden

    def forward(self, state: torch.Tensor, prev_embedded: torch.Tensor, memory: torch.Tensor,
                copy_mask: torch.Tensor, copy_ids: torch.Tensor, extended_size: int,
                coverage: torch.Tensor | None = None, src_mask: torch.Tensor | None = None,
                keys: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """Log-probabilities (batch, extended_size), attentions {copy, p_gen}, copy context (batch, h).

        state (batch, h) post-read; prev_embedded (batch, emb); memory (batch, src_len, h);
        copy_mask (batch, src_len) bool; copy_ids (batch, src_len) ids in [0, extended_size);
        src_mask (batch, src_len) bool, the softmax's domain with ``copy_all``; keys: the MLP score's
        projected memory when the caller keeps it.
        """
        attns, copy_context = self.attend(state, prev_embedded, memory, copy_mask, coverage, src_mask, keys)
        return self.distribution(state, attns, copy_mask, copy_ids, extended_size), attns, copy_context

    def distribution(self, state: torch.Tensor, attns: dict[str, torch.Tensor], copy_mask: torch.Tensor,
                     copy_ids: torch.Tensor, extended_size: int) -> torch.Tensor:
        """The step's log-probabilities (batch, extended_size) from its post-read state and ``attend``'s
        attentions: the copy mixture of Eq. 6-11."""
        beta, p_gen = attns["copy"], attns["p_gen"].unsqueeze(1)
        # The logits are the output layer's own new tensor, which its backward does not keep: masked in place.
        vocab = torch.softmax(_mask_specials(self.out(state).float(), in_place=True), dim=-1)  # (batch, vocab)
        copied = (1 - p_gen) * self._copied(beta, copy_mask)  # (batch, src_len)
        if torch.is_grad_enabled():  # the softmax's backward keeps its output: no in-place work after it
            probs = torch.zeros(state.size(0), extended_size, device=state.device, dtype=torch.float32)
            probs[:, : vocab.size(1)] = p_gen * vocab
            probs.scatter_add_(1, copy_ids, copied)
            return probs.clamp_min(_LOG_FLOOR).log()
        # Decoding: the same numbers, each op in place (decoding on a CPU is bound by passes over
        # (rows, vocab) like these, and each new tensor is one more).
        probs = F.pad(vocab, (0, extended_size - vocab.size(1))) if extended_size > vocab.size(1) else vocab
        return probs.mul_(p_gen).scatter_add_(1, copy_ids, copied).clamp_min_(_LOG_FLOOR).log_()

    def gold_log_probs(self, states: torch.Tensor, betas: torch.Tensor, p_gens: torch.Tensor,
                       copy_mask: torch.Tensor, copy_ids: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
        """``forward``'s log p(gold) for every step at once, from the steps' post-read states (batch,
        steps, h), copy attentions (batch, steps, src_len) and switches (batch, steps): one output
        projection over all the steps instead of one per step, and no extended distribution built
        (training needs the gold word's probability only). gold (batch, steps) -> (batch, steps)."""
        vocab_log_probs = torch.log_softmax(_mask_specials(self.out(states).float(), in_place=True), dim=-1)  # (b, steps, vocab)
        in_vocab = gold < vocab_log_probs.size(-1)
        p_vocab = vocab_log_probs.gather(-1, gold.clamp_max(vocab_log_probs.size(-1) - 1).unsqueeze(-1)).squeeze(-1)
        p_vocab = p_vocab.exp().masked_fill(~in_vocab, 0.0)
        copies_gold = copy_ids.unsqueeze(1) == gold.unsqueeze(-1)  # (b, steps, src_len)
        p_copy = (self._copied(betas, copy_mask.unsqueeze(1)) * copies_gold).sum(dim=-1)  # (b, steps)
        p_gens = p_gens.float()
        return (p_gens * p_vocab + (1 - p_gens) * p_copy).clamp_min(_LOG_FLOOR).log()

    def _copied(self, beta: torch.Tensor, copy_mask: torch.Tensor) -> torch.Tensor:
        """The copy attention's mass that lands on words: all of it, or with ``copy_all`` (Eq. 9) none on
        a position that cannot be copied (that mass is lost)."""
        return beta.float().masked_fill(~copy_mask, 0.0) if self.copy_all else beta.float()

    def attend(self, state: torch.Tensor, prev_embedded: torch.Tensor, memory: torch.Tensor,
               copy_mask: torch.Tensor, coverage: torch.Tensor | None = None, src_mask: torch.Tensor | None = None,
               keys: torch.Tensor | None = None) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The step's copy attention and switch, {copy (batch, src_len), p_gen (batch,)}, and the copy
        context (batch, h): what a step needs before its output distribution."""
        if self.copy_all:
            if src_mask is None:
                raise ValueError("a copy softmax over all positions needs src_mask")
            domain = src_mask
        else:
            domain = copy_mask
        if keys is not None:
            beta, copy_context = self.copy_attention(state, memory, domain, coverage, keys=keys)
        else:
            beta, copy_context = self.copy_attention(state, memory, domain, coverage)  # (batch, src_len), (batch, h)
        if self.switch_sees_previous_word:
            p_gen = torch.sigmoid(self.switch(torch.cat([state, copy_context, prev_embedded], dim=-1))).float()
        else:
            p_gen = torch.sigmoid(self.switch(torch.cat([state, copy_context], dim=-1))).float()  # (batch, 1)
        if not self.copy_all:  # nothing to copy: generate only
            p_gen = torch.where(copy_mask.any(dim=1, keepdim=True), p_gen, torch.ones_like(p_gen))
        return {"copy": beta, "p_gen": p_gen.squeeze(1)}, copy_context


def _mask_specials(logits: torch.Tensor, in_place: bool = False) -> torch.Tensor:
    """PAD and BOS are never generated (logits (..., vocab)); ``in_place`` for logits no one else holds."""
    if not in_place:
        logits = logits.clone()
    logits[..., PAD_ID] = float("-inf")
    logits[..., BOS_ID] = float("-inf")
    return logits
