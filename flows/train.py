"""Train flow: one task, ``qgen.train_job.train_on_examples``.

Training writes a resumable checkpoint every epoch (``last.pt``), so a retried task continues
where the failed attempt stopped instead of starting over. One device: the flow trains on the GPU
when torch sees one, else on the CPU (multi-GPU DDP through torchrun is not implemented).
"""
from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional

from prefect import flow, get_run_logger, task

from flows.artifacts import publish, table
from flows.results import json_results, plain


@task(name="train", persist_result=True, retries=1, retry_delay_seconds=5, **json_results())
def train_task(examples: str, out: str, model: dict[str, Any], train_config: dict[str, Any],
               entity_replacement: bool = True, task: str = "generate") -> dict[str, Any]:
    from qgen.model import ModelConfig
    from qgen.train import TrainConfig
    from qgen.train_job import train_on_examples

    logger = get_run_logger()
    result = train_on_examples(examples, out, ModelConfig.from_dict(model), TrainConfig(**train_config),
                               entity_replacement=entity_replacement, log=logger.info, task=task)
    return plain({**asdict(result), "checkpoint": str(Path(result.out_dir) / "best.pt")})


@flow(name="qgen-train", log_prints=True)
def train_flow(examples: str, out: str = "out/model", model: str = "scratchpad_extended", epochs: int = 75,
               batch_size: int = 32, learning_rate: float = 1e-4, teacher_forcing: float = 0.5,
               hidden: int = 512, embedding: int = 300, layers: int = 2, dropout: float = 0.5,
               max_seconds: Optional[float] = None, seed: int = 1, glove: Optional[str] = None,
               task: str = "generate", parser: bool = True, init_from: Optional[str] = None) -> dict[str, Any]:
    """Train a question generator (``task="generate"``) or a semantic parser (``task="parse"``, for
    the round-trip filter) on a preprocessed examples file; returns the result and ``checkpoint``.

    A generator's run also trains its parser (``parser``, the default; ``copynet_extended`` of the
    same sizes) into the ``parser`` folder beside ``out``, where synthesis finds it
    (``qgen.synth.round_trip.default_parser``); the result then holds ``parser_checkpoint``.
    ``init_from`` fine-tunes a model (a checkpoint, a model folder, or ``default``) instead of
    training one from scratch (the parser still starts from scratch)."""
    model_cfg, train_config, entity_replacement = train_arguments(
        model, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, teacher_forcing=teacher_forcing,
        hidden=hidden, embedding=embedding, layers=layers, dropout=dropout, max_seconds=max_seconds, seed=seed,
        glove=glove, init_from=init_from)
    result = train_task(examples, str(Path(out).resolve()), model_cfg, train_config, entity_replacement, task)
    history = [[h["epoch"], h["train_loss"], h["valid_loss"], h["seconds"]] for h in result["history"]]
    markdown = "\n".join([f"# Trained `{model}` on `{examples}`", "",
                          f"{result['epochs_run']} epochs on {result['device']}; best epoch {result['best_epoch']} "
                          f"(validation loss {result['best_valid_loss']:.3f})", "",
                          table(["epoch", "train loss", "valid loss", "seconds"], history)])
    publish(f"qgen-train-{model}", markdown, result["checkpoint"], f"checkpoint {result['checkpoint']}",
            "losses per target token")
    if task == "generate" and parser:
        parser_cfg, parser_train, _ = train_arguments(
            "copynet_extended", epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
            teacher_forcing=teacher_forcing, hidden=hidden, embedding=embedding, layers=layers, dropout=dropout,
            max_seconds=max_seconds, seed=seed, glove=glove)
        parsed = train_task(examples, str(Path(out).resolve().parent / "parser"), parser_cfg, parser_train,
                            entity_replacement, "parse")
        result = {**result, "parser_checkpoint": parsed["checkpoint"]}
    return result


def train_arguments(model: str, epochs: int, batch_size: int, learning_rate: float, teacher_forcing: float,
                    hidden: int, embedding: int, layers: int, dropout: float, max_seconds: Optional[float], seed: int,
                    glove: Optional[str] = None, init_from: Optional[str] = None) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """``train_task``'s model configuration, training configuration and entity replacement for a named model.

    ``init_from`` (a checkpoint, an exported model folder, or ``default``: the model that ships with
    qgen) fine-tunes that model, as ``qgen train --init-from``: the model configuration is the
    checkpoint's, whatever ``model`` and the sizes say."""
    from qgen.model import VARIANTS, ModelConfig

    if model not in VARIANTS:
        raise ValueError(f"model must be one of {', '.join(VARIANTS)}, got {model!r}")
    variant = VARIANTS[model]
    model_cfg = replace(variant.model, hidden_size=hidden, embedding_dim=embedding, num_layers=layers, dropout=dropout)
    train_config = {"epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate,
                    "teacher_forcing": teacher_forcing, "max_seconds": max_seconds, "seed": seed,
                    "glove_path": glove}
    if init_from is not None:
        from qgen.checkpoint import read_payload
        from qgen.exported_model import resolve_model

        path = resolve_model(Path(init_from))
        model_cfg = ModelConfig.from_dict(read_payload(path)["config"])
        train_config["init_from"] = str(path)
    return model_cfg.as_dict(), train_config, variant.entity_replacement
