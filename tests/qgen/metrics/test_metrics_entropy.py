"""Attention entropy, Keeping Notes section 5.2 (qgen/metrics/entropy.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from qgen.metrics.entropy import (
    attention_entropy,
    cumulative_attention_entropy,
    sentence_attention_entropy,
    step_entropies,
)


@pytest.mark.parametrize("n", [1, 2, 7, 30])
def test_uniform_attention_has_entropy_log_n(n: int) -> None:
    attn = torch.full((4, n), 1.0 / n)  # (tgt_len, src_len)
    assert sentence_attention_entropy(attn) == pytest.approx(math.log(n))


def test_one_hot_attention_has_zero_entropy() -> None:
    attn = np.eye(5)[[0, 3, 3, 1]]  # (4, 5)
    assert np.allclose(step_entropies(attn), 0.0)
    assert sentence_attention_entropy(attn.tolist()) == 0.0  # nested lists accepted too


def test_source_mask_excludes_padding_columns() -> None:
    attn = torch.zeros(3, 6)
    attn[:, :4] = 0.25  # uniform over the 4 valid positions; padding gets nothing
    mask = torch.tensor([1, 1, 1, 1, 0, 0])
    assert sentence_attention_entropy(attn, mask) == pytest.approx(math.log(4))
    per_step_mask = mask.expand(3, 6)  # (tgt_len, src_len) masks work as well
    assert sentence_attention_entropy(attn, per_step_mask) == pytest.approx(math.log(4))


def test_attention_leaking_onto_padding_is_an_error() -> None:
    attn = torch.full((2, 4), 0.25)
    with pytest.raises(ValueError, match="sums to"):
        sentence_attention_entropy(attn, torch.tensor([1, 1, 0, 0]))


@pytest.mark.parametrize("bad", [np.ones((2, 3)), np.ones(3) / 3, np.zeros((0, 3)), np.array([[1.5, -0.5]])])
def test_invalid_attention_raises(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        step_entropies(bad)


def test_cumulative_entropy_is_the_running_sum_of_step_entropies() -> None:
    attn = np.array([[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]])
    assert cumulative_attention_entropy(attn) == pytest.approx([0.0, math.log(2), 2 * math.log(2)])


def test_corpus_value_is_the_mean_over_sentences() -> None:
    uniform = torch.full((2, 4), 0.25)
    one_hot = torch.eye(3)
    assert attention_entropy([uniform, one_hot]) == pytest.approx(math.log(4) / 2)
    masks = [torch.tensor([1, 1, 1, 1]), None]
    assert attention_entropy([uniform, one_hot], masks) == pytest.approx(math.log(4) / 2)
    with pytest.raises(ValueError):
        attention_entropy([uniform], masks)


def test_half_precision_tensors_are_accepted() -> None:
    attn = torch.full((2, 8), 0.125, dtype=torch.bfloat16)
    assert sentence_attention_entropy(attn) == pytest.approx(math.log(8), rel=1e-3)
