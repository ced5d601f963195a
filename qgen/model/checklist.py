"""Seed 004, Kiddon et al. (2016), "Globally Coherent Text Generation with Neural Checklist Models":
the agenda encoder, the checklist decoder and the checklist loss term, on the skeleton's step
contract (qgen/model/decoder.py). Equations K1-K14 as ../shared/specs/data-to-text-seeds.md numbers them.

Input layout (qgen.datasets.wen_agenda writes it): source position 0 is the goal (the dialogue act
type), then each agenda item as two tokens, ``slot value`` (an empty agenda: one ``null null``
item). So item l is positions 2l+1 and 2l+2, and no separator token is needed.

    g        = sum of the goal's token embeddings (V_goal)                          (one token here)
    e_l      = sum of item l's token embeddings (V_agenda)                           E: (L, k)
    h_0      = U_g g                                                                  K13
    E_new    = (1 - a_t-1) o E,  E_used = a_t-1 o E                                   K4, K8
    GRU      z, r, s (goal select), q (item select) gates from x_t and h_t-1          K10, K12
             h~ = tanh(W_h x_t + r o U_h h_t-1 + s o Y g + q o Z sum_l E_new,l)        K11
    f_t      = softmax(beta S h_t): generate from the GRU, a new item, a used item    K3
    alpha    = softmax(gamma E_new P h_t), softmax(gamma E_used P h_t) over the items K5, K9
    c        = P h_t, E^T alpha_new, E^T alpha_used (unweighted E)                    K14, K6, K9
    o_t      = f_gru c_gru + f_new c_new + f_used c_used                              K2
    w_t      = softmax(W_o o_t)                                                       K1
    a_t      = hardtanh(a_t-1 + f_new alpha_new)  (at most 1; a_0 = 0)                K7

Choices where the paper is silent or inconsistent (each in the spec's "open choices"):
- K11 as Z times the row sum of E_new (the paper's (1^T Z E)^T does not type-check);
- biases: the paper writes none; the GRU's input projections and W_o have them (torch's GRU cell
  and output layer do), the attention and mixing matrices (S, P, Y, Z, U_g) have none;
- padded items (a shorter agenda in the batch) get no attention and no checklist entry.
"""
from __future__ import annotations

import torch
from torch import nn

from qgen.model.attention import masked_softmax
from qgen.model.config import ModelConfig
from qgen.model.vocab import PAD_ID, UNK_ID

State = dict[str, torch.Tensor]
FIELDS = ("gru", "new", "used")  # the three reference types of f_t, in this order


