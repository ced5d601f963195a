"""Checkpoints: everything a killed run needs to resume, loaded without unpickling arbitrary objects.

A checkpoint holds only tensors, numbers, strings, lists and dicts, so ``torch.load(...,
weights_only=True)`` reads it: a file from elsewhere cannot run code. Files are written to a
temporary name and renamed, so a kill during the save leaves the previous checkpoint intact. A file
that is not one (empty, truncated, another program's pickle) raises ``CheckpointError``, "PATH is not a
qgen checkpoint (why)", never torch's advice to load it with ``weights_only=False``.
"""
from __future__ import annotations

import hashlib
import os
import re
import warnings
from pathlib import Path
from typing import Any

import torch

from qgen.model import ModelConfig, Vocab, build_model
from qgen.model.seq2seq import QuestionGenerator

FORMAT = "qgen-checkpoint-1"
REQUIRED = ("config", "model", "src_vocab", "tgt_vocab")


class CheckpointError(ValueError):
    """A file that is not a qgen checkpoint qgen can read."""


def save_checkpoint(path: str | Path, model: QuestionGenerator, src_vocab: Vocab, tgt_vocab: Vocab,
                    extra: dict[str, Any] | None = None, optimizer: torch.optim.Optimizer | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "format": FORMAT,
        "config": model.cfg.as_dict(),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "src_vocab": src_vocab.itos,
        "tgt_vocab": tgt_vocab.itos,
        **(extra or {}),
    }
    if optimizer is not None:
        payload["optimizer"] = optimizer.state_dict()
    return write_payload(path, payload)


def write_payload(path: str | Path, payload: dict[str, Any]) -> Path:
    """A checkpoint's dict to ``path``, whole or not at all (a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
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
    payload = read_payload(path)
    try:
        cfg = ModelConfig.from_dict(payload["config"])
        for key, size in (("src_vocab", cfg.src_vocab_size), ("tgt_vocab", cfg.tgt_vocab_size)):
            held = len(payload[key]) if isinstance(payload[key], list) else None
            if held == size < 5:  # the special tokens alone: trained on nothing
                raise ValueError(f"its {key} is empty (the special tokens only)")
            if held != size:
                raise ValueError(f"its {key} holds {'no' if held is None else held} tokens, its configuration says {size}")
        model = build_model(cfg)
        model.load_state_dict(payload["model"])
    except (ValueError, TypeError, KeyError, RuntimeError) as err:  # a config, vocabulary or weights that disagree
        why = " ".join(str(err).split())
        raise CheckpointError(f"{path} is not a usable qgen model ({why[:300]})") from None
    model.to(device)
    model.eval()
    src_vocab, tgt_vocab = Vocab(payload["src_vocab"][4:]), Vocab(payload["tgt_vocab"][4:])
    return model, src_vocab, tgt_vocab, payload


def read_payload(path: str | Path) -> dict[str, Any]:
    """The checkpoint's dict, read with ``weights_only=True`` (no code runs); ``CheckpointError`` if it is none.
    An exported model folder (``qgen.exported_model``: safetensors and JSON) reads as the same dict."""
    from qgen.exported_model import is_exported, read_exported

    path = Path(path)
    if is_exported(path):
        return read_exported(path)
    if path.is_file() and path.stat().st_size == 0:
        raise CheckpointError(f"{path} is not a qgen checkpoint (an empty file)")
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols before it refuses a foreign pickle
            warnings.simplefilter("ignore")
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except OSError:
        raise  # missing, a folder, unreadable: the system's own message says it
    except Exception as err:  # noqa: BLE001 - whatever torch or pickle raise for a file that is not a checkpoint
        raise CheckpointError(f"{path} is not a qgen checkpoint ({_why_unreadable(err)})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a qgen checkpoint (it has no {FORMAT!r} format mark)")
    missing = [key for key in REQUIRED if key not in payload]
    if missing:
        raise CheckpointError(f"{path} is not a qgen checkpoint (it lacks {', '.join(missing)})")
    return payload


def _why_unreadable(err: Exception) -> str:
    """One short reason from torch's error, without its advice to load the file with weights_only=False."""
    if isinstance(err, EOFError):
        return "the file ends early"
    if isinstance(err, KeyError):  # torch's legacy reader on a file that is no pickle at all
        return "not a file torch.save wrote"
    text = str(err)
    foreign = re.search(r"GLOBAL (\S+)", text)
    if foreign:
        return f"it holds a Python object of type {foreign.group(1)}, which no qgen checkpoint does"
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = re.split(r"\.\s", lines[0])[0] if lines else ""
    if not reason or "weights_only" in reason:
        reason = "not a file torch.save wrote, or one needing code to load"
    return f"{type(err).__name__}: {reason}"


def file_checksum(path: str | Path) -> str:
    """sha256 of a file (the model id recorded in generated corpora); of an exported model folder,
    the sha256 over its files' names and contents in name order."""
    digest = hashlib.sha256()
    path = Path(path)
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(file.name.encode() + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
