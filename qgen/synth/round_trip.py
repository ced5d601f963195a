"""The round-trip filter: parse each generated question back and keep the pairs whose question
still says its logical form (GAZP's cycle consistency, Zhong et al. 2020).

A parser (``qgen.parse``, the generator's skeleton trained question -> logical form) judges each
pair by one rule, chosen per logical-form type and recorded in the dataset card:

- ``exact``: a parse among the ``k`` best equals the input logical form in canonical form
  (``qgen.lf_canonical``: variables renamed, WikiSQL conditions as a set);
- ``score``: the parser's length-normalised log-probability of the input logical form given the
  question (forced decoding, one batched pass) is at least ``threshold``; by default the threshold
  stored with the parser, the 5th percentile of the scores of its held-out real pairs;
- ``token``: the same forced decoding, but the least probable token of the logical form must be at
  least as probable as the 5th percentile of that minimum over the held-out real pairs. A question
  that drops a constraint's name or inverts a comparison makes one or two tokens of a long query
  improbable, which the mean over 60 tokens hides and the minimum shows.

- ``answers`` (SQL sampled from tables): as ``exact``, and a parse that differs only in the column
  a COUNT counts also counts when it runs on the input's table to the input's answers over the same
  rows (``qgen.synth.answer_check``, which says why no more); the tables are those the run samples
  from (``--from-tables``). A pair whose input has no answers is judged by ``exact`` alone, and a
  run without tables runs (and records) ``exact``. SPARQL parses are not executed: entity names
  stand for the entity ids in the model's tokens, so a parse cannot be turned back into a query over
  the graph in general.

Exact parsing of long SPARQL is rare for a small parser, so an exact-only rule would reject nearly
every SPARQL pair; ``DEFAULT_RULES`` holds the rule per type chosen from the audit and the
downstream figures (see ``benchmarks/results/downstream`` and the comment above it).

A question the parser cannot parse is a ``round_trip`` reject with an empty parse, never an error.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import torch

from qgen.lf_canonical import same_logical_form
from qgen.parse import Parser

RULES = ("exact", "score", "token", "answers")
ANSWERS_LF_TYPES = ("sql",)  # the answers rule runs parses: SQL over tables only
_AGGREGATE = {"score": "mean", "token": "min"}
_CALIBRATION_KEY = {"score": "threshold", "token": "threshold_min"}
THRESHOLD_RULES = tuple(_CALIBRATION_KEY)  # the rules that take a floor (--round-trip-threshold RULE=FLOOR)
# Measured (benchmarks/README.md, "Downstream and round trip"). SPARQL: on the demo graph corpus the
# token rule kept 253 of 286 pairs with 98.0% passing the faithfulness audit, score 271 (92.3%), exact
# 152 (99.3%: an exact parse of a long query is rare). SQL: exact, the rule whose kept pairs pass the
# audit best (demo tables: 107 of 180 kept, 100%, and 105 of 176, 95.2%, in another run; WikiSQL with a
# parser trained on 1,429 pairs: 1,586 of 11,998, 99.9%, against 41% for score and 51% for token). Downstream (a WikiSQL parser trained on the
# 1,429 labels plus the kept pairs, questions chosen among 8 candidates, parsers selected on validation
# accuracy) score is ahead of exact by 1.3 points mixed in and by 2.0-2.4 points when the parser is
# pre-trained on the mixture and fine-tuned on the labels (16.40% / 16.73% over two fine-tuning seeds
# against 14.36%), about the spread of the labels-only parser over three seeds (2.4 points); within the
# spread, the audit decides (exact's kept pairs: 99.9% pass, score's: 70.6%). answers is exact plus
# the parses that differ from the logical form only by a selected column that changes nothing: it
# keeps what exact keeps and more at the same audit pass rate (demo tables: 32 of 158 kept, 100%,
# against 27, 100%), and is exact where the inputs have no answers or the run no tables (WikiSQL).
DEFAULT_RULES: dict[str, str] = {"sparql": "token", "sql": "answers"}
# How many of the parser's best parses (its beam of 4) the exact and answers rules read. Measured
# (benchmarks/README.md, "Downstream and round trip"): on the demo tables the best 4 keep 147 and 124
# pairs where the best alone keeps 107 and 95, 98.6% and 99.2% passing the audit; on the WikiSQL
# downstream candidates 9,163 of 23,993 against 6,122, 95.4% against 98.9%, and the soup of parsers
# pre-trained on them reaches 22.00% dev exact match against 20.21% (second round; score: 22.09% with
# 76.1% passing; benchmarks/results/downstream/wikisql/runs/exact-k4-soup-t0.7).
DEFAULT_ROUND_TRIP_K = 4


def default_parser(checkpoint: str | Path) -> Path | None:
    """The parser trained beside a generator (``<run>/model/best.pt`` -> ``<run>/parser/best.pt``), or
    shipped inside an exported model folder (``<folder>/parser``), if any."""
    from qgen.exported_model import is_exported

    model = Path(checkpoint).resolve()
    if is_exported(model):
        return model / "parser" if is_exported(model / "parser") else None
    candidate = model.parent.parent / "parser" / "best.pt"
    return candidate if candidate.is_file() else None


class RoundTripSetupError(ValueError):
    """A parser that cannot judge this run's pairs (another logical-form type, other preprocessing)."""


