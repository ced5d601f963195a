"""Train a question generator or a parser on a preprocessed examples file (what ``qgen train`` and
the flows call)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from qgen.checkpoint import file_checksum
from qgen.data import holdout
from qgen.model import VARIANTS, ModelConfig
from qgen.parse import PARSE_MAX_TGT_LEN, calibrate, lf_types_of, read_task_pairs, task_metadata
from qgen.train import TrainConfig, TrainResult, train


class TooFewExamplesError(ValueError):
    """Nothing would be left to train on once the validation examples are held out."""


def train_on_examples(examples: str | Path, out_dir: str | Path, model: ModelConfig | str = "scratchpad",
                      cfg: TrainConfig | None = None, valid_fraction: float = 0.1,
                      entity_replacement: bool = True, log: Callable[[str], None] = print,
                      task: str = "generate") -> TrainResult:
    """Hold out ``valid_fraction`` of the groups of ``examples`` (a ``qgen preprocess`` Parquet file)
    for model selection, and train; ``model`` is a ``ModelConfig`` or a row name of Table 1.

    ``task="parse"`` trains the semantic parser (question -> logical form, ``qgen.parse``): targets up
    to ``PARSE_MAX_TGT_LEN`` tokens unless ``cfg`` asks for more, and afterwards the round-trip
    calibration on the held-out pairs is stored in ``best.pt``.
    """
    model_cfg = VARIANTS[model].model if isinstance(model, str) else model
    cfg = cfg or TrainConfig()
    pairs = read_task_pairs(examples, task, entity_replacement)
    if not pairs:
        raise ValueError(f"{examples} holds no examples to train on")
    if task == "parse" and cfg.max_tgt_len < PARSE_MAX_TGT_LEN:
        cfg = replace(cfg, max_tgt_len=PARSE_MAX_TGT_LEN)
    train_pairs, valid_pairs = holdout(pairs, valid_fraction, seed=cfg.seed)
    if not train_pairs:  # one group, and validation holds it out: a model with empty vocabularies
        raise TooFewExamplesError(f"{examples} holds one group of examples only (one example, or the parses of "
                                  "one question), which validation holds out; train needs at least two")
    metadata = task_metadata(task, lf_types_of(examples), entity_replacement)
    # What a corpus card names the model by, beside its checksum (qgen.synth.card.model_facts).
    metadata["training_data"] = (f"{Path(examples).name} (sha256 {file_checksum(examples)[:12]}): "
                                 f"{len(train_pairs)} pairs, {len(valid_pairs)} held out for validation")
    result = train(train_pairs, valid_pairs, model_cfg, cfg, out_dir, log, metadata)
    if task == "parse":
        calibration = calibrate(Path(result.out_dir) / "best.pt", valid_pairs or train_pairs)
        log(f"round-trip calibration: score threshold {calibration['threshold']:.3f} "
            f"({calibration['percentile']:g}th percentile of {calibration['pairs']} held-out pairs)")
    return result
