"""Token-budget batches: every item once, in order, within the budget; and the device's default."""
from __future__ import annotations

import pytest
import torch

from qgen.batching import CPU_MAX_TOKENS, default_max_tokens, token_batches
from qgen.model import ModelConfig


def items(lengths: list[int]) -> list[tuple[int, list[str]]]:
    return sorted(((i, ["t"] * n) for i, n in enumerate(lengths)), key=lambda item: (len(item[1]), item[0]))


def test_batches_stay_within_the_budget_and_keep_every_item_once_in_order() -> None:
    sorted_items = items([3, 9, 1, 4, 4, 7, 2, 30, 5, 6])
    batches = list(token_batches(sorted_items, 12))
    assert [item for batch in batches for item in batch] == sorted_items
    for batch in batches:
        if len(batch) > 1:
            assert len(batch) * max(len(tokens) for _, tokens in batch) <= 12
    assert [len(batch) for batch in batches][-1] == 1  # 30 tokens: alone, over the budget


def test_short_inputs_travel_in_bigger_batches() -> None:
    batches = list(token_batches(items([2] * 10 + [10] * 4), 20))
    assert [len(b) for b in batches] == [10, 2, 2]


def test_a_row_limit_caps_the_batch() -> None:
    assert [len(b) for b in token_batches(items([1] * 7), 1000, max_rows=3)] == [3, 3, 1]


def test_nonsense_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        list(token_batches(items([1]), 0))


def test_a_cpu_gets_the_fixed_budget() -> None:
    assert default_max_tokens(torch.device("cpu"), ModelConfig(tgt_vocab_size=100), beam=4) == CPU_MAX_TOKENS


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gpu_budget_follows_its_free_memory() -> None:
    budget = default_max_tokens(torch.device("cuda"), ModelConfig(tgt_vocab_size=10_000), beam=4)
    assert 256 <= budget <= 1_000_000