@dataclass(frozen=True)
class RoundTripVerdict:
    keep: bool
    rule: str
    score: float  # forced-decoding score of the input LF (rule score) or the best parse's score (exact)
    parse: str  # the parser's best parse, space-joined ("" when it produced none)

    def reason(self, threshold: float | None) -> str:
        if self.rule == "unsupported":
            return "round_trip: the parser was not trained on this logical-form type"
        if self.rule == "too_long":
            return "round_trip: the logical form is longer than the parser writes (qgen.parse.PARSE_MAX_TGT_LEN)"
        if self.rule == "error":
            return f"round_trip: the parser failed: {self.parse}"
        if self.rule == "empty":
            return "round_trip: the question is empty"
        if self.rule in ("score", "token"):
            what = "log p(lf | question)" if self.rule == "score" else "least probable token's log p"
            return (f"round_trip: rule {self.rule}, {what} {self.score:.4f} below {threshold:.4f}; "
                    f"parse: {self.parse!r}")
        if self.rule == "answers":
            return (f"round_trip: rule answers, no parse matches the logical form or its answers; "
                    f"parse: {self.parse!r}")
        return f"round_trip: rule exact, no parse matches the logical form; parse: {self.parse!r}"


def check_rules(rules: Mapping[str, str]) -> dict[str, str]:
    """``rules`` ({logical-form type: rule}) if every type and rule is known and ``answers`` is given
    to SQL only; else a ``RoundTripSetupError`` naming the bad entries (before any parser loads)."""
    from parsers import LF_TYPES

    rules = {str(t): str(r) for t, r in rules.items()}
    unknown = {t: r for t, r in rules.items() if t not in LF_TYPES}
    if unknown:
        raise RoundTripSetupError(f"round-trip rule for an unknown logical-form type {unknown}; "
                                  f"types: {', '.join(LF_TYPES)}")
    bad = {t: r for t, r in rules.items() if r not in RULES}
    if bad:
        raise RoundTripSetupError(f"round-trip rule must be one of {', '.join(RULES)}, got {bad}")
    misplaced = {t: r for t, r in rules.items() if r == "answers" and t not in ANSWERS_LF_TYPES}
    if misplaced:
        raise RoundTripSetupError(f"round-trip rule answers runs SQL parses only, got {misplaced}")
    return rules


