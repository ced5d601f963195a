"""Seed 002, Roberti et al. (2019), "Copy mechanism and tailored training for character-based
data-to-text generation": the character-level decoder with the shifted copy, on the skeleton's step
contract (qgen/model/decoder.py). The encoder is the skeleton's bidirectional GRU (hidden_size / 2 a
direction = the paper's H, num_layers 4), reading ``<s> c_1 .. c_n </s>``.

One step, equation numbers the paper's (the attention's last-character term is the released code's):

    (1) e_ij = v . tanh(W_d s_i-1 + W_h h_j + W_y E y_i-1)      s_0 = 0; attention width mlp_hidden (A)
    (2) alpha_ij = softmax_j(e_ij);  (3) C_i = sum_j alpha_ij h_j  (attend BEFORE the GRU)
        s_i = GRU([C_i ; E y_i-1], state)                        num_layers GRU of H; initial state
                                                                 per layer 0.5 (fw + bw) of the encoder's
    (4-5) P_alph = softmax(V [s_i ; C_i] + b)
    (8) p_gen^i = sigma(w_y . E y_i-1 + w_s . s_i + w_p p_gen^i-1 + w_c . C_i + b)   p_gen^0 = 0.5
    (7, 9) P(c) = p_gen P_alph(c) + (1 - p_gen) sum_{j: x_j+1 = c} alpha_ij   (copy = attention, shifted)

The shift (Eq. 9, used by EDA_C and EDA_CS): attending position j copies the character after it, so
the model attends to "[" or " " and copies the value's first character. We shift the copy ids, not the
attention: copy_id[j] = id(x_j+1); the last position (</s>) has no successor, so its mass is dropped
and the copy distribution renormalised over the others (the spec's recommendation; the released code
shifts the attention and does not renormalise). Fixed from the released code (spec, open choice 2):
attention and softmax masked at padding, padding out of the loss (the skeleton's loss), the initial
state taken per layer (the code mixes layers k and k+4).

The switching GRUs (sec. 2.3, EDA_S and EDA_CS; encoder "roberti_switch"): two bidirectional GRUs of
input 2H + E, one embedding for both sides. The encoder GRU reads [0_2H ; E x_j]; the decoder GRU runs
on a sequence of one step with input [C_i ; E y_i-1] from the encoder GRU's whole final state, its
output s_i is 2H wide (both directions), and only its forward half is the next step's attention query;
V and p_gen read that 2H state. ``RobertiSwitchEncoder.reverse`` swaps the two GRUs' roles: the
training step (``switching_step``) takes a forward step on (MR -> text), then a reverse one on (the
forward pass's teacher-forced argmax text -> MR), everything but the GRUs shared. Validation loss and
decoding run forward.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from qgen.model.attention import MLPAttention
from qgen.model.config import ModelConfig
from qgen.model.generator import _mask_specials
from qgen.model.rnn import length_agnostic_here, run_length_agnostic
from qgen.model.vocab import PAD_ID, UNK_ID

State = dict[str, torch.Tensor]
_LOG_FLOOR = 1e-12


def shifted_copy_ids(copy_ids: torch.Tensor) -> torch.Tensor:
    """(batch, src_len) copy ids -> each position's successor's id; -1 where there is none (the
    last real position and padding), so that position's attention copies nothing."""
    return torch.cat([copy_ids[:, 1:], torch.full_like(copy_ids[:, :1], -1)], dim=1)


class RobertiSwitchEncoder(nn.Module):
    """The switching GRUs and the embedding both sides share; ``reverse`` picks which GRU encodes."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h, emb = cfg.hidden_size // 2, cfg.embedding_dim
        self.num_layers = cfg.num_layers
        self.embedding = nn.Embedding(cfg.src_vocab_size, emb, padding_idx=PAD_ID)
        self.grus = nn.ModuleList(nn.GRU(2 * h + emb, h, cfg.num_layers, batch_first=True, bidirectional=True,
                                         dropout=cfg.dropout if cfg.num_layers > 1 else 0.0) for _ in range(2))
        self.reverse = False
        self.length_agnostic: bool | None = None  # packed or not: qgen/model/encoder.py's Encoder says why

    def roles(self) -> tuple[nn.GRU, nn.GRU]:
        """(the encoder GRU, the decoder GRU) of the current direction."""
        return (self.grus[1], self.grus[0]) if self.reverse else (self.grus[0], self.grus[1])

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src (batch, src_len) -> outputs (batch, src_len, 2H), final (2 layers, batch, H): the GRU's own."""
        embedded = self.embedding(src)
        width = self.grus[0].input_size - embedded.size(-1)
        inputs = torch.cat([embedded.new_zeros(*embedded.shape[:2], width), embedded], dim=-1)  # [0_2H ; E x]
        gru = self.roles()[0]
        if length_agnostic_here(self.length_agnostic, inputs):
            return run_length_agnostic(gru, inputs, lengths.to(src.device), self.training)
        packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
        outputs, final = gru(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.size(1))
        return outputs, final


class RobertiDecoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.switching = getattr(cfg, "encoder", "") == "roberti_switch"
        h, emb, memory = cfg.hidden_size // 2, cfg.embedding_dim, cfg.hidden_size  # H; annotations are 2H
        state = memory if self.switching else h  # s_i: both directions of the switching decoder GRU
        if not self.switching:  # else the encoder's (``bind``)
            self.embedding = nn.Embedding(cfg.tgt_vocab_size, emb, padding_idx=PAD_ID)
            self.gru = nn.GRU(memory + emb, h, cfg.num_layers, batch_first=True,
                              dropout=cfg.dropout if cfg.num_layers > 1 else 0.0)
        # W_d s + W_y E y as one map of [s ; E y]: the two biases add up to one
        self.attention = MLPAttention(h + emb, memory, cfg.mlp_hidden or h)
        self.out = nn.Linear(state + memory, cfg.tgt_vocab_size)  # V, b
        self.p_gen = nn.Linear(emb + state + memory, 1) if cfg.copy != "none" else None  # w_y, w_s, w_c, bias
        self.p_gen_prev = nn.Linear(1, 1, bias=False) if cfg.copy != "none" else None  # w_p

    def bind(self, encoder: nn.Module) -> None:
        """The switching decoder runs the encoder's other GRU and embeds with its embedding (held by
        reference, not as a submodule: the parameters are the encoder's)."""
        if self.switching:
            object.__setattr__(self, "_switch", encoder)

    def per_example_keys(self) -> set[str]:
        return {"memory", "keys", "src_mask", "copy_ids", "copy_mask"}

    def init_state(self, encoder_out: torch.Tensor, encoder_final: torch.Tensor, src_mask: torch.Tensor,
                   copy_ids: torch.Tensor, extended_size: int) -> State:
        """encoder_final: [fw ; bw] per layer (layers, batch, 2H), averaged into the decoder's initial
        state; or, switching, the encoder GRU's own final state (2 layers, batch, H), taken whole."""
        h = self.cfg.hidden_size // 2
        hidden = encoder_final if self.switching else 0.5 * (encoder_final[..., :h] + encoder_final[..., h:])
        batch = encoder_out.size(0)
        shifted = shifted_copy_ids(copy_ids)
        return {
            "hidden": hidden.transpose(0, 1).contiguous(),  # batch-first for the beam's reordering
            "top": torch.zeros(batch, h, device=encoder_out.device, dtype=encoder_out.dtype),  # s_i-1 (forward half)
            "p_gen": torch.full((batch, 1), 0.5, device=encoder_out.device, dtype=encoder_out.dtype),
            "memory": encoder_out,
            "keys": self.attention.project(encoder_out),
            "src_mask": src_mask,
            "copy_ids": shifted.clamp_min(0),
            "copy_mask": shifted >= 0,
        }

    def step(self, prev_tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State, dict[str, torch.Tensor]]:
        """prev_tokens (batch,) -> log-probs (batch, vocab), the new state, {"read": alpha_i (batch, src_len)}."""
        inputs = prev_tokens.masked_fill(prev_tokens >= self.cfg.tgt_vocab_size, UNK_ID)
        if self.switching:
            embedding, gru = self._switch.embedding, self._switch.roles()[1]
        else:
            embedding, gru = self.embedding, self.gru
        embedded = embedding(inputs)  # (batch, E)
        alpha, context = self.attention(torch.cat([state["top"], embedded], dim=-1), state["memory"],
                                        state["src_mask"], keys=state["keys"])  # Eq. 1-3
        output, hidden = gru(torch.cat([context, embedded], dim=-1).unsqueeze(1),
                             state["hidden"].transpose(0, 1).contiguous())
        s = output.squeeze(1)  # s_i: (batch, H), or (batch, 2H) switching
        vocab = torch.softmax(_mask_specials(self.out(torch.cat([s, context], dim=-1)).float()), dim=-1)
        new_state = {**state, "hidden": hidden.transpose(0, 1), "top": s[:, :self.cfg.hidden_size // 2]}
        if self.p_gen is None:
            return torch.log(vocab.clamp_min(_LOG_FLOOR)), new_state, {"read": alpha}
        p_gen = torch.sigmoid(self.p_gen(torch.cat([embedded, s, context], dim=-1))
                              + self.p_gen_prev(state["p_gen"])).float()  # Eq. 8, (batch, 1)
        copy = alpha.float() * state["copy_mask"]
        copy = copy / copy.sum(-1, keepdim=True).clamp_min(_LOG_FLOOR)  # renormalised over positions with a successor
        mixed = (p_gen * vocab).scatter_add(1, state["copy_ids"], (1.0 - p_gen) * copy)  # Eq. 7, 9
        new_state["p_gen"] = p_gen.to(state["p_gen"].dtype)
        return torch.log(mixed.clamp_min(_LOG_FLOOR)), new_state, {"read": alpha, "p_gen": p_gen.squeeze(1)}
