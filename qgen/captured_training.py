"""The training step recorded as a CUDA graph per bucket shape, for training on a GPU.

A training step of the step-wise decoder launches thousands of small kernels (forward, backward, the
clipping and the optimizer); at batch 32 the GPU waits on the host that launches them, so one run
trains no faster alone than beside others. A CUDA graph records the whole step (teacher-forced
forward, backward, gradient clipping, the non-finite check and Adam) once per batch shape and
replays it with one launch.

Shapes: a batch is padded to a bucket shape (``cfg.batch_size`` rows; source, target and extended
vocabulary widths rounded up to multiples of ``SRC_BUCKET``, ``TGT_BUCKET`` and ``EXTENDED_BUCKET``),
so a handful of graphs serve a run. Padding rows have one source token and no target token, and
padding positions are masked as in any batch, so they add nothing to the loss or the gradients
(``tests/qgen/test_captured_training.py`` checks this on a CPU, where the same padded step runs eagerly).
The encoder runs its length-agnostic path (qgen/model/rnn.py): packing reads the lengths on the
host, which a replay would not.

Each new shape runs ``WARMUP_STEPS`` eager steps on a side stream (they are real training steps:
they create the optimizer's state and the libraries' workspaces outside any graph), then is captured
and replayed from then on. The graphs share one memory pool: nothing a replay computes is read after
the next replay (the loss and the taken-flag go to buffers outside the pool), and the weights and
the optimizer state live outside it too.

Where it applies (``applies``): a CUDA device, the switch ``QGEN_CUDA_GRAPHS`` at ``auto`` (the
default) or ``on`` (the one of qgen/cuda_graphs.py; ``off`` trains eagerly), the skeleton's own
encoder and decoder without extra loss terms (the Table 1 rows and their variants; not the parts of
the data-to-text seeds), Adam, a constant learning rate
(the graph keeps the rate it recorded). Teacher-forcing draws come from the device's default
generator, which graphs replay safely, rather than the per-epoch generator of the eager path, so a
resumed run does not repeat the draws of an unstopped one bit for bit. A capture that fails stops
the run with an error naming ``QGEN_CUDA_GRAPHS=off``: after a failed capture the stream, the
allocator and the gradients cannot be trusted for an eager fallback.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from qgen.model.batch import Batch
from qgen.model.encoder import Encoder
from qgen.model.vocab import PAD_ID, UNK_ID

SRC_BUCKET = 16
TGT_BUCKET = 8
EXTENDED_BUCKET = 16
WARMUP_STEPS = 2  # eager steps of a shape before it is captured


def applies(model: torch.nn.Module, cfg: Any, device: torch.device) -> str | None:
    """None where the captured step can train this run, else why not (one line)."""
    from qgen.cuda_graphs import graphs_setting
    from qgen.model.decoder import Decoder

    if device.type != "cuda":
        return "not a CUDA device"
    setting = graphs_setting()
    if setting == "off":
        return "QGEN_CUDA_GRAPHS=off"
    if type(model.encoder) is not Encoder or type(model.decoder) is not Decoder or model.loss_terms:
        return "the model is made of other parts or trains extra loss terms"
    if cfg.optimizer != "adam" or cfg.lr_decay != 1.0:
        return "only Adam at a constant learning rate is captured"
    if cfg.loss_per != "token":
        return "only the loss per target token is captured"
    return None


def bucket_shape(batch: Batch, rows: int, vocab_size: int) -> tuple[int, int, int, int]:
    """(rows, source width, target width, extended vocabulary) a batch is padded to."""
    assert batch.tgt is not None
    up = lambda n, m: -(-n // m) * m  # noqa: E731
    extended = vocab_size + up(batch.extended_size - vocab_size, EXTENDED_BUCKET)
    return max(rows, len(batch)), up(batch.src.size(1), SRC_BUCKET), up(batch.tgt.size(1), TGT_BUCKET), extended


def pad_batch(batch: Batch, shape: tuple[int, int, int, int]) -> Batch:
    """The batch padded to ``shape``: extra rows hold one unknown source token and no target."""
    rows, src_len, tgt_len, extended = shape
    n, s = batch.src.shape
    src = torch.full((rows, src_len), PAD_ID, dtype=batch.src.dtype)
    src[:n, :s] = batch.src
    src[n:, 0] = UNK_ID
    lengths = torch.ones(rows, dtype=batch.src_lengths.dtype)
    lengths[:n] = batch.src_lengths
    copy_ids = torch.full((rows, src_len), -1, dtype=batch.copy_ids.dtype)
    copy_ids[:n, :s] = batch.copy_ids
    tgt = torch.full((rows, tgt_len), PAD_ID, dtype=batch.tgt.dtype)
    tgt[:n, : batch.tgt.size(1)] = batch.tgt
    return Batch(src, lengths, src != PAD_ID, copy_ids, extended, tgt, batch.oovs + [[]] * (rows - n),
                 batch.target_tokens)


@dataclass
class _Shape:
    """One bucket shape's device buffers (the graph reads them and writes ``loss`` and ``taken``, which
    live outside the graphs' pool), its replay once recorded, and its steps so far."""
    batch: Batch
    divisor: torch.Tensor  # the batch's target tokens: the loss is divided by it on the device
    loss: torch.Tensor
    taken: torch.Tensor
    runs: int = 0
    replay: Callable[[], None] | None = None