class RoundTripFilter:
    """A parser loaded once; ``judge(lf_type, questions, lfs)`` -> one verdict per pair."""

    def __init__(self, checkpoint: str | Path, rules: Mapping[str, str] | None = None,
                 k: int = DEFAULT_ROUND_TRIP_K, beam: int = 4, threshold: float | Mapping[str, float] | None = None,
                 device: str | torch.device = "cpu", batch_size: int = 64, tables: Sequence[str | Path] = ()) -> None:
        """``threshold``: one number for every scoring rule, or per rule (``{"token": -6.5}``); a rule
        without one uses the parser's calibration. ``tables``: the tables the inputs were sampled
        from (CSV/Parquet files or one SQLite database), on which the ``answers`` rule runs parses."""
        self.checkpoint = str(checkpoint)
        self.parser = Parser.load(checkpoint, device, batch_size=batch_size)
        self.rules = {**DEFAULT_RULES, **check_rules(rules or {})}
        self.tables = [str(t) for t in tables]
        self.executor = None
        if self.tables and "answers" in self.rules.values():
            from qgen.synth.answer_check import TableAnswers

            self.executor = TableAnswers.from_paths(self.tables)
        if k < 1 or beam < 1:
            raise RoundTripSetupError("--round-trip-k and the parser's beam must be >= 1")
        self.k, self.beam = k, max(beam, k)
        calibration = self.parser.payload.get("round_trip") or {}
        given = dict(threshold) if isinstance(threshold, Mapping) else {r: threshold for r in _CALIBRATION_KEY}
        unknown = sorted(set(given) - set(_CALIBRATION_KEY))
        if unknown:
            raise RoundTripSetupError(f"thresholds are for the rules {', '.join(_CALIBRATION_KEY)}, got {unknown}")
        self.thresholds = {rule: given.get(rule) if given.get(rule) is not None else calibration.get(key)
                           for rule, key in _CALIBRATION_KEY.items()}
        missing = sorted({r for r in self.rules.values() if r in self.thresholds and self.thresholds[r] is None})
        if missing:
            raise RoundTripSetupError(f"{checkpoint} has no round-trip calibration for rule(s) {', '.join(missing)}; "
                                      "give a threshold")
        self.threshold = self.thresholds["score"]

    def check_compatible(self, lf_types: Sequence[str], generator_payload: Mapping[str, Any] | None = None) -> None:
        """Refuse, before a run starts, a parser trained for other logical forms or other preprocessing,
        or one that reads more than the question (synthesis has only the question to give it)."""
        if self.parser.input_context is not None:
            raise RoundTripSetupError(
                f"the parser {self.checkpoint} reads each question with its "
                f"{self.parser.input_context.replace('_', ' ')}, which synthesis cannot give it; "
                "use a parser trained on questions alone (qgen train --task parse)")
        missing = sorted(set(lf_types) - set(self.parser.lf_types))
        if missing:
            raise RoundTripSetupError(
                f"the parser {self.checkpoint} was trained on {', '.join(self.parser.lf_types) or 'unknown'} "
                f"logical forms and cannot judge {', '.join(missing)} ones; train a parser on them "
                "(qgen train --task parse) or synthesize without --parser")
        if generator_payload is not None:
            ours = self.parser.payload.get("preprocessing")
            theirs = generator_payload.get("preprocessing")
            if ours is not None and theirs is not None and ours != theirs:
                raise RoundTripSetupError(f"the parser and the generator were trained with different preprocessing "
                                          f"settings ({ours} against {theirs}); train them on the same Parquet")

    def settings(self) -> dict[str, Any]:
        """What the dataset card records."""
        # the rules as they run: answers without tables is exact (and so recorded: a corpus begun
        # before answers became the SQL default resumes unless it samples tables)
        rules = {t: ("exact" if r == "answers" and self.executor is None else r) for t, r in self.rules.items()}
        return {"parser": self.checkpoint, "rules": rules, "k": self.k, "beam": self.beam,
                "threshold": self.threshold, "thresholds": dict(self.thresholds),
                "calibration": self.parser.payload.get("round_trip"),
                **({"tables": list(self.tables)} if self.executor is not None else {})}

    def judge(self, lf_type: str, questions: Sequence[Sequence[str]], lfs: Sequence[Sequence[str]],
              answers: Sequence[Sequence[str]] | None = None) -> list[RoundTripVerdict]:
        """One verdict per (question tokens, LF tokens) pair of one logical-form type; a logical form
        longer than the parser writes is rejected as such (rule ``too_long``), not scored truncated.
        ``answers``: each input's answers, where it came with them (the ``answers`` rule)."""
        if not questions:
            return []
        fits = [i for i, lf in enumerate(lfs) if len(lf) < self.parser.max_len]
        if len(fits) < len(lfs):
            judged = dict(zip(fits, self.judge(lf_type, [questions[i] for i in fits], [lfs[i] for i in fits],
                                               [answers[i] for i in fits] if answers is not None else None)))
            return [judged.get(i, RoundTripVerdict(False, "too_long", float("nan"), "")) for i in range(len(lfs))]
        rule = self.rules.get(lf_type, "score")
        if rule == "answers" and self.executor is None:
            rule = "exact"
        if rule in ("exact", "answers"):
            out = []
            parses = self.parser.parse(questions, beam=self.beam, k=self.k)
            for i, (found, lf) in enumerate(zip(parses, lfs)):
                hit = any(same_logical_form(tokens, lf, lf_type) for tokens, _ in found)
                if not hit and rule == "answers" and answers is not None:
                    hit = any(self.executor.answer_equivalent(tokens, lf, answers[i]) for tokens, _ in found)
                shown = " ".join(found[0][0]) if found else ""
                out.append(RoundTripVerdict(hit, rule, found[0][1] if found else float("-inf"), shown))
            return out
        scores = self.parser.score(questions, lfs, _AGGREGATE[rule])
        threshold = self.thresholds[rule]
        failed = [i for i, s in enumerate(scores) if s < threshold]
        # Only a rejected pair shows its parse (greedy): the reject row names what the parser read.
        parses = dict(zip(failed, self.parser.parse([questions[i] for i in failed], beam=1))) if failed else {}
        return [RoundTripVerdict(i not in parses, rule, s, " ".join(parses[i][0][0]) if parses.get(i) else "")
                for i, s in enumerate(scores)]



