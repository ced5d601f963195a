"""Encoder: a 2-layer bidirectional GRU whose two directions are concatenated (seed section 2)."""
from __future__ import annotations

import torch
from torch import nn
from torch import _VF  # nn.GRU's own kernel entry, for one direction at a time
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from qgen.model.config import ModelConfig
from qgen.model.vocab import PAD_ID


class Encoder(nn.Module):
    """Each direction has ``hidden_size / 2`` units, so outputs and final states are ``hidden_size``.

    Two ways to run the same GRU over padded rows:
    - packed: ``pack_padded_sequence`` reads the lengths on the host;
    - ``length_agnostic``: every direction runs over the whole padded width, the backward one over each
      row reversed within its length, and the final states are gathered at each row's last token; the
      lengths stay on the device. A captured training step (qgen/captured_training.py) needs it: a CUDA
      graph replays the packing it recorded, whatever the lengths of the next batch. Same outputs
      (padding positions zero) and final states as the packed path, within float error.
    ``length_agnostic`` None (the default) picks by device: length-agnostic on a CPU, packed on a GPU.
    On a CPU the packed GRU's backward fills a zero copy of the whole packed input projection for every
    time step (one per step's slice), which took 40% of a training step of the paper-size
    ``coverage_masked`` model; the length-agnostic path trains it 1.45x faster (benchmarks/README.md).
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
        if self.length_agnostic or (self.length_agnostic is None and not src.is_cuda):
            outputs, final = self._run_length_agnostic(embedded, lengths.to(src.device))
        else:
            packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
            outputs, final = self.gru(packed)
            outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.size(1))
        batch = src.size(0)
        # (layers * 2, batch, hidden/2) -> (layers, batch, hidden): forward and backward side by side,
        # the decoder's initial state "from the encoder's final states in both directions".
        final = final.view(self.num_layers, 2, batch, -1).permute(0, 2, 1, 3).reshape(self.num_layers, batch, -1)
        return outputs, final

    def _run_length_agnostic(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(outputs (batch, src_len, hidden), final (layers * 2, batch, hidden/2)) as ``nn.GRU`` returns
        them for packed rows, computed without reading the lengths on the host."""
        batch, width, _ = embedded.shape
        positions = torch.arange(width, device=embedded.device).unsqueeze(0)  # (1, src_len)
        real = positions < lengths.unsqueeze(1)  # (batch, src_len)
        # Position j of a row reversed within its length: length-1-j for real tokens, padding in place.
        # The permutation is its own inverse.
        reverse = torch.where(real, lengths.unsqueeze(1) - 1 - positions, positions)
        last = (lengths - 1).clamp_min(0).view(batch, 1, 1)
        finals, layer_input = [], embedded
        for layer in range(self.num_layers):
            if layer:  # nn.GRU's dropout between layers, in training only
                layer_input = nn.functional.dropout(layer_input, self.gru.dropout, self.training)
            forward = self._direction(layer_input, layer, "")
            backward_reversed = self._direction(_gather_steps(layer_input, reverse), layer, "_reverse")
            backward = _gather_steps(backward_reversed, reverse)
            half = forward.size(2)
            finals += [forward.gather(1, last.expand(batch, 1, half)).squeeze(1),
                       backward_reversed.gather(1, last.expand(batch, 1, half)).squeeze(1)]
            layer_input = torch.cat([forward, backward], dim=2) * real.unsqueeze(2)
        return layer_input, torch.stack(finals)

    def _direction(self, inputs: torch.Tensor, layer: int, suffix: str) -> torch.Tensor:
        """One direction of one layer of ``self.gru`` over (batch, steps, input): its outputs.

        ``_VF.gru`` is what ``nn.GRU`` runs; called with the module's own weight tensors it reads them
        where they are. (A second ``nn.GRU`` given these weights would re-flatten them for cuDNN and
        repoint the parameters at new memory every call: under a CUDA graph, memory it no longer owns.)"""
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        weights = [getattr(self.gru, f"{name}_l{layer}{suffix}") for name in names]
        initial = inputs.new_zeros(1, inputs.size(0), self.gru.hidden_size)
        outputs, _ = _VF.gru(inputs, initial, weights, True, 1, 0.0, self.training, False, True)
        return outputs


def _gather_steps(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """values (batch, steps, dim) reordered along the steps by index (batch, steps)."""
    return values.gather(1, index.unsqueeze(2).expand(-1, -1, values.size(2)))
