"""Model configuration: one frozen dataclass, and the five rows of the seed paper's Table 1.

Seed "Question Generation using a Scratchpad Encoder", sections 2-5 / Table 1. Defaults are the
paper's: hidden 512, word vectors 300, 2 layers, dropout 0.5.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

COPY_MODES = ("none", "intersection", "extended")
# scratchpad_focus: Eq. 12-14 plus the copy weight in the write gate (qgen/model/memory.py; not the paper's)
MEMORY_WRITERS = ("none", "scratchpad", "scratchpad_focus")


@dataclass(frozen=True)
class ModelConfig:
    src_vocab_size: int = 0
    tgt_vocab_size: int = 0
    embedding_dim: int = 300
    hidden_size: int = 512  # decoder state; the encoder's two directions are hidden_size / 2 each
    num_layers: int = 2
    dropout: float = 0.5  # on every GRU layer's input except the output layer
    copy: str = "none"  # none | intersection (V_c = V_i ∩ V_o, the paper) | extended (See et al. 2017)
    coverage_dim: int = 0  # 0 = no coverage; the paper uses 10 (Eq. 15-16)
    memory: str = "none"  # none | scratchpad (Eq. 12-14) | scratchpad_focus (an experiment)

    def __post_init__(self) -> None:
        if self.copy not in COPY_MODES:
            raise ValueError(f"copy must be one of {COPY_MODES}, got {self.copy!r}")
        if self.memory not in MEMORY_WRITERS:
            raise ValueError(f"memory must be one of {MEMORY_WRITERS}, got {self.memory!r}")
        if self.hidden_size % 2:
            raise ValueError("hidden_size must be even (two encoder directions of hidden_size / 2)")
        if self.coverage_dim and self.copy == "none":
            raise ValueError("coverage feeds the copy score (Eq. 15-16): it needs copy != 'none'")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "ModelConfig":
        return cls(**values)

    def with_vocab(self, src: int, tgt: int) -> "ModelConfig":
        return replace(self, src_vocab_size=src, tgt_vocab_size=tgt)


@dataclass(frozen=True)
class Variant:
    """One row of Table 1: the model plus the data and decoding choices that go with it."""

    name: str
    model: ModelConfig
    entity_replacement: bool  # ent: + name tokens instead of the raw ids
    pretrained_vectors: bool  # GloVe 6B.300d when a file is given
    beam: int  # 1 = greedy


VARIANTS: dict[str, Variant] = {
    "seq2seq": Variant("seq2seq", ModelConfig(), entity_replacement=False, pretrained_vectors=False, beam=1),
    "seq2seq_priors": Variant("seq2seq_priors", ModelConfig(), entity_replacement=True, pretrained_vectors=True, beam=2),
    "copynet": Variant("copynet", ModelConfig(copy="intersection"), True, True, 1),
    "coverage": Variant("coverage", ModelConfig(copy="intersection", coverage_dim=10), True, True, 1),
    "scratchpad": Variant("scratchpad", ModelConfig(copy="intersection", coverage_dim=10, memory="scratchpad"),
                          True, True, 1),
    # Not a row of Table 1: the same model with See et al.'s extended vocabulary, which can copy
    # names never seen in a training question; synthesis needs it (issue 3 asks for both on WebQSP).
    "scratchpad_extended": Variant("scratchpad_extended",
                                   ModelConfig(copy="extended", coverage_dim=10, memory="scratchpad"), True, True, 1),
    # Not a row of Table 1: Copynet with the extended vocabulary, the default semantic parser
    # (qgen.parse: question -> logical form; names and values are copied from the question).
    "copynet_extended": Variant("copynet_extended", ModelConfig(copy="extended"), True, True, 1),
    # An experiment, not the paper's: the write gate also sees the copy weight of its position.
    "scratchpad_focus": Variant("scratchpad_focus",
                                ModelConfig(copy="intersection", coverage_dim=10, memory="scratchpad_focus"),
                                True, True, 1),
}
# What a benchmark trains by default: Table 1's five rows and the extended-copy Scratchpad.
BENCHMARK_MODELS = ("seq2seq", "seq2seq_priors", "copynet", "coverage", "scratchpad", "scratchpad_extended")
