"""A uniform model soup: the weights of several fine-tunings of one model, averaged into one checkpoint.

Wortsman et al. 2022 ("Model soups: averaging weights of multiple fine-tuned models improves accuracy
without increasing inference time"): models fine-tuned from the same pre-trained weights with other
seeds stay in one basin of the loss, so their weight average is a model too, and often a better one
than each of them. The downstream benchmark's ``soup_finetune_<row>`` rows average the parsers that
``finetune_<row>`` trained from one pre-trained parser with different seeds. Averaging models that
were not fine-tuned from one starting point is refused only where their shapes differ: the caller
picks the ingredients.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from qgen.averaged_weights import TRAINING_WEIGHTS
from qgen.checkpoint import read_payload, write_payload

# Not carried over from the first ingredient: its optimizer, RNG state and training weights (a soup is
# not resumed; qgen.averaged_weights) and its round-trip calibration (scores of another model's
# log-probabilities).
DROPPED_KEYS = ("optimizer", "torch_rng", TRAINING_WEIGHTS, "round_trip")


def average_checkpoints(paths: Sequence[str | Path], out: str | Path) -> Path:
    """Write the uniform average of the checkpoints' weights to ``out`` (the rest of the first one's
    payload kept, with ``soup_of`` naming the ingredients); ValueError if fewer than two are given or
    they are not one model (configuration, vocabularies, weight names and shapes)."""
    if len(paths) < 2:
        raise ValueError(f"a soup needs at least two checkpoints, got {len(paths)}")
    payloads = [read_payload(path) for path in paths]
    first = payloads[0]
    for path, payload in zip(paths[1:], payloads[1:]):
        shapes = {k: v.shape for k, v in payload["model"].items()}
        same = (payload["config"] == first["config"] and payload["src_vocab"] == first["src_vocab"]
                and payload["tgt_vocab"] == first["tgt_vocab"] and shapes == {k: v.shape for k, v in first["model"].items()})
        if not same:
            raise ValueError(f"{path} is not the same model as {paths[0]} (configuration, vocabularies or weight "
                             "shapes differ): only fine-tunings of one model can be averaged")
    state = {}
    for name, tensor in first["model"].items():
        if tensor.is_floating_point():  # summed in float64, so the order of the ingredients does not matter
            total = sum(payload["model"][name].double() for payload in payloads)
            state[name] = (total / len(payloads)).to(tensor.dtype)
        else:  # integer buffers (none in qgen's models today): the first one's
            state[name] = tensor
    soup = {k: v for k, v in first.items() if k not in DROPPED_KEYS}
    soup.update(model=state, soup_of=[str(path) for path in paths])
    return write_payload(out, soup)
