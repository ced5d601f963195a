"""A bidirectional ``nn.GRU`` over padded rows without packing them (``run_length_agnostic``).

Every direction runs over the whole padded width, the backward one over each row reversed within its
length, and the final states are gathered at each row's last token; the lengths stay on the device.
Same outputs (padding positions zero) and final states as the packed GRU, within float error.

Two reasons to prefer it to ``pack_padded_sequence``:
- a captured training step (qgen/captured_training.py): a CUDA graph replays the packing it recorded,
  whatever the lengths of the next batch;
- training on a CPU: the packed GRU's backward fills a zero copy of the whole packed input projection
  for every time step (one per step's slice), 42% of a training step of the paper-size
  ``coverage_masked`` model in a profile; unpacked, that model trains 1.4-1.8x faster on two threads
  (``python benchmarks/cpu_training_paths.py --threads 2``, benchmarks/README.md).
"""
from __future__ import annotations

import torch
from torch import _VF  # nn.GRU's own kernel entry, for one direction at a time
from torch import nn


def length_agnostic_here(choice: bool | None, inputs: torch.Tensor) -> bool:
    """An encoder's ``length_agnostic`` setting resolved. None: length-agnostic where gradients flow on a
    CPU (training), else packed: without a backward the packed GRU is the faster one, since it skips the
    padding (one measurement, not a benchmark: 0.20-0.25 s against 0.31-0.37 s to encode 64 rows of 20-90
    tokens at the paper's size, one thread)."""
    return choice if choice is not None else (not inputs.is_cuda and torch.is_grad_enabled())


def run_length_agnostic(gru: nn.GRU, inputs: torch.Tensor, lengths: torch.Tensor, training: bool
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """(outputs (batch, steps, 2 * hidden), final (layers * 2, batch, hidden)) as a batch-first
    bidirectional ``gru`` returns them for packed rows of ``inputs`` (batch, steps, input)."""
    batch, width, _ = inputs.shape
    positions = torch.arange(width, device=inputs.device).unsqueeze(0)  # (1, steps)
    real = positions < lengths.unsqueeze(1)  # (batch, steps)
    # Position j of a row reversed within its length: length-1-j for real tokens, padding in place.
    # The permutation is its own inverse.
    reverse = torch.where(real, lengths.unsqueeze(1) - 1 - positions, positions)
    last = (lengths - 1).clamp_min(0).view(batch, 1, 1)
    finals, layer_input = [], inputs
    for layer in range(gru.num_layers):
        if layer:  # nn.GRU's dropout between layers, in training only
            layer_input = nn.functional.dropout(layer_input, gru.dropout, training)
        forward = _direction(gru, layer_input, layer, "", training)
        backward_reversed = _direction(gru, _gather_steps(layer_input, reverse), layer, "_reverse", training)
        backward = _gather_steps(backward_reversed, reverse)
        half = forward.size(2)
        finals += [forward.gather(1, last.expand(batch, 1, half)).squeeze(1),
                   backward_reversed.gather(1, last.expand(batch, 1, half)).squeeze(1)]
        layer_input = torch.cat([forward, backward], dim=2) * real.unsqueeze(2)
    return layer_input, torch.stack(finals)


def _direction(gru: nn.GRU, inputs: torch.Tensor, layer: int, suffix: str, training: bool) -> torch.Tensor:
    """One direction of one layer of ``gru`` over (batch, steps, input): its outputs.

    ``_VF.gru`` is what ``nn.GRU`` runs; called with the module's own weight tensors it reads them
    where they are. (A second ``nn.GRU`` given these weights would re-flatten them for cuDNN and
    repoint the parameters at new memory every call: under a CUDA graph, memory it no longer owns.)"""
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    weights = [getattr(gru, f"{name}_l{layer}{suffix}") for name in names]
    initial = inputs.new_zeros(1, inputs.size(0), gru.hidden_size)
    outputs, _ = _VF.gru(inputs, initial, weights, True, 1, 0.0, training, False, True)
    return outputs


def _gather_steps(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """values (batch, steps, dim) reordered along the steps by index (batch, steps)."""
    return values.gather(1, index.unsqueeze(2).expand(-1, -1, values.size(2)))
