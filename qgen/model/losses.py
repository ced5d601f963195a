"""Extra training loss terms, computed from the decoder's per-step attentions and added to the NLL.

Each term takes the named attentions stacked over the target steps ({name: (batch, tgt_len, src_len)}),
the source mask (batch, src_len) and the target mask (batch, tgt_len) (real steps, EOS included) and
returns the term summed over the batch, in the NLL's units (a sum over sentences): the training loop
divides both by the target token count, so their relative weight is the paper's per-sentence one.
"""
from __future__ import annotations

from typing import Callable

import torch

from qgen.model.checklist import checklist_loss

_FLOOR = 1e-12  # log of a position that got no attention at all stays finite

LossTerm = Callable[[dict[str, torch.Tensor], torch.Tensor, torch.Tensor], torch.Tensor]


def attention_regulariser(attns: dict[str, torch.Tensor], src_mask: torch.Tensor,
                          tgt_mask: torch.Tensor) -> torch.Tensor:
    """Seed 003 Eq. 9: L_att = -sum_i log sum_j alpha_ji, per sentence, summed over the batch.

    sum_j alpha_ji is the attention source position i receives over the real target steps j; i runs
    over the real source positions (the source EOS included). Given m target and n source tokens it
    is smallest when every position receives m / n: it spreads the attention over the whole MR.
    """
    alpha = attns["read"].float() * tgt_mask.unsqueeze(-1)  # (batch, tgt_len, src_len)
    received = alpha.sum(dim=1).clamp_min(_FLOOR)  # (batch, src_len)
    return -(received.log() * src_mask).sum()


# seed 004's term lives with its model (qgen/model/checklist.py)
LOSS_TERMS: dict[str, LossTerm] = {"attreg": attention_regulariser, "checklist": checklist_loss}
