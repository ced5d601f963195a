"""A tiny SPARQL parser checkpoint (question -> logical form) for the round-trip tests: it runs, its
parses need not be good."""
from __future__ import annotations

from pathlib import Path

import torch

from parsers import tokenize_lf
from parsers.tokens import nl_tokens
from qgen.data import Pair
from qgen.model import ModelConfig
from qgen.parse import calibrate, task_metadata
from qgen.train import TrainConfig, train

CITIES = ["oslo", "lyon", "porto", "riga", "kyiv", "bern"]
RELATIONS = [("capital", "what is the capital of {} ?"), ("mayor", "who is the mayor of {} ?")]


def sparql(i: int, relation: str) -> str:
    return f"PREFIX ns: <http://rdf.freebase.com/ns/> SELECT ?x WHERE {{ ns:m.0{i:04d} ns:location.{relation} ?x }}"


def parse_pairs() -> list[Pair]:
    """(question tokens, LF tokens) pairs over ``CITIES`` x ``RELATIONS``."""
    return [Pair(f"{city}-{relation}", nl_tokens(question.format(city)),
                 tokenize_lf(sparql(i, relation), "sparql", names={f"m.0{i:04d}": city}).tokens, f"{city}-{relation}")
            for i, city in enumerate(CITIES) for relation, question in RELATIONS]


def train_tiny_parser(out: Path, epochs: int = 2, calibrated: bool = True) -> Path:
    """Train a hidden-16 Copy + Scratchpad parser on ``parse_pairs`` with the metadata of a SPARQL
    parser (``task: parse``); with ``calibrated`` the round-trip calibration is stored too."""
    torch.set_num_threads(1)
    pairs = parse_pairs()
    model = ModelConfig(embedding_dim=8, hidden_size=16, num_layers=1, dropout=0.0, copy="extended", memory="scratchpad")
    train(pairs, pairs[:3], model, TrainConfig(epochs=epochs, batch_size=12, learning_rate=1e-2, max_tgt_len=60), out,
          log=lambda _: None, metadata=task_metadata("parse", ["sparql"], entity_replacement=True))
    if calibrated:
        calibrate(out / "best.pt", pairs[:4])
    return out / "best.pt"
