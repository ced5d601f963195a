"""An exponential moving average of the weights while training (Polyak averaging), for
``TrainConfig.weight_average``: after every step the average moves ``1 - decay`` of the way to the
weights just taken, and the checkpoints hold the average: the weights a run is scored and selected on.

Why: Adam at a constant rate makes the weights swing from one epoch to the next (adaptation from a few
hundred pairs: up to three and a half BLEU points on held-out pairs, benchmarks/results/adaptation);
an average over the last ``1 / (1 - decay)`` steps or so sits nearer the middle of that swing. The
average starts from the weights training starts from (for a fine-tuned model, the model it adapts).
Training itself goes on from the last step's weights: ``last.pt`` keeps them under ``TRAINING_WEIGHTS``
beside the average, so a resumed run continues as if never stopped.
"""
from __future__ import annotations

import copy

import torch

TRAINING_WEIGHTS = "training_weights"  # last.pt: the last step's weights (its "model" holds the average)


class WeightAverage:
    """The moving average of a model's parameters (``module``: a copy of the model holding it)."""

    def __init__(self, model: torch.nn.Module, decay: float) -> None:
        if not 0.0 < decay < 1.0:
            raise ValueError(f"the weight average's decay must be in (0, 1), got {decay}")
        self.decay = decay
        self.module = copy.deepcopy(model).eval().requires_grad_(False)

    def update(self, model: torch.nn.Module) -> None:
        """Take in the model's weights after a step: one foreach call, nothing read back to the host."""
        torch._foreach_lerp_(list(self.module.parameters()), [p.detach() for p in model.parameters()],
                             1.0 - self.decay)


def training_state(model: torch.nn.Module) -> dict:
    """What ``last.pt`` keeps beside the average, to resume training from the last step's weights."""
    return {TRAINING_WEIGHTS: {k: v.detach().cpu() for k, v in model.state_dict().items()}}
