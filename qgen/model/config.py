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
# luong: general score (W s).h, read after the GRU from the post-update state, input feeding (seed 000);
# bahdanau: MLP score v.tanh(W_s s + W_h h), read from the pre-update state, GRU input [y ; attn_read] (seed 001)
ATTENTION_FORMS = ("luong", "bahdanau")
# copyable: the copy softmax only over positions that can be copied; all: over every source position (Eq. 9)
COPY_SOFTMAX = ("copyable", "all")
# linear: one layer each for p_gen, u and the write gate; mlp: ReLU MLPs (Eq. 11, 14; seed 000's f_alpha)
GATE_FORMS = ("linear", "mlp")


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
    # The fields below were added after the first checkpoints; their defaults are those checkpoints' model.
    attention: str = "luong"  # luong | bahdanau: the read and copy scores and the step order (ATTENTION_FORMS)
    copy_softmax: str = "copyable"  # copyable | all (Eq. 9: mass on a position that cannot be copied is lost)
    gates: str = "linear"  # linear | mlp: p_gen (Eq. 11), the update u (Eq. 14) and the write gate (Eq. 13)
    mlp_hidden: int = 0  # units of every MLP (scores, gates); 0 = hidden_size (seed 000: 512)

    def __post_init__(self) -> None:
        if self.copy not in COPY_MODES:
            raise ValueError(f"copy must be one of {COPY_MODES}, got {self.copy!r}")
        if self.memory not in MEMORY_WRITERS:
            raise ValueError(f"memory must be one of {MEMORY_WRITERS}, got {self.memory!r}")
        if self.hidden_size % 2:
            raise ValueError("hidden_size must be even (two encoder directions of hidden_size / 2)")
        if self.coverage_dim and self.copy == "none":
            raise ValueError("coverage feeds the copy score (Eq. 15-16): it needs copy != 'none'")
        for name, allowed in (("attention", ATTENTION_FORMS), ("copy_softmax", COPY_SOFTMAX), ("gates", GATE_FORMS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.mlp_hidden < 0:
            raise ValueError(f"mlp_hidden must be >= 0 (0 = hidden_size), got {self.mlp_hidden}")

    @property
    def mlp_units(self) -> int:
        """The MLPs' hidden width: ``mlp_hidden``, or ``hidden_size`` when it is 0."""
        return self.mlp_hidden or self.hidden_size

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "ModelConfig":
        """A dict written before a field existed gets that field's default: the model it was trained as."""
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


# Table 1's rows follow seed 001's equations: the MLP scores and step order (attention="bahdanau"),
# the copy softmax over every source position (Eq. 9), MLP p_gen, update and write gate (Eq. 11, 13,
# 14), coverage inside the copy score (Eq. 16) and none in the Scratchpad row.
_SEED001 = dict(attention="bahdanau")
_COPY001 = dict(copy="intersection", copy_softmax="all", gates="mlp")
# Seed 000's form of the same rows (Luong's general score, input feeding), for the pilot between the two.
_LUONG = dict(attention="luong")
# The first models (before issue 19): copy masked to copyable positions, linear gates, Luong's score with
# input feeding, coverage in the Scratchpad row. Every checkpoint written before it is one of these.
_MASKED = dict(copy="intersection")

VARIANTS: dict[str, Variant] = {
    # Eq. 1-5: MLP read attention from the pre-update state, GRU input [y ; attn_read]; raw ids.
    "seq2seq": Variant("seq2seq", ModelConfig(**_SEED001), entity_replacement=False, pretrained_vectors=False,
                       beam=1),
    # Eq. 1-5 with entity names and GloVe, beam 2.
    "seq2seq_priors": Variant("seq2seq_priors", ModelConfig(**_SEED001), entity_replacement=True,
                              pretrained_vectors=True, beam=2),
    # Eq. 1-11: + copy over V_i ∩ V_o, softmax over all positions (Eq. 9), MLP p_gen (Eq. 11).
    "copynet": Variant("copynet", ModelConfig(**_SEED001, **_COPY001), True, True, 1),
    # Eq. 1-11, 15-16: + coverage GRU inside the copy score MLP.
    "coverage": Variant("coverage", ModelConfig(**_SEED001, **_COPY001, coverage_dim=10), True, True, 1),
    # Eq. 1-14: Copynet + Scratchpad (MLP write gate and update), no coverage.
    "scratchpad": Variant("scratchpad", ModelConfig(**_SEED001, **_COPY001, memory="scratchpad"), True, True, 1),
    # The same rows with Luong's general score and input feeding (seed 000); everything else as above
    # (coverage is added outside the bilinear score, which has no hidden layer to put it in).
    "seq2seq_luong": Variant("seq2seq_luong", ModelConfig(**_LUONG), False, False, 1),
    "seq2seq_priors_luong": Variant("seq2seq_priors_luong", ModelConfig(**_LUONG), True, True, 2),
    "copynet_luong": Variant("copynet_luong", ModelConfig(**_LUONG, **_COPY001), True, True, 1),
    "coverage_luong": Variant("coverage_luong", ModelConfig(**_LUONG, **_COPY001, coverage_dim=10), True, True, 1),
    "scratchpad_luong": Variant("scratchpad_luong", ModelConfig(**_LUONG, **_COPY001, memory="scratchpad"),
                                True, True, 1),
    # The first models, as trained before issue 19 (seq2seq_luong and seq2seq_priors_luong are the
    # first Seq2Seq rows too): Eq. 1-3 with Luong's score and input feeding, the copy softmax masked to
    # copyable positions, a linear p_gen over [s ; c_copy ; y_t-1], a linear write gate and update,
    # coverage added outside the copy score, and coverage in the Scratchpad row.
    "copynet_masked": Variant("copynet_masked", ModelConfig(**_MASKED), True, True, 1),
    "coverage_masked": Variant("coverage_masked", ModelConfig(**_MASKED, coverage_dim=10), True, True, 1),
    "scratchpad_masked": Variant("scratchpad_masked", ModelConfig(**_MASKED, coverage_dim=10, memory="scratchpad"),
                                 True, True, 1),
    # Not a row of Table 1: the first Scratchpad (as scratchpad_masked) with See et al.'s extended
    # vocabulary, which can copy names never seen in a training question; synthesis needs it (issue 3
    # asks for both on WebQSP). The demo's generator.
    "scratchpad_extended": Variant("scratchpad_extended",
                                   ModelConfig(copy="extended", coverage_dim=10, memory="scratchpad"), True, True, 1),
    # Not a row of Table 1: the first Copynet with the extended vocabulary, the default semantic parser
    # (qgen.parse: question -> logical form; names and values are copied from the question).
    "copynet_extended": Variant("copynet_extended", ModelConfig(copy="extended"), True, True, 1),
    # An experiment, not the paper's: scratchpad_masked whose write gate also sees the copy weight of its position.
    "scratchpad_focus": Variant("scratchpad_focus",
                                ModelConfig(copy="intersection", coverage_dim=10, memory="scratchpad_focus"),
                                True, True, 1),
}
# What a benchmark trains by default: Table 1's five rows and the extended-copy Scratchpad.
BENCHMARK_MODELS = ("seq2seq", "seq2seq_priors", "copynet", "coverage", "scratchpad", "scratchpad_extended")
