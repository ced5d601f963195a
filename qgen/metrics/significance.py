"""Is one system's corpus BLEU really above another's? A paired test on the same test questions.

Both parts are sacrebleu's own (``sacrebleu.significance.PairedTest``):
- the p-value from paired approximate randomization (Riezler and Maxwell 2005; sacrebleu's
  recommended test): ``trials`` times, each question's two outputs are swapped with probability 1/2,
  and p is the share of trials whose absolute BLEU difference exceeds the observed one. It is
  two-sided: it asks whether the two differ, not which is better, and swapping the systems gives the
  same p. (sacrebleu's paired bootstrap p was our first choice; it is about one-sided in the observed
  direction, half the two-sided value, so we take the randomization p.)
- each system's 95% interval from ``bootstrap`` resamples of the test questions (sacrebleu's
  half-width of the percentile interval around the resampled mean).
Both measure how much a ranking could owe to which questions happen to be in the test set, not how
much it owes to the training run's seed: that needs runs with other seeds (``qgen_bench.py --seed``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

Tokens = Sequence[str]


@dataclass(frozen=True)
class PairedSignificance:
    system: str
    baseline: str
    system_bleu: float  # corpus BLEU on the whole test set, 0-100
    baseline_bleu: float
    system_ci: float  # half-width of the system's 95% bootstrap interval
    baseline_ci: float
    p_value: float  # two-sided: the chance of a difference at least this large were the two alike
    trials: int
    bootstrap: int
    signature: str

    @property
    def difference(self) -> float:
        return self.system_bleu - self.baseline_bleu


def paired_significance(system: tuple[str, Sequence[Tokens]], baseline: tuple[str, Sequence[Tokens]],
                        references: Sequence[Tokens], trials: int = 10_000, bootstrap: int = 1000,
                        seed: int = 12345) -> PairedSignificance:
    """Compare ``system`` = (name, tokenized hypotheses) with ``baseline`` on one reference each.

    Tokens are joined with spaces and scored with ``tokenize='none'``, as ``qgen.metrics.bleu`` does.
    Raises ValueError when the three lists differ in length, or on a count or seed below 1 (sacrebleu
    treats seed 0 as "unseeded").
    """
    (name, hyps), (base_name, base_hyps) = system, baseline
    if not len(hyps) == len(base_hyps) == len(references):
        raise ValueError(f"a paired test needs one hypothesis per reference from each system: {name} has "
                         f"{len(hyps)}, {base_name} {len(base_hyps)}, references {len(references)}")
    for label, value in (("trials", trials), ("bootstrap", bootstrap), ("seed", seed)):
        if value < 1:
            raise ValueError(f"{label} must be at least 1, got {value}")
    join = lambda rows: [" ".join(row) for row in rows]  # noqa: E731
    identical = join(hyps) == join(base_hyps)  # sacrebleu gives them its smallest p (its strict '>')
    # sacrebleu reads its random seed from the environment only; set it for this call.
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        test = PairedTest([(base_name, join(base_hyps)), (name, join(hyps))], {"BLEU": BLEU(tokenize="none", force=True)},
                          [join(references)], test_type="ar", n_samples=trials, n_ar_confidence=bootstrap)
        signatures, scores = test()
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous
    base_result, result = scores["BLEU"]
    return PairedSignificance(system=name, baseline=base_name, system_bleu=float(result.score),
                              baseline_bleu=float(base_result.score), system_ci=float(result.ci),
                              baseline_ci=float(base_result.ci), p_value=1.0 if identical else float(result.p_value),
                              trials=trials, bootstrap=bootstrap, signature=str(signatures["BLEU"]))
