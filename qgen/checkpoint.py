"""Checkpoints: everything a killed run needs to resume, loaded without unpickling arbitrary objects.

A checkpoint holds only tensors, numbers, strings, lists and dicts, so ``torch.load(...,
weights_only=True)`` reads it: a file from elsewhere cannot run code. Files are written to a
temporary name and renamed, so a kill during the save leaves the previous checkpoint intact.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import torch

from qgen.model import ModelConfig, Vocab, build_model
from qgen.model.seq2seq import QuestionGenerator


def save_checkpoint(path: str | Path, model: QuestionGenerator, src_vocab: Vocab, tgt_vocab: Vocab,
                    extra: dict[str, Any] | None = None, optimizer: torch.optim.Optimizer | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "format": "qgen-checkpoint-1",
        "config": model.cfg.as_dict(),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "src_vocab": src_vocab.itos,
        "tgt_vocab": tgt_vocab.itos,
        **(extra or {}),
    }
    if optimizer is not None:
        payload["optimizer"] = optimizer.state_dict()
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[QuestionGenerator, Vocab, Vocab, dict[str, Any]]:
    """The model (eval mode), the two vocabularies and the whole payload (for resuming)."""
    # Read onto the CPU, whatever the device: the payload's RNG state must stay a CPU ByteTensor for
    # torch.set_rng_state (mapped to CUDA, a resumed GPU run failed with "RNG state must be a
    # torch.ByteTensor"); the model is moved below and the optimizer moves its own state to the
    # parameters' device when it loads it.
    payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    if payload.get("format") != "qgen-checkpoint-1":
        raise ValueError(f"{path} is not a qgen checkpoint")
    model = build_model(ModelConfig.from_dict(payload["config"]))
    model.load_state_dict(payload["model"])
    model.to(device)
    model.eval()
    src_vocab, tgt_vocab = Vocab(payload["src_vocab"][4:]), Vocab(payload["tgt_vocab"][4:])
    return model, src_vocab, tgt_vocab, payload


def file_checksum(path: str | Path) -> str:
    """sha256 of a file (the model id recorded in generated corpora)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
