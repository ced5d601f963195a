"""Train a question generator on a preprocessed examples file (what ``qgen train`` and the flows call)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from qgen.data import holdout, read_pairs
from qgen.model import VARIANTS, ModelConfig
from qgen.train import TrainConfig, TrainResult, train


def train_on_examples(examples: str | Path, out_dir: str | Path, model: ModelConfig | str = "scratchpad",
                      cfg: TrainConfig | None = None, valid_fraction: float = 0.1,
                      entity_replacement: bool = True, log: Callable[[str], None] = print) -> TrainResult:
    """Hold out ``valid_fraction`` of the groups of ``examples`` (a ``qgen preprocess`` Parquet file)
    for model selection, and train; ``model`` is a ``ModelConfig`` or a row name of Table 1."""
    model_cfg = VARIANTS[model].model if isinstance(model, str) else model
    pairs = read_pairs(examples, entity_replacement)
    if not pairs:
        raise ValueError(f"{examples} holds no examples to train on")
    train_pairs, valid_pairs = holdout(pairs, valid_fraction, seed=(cfg or TrainConfig()).seed)
    return train(train_pairs, valid_pairs, model_cfg, cfg or TrainConfig(), out_dir, log)
