"""Does a trained model fit its inputs? A question generator must be one (not a parser, ``qgen train
--task parse``), and trained on the inputs' logical-form types: a model trained on SQL alone writes
confident nonsense for SPARQL. Checked before work starts, from what the model records of itself.

A model records its task and logical-form types since both were added to checkpoints; one that
records none (older checkpoints) is taken at its word: nothing is refused.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping


class ModelMismatchError(ValueError):
    """The model is not a question generator, or not one for these logical forms."""


def model_record(path: str | Path) -> dict[str, Any]:
    """The model's own record (task, lf_types, ...): the manifest of an exported folder, read without
    its weights, or a checkpoint's payload."""
    from qgen.exported_model import MANIFEST, is_exported

    if is_exported(path):
        try:
            return json.loads((Path(path) / MANIFEST).read_text())
        except (OSError, ValueError):
            pass  # read_payload names what is wrong with the folder
    from qgen.checkpoint import read_payload

    return read_payload(path)


def unknown_lf_type(facts: Mapping[str, Any], lf_type: str) -> str | None:
    """Why a model with these facts cannot take logical forms of ``lf_type``; None if it can."""
    known = facts.get("lf_types") or []
    if not known or not lf_type or lf_type in known:  # no type: the tokenizer says what is wrong
        return None
    return (f"the model was trained on {', '.join(known)} logical forms, not {lf_type}; give a model trained "
            f"on {lf_type} (qgen train on such pairs, or --init-from default to adapt one)")


def check_generator(path: str | Path, lf_types: Iterable[str] = (), facts: Mapping[str, Any] | None = None,
                    any_fits: bool = False) -> None:
    """Refuse (``ModelMismatchError``, naming the model and the fix) a model that is not a question
    generator, or one not trained on every type in ``lf_types`` (``any_fits``: on none of them, as for a
    file of mixed types, whose records of another type are then errors of their own, whatever their order)."""
    facts = model_record(path) if facts is None else facts
    if any_fits and any(unknown_lf_type(facts, t) is None for t in lf_types):
        lf_types = ()
    task = facts.get("task")
    if task not in (None, "generate"):
        raise ModelMismatchError(f"model {path} is a {'parser' if task == 'parse' else repr(task) + ' model'} "
                                 "(qgen train --task parse), not a question generator; give a model trained with "
                                 "--task generate (the default), or leave the option out for the default model")
    for lf_type in sorted(set(lf_types)):
        why = unknown_lf_type(facts, lf_type)
        if why is not None:
            raise ModelMismatchError(f"model {path}: {why}")
