"""One frozen, typed configuration of a corpus run: how questions are decoded, filtered, sharded and
seeded. ``qgen synthesize`` builds it from its options (or a ``--config run.yaml`` file) and the
synthesize flows from their parameters, both through ``SynthesisConfig.build``; ``synthesize``
takes it whole, hands ``writer_options()`` to the ``QuestionWriter`` and records the resolved
values in the corpus manifest's ``settings``.
"""
from __future__ import annotations

import math

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from qgen.synth.filter import FilterThresholds
from qgen.synth.round_trip import RoundTripOptions


@dataclass(frozen=True)
class SynthesisConfig:
    beam: int = 4
    # Of the beam's N best questions, the first that passes the faithfulness audit and the over-copy filter
    # is written (else the first that passes the audit, else the best; with a round-trip parser, the first
    # of up to three passing ones that the filter keeps and the parser reads back); None: all
    # of the beam. On the demo tables it lifts the kept pairs' audit pass rate from 74.8%
    # to 87.9% at the same generation time (benchmarks/README.md, "Downstream and round trip").
    candidates: int | None = None
    # T > 0: the candidates are drawn from the model at temperature T (in the order drawn) instead of taken
    # from the beam: more varied questions, for a corpus that trains a parser (benchmarks/README.md,
    # "Downstream and round trip": sampled at 0.7, the WikiSQL downstream parser reached 20.25% against 16.96%
    # from the beam's candidates, means of two fine-tuning seeds).
    sampling: float = 0.0
    shard_size: int = 1000
    seed: int = 1  # of the samplers' draws and of each shard's generation (torch.manual_seed per shard)
    thresholds: FilterThresholds = field(default_factory=FilterThresholds)  # the over-copy filter
    round_trip: RoundTripOptions | None = None  # the round-trip filter's parser and rules; None: off
    no_repeat: bool = False  # no word right after itself (qgen.decode.block_repeat)
    max_tokens: int | None = None  # padded source tokens a generation batch; None: what fits the device
    batch_size: int | None = None  # logical forms a generation batch at most; None: no limit
    device: str = "auto"
    alpha: float = 1.0  # length normalisation of the beam's scores
    max_len: int = 40  # question tokens at most
    max_src_len: int = 400  # logical-form tokens at most (longer ones are rejected)
    tokenize_timeout_s: float | None = 10.0  # per logical form (a pathological query is rejected)

    def __post_init__(self) -> None:
        for name in ("beam", "shard_size", "max_len", "max_src_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        from qgen.decode import MAX_BEAM

        if self.beam > MAX_BEAM:
            raise ValueError(f"beam must be at most {MAX_BEAM}, got {self.beam}")
        if not math.isfinite(self.sampling) or self.sampling < 0:
            raise ValueError(f"sampling is a finite temperature (0: beam search), got {self.sampling}")
        if self.candidates is not None and not self.sampling and not 1 <= self.candidates <= self.beam:
            raise ValueError(f"candidates must be between 1 and the beam size {self.beam}, got {self.candidates}")
        for name in ("max_tokens", "batch_size"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1 (or unset), got {getattr(self, name)}")
        if self.seed < 0:
            raise ValueError(f"seed must be 0 or more, got {self.seed}")

    @classmethod
    def build(cls, max_overcopy: int = 0, max_repeated_ngrams: int = 0, min_score: float | None = None,
              round_trip: RoundTripOptions | Mapping[str, Any] | None = None, **fields: Any) -> "SynthesisConfig":
        """From flat options, as a command line or a flow's parameters give them: the over-copy
        filter's three thresholds, the round trip as options or their dict, the rest by field name."""
        if isinstance(round_trip, Mapping):
            round_trip = RoundTripOptions(**round_trip)
        thresholds = FilterThresholds(max_overcopy=max_overcopy, max_repeated_ngrams=max_repeated_ngrams,
                                      min_score=min_score)
        return cls(thresholds=thresholds, round_trip=round_trip, **fields)

    @property
    def candidate_count(self) -> int:
        """The questions of the beam (or the draws) tried against the audit."""
        return self.beam if self.candidates is None else self.candidates

    def writer_options(self) -> dict[str, Any]:
        """The ``QuestionWriter`` keyword arguments this configuration sets."""
        return {"beam": self.beam, "alpha": self.alpha, "max_len": self.max_len, "batch_size": self.batch_size,
                "max_tokens": self.max_tokens, "max_src_len": self.max_src_len, "device": self.device,
                "tokenize_timeout_s": self.tokenize_timeout_s, "no_repeat": self.no_repeat,
                "candidates": self.candidate_count, "sampling": self.sampling,
                "ignore_tokens": self.thresholds.ignore_tokens}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