class AgendaEncoder(nn.Module):
    """Bag-of-words goal and agenda items: src (batch, 1 + 2L) -> items E (batch, L, k), goal g (batch, k)
    and the item mask (batch, L): the skeleton's (memory, final) plus the memory's own mask."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.goal_embedding = nn.Embedding(cfg.src_vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)
        self.item_embedding = nn.Embedding(cfg.src_vocab_size, cfg.embedding_dim, padding_idx=PAD_ID)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        goal = self.goal_embedding(src[:, 0])  # (batch, k): a one-token goal
        if bool(((lengths - 1) % 2 != 0).any()) or bool((lengths < 3).any()):
            raise ValueError("the checklist model reads a goal token then slot-value pairs (qgen.datasets.wen_agenda): "
                             f"source lengths must be odd and at least 3, got {sorted(set(lengths.tolist()))}")
        rest = src[:, 1:]
        if rest.size(1) % 2:  # padding columns after the longest source: drop the odd one out
            rest = rest[:, :-1]
        pairs = rest.view(rest.size(0), -1, 2)  # (batch, L, 2): slot, value
        items = self.item_embedding(pairs).sum(dim=2)  # (batch, L, k); PAD embeds as zeros
        return items, goal, pairs[:, :, 0] != PAD_ID


class ChecklistDecoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h, e = cfg.hidden_size, cfg.embedding_dim
        self.cfg = cfg
        self.beta, self.gamma = cfg.checklist_beta, cfg.checklist_gamma
        self.embedding = nn.Embedding(cfg.tgt_vocab_size, e, padding_idx=PAD_ID)
        self.input_gates = nn.Linear(e, 5 * h)  # W_z, W_r, W_h, W_s, W_q (x_t)
        self.state_gates = nn.Linear(h, 5 * h, bias=False)  # U_z, U_r, U_h, U_s, U_q (h_t-1)
        self.goal_in = nn.Linear(e, h, bias=False)  # Y
        self.items_in = nn.Linear(e, h, bias=False)  # Z
        self.start_state = nn.Linear(e, h, bias=False)  # U_g (K13)
        self.ref_type = nn.Linear(h, len(FIELDS), bias=False)  # S (K3)
        self.project = nn.Linear(h, e, bias=False)  # P (K5, K9, K14)
        self.out = nn.Linear(e, cfg.tgt_vocab_size)  # W_o (K1)

    def per_example_keys(self) -> set[str]:
        """Passed on unchanged by every step: a beam search need not reorder them."""
        return {"items", "src_mask", "goal_in"}

    def init_state(self, items: torch.Tensor, goal: torch.Tensor, item_mask: torch.Tensor,
                   copy_ids: torch.Tensor, extended_size: int) -> State:
        """items (batch, L, k), goal (batch, k), item_mask (batch, L); no copy (its arguments are unused)."""
        return {
            "hidden": self.start_state(goal),  # h_0 = U_g g
            "checklist": items.new_zeros(items.shape[:2]),  # a_0 = 0
            "items": items,
            "src_mask": item_mask,
            "goal_in": self.goal_in(goal),  # Y g, the same every step
        }

    def step(self, prev_tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State, dict[str, torch.Tensor]]:
        """prev_tokens (batch,) -> log-probs (batch, vocab), the new state, and per step
        {"read": alpha_new, "checklist": a_t (batch, L), "f_new": f_new,t (batch,)}."""
        inputs = prev_tokens.masked_fill(prev_tokens >= self.cfg.tgt_vocab_size, UNK_ID)
        x = self.embedding(inputs)  # (batch, k)
        previous, checklist, items, mask = state["hidden"], state["checklist"], state["items"], state["src_mask"]
        live = mask.to(items.dtype)
        new_items = ((1.0 - checklist) * live).unsqueeze(-1) * items  # E_new (K4)
        used_items = (checklist * live).unsqueeze(-1) * items  # E_used (K8)
        wz, wr, wh, ws, wq = self.input_gates(x).chunk(5, dim=-1)
        uz, ur, uh, us, uq = self.state_gates(previous).chunk(5, dim=-1)
        z, r = torch.sigmoid(wz + uz), torch.sigmoid(wr + ur)  # K10
        s, q = torch.sigmoid(ws + us), torch.sigmoid(wq + uq)  # K12
        candidate = torch.tanh(wh + r * uh + s * state["goal_in"] + q * self.items_in(new_items.sum(1)))  # K11
        hidden = (1.0 - z) * previous + z * candidate  # K10
        f = torch.softmax(self.beta * self.ref_type(hidden), dim=-1)  # (batch, 3) K3
        query = self.project(hidden)  # P h_t (batch, k)
        alpha_new = masked_softmax(self.gamma * torch.bmm(new_items, query.unsqueeze(2)).squeeze(2), mask, items.dtype)
        alpha_used = masked_softmax(self.gamma * torch.bmm(used_items, query.unsqueeze(2)).squeeze(2), mask, items.dtype)
        c_new = torch.bmm(alpha_new.unsqueeze(1), items).squeeze(1)  # E^T alpha_new (K6)
        c_used = torch.bmm(alpha_used.unsqueeze(1), items).squeeze(1)  # K9
        mixed = f[:, :1] * query + f[:, 1:2] * c_new + f[:, 2:] * c_used  # o_t (K2, K14)
        log_probs = torch.log_softmax(self.out(mixed).float(), dim=-1)  # K1
        checklist = torch.clamp(checklist + f[:, 1:2] * alpha_new, max=1.0)  # K7 (never below 0)
        attns = {"read": alpha_new, "checklist": checklist, "f_new": f[:, 1]}
        return log_probs, {**state, "hidden": hidden, "checklist": checklist}, attns


def checklist_loss(attns: dict[str, torch.Tensor], src_mask: torch.Tensor, tgt_mask: torch.Tensor) -> torch.Tensor:
    """The dialogue loss term: sum over the real items of (1 - a_N,l)^2, a_N the checklist after each
    sentence's last real step (EOS): every agenda item should have been used by the end."""
    checklist = attns["checklist"].float()  # (batch, tgt_len, L)
    last = (tgt_mask.sum(dim=1) - 1).clamp_min(0)  # (batch,)
    final = checklist[torch.arange(checklist.size(0), device=checklist.device), last]  # (batch, L)
    return ((1.0 - final) ** 2 * src_mask).sum()


@torch.inference_mode()
def items_used(model: nn.Module, batch) -> torch.Tensor:
    """Per example of ``batch`` (whose targets are the hypotheses to rank): the steps with f_new > 0.5
    (the final EOS step included), capped at the agenda's size (the paper's "uses the most agenda
    items"), by teacher forcing."""
    from qgen.model.vocab import BOS_ID

    state = model.start(batch)
    tgt = batch.tgt
    prev = torch.full((tgt.size(0),), BOS_ID, dtype=torch.long, device=tgt.device)
    count = torch.zeros(tgt.size(0), device=tgt.device)
    for t in range(tgt.size(1)):
        _, state, attns = model.step(prev, state)
        count = count + ((attns["f_new"] > 0.5) & (tgt[:, t] != PAD_ID)).float()
        prev = tgt[:, t]
    return torch.minimum(count, state["src_mask"].sum(1).float())
