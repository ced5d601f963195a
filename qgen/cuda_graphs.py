"""The decoder step recorded as a CUDA graph and replayed, for decoding on a GPU.

A decoding step launches a hundred-odd small kernels; with a small batch the GPU waits on the
host that launches them. A CUDA graph records the step's kernels once for a given set of input
shapes and replays them with one launch. ``CapturedStep`` keeps the graphs of the last few shapes
(a beam search keeps one shape for all its steps: rows = examples x beam, the batch's source
length), copies each call's inputs into the graph's own buffers, replays, and returns the graph's
output buffers, which the next replay overwrites: callers must use them before the next call
(the searches in ``qgen.decode`` do: they reorder or consume the state at once).

The switch: ``QGEN_CUDA_GRAPHS`` = ``auto`` (default: on a GPU, for batches of at most
``AUTO_MAX_POSITIONS`` source positions, where launches dominate; a big batch is bound by memory
traffic and gains nothing), ``on`` or ``off``. On a CPU the step always runs as plain eager code.
A shape whose capture fails runs eagerly, with one warning.
"""
from __future__ import annotations

import os
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

AUTO_MAX_POSITIONS = 65_536  # rows x source length under which "auto" captures
KEPT_GRAPHS = 2  # each graph holds its own memory pool: keep only the last few shapes

Step = Any  # (prev, state) -> (log_probs, state, attns)


def graphs_setting() -> str:
    setting = os.environ.get("QGEN_CUDA_GRAPHS", "auto").strip().lower() or "auto"
    if setting not in ("auto", "on", "off"):
        raise ValueError(f"QGEN_CUDA_GRAPHS must be auto, on or off, got {setting!r}")
    return setting


def step_function(model: torch.nn.Module, device: torch.device, rows: int, src_len: int) -> Step:
    """``model.step``, or its captured form where the switch says so (a model on a GPU, in eval mode)."""
    setting = graphs_setting()
    if device.type != "cuda" or model.training or setting == "off":
        return model.step
    if setting == "auto" and rows * src_len > AUTO_MAX_POSITIONS:
        return model.step
    return _captured(model)


def _captured(model: torch.nn.Module) -> "CapturedStep":
    captured = getattr(model, "_captured_step", None)
    if captured is None:
        captured = CapturedStep(model)
        object.__setattr__(model, "_captured_step", captured)  # not a submodule: no state_dict entry
    return captured


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    prev: torch.Tensor
    state: dict[str, torch.Tensor]
    outputs: tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]


class CapturedStep:
    def __init__(self, model: torch.nn.Module, warmup: int = 2) -> None:
        self.model, self.warmup = model, warmup
        self.graphs: OrderedDict[tuple, _Graph | None] = OrderedDict()

    def __call__(self, prev: torch.Tensor, state: dict[str, torch.Tensor]):
        key = (tuple(prev.shape),) + tuple((k, tuple(v.shape), v.dtype) for k, v in sorted(state.items()))
        if key not in self.graphs:
            self.graphs[key] = self._capture(prev, state)
            while len(self.graphs) > KEPT_GRAPHS:
                self.graphs.popitem(last=False)
        self.graphs.move_to_end(key)
        entry = self.graphs[key]
        if entry is None:
            return self.model.step(prev, state)
        entry.prev.copy_(prev)
        for name, value in state.items():
            if value is not entry.state[name]:
                entry.state[name].copy_(value)
        entry.graph.replay()
        log_probs, new_state, attns = entry.outputs
        return log_probs, dict(new_state), dict(attns)

    def _capture(self, prev: torch.Tensor, state: dict[str, torch.Tensor]) -> _Graph | None:
        static_prev = prev.clone()
        static_state = {k: v.clone() for k, v in state.items()}
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up outside the graph (cuBLAS and cuDNN set themselves up)
                for _ in range(self.warmup):
                    self.model.step(static_prev, static_state)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                outputs = self.model.step(static_prev, static_state)
        except Exception as err:  # an operation that cannot be captured: this shape runs eagerly
            warnings.warn(f"CUDA graph capture of the decoder step failed ({type(err).__name__}: {err}); "
                          "decoding this shape eagerly", RuntimeWarning, stacklevel=3)
            return None
        return _Graph(graph, static_prev, static_state, outputs)
