"""Model configuration: one frozen dataclass, and the five rows of the seed paper's Table 1.

Seed "Question Generation using a Scratchpad Encoder", sections 2-5 / Table 1. Defaults are the
paper's: hidden 512, word vectors 300, 2 layers, dropout 0.5.
"""
from __future__ import annotations

import string
from dataclasses import asdict, dataclass, fields, replace
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
        for name in ("embedding_dim", "hidden_size", "num_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be 1 or more, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:  # also refuses nan
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
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
        """A dict written before a field existed gets that field's default: the model it was trained as.
        A dict with any of ``PartsConfig``'s fields is a ``PartsConfig``."""
        if cls is ModelConfig and set(values) & _PARTS_FIELDS:
            return PartsConfig(**values)
        return cls(**values)

    def with_vocab(self, src: int, tgt: int) -> "ModelConfig":
        return replace(self, src_vocab_size=src, tgt_vocab_size=tgt)


# The data-to-text seeds' parts (issue 22). A subclass rather than new ModelConfig fields: ModelConfig's
# field set is the one every checkpoint before them was written with, and stays so; a PartsConfig with
# every field at its default builds the same model as the ModelConfig it extends.
ENCODERS = ("bigru", "bigru_concat", "caencoder", "agenda", "roberti_switch")
DECODERS = ("skeleton", "cgru", "checklist", "roberti")
LOSS_TERMS = ("attreg", "checklist")  # qgen/model/losses.py


@dataclass(frozen=True)
class PartsConfig(ModelConfig):
    # bigru: the skeleton's encoder (hidden_size / 2 a direction, num_layers); bigru_concat: one layer,
    # hidden_size a direction, annotations [fwd ; bwd] of 2 * hidden_size (dl4mt's, Zhang's baseline);
    # caencoder: Zhang et al.'s context-aware encoder, annotations of hidden_size (qgen/model/caencoder.py)
    encoder: str = "bigru"
    # skeleton: qgen/model/decoder.py; cgru: dl4mt's conditional GRU with MLP attention and the readout
    # layer (qgen/model/cgru.py); dropout then acts on the readout layer only, and num_layers is unused.
    # agenda + checklist: Kiddon et al.'s neural checklist (qgen/model/checklist.py), which reads a goal
    # token then slot-value item pairs; hidden_size is its k, num_layers and dropout are unused
    decoder: str = "skeleton"
    loss_terms: str = ""  # extra training loss terms from the step attentions, "+"-joined names (LOSS_TERMS)
    init_uniform: float = 0.0  # > 0: every parameter drawn from U(-a, a) (dl4mt: 0.08); 0: torch's defaults
    checklist_beta: float = 1.0  # the reference-type softmax's sharpness (K3; dialogue 1, recipes 5)
    checklist_gamma: float = 10.0  # the item attentions' sharpness (K5, K9; dialogue 10, recipes 2)
    # Characters, not words: both vocabularies are exactly this alphabet, whatever the training data
    # holds (seed 002: Python's string.printable), so models of different datasets share their shapes
    alphabet: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, allowed in (("encoder", ENCODERS), ("decoder", DECODERS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        unknown = [t for t in self.terms if t not in LOSS_TERMS]
        if unknown:
            raise ValueError(f"loss_terms must be '+'-joined names of {LOSS_TERMS}, got {self.loss_terms!r}")
        if "checklist" in self.terms and self.decoder != "checklist":
            raise ValueError("the checklist loss term reads the checklist decoder's state (decoder 'checklist')")
        if (self.encoder == "agenda") != (self.decoder == "checklist"):
            raise ValueError("the agenda encoder and the checklist decoder go together (seed 004)")
        if self.encoder in ("bigru_concat", "caencoder") and self.decoder != "cgru":
            raise ValueError(f"encoder {self.encoder!r} feeds the cgru decoder only (its memory width differs)")
        if self.decoder == "roberti" and (self.encoder not in ("bigru", "roberti_switch")
                                          or self.copy not in ("none", "intersection")):
            raise ValueError("the roberti decoder reads the bigru or roberti_switch encoder and copies from its "
                             "own attention (copy 'none' or 'intersection')")
        if self.encoder == "roberti_switch" and self.decoder != "roberti":
            raise ValueError("the roberti_switch encoder's second GRU is the roberti decoder's (seed 002)")
        if self.decoder in ("cgru", "checklist") and self.copy != "none":
            raise ValueError(f"the {self.decoder} decoder has no copy generator (copy must be 'none')")

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(t for t in self.loss_terms.split("+") if t)


_PARTS_FIELDS = {f.name for f in fields(PartsConfig)} - {f.name for f in fields(ModelConfig)}


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
# Seed 003 (Zhang et al. 2018, E2E): dl4mt's sizes d_w 620, d_h 1000, dropout 0.2 on the readout layer
# only, U(-0.08, 0.08) initialisation; MLP attention; raw MR tokens (BPE units, no delexicalisation);
# beam 10, scored without length normalisation (decode with alpha 0). The three rows of their Table 1.
_ZHANG = dict(embedding_dim=620, hidden_size=1000, num_layers=1, dropout=0.2, attention="bahdanau",
              decoder="cgru", init_uniform=0.08)
VARIANTS.update({
    # "Baseline": dl4mt's bidirectional GRU encoder (d_h a direction, annotations 2 d_h)
    "zhang_baseline": Variant("zhang_baseline", PartsConfig(**_ZHANG, encoder="bigru_concat"), False, False, 10),
    # "Our": the CAEncoder, Eq. 1-4 (annotations d_h)
    "zhang_caencoder": Variant("zhang_caencoder", PartsConfig(**_ZHANG, encoder="caencoder"), False, False, 10),
    # "Our+AttReg": + L_att (Eq. 9), weight 1
    "zhang_caencoder_attreg": Variant("zhang_caencoder_attreg",
                                      PartsConfig(**_ZHANG, encoder="caencoder", loss_terms="attreg"),
                                      False, False, 10),
})
# What a benchmark trains by default: Table 1's five rows and the extended-copy Scratchpad.
BENCHMARK_MODELS = ("seq2seq", "seq2seq_priors", "copynet", "coverage", "scratchpad", "scratchpad_extended")
# Seed 004 (Kiddon et al. 2016), the dialogue setting: k = 80 for embeddings and states, U(-0.35, 0.35),
# (beta, gamma) = (1, 10), the loss term pushing the final checklist to 1; beam 10, reranked by the
# agenda items used (qgen.wen_benchmark). The attention encoder-decoder is the skeleton at the same size,
# the baseline our skeleton already has (Kiddon et al.'s "Attention" row of their recipe table).
_KIDDON_SIZES = dict(embedding_dim=80, hidden_size=80, num_layers=1, dropout=0.0, init_uniform=0.35)
VARIANTS.update({
    "kiddon_checklist": Variant("kiddon_checklist",
                                PartsConfig(**_KIDDON_SIZES, encoder="agenda", decoder="checklist",
                                            loss_terms="checklist", checklist_beta=1.0, checklist_gamma=10.0),
                                False, False, 10),
    "kiddon_attention": Variant("kiddon_attention", PartsConfig(**_KIDDON_SIZES, attention="bahdanau"),
                                False, False, 10),
})
# Seed 002 (Roberti et al. 2019), the released code's sizes: characters of Python's string.printable on
# both sides, embeddings of 16, GRUs of H = 256 (the encoder's 256 a direction: hidden_size 2H), 4 layers,
# dropout 0.2 between layers, attention width 128; greedy decoding (qgen/model/roberti.py).
_ROBERTI = dict(embedding_dim=16, hidden_size=512, num_layers=4, dropout=0.2, mlp_hidden=128, decoder="roberti",
                alphabet=string.printable)
VARIANTS.update({
    "roberti_eda": Variant("roberti_eda", PartsConfig(**_ROBERTI), False, False, 1),  # EDA: no copy
    # EDA_C: + the copy of Eq. 7-9 (the attention itself, shifted)
    "roberti_eda_c": Variant("roberti_eda_c", PartsConfig(**_ROBERTI, copy="intersection"), False, False, 1),
    # EDA_S: the switching GRUs (sec. 2.3) without the copy; EDA_CS: with it
    "roberti_eda_s": Variant("roberti_eda_s", PartsConfig(**_ROBERTI, encoder="roberti_switch"), False, False, 1),
    "roberti_eda_cs": Variant("roberti_eda_cs", PartsConfig(**_ROBERTI, encoder="roberti_switch", copy="intersection"),
                              False, False, 1),
})