@dataclass(frozen=True)
class RoundTripOptions:
    """What a shard needs to build its ``RoundTripFilter`` on any process (picklable)."""

    checkpoint: str
    rules: tuple[tuple[str, str], ...] = ()
    k: int = DEFAULT_ROUND_TRIP_K
    threshold: float | tuple[tuple[str, float], ...] | None = None  # one number, or (rule, value) pairs
    device: str = "cpu"  # the generator's device: the parse is one more batched search beside it
    tables: tuple[str, ...] = ()  # the run's tables (--from-tables), on which the answers rule runs parses

    def __post_init__(self) -> None:  # rules as hashable pairs, whatever the caller passed (a dict, lists)
        rules = check_rules(dict(self.rules))  # refused here, before a run starts, not in a shard
        object.__setattr__(self, "rules", tuple(sorted(rules.items())))
        # absolute, so that a worker in another folder (a Dask cluster's) opens the same files
        object.__setattr__(self, "tables", tuple(str(Path(t).resolve()) for t in self.tables))
        if isinstance(self.threshold, (dict, list, tuple)):
            pairs = self.threshold.items() if isinstance(self.threshold, dict) else self.threshold
            object.__setattr__(self, "threshold", tuple(sorted((str(r), float(v)) for r, v in pairs)))

    def build(self) -> RoundTripFilter:
        threshold = dict(self.threshold) if isinstance(self.threshold, tuple) else self.threshold
        return RoundTripFilter(self.checkpoint, dict(self.rules), k=self.k, threshold=threshold, device=self.device,
                               tables=self.tables)


_filters: dict[RoundTripOptions, RoundTripFilter] = {}  # per process: the last parser loaded


def cached_filter(options: RoundTripOptions) -> RoundTripFilter:
    if options not in _filters:
        _filters.clear()
        _filters[options] = options.build()
    return _filters[options]


def judge_pairs(judge: RoundTripFilter, pairs: Sequence[Any]) -> list[RoundTripVerdict]:
    """Verdicts for generated pairs (``PairRow``s) of any mix of logical-form types, in order; a pair
    of a type the parser was not trained on is rejected with an empty parse."""
    verdicts: list[RoundTripVerdict | None] = [None] * len(pairs)
    by_type: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        if not pair.question.split():  # nothing to parse: the parser would read it as one unknown word
            verdicts[i] = RoundTripVerdict(False, "empty", float("nan"), "")
            continue
        by_type.setdefault(pair.lf_type, []).append(i)
    for lf_type, indices in by_type.items():
        if lf_type not in judge.parser.lf_types:
            for i in indices:
                verdicts[i] = RoundTripVerdict(False, "unsupported", float("nan"), "")
            continue
        try:
            found = judge.judge(lf_type, [pairs[i].question.split() for i in indices],
                                [pairs[i].lf_tokens for i in indices], [pairs[i].answers for i in indices])
        except Exception as err:  # e.g. out of memory: these pairs become rejects, the run goes on
            reason = " ".join(f"{type(err).__name__}: {err}".split())
            found = [RoundTripVerdict(False, "error", float("nan"), reason) for _ in indices]
        for i, verdict in zip(indices, found):
            verdicts[i] = verdict
    return verdicts  # type: ignore[return-value]


def round_trip_statistics(verdicts: Sequence[RoundTripVerdict]) -> dict[str, Any]:
    stats: dict[str, Any] = {"judged": len(verdicts), "kept": 0, "removed": 0, "by_rule": {}}
    for v in verdicts:
        stats["kept" if v.keep else "removed"] += 1
        rule = stats["by_rule"].setdefault(v.rule, {"judged": 0, "kept": 0})
        rule["judged"] += 1
        rule["kept"] += int(v.keep)
    return stats


def merge_counts(parts: Iterable[dict[str, Any]], total: dict[str, Any]) -> dict[str, Any]:
    """Add per-shard counts (nested dicts of numbers) into ``total``."""
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict):
                merge_counts([value], total.setdefault(key, {}))
            elif isinstance(value, (int, float)):
                total[key] = total.get(key, 0) + value
    return total