@dataclass
class CapturedTraining:
    """Trains with one CUDA graph per bucket shape; ``step`` takes a host batch like ``training_step``.

    The CUDA calls are in ``_prepare``, ``_warm_up`` and ``_record``; the tests replace them with
    eager runs to check the rest on a CPU."""
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    cfg: Any
    device: torch.device
    shapes: dict[tuple[int, int, int, int], _Shape] = field(default_factory=dict)
    pool: Any = None
    side: Any = None  # the stream of the warm-ups and the captures (its libraries' workspaces made once)

    def __post_init__(self) -> None:
        self._prepare()

    def step(self, host_batch: Batch) -> tuple[torch.Tensor, int, torch.Tensor]:
        """One update: (summed NLL, target tokens, whether the update was taken), as ``training_step``."""
        shape = bucket_shape(host_batch, self.cfg.batch_size, self.model.cfg.tgt_vocab_size)
        padded = pad_batch(host_batch, shape)
        entry = self.shapes.get(shape)
        if entry is None:
            scalar = lambda dtype: torch.zeros((), dtype=dtype, device=self.device)  # noqa: E731
            entry = _Shape(padded.to(self.device), scalar(torch.float32), scalar(torch.float32), scalar(torch.bool))
            entry.batch.src_lengths = entry.batch.src_lengths.to(self.device)
            self.shapes[shape] = entry
        _load(entry, padded)
        if entry.replay is None and entry.runs >= WARMUP_STEPS:
            entry.replay = self._record(entry)
        if entry.replay is not None:
            entry.replay()
        else:
            self._warm_up(entry)
        entry.runs += 1
        return entry.loss.clone(), host_batch.target_tokens, entry.taken.clone()

    def _run(self, entry: _Shape) -> None:
        """The step on the shape's buffers: what a graph records."""
        from qgen.train import training_step

        # Autocast's weight cache must stay off under capture (a cached cast would be replayed stale).
        autocast = torch.autocast(self.device.type, dtype=torch.bfloat16,
                                  enabled=self.cfg.bf16 and self.device.type == "cuda", cache_enabled=False)
        chosen, self.model.encoder.length_agnostic = self.model.encoder.length_agnostic, True
        try:
            loss, _, taken = training_step(self.model, self.optimizer, entry.batch, self.cfg, None, autocast,
                                           divisor=entry.divisor)
        finally:
            self.model.encoder.length_agnostic = chosen
        entry.loss.copy_(loss.float())
        entry.taken.copy_(taken)

    def _prepare(self) -> None:
        for group in self.optimizer.param_groups:
            group["capturable"] = True  # the step count and bias corrections stay on the device
        self.pool = torch.cuda.graph_pool_handle()
        self.side = torch.cuda.Stream(self.device)

    def _warm_up(self, entry: _Shape) -> None:
        """An eager step on the side stream (outside any graph: the optimizer's state, workspaces)."""
        self.side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.side):
            self._run(entry)
        torch.cuda.current_stream(self.device).wait_stream(self.side)

    def _record(self, entry: _Shape) -> Callable[[], None]:
        """The shape's step captured as a CUDA graph: its replay (recording does not run the step)."""
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=self.pool, stream=self.side):
                self._run(entry)
        except Exception as error:
            # Fatal: a failed capture can leave the stream, the allocator and the gradients in states
            # that an eager fallback would train from.
            raise RuntimeError(f"capturing the training step for batch shape {entry.batch.src.shape[0]} x "
                               f"{entry.batch.src.shape[1]} failed ({type(error).__name__}: {error}); train "
                               "with QGEN_CUDA_GRAPHS=off (resume from last.pt)") from error
        return graph.replay


def _load(entry: _Shape, padded: Batch) -> None:
    """The padded host batch into the shape's device buffers (the addresses the graph recorded)."""
    buffers = entry.batch
    for name in ("src", "src_lengths", "src_mask", "copy_ids", "tgt"):
        getattr(buffers, name).copy_(getattr(padded, name), non_blocking=True)
    buffers.oovs = padded.oovs
    buffers.target_tokens = max(padded.target_tokens, 1)  # the model returns it; the divisor is the device's
    entry.divisor.fill_(float(max(padded.target_tokens, 1)))
