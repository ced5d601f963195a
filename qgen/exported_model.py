"""A trained model as a folder that loads without unpickling: ``model.safetensors`` (fp16 weights),
``qgen-model.json`` (configuration, task, logical-form types, preprocessing, training data,
metrics), ``src_vocab.json`` and ``tgt_vocab.json``, and a model card (``README.md``).

qgen's default model ships in this form (``qgen/models/default``); ``qgen.checkpoint.read_payload``
reads such a folder wherever a checkpoint file is accepted, so generation, synthesis, evaluation
and ``--init-from`` take either.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

MANIFEST = "qgen-model.json"
WEIGHTS = "model.safetensors"
FORMAT = "qgen-exported-model-1"
# What a checkpoint holds beside its weights that a loaded model may need: the rest (optimizer,
# RNG state, partial epochs) is for resuming a run, which an exported model does not do.
KEPT = ("task", "lf_types", "preprocessing", "input_context", "training_data", "round_trip", "pretrained_vectors")

DEFAULT_MODEL = Path(__file__).resolve().parent / "models" / "default"


def is_exported(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def resolve_model(name: str | Path | None) -> Path:
    """``None`` or ``"default"``: the packaged default model; anything else is a path (a checkpoint
    file or an exported folder)."""
    if name is None or str(name) == "default":
        if not is_exported(DEFAULT_MODEL):
            raise FileNotFoundError(f"the default model is missing from this installation ({DEFAULT_MODEL}); "
                                    "name a model with --checkpoint PATH")
        return DEFAULT_MODEL
    return Path(name)


def export_model(checkpoint: str | Path, to_dir: str | Path, metrics: dict[str, Any] | None = None,
                 command: str = "", name: str = "", notes: str = "") -> Path:
    """Write ``checkpoint`` (a ``best.pt``) as an exported folder; returns the folder."""
    from safetensors.torch import save_file

    from qgen.checkpoint import read_payload

    payload = read_payload(checkpoint)
    out = Path(to_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file; --out names the model folder to write")
    if out.is_dir() and any(out.iterdir()) and not is_exported(out):  # a corpus, a results folder: not ours to overwrite
        raise FileExistsError(f"{out} holds other files and no exported model; give a new or empty folder "
                              "(an earlier export is replaced)")
    out.mkdir(parents=True, exist_ok=True)
    weights = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in payload["model"].items()}
    save_file({k: v.contiguous() for k, v in weights.items()}, str(out / WEIGHTS))
    history = payload.get("history") or []
    # An exported folder exported again (read_exported) has no history: its own figures and card text stay.
    manifest = {"format": FORMAT, "name": name or payload.get("name", ""), "config": payload["config"],
                **{k: payload[k] for k in KEPT if k in payload},
                "train_config": payload.get("train_config"),
                "epochs": len(history) if history else payload.get("epochs", 0),
                "best_valid_loss": (min(h["valid_loss"] for h in history) if history
                                    else payload.get("best_valid_loss")),
                "metrics": metrics or payload.get("metrics") or {}, "command": command or payload.get("command", ""),
                "notes": notes or payload.get("notes", "")}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    for key in ("src_vocab", "tgt_vocab"):
        (out / f"{key}.json").write_text(json.dumps(payload[key]) + "\n")
    (out / "README.md").write_text(model_card(manifest, sum(v.numel() for v in weights.values())))
    return out


def read_exported(path: str | Path) -> dict[str, Any]:
    """An exported folder as a checkpoint payload (weights back in fp32)."""
    from safetensors.torch import load_file

    from qgen.checkpoint import FORMAT as CHECKPOINT_FORMAT, CheckpointError

    folder = Path(path)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        weights = load_file(str(folder / WEIGHTS))
        vocabs = {name: json.loads((folder / f"{name}.json").read_text()) for name in ("src_vocab", "tgt_vocab")}
    except Exception as err:  # noqa: BLE001 - OSError, JSON's ValueError, safetensors' SafetensorError
        why = " ".join(f"{type(err).__name__}: {err}".split())
        raise CheckpointError(f"{folder} is not a readable qgen model folder ({why[:300]})") from None
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"{folder} is not a qgen model folder (no {FORMAT!r} format mark in {MANIFEST})")
    model = {k: v.float() if v.is_floating_point() else v for k, v in weights.items()}
    return {**manifest, "format": CHECKPOINT_FORMAT, "model": model, **vocabs}


def model_card(manifest: dict[str, Any], parameters: int) -> str:
    cfg, train_cfg = manifest["config"], manifest.get("train_config") or {}
    lines = [f"# qgen model: {manifest.get('name') or 'question generator'}", "",
             f"- Task: {manifest.get('task', 'generate')}; logical forms: {', '.join(manifest.get('lf_types') or [])}",
             f"- Training data: {manifest.get('training_data', 'not recorded')}",
             f"- Size: {parameters:,} parameters, fp16 weights (safetensors); hidden {cfg['hidden_size']}, "
             f"word vectors {cfg['embedding_dim']}, {cfg['num_layers']} layer(s), dropout {cfg['dropout']}",
             f"- Training: batch {train_cfg.get('batch_size')}, learning rate {train_cfg.get('learning_rate')}, "
             f"teacher forcing {train_cfg.get('teacher_forcing')}; the weights after epoch {manifest['epochs']}, "
             f"selected on validation loss ({_rounded(manifest.get('best_valid_loss'))})"]
    metrics = manifest.get("metrics") or {}
    if metrics:
        lines += ["", f"## Metrics (beam {metrics.get('beam')}, commit {metrics.get('commit')})", "",
                  "| data | split | questions | BLEU | METEOR | ROUGE-L |", "|---|---|---:|---:|---:|---:|"]
        for name, m in (metrics.get("metrics") or {}).items():
            meteor = "" if m.get("meteor") is None else f"{m['meteor']:.2f}"
            lines.append(f"| {name} | {m['split']} | {m['questions']} | {m['bleu']:.2f} | {meteor} | {m['rouge_l']:.2f} |")
    if manifest.get("notes"):
        lines += ["", manifest["notes"].strip()]
    if manifest.get("command"):
        lines += ["", "## Rebuild", "", "```", manifest["command"], "```"]
    return "\n".join(lines) + "\n"


def _rounded(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:.3f}"
