"""Attention entropy ("Keeping Notes: Conditional Natural Language Generation with a Scratchpad
Mechanism", section 5.2): how spread out the decoder's attention over the source is.

For one decoded sentence with attention ``a`` of shape ``(tgt_len, src_len)`` (each row a
distribution over the valid source positions), step ``t`` has entropy
``H_t = -sum_j a[t, j] log a[t, j]`` (natural log, ``0 log 0 = 0``); the sentence's value is the mean
of ``H_t`` over decoding steps and the corpus value the mean over sentences. Uniform attention over
``n`` positions gives ``log n``, attention on one position gives 0.

Inputs may be torch tensors, numpy arrays or nested lists; ``src_mask`` (``(src_len,)`` or
``(tgt_len, src_len)``, true / 1 = valid) zeroes padding columns, after which every row must still
sum to 1 (attention that leaked onto padding is an error to fix upstream, not to renormalise away).
Slice target padding off before calling: every row given counts as a decoding step.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qgen.metrics.corpus import mean

ROW_SUM_TOLERANCE = 1e-3  # float16/bfloat16 attention rows sum to 1 only roughly


def _as_array(values: Any) -> np.ndarray:
    """torch tensor / numpy array / nested list -> float64 numpy array (no torch import needed)."""
    if hasattr(values, "detach"):  # torch.Tensor, on any device and dtype
        values = values.detach().cpu().double().numpy()
    return np.asarray(values, dtype=np.float64)


def _masked(attention: Any, src_mask: Any | None) -> np.ndarray:
    """Attention as ``(tgt_len, src_len)`` float64, padding columns zeroed, rows checked to sum to 1."""
    attn = _as_array(attention)  # (tgt_len, src_len)
    if attn.ndim != 2:
        raise ValueError(f"attention of one sentence must be (tgt_len, src_len), got shape {attn.shape}")
    if attn.shape[0] == 0:
        raise ValueError("attention has no decoding step (tgt_len = 0)")
    if src_mask is not None:
        mask = _as_array(src_mask) != 0  # (src_len,) or (tgt_len, src_len)
        attn = np.where(np.broadcast_to(mask, attn.shape), attn, 0.0)
    if np.any(attn < 0):
        raise ValueError("attention weights must be non-negative")
    sums = attn.sum(axis=1)  # (tgt_len,)
    if not np.allclose(sums, 1.0, atol=ROW_SUM_TOLERANCE):
        worst = int(np.argmax(np.abs(sums - 1.0)))
        raise ValueError(f"attention row {worst} sums to {sums[worst]:.4f} over the valid positions, not 1")
    return attn


def step_entropies(attention: Any, src_mask: Any | None = None) -> np.ndarray:
    """``H_t`` for each decoding step, shape ``(tgt_len,)``, in nats."""
    attn = _masked(attention, src_mask)  # (tgt_len, src_len)
    logs = np.log(np.where(attn > 0, attn, 1.0))  # log 1 = 0 makes 0 log 0 = 0
    return -(attn * logs).sum(axis=1)  # (tgt_len,)


def sentence_attention_entropy(attention: Any, src_mask: Any | None = None) -> float:
    """Mean over decoding steps of the step entropies of one sentence."""
    return float(step_entropies(attention, src_mask).mean())


def cumulative_attention_entropy(attention: Any, src_mask: Any | None = None) -> np.ndarray:
    """Running sum ``C_t = sum_{s <= t} H_s`` over decoding steps, shape ``(tgt_len,)``: the curve of
    cumulative attention entropy by step (average such curves over a corpus to plot them)."""
    return np.cumsum(step_entropies(attention, src_mask))


def attention_entropy(attentions: Sequence[Any], src_masks: Sequence[Any | None] | None = None) -> float:
    """Corpus attention entropy: the mean over sentences of :func:`sentence_attention_entropy`."""
    if src_masks is not None and len(src_masks) != len(attentions):
        raise ValueError(f"{len(attentions)} attentions but {len(src_masks)} source masks")
    masks = src_masks if src_masks is not None else [None] * len(attentions)
    return mean([sentence_attention_entropy(a, m) for a, m in zip(attentions, masks)])
