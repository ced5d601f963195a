"""An ensemble of trained models behind the one step contract, so greedy and beam search decode it
unchanged: each step averages the members' probabilities (seed 003's test submission: two models
of different seeds, per-step probability averaging).

Members must share the vocabularies (trained on the same prepared pairs) and take the same batch
(the same copy mode). The ensemble's state is the members' states side by side, each key prefixed
with its member's index, so a beam search reorders it as any other state.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from qgen.model.batch import Batch

State = dict[str, torch.Tensor]


class Ensemble(nn.Module):
    def __init__(self, members: Sequence[nn.Module]) -> None:
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one model")
        sizes = {(m.cfg.src_vocab_size, m.cfg.tgt_vocab_size, m.cfg.copy) for m in members}
        if len(sizes) > 1:
            raise ValueError(f"the members' vocabularies or copy modes differ: {sorted(sizes)}")
        self.members = nn.ModuleList(members)
        self.cfg = members[0].cfg  # what decoding and batching read (vocabulary sizes, copy mode)

    def start(self, batch: Batch) -> State:
        return {f"{k}:{key}": value for k, m in enumerate(self.members) for key, value in m.start(batch).items()}

    def per_example_keys(self) -> set[str]:
        return {f"{k}:{key}" for k, m in enumerate(self.members) if hasattr(m, "per_example_keys")
                for key in m.per_example_keys()}

    def unexpanded_keys(self) -> set[str]:
        return {f"{k}:{key}" for k, m in enumerate(self.members) if hasattr(m, "unexpanded_keys")
                for key in m.unexpanded_keys()}

    def step(self, prev_tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State, dict[str, torch.Tensor]]:
        """log mean_k p_k(y | ...): the members' log-probabilities (batch, vocab) averaged in probability."""
        new_state: State = {}
        log_probs, attns = [], {}
        for k, member in enumerate(self.members):
            prefix = f"{k}:"
            own = {key[len(prefix):]: v for key, v in state.items() if key.startswith(prefix)}
            member_log_probs, own, member_attns = member.step(prev_tokens, own)
            log_probs.append(member_log_probs.float())
            new_state.update({prefix + key: v for key, v in own.items()})
            attns.update({prefix + key: v for key, v in member_attns.items()})
        width = min(lp.size(1) for lp in log_probs)  # extended copy slots: the same batch gives the same width
        mean = torch.logsumexp(torch.stack([lp[:, :width] for lp in log_probs]), dim=0) - math.log(len(log_probs))
        return mean, new_state, attns
