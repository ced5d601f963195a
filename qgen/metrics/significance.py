"""Is one system's corpus BLEU really above another's? Paired bootstrap resampling (Koehn 2004).

sacrebleu's own implementation (``sacrebleu.significance.PairedTest``, the method of Moses'
``bootstrap-hypothesis-difference-significance.pl``): the test set is resampled with replacement
``samples`` times, both systems are scored on each resample, and the p-value is the share of
resamples whose (centred) score difference is at least the observed one. It measures how much the
ranking could owe to which questions happen to be in the test set, not how much it owes to the
training run's seed: that needs runs with other seeds (``qgen_bench.py --seed``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

Tokens = Sequence[str]


@dataclass(frozen=True)
class PairedBootstrap:
    system: str
    baseline: str
    system_bleu: float  # corpus BLEU on the whole test set, 0-100
    baseline_bleu: float
    system_ci: float  # half-width of the system's 95% bootstrap interval
    baseline_ci: float
    p_value: float  # chance of a difference at least this large if the two were equally good
    samples: int
    signature: str

    @property
    def difference(self) -> float:
        return self.system_bleu - self.baseline_bleu


def paired_bootstrap(system: tuple[str, Sequence[Tokens]], baseline: tuple[str, Sequence[Tokens]],
                     references: Sequence[Tokens], samples: int = 1000, seed: int = 12345) -> PairedBootstrap:
    """Compare ``system`` = (name, tokenized hypotheses) with ``baseline`` on one reference each.

    Tokens are joined with spaces and scored with ``tokenize='none'``, as ``qgen.metrics.bleu`` does.
    Raises ValueError when the three lists differ in length.
    """
    (name, hyps), (base_name, base_hyps) = system, baseline
    if not len(hyps) == len(base_hyps) == len(references):
        raise ValueError(f"paired bootstrap needs one hypothesis per reference from each system: {name} has "
                         f"{len(hyps)}, {base_name} {len(base_hyps)}, references {len(references)}")
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    join = lambda rows: [" ".join(row) for row in rows]  # noqa: E731
    identical = join(hyps) == join(base_hyps)  # sacrebleu gives them its smallest p (its '>' test)
    metric = BLEU(tokenize="none", force=True)
    # sacrebleu reads its resampling seed from the environment only; set it for this call.
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        test = PairedTest([(base_name, join(base_hyps)), (name, join(hyps))], {"BLEU": metric},
                          [join(references)], test_type="bs", n_samples=samples)
        signatures, scores = test()
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous
    base_result, result = scores["BLEU"]
    return PairedBootstrap(system=name, baseline=base_name, system_bleu=float(result.score),
                           baseline_bleu=float(base_result.score), system_ci=float(result.ci),
                           baseline_ci=float(base_result.ci), p_value=1.0 if identical else float(result.p_value), samples=samples,
                           signature=str(signatures["BLEU"]))
