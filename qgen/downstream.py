"""Downstream benchmark: does a qgen corpus make a semantic parser better? (WikiSQL and WebQSP, low-resource)

The setting of Guo et al. 2018: a tenth of the labelled data. Splits (WikiSQL's protocol here, its
train split being absent): the training split is the official test split minus a table-disjoint 10%
held out for validation (``qgen.benchmark.wikisql_valid_ids``), reported on the official dev split.

1. ``low``: a seeded ``low_fraction`` of the training split's questions, the only labelled data.
2. A question generator and a parser are trained on ``low`` alone.
3. Logical forms are drawn from the training split's tables (``qgen.samplers.wikisql_pool``: the
   data has headers but no cell values, so condition values are those that the training split's
   queries use on that table), and the generator writes their questions. WebQSP
   (``dataset="webqsp"``; train minus a seeded tenth of its questions, tested on the official test
   split): Freebase is not at hand, so the synthetic queries are the ``low`` queries with their topic
   entity swapped for another ``low`` query's topic in the same role of the same relation
   (``qgen.samplers.seed_substitution``).
4. Each candidate pair is judged by the over-copy filter, by the round-trip filter (the parser of
   step 2, both rules: ``score`` and ``exact``) and by the faithfulness audit.
5. A parser is trained per row on ``low`` plus a synthetic set and evaluated on dev (logical-form
   exact match as WikiSQL defines it: sel, agg and the set of conditions; for SPARQL the canonical
   tokens, variables renamed in order):
   ``low``, ``low_synthetic_unfiltered``, ``_overcopy``, ``_round_trip_score`` / ``_token`` /
   ``_exact`` (each round-trip rule; the report's ``low_synthetic_round_trip`` is the row of the
   default rule for SQL), ``_both`` (over-copy and the default rule), and ``full`` (the whole
   training split, the ceiling); plus ``curve_<n>`` rows, one filter (``curve_filter``, by default
   ``both``) on the first ``n`` synthetic candidates, ``finetune_<row>`` rows: a synthetic row's parser trained further on ``low`` alone (pre-training
   on the mixture, then fine-tuning on the real labels, so the real pairs have the last word),
   ``finetune_clean_<row>`` rows (the same, fine-tuned on the labels plus the pairs the exact rule keeps), and
   ``<row>_seed<n>`` rows: a row's parser trained again with another seed (same split, same synthetic
   set), which measures the run-to-run spread the differences must exceed, and ``soup_finetune_<row>``
   rows: the weight average of the ``finetune_<row>`` parsers of every seed run (a model soup, run
   after them; ``qgen.weight_soup``).

Every WikiSQL parser reads the question followed by its table's header (``qgen.table_context``), unless
``parser_header`` is off: dev tables are not training tables, and a parser that sees the question
alone can only guess their column names.

Every step keeps its output under ``work_dir`` and is skipped when it is there, so an interrupted
run resumes; rows can be run apart (``rows``) and the report collects whatever rows have finished.
"""
from __future__ import annotations

import json
import random
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from qgen.data import Pair
from qgen.io.output_folder import write_file
from qgen.model import VARIANTS, ModelConfig
from qgen.parse import Parser, evaluate_parser, task_metadata
from qgen.train import TrainConfig, train
from qgen.version import code_version

if TYPE_CHECKING:  # the samplers import the parsers: only where a corpus is drawn
    from qgen.samplers import SamplerStats

FILTER_ROWS = ("low_synthetic_unfiltered", "low_synthetic_overcopy", "low_synthetic_round_trip_score",
               "low_synthetic_round_trip_token", "low_synthetic_round_trip_exact", "low_synthetic_both")
ROWS = ("low", *FILTER_ROWS, "full")
LF_TYPES = {"wikisql": "sql", "webqsp": "sparql"}
SELECT_ON = ("loss", "accuracy")
SPLITS = {"wikisql": ("train: official WikiSQL test minus a table-disjoint 10% for validation; low: a seeded share of the "
         "train questions; synthetic logical forms drawn from the train tables with condition values from the "
         "train queries (no cell values in the data); test: official dev"),
          "webqsp": ("train: WebQSP train minus a seeded tenth of its questions for validation; low: a seeded share of "
                     "the train questions; synthetic logical forms: the low queries with their topic entity swapped for "
                     "another low query's topic in the same role of the same relation (no Freebase to execute them); "
                     "test: official test, first parse per question")}


@dataclass(frozen=True)
class DownstreamConfig:
    low_fraction: float = 0.1
    synthetic: int = 4000  # candidate logical forms drawn (the largest synthetic size)
    curve: tuple[int, ...] = (1000, 2000)  # smaller synthetic sizes for the best filter
    curve_filter: str = "low_synthetic_both"  # the filter row whose rule the curve rows apply
    seed: int = 1
    hidden: int = 256
    embedding: int = 128
    layers: int = 1
    dropout: float = 0.2
    learning_rate: float = 2e-3
    batch_size: int = 32
    generator_epochs: int = 25
    parser_epochs: int = 20
    max_seconds: float | None = 1500.0  # per training run (resumable)
    generator_beam: int = 4
    # N > 1: of the generator's N best questions (the beam widened to N if smaller), the first that passes
    # the faithfulness audit is the candidate (qgen.synth.generator.QuestionWriter's ``candidates``).
    generator_candidates: int = 1
    # N > 1: each logical form gives up to N pairs, the chosen question and the next distinct candidates
    # that pass the audit too (Guo et al. 2018 find diverse questions help the parser); each is judged
    # by the round-trip rules on its own.
    questions_per_lf: int = 1
    # T > 0: the generator's candidates are drawn at temperature T instead of taken from the beam
    # (qgen.decode.sample: sampled back-translations keep the variety of real questions).
    generator_sampling: float = 0.0
    eval_beam: int = 1
    parser_header: bool = True  # a WikiSQL parser reads question + table header (qgen.table_context)
    dataset: str = "wikisql"  # or "webqsp"
    # Which epoch of a row's parser is kept: the lowest validation loss, or the best validation
    # logical-form exact match (greedy decoding of the validation split after every epoch).
    select_on: str = "loss"
    # A parser checkpoint that judges the candidates instead of the ``low`` row's parser, for instance
    # the fine-tuned parser of an earlier run over the same candidates: a second round of iterated
    # back-translation (Hoang et al. 2018), where a better parser filters the same synthetic questions.
    # It is copied into the work folder and calibrated there on the validation split.
    judge_with: str | None = None
    # The exact rule keeps a question when its logical form is among the judge's K best parses (as
    # ``qgen synthesize --round-trip-k K``; the default of both: qgen.synth.round_trip.DEFAULT_ROUND_TRIP_K,
    # 1 before); the scoring rules do not depend on it.
    round_trip_k: int = 4

    def __post_init__(self) -> None:
        if self.dataset not in LF_TYPES:
            raise ValueError(f"the downstream benchmark runs on {' or '.join(LF_TYPES)}, got {self.dataset!r}")
        if self.curve_filter not in FILTER_ROWS:
            raise ValueError(f"curve_filter must be one of {', '.join(FILTER_ROWS)}, got {self.curve_filter!r}")
        if self.generator_sampling < 0:
            raise ValueError(f"generator_sampling is a temperature (0: beam search), got {self.generator_sampling}")
        if not 1 <= self.questions_per_lf <= max(self.generator_candidates, 1):
            raise ValueError(f"questions_per_lf must be between 1 and generator_candidates "
                             f"({self.generator_candidates}), got {self.questions_per_lf}")
        if self.select_on not in SELECT_ON:
            raise ValueError(f"select_on must be {' or '.join(SELECT_ON)}, got {self.select_on!r}")
        if self.round_trip_k < 1:
            raise ValueError(f"round_trip_k is how many best parses the exact rule reads (>= 1), got {self.round_trip_k}")

    @property
    def lf_type(self) -> str:
        return LF_TYPES[self.dataset]

    @property
    def reads_header(self) -> bool:
        """Whether the parser reads the table header after the question (WikiSQL only)."""
        return self.parser_header and self.dataset == "wikisql"

    def model(self, name: str) -> ModelConfig:
        return replace(VARIANTS[name].model, hidden_size=self.hidden, embedding_dim=self.embedding,
                       num_layers=self.layers, dropout=self.dropout)

    def train_config(self, epochs: int, max_tgt_len: int, seed: int | None = None) -> TrainConfig:
        return TrainConfig(epochs=epochs, batch_size=self.batch_size, learning_rate=self.learning_rate,
                           teacher_forcing=1.0, seed=self.seed if seed is None else seed,
                           max_seconds=self.max_seconds, max_tgt_len=max_tgt_len)


def seeded_row(row: str) -> tuple[str, int | None]:
    """``"low_seed2"`` -> ``("low", 2)``: a row trained again with another parser seed; else ``(row, None)``."""
    base, sep, seed = row.rpartition("_seed")
    return (base, int(seed)) if sep and seed.isdigit() else (row, None)


@dataclass
class Splits:
    low: list  # RawExample-derived Pairs (LF -> question)
    train: list
    valid: list
    dev: list
    train_raw: list = field(default_factory=list)  # WikiSQL RawExamples of the training split
    headers: dict = field(default_factory=dict)  # example id -> its table's header (parser_header only)

    def parser_pairs(self, pairs: Sequence[Pair]) -> list[Pair]:
        """LF -> question pairs as the parser reads them: question (+ header) -> LF."""
        return [parser_pair(p, self.headers.get(p.id) if self.headers else None) for p in pairs]


def parser_pair(pair: Pair, header: Sequence[str] | None) -> Pair:
    """One LF -> question pair in the parser's direction, its question followed by ``header`` if given."""
    from qgen.table_context import with_header

    return Pair(pair.id, pair.tgt if header is None else with_header(pair.tgt, header), pair.src, pair.group)


def load_splits(prep_dir: Path, cfg: DownstreamConfig, data_dir: Path | None) -> Splits:
    from qgen.benchmark import dataset_pairs
    from qgen.datasets.registry import load_dataset

    train_pairs, valid_pairs, dev_pairs = dataset_pairs(cfg.dataset, prep_dir, True, data_dir)
    order = sorted(train_pairs, key=lambda p: p.id)
    random.Random(cfg.seed).shuffle(order)
    low = sorted(order[: round(cfg.low_fraction * len(order))], key=lambda p: p.id)
    train_ids = {p.id for p in train_pairs}
    # WikiSQL's training split is carved from its official test split (see the module docstring)
    raw_split = "test" if cfg.dataset == "wikisql" else "train"
    raw = [r for r in load_dataset(cfg.dataset, data_dir, raw_split) if r.id in train_ids]
    headers = {}
    if cfg.reads_header:
        from qgen.table_context import wikisql_headers_by_id

        headers = wikisql_headers_by_id(data_dir)
        missing = [p.id for p in (*train_pairs, *valid_pairs, *dev_pairs) if p.id not in headers]
        if missing:
            raise ValueError(f"{len(missing)} WikiSQL examples have no table header (first: {missing[0]}); "
                             "run with --question-only")
    return Splits(low, train_pairs, valid_pairs, dev_pairs, raw, headers)


def run_downstream(prep_dir: str | Path, work_dir: str | Path, results_dir: str | Path,
                   cfg: DownstreamConfig = DownstreamConfig(), data_dir: Path | None = None,
                   rows: Sequence[str] | None = None, log: Callable[[str], None] = print) -> dict:
    """Run the benchmark's steps (see the module docstring); returns the collected metrics."""
    from qgen.benchmark import wikisql_valid_ids

    prep, work = Path(prep_dir), Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    if not (prep / "counts.json").exists():
        from qgen.preprocess import preprocess_dataset

        log(preprocess_dataset(cfg.dataset, prep, data_dir=data_dir).summary())
    if cfg.dataset == "wikisql":
        wikisql_valid_ids(prep, data_dir)
    splits = load_splits(prep, cfg, data_dir)
    log(f"low {len(splits.low)} / train {len(splits.train)} / valid {len(splits.valid)} / dev {len(splits.dev)}")
    wanted = list(rows) if rows else [*ROWS, *(f"curve_{n}" for n in cfg.curve)]
    _check_config(work, cfg)
    timings = _read_json(work / "timings.json", {})
    needs_synthetic = any(r != "low" and r != "full" for r in wanted)
    if needs_synthetic:
        generator = _train_once(work, "generator", splits.low, splits.valid, cfg, "generate", timings, log)
        # The round-trip parser is the ``low`` row's parser: trained on the same labels, calibrated on valid.
        parser = _train_once(work, "low", splits.parser_pairs(splits.low), splits.parser_pairs(splits.valid), cfg,
                             "parse", timings, log, calibrate_on=splits.parser_pairs(splits.valid))
        judge = _judge_parser(work, cfg, splits) if cfg.judge_with else parser
        _synthesize(work, splits, generator, judge, cfg, timings, log, data_dir)
    for row in wanted:
        if row.startswith(SOUP):
            _soup_row(row, work, splits, cfg, log)
            continue
        if (work / "rows" / row / "result.json").exists():
            continue
        base, seed = seeded_row(row)
        init_from = None
        if base.startswith(FINETUNE):  # the synthetic row's parser, trained further on the real labels
            base, init_from = _finetuning(row, base, work)
        train_set = _row_training_set(base, splits, work, cfg)
        started = time.perf_counter()
        checkpoint = _train_once(work, row, train_set, splits.parser_pairs(splits.valid), cfg, "parse", timings, log,
                                 seed=seed, init_from=init_from)
        _evaluate_row(work, row, checkpoint, {"train_pairs": len(train_set)}, started, splits, cfg, log)
    _merge_timings(work, timings)
    return write_report(work, results_dir, cfg, splits, _read_json(work / "timings.json", {}))


def _train_once(work: Path, name: str, train_pairs: Sequence[Pair], valid_pairs: Sequence[Pair],
                cfg: DownstreamConfig, task: str, timings: dict, log: Callable[[str], None],
                calibrate_on: Sequence[Pair] | None = None, seed: int | None = None,
                init_from: str | None = None) -> Path:
    """Train the generator (``work/generator``) or a row's parser (``work/rows/<name>``) unless done."""
    from qgen.checkpoint import read_payload
    from qgen.parse import PARSE_MAX_TGT_LEN, calibrate
    from qgen.table_context import TABLE_HEADER

    out = work / "generator" if task == "generate" else work / "rows" / name
    best = out / "best.pt"
    if (out / "done.json").exists():
        if calibrate_on is not None and "round_trip" not in read_payload(best):
            calibrate(best, calibrate_on)
        return best
    started = time.perf_counter()
    epochs = cfg.generator_epochs if task == "generate" else cfg.parser_epochs
    # The generator: Copy + Scratchpad with the extended vocabulary (it must copy unseen values); the
    # parser: Copynet with the extended vocabulary (values and column names come from the question).
    model_cfg = cfg.model("scratchpad_extended" if task == "generate" else "copynet_extended")
    train_cfg = replace(cfg.train_config(epochs, 40 if task == "generate" else PARSE_MAX_TGT_LEN, seed),
                        init_from=init_from)
    metadata = task_metadata(task, [cfg.lf_type], True, TABLE_HEADER if task == "parse" and cfg.reads_header else None)

    def say(line: str) -> None:
        log(f"[{name}] {line}")

    if task == "parse" and cfg.select_on == "accuracy":
        done = _train_selecting_on_accuracy(out, train_pairs, valid_pairs, model_cfg, train_cfg, metadata, cfg, say)
    else:
        result = train(train_pairs, valid_pairs, model_cfg, train_cfg, out, say, metadata)
        done = {"epochs_run": result.epochs_run, "best_epoch": result.best_epoch, "device": result.device}
    if calibrate_on is not None:
        calibrate(best, calibrate_on)
    timings[name] = round(time.perf_counter() - started, 1)
    _merge_timings(work, timings)
    _write_json(out / "done.json", {**done, "seconds": timings[name]})
    return best


def _train_selecting_on_accuracy(out: Path, train_pairs: Sequence[Pair], valid_pairs: Sequence[Pair],
                                 model_cfg: ModelConfig, train_cfg: TrainConfig, metadata: dict,
                                 cfg: DownstreamConfig, log: Callable[[str], None]) -> dict:
    """A parser trained epoch by epoch, each epoch's checkpoint scored by validation logical-form exact
    match (``qgen.dev_selection``); the best one becomes ``best.pt`` (the loss-selected one is replaced)."""
    import shutil

    from qgen.dev_selection import BEST, train_selecting_on_dev

    devices: list[str] = []

    def train_to(epoch: int):
        run = train(train_pairs, valid_pairs, model_cfg, replace(train_cfg, epochs=epoch, max_seconds=None), out,
                    log, metadata)
        devices.append(run.device)
        return run

    def valid_accuracy(checkpoint: Path) -> tuple[float, list]:
        evaluation = evaluate_parser(Parser.load(checkpoint), valid_pairs, cfg.lf_type, beam=cfg.eval_beam)
        return evaluation["lf_exact_match"], evaluation["predictions"]

    state = train_selecting_on_dev(out, train_cfg.epochs, train_to, valid_accuracy, max_seconds=train_cfg.max_seconds,
                                   log=log)
    shutil.copyfile(out / BEST, out / "best.pt")
    return {"epochs_run": len(state["history"]), "best_epoch": state["best"]["epoch"],
            "device": devices[-1] if devices else None, "selected_on": "validation accuracy",
            "valid_lf_em": state["best"]["dev_score"]}


# Bumped when the round-trip judging changes, so stored candidates are judged again (1: unreachable
# logical-form tokens get the floor, qgen.parse.UNREACHABLE_LOG_PROB).
JUDGED_BY = 1


def _synthesize(work: Path, splits: Splits, generator: Path, parser: Path, cfg: DownstreamConfig, timings: dict,
                log: Callable[[str], None], data_dir: Path | None = None) -> list[dict]:
    """Draw, generate and judge the candidates once; ``work/synthetic.jsonl`` holds one per line."""
    path = work / "synthetic.jsonl"
    if path.exists():
        candidates = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        first = candidates[0] if candidates else {}
        judged = (first.get("judged_by"), first.get("judged_with"), first.get("judged_k", 1))
        if candidates and judged != (JUDGED_BY, cfg.judge_with, cfg.round_trip_k):
            _judge(candidates, parser, cfg.lf_type, timings, cfg.judge_with, cfg.round_trip_k)
            _write_lines(path, candidates)
            log(f"synthetic: {len(candidates)} candidates judged again (round-trip judging {JUDGED_BY}, "
                f"parser {cfg.judge_with or 'low'}, exact among its {cfg.round_trip_k} best parses)")
        return candidates
    from qgen.samplers import SamplerStats
    from qgen.synth.generator import QuestionWriter
    from qgen.synth.schema import PairRow

    started = time.perf_counter()
    stats = SamplerStats()
    records, header_of = _draw(splits, cfg, stats, data_dir)
    timings["sample"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    writer = QuestionWriter(generator, beam=max(cfg.generator_beam, cfg.generator_candidates), device="cpu",
                            batch_size=64, candidates=cfg.generator_candidates,
                            sampling=cfg.generator_sampling, seed=cfg.seed)
    if cfg.questions_per_lf > 1:
        writer.other_questions = {}
    results = writer.write(records)
    pairs = [r for r in results if isinstance(r, PairRow)]
    timings["generate"] = round(time.perf_counter() - started, 1)
    candidates = candidate_pairs(pairs, writer.other_questions or {}, cfg.questions_per_lf, header_of)
    _judge(candidates, parser, cfg.lf_type, timings, cfg.judge_with, cfg.round_trip_k)
    _write_json(work / "sampler.json", {"stats": asdict(stats), "drawn_kept": len(records),
                                        "generated": len(pairs), "generation_rejects": len(results) - len(pairs)})
    _write_lines(path, candidates)
    log(f"synthetic: {len(records)} logical forms drawn, {len(pairs)} generated, {len(candidates)} questions")
    return candidates


def candidate_pairs(pairs: Sequence, other_questions: dict[str, list[tuple[str, float]]], per_lf: int,
                    header_of: dict[str, list[str]]) -> list[dict]:
    """The synthetic candidates (dicts) of generated ``PairRow``s: each one's question, then up to
    ``per_lf - 1`` of its other audit-passing questions (ids ``<id>#2``, ...), side by side, so that a
    curve row's first n candidates are n pairs; each with the over-copy filter's verdict."""
    from qgen.synth.filter import OverCopyFilter

    overcopy = OverCopyFilter()
    candidates = []
    for p in pairs:
        for k, (question, score) in enumerate([(p.question, p.score), *other_questions.get(p.id, [])[: per_lf - 1]],
                                              start=1):
            candidates.append({"id": p.id if k == 1 else f"{p.id}#{k}", "logical_form": p.logical_form,
                               "lf_tokens": p.lf_tokens, "question": question, "header": header_of.get(p.id),
                               "score": score,
                               "overcopy_keep": overcopy.judge(question.split(), p.lf_tokens, score).keep})
    return candidates


def _draw(splits: Splits, cfg: DownstreamConfig, stats: SamplerStats, data_dir: Path | None) -> tuple[list, dict]:
    """The synthetic logical forms (``RawExample``) and, for WikiSQL, each one's table header by id."""
    if cfg.dataset == "webqsp":
        from qgen.samplers.seed_substitution import SeedSubstitutionConfig, substitute_among_seeds

        low_ids = {p.id for p in splits.low}
        seeds = [r for r in splits.train_raw if r.id in low_ids]
        return substitute_among_seeds(seeds, cfg.synthetic, SeedSubstitutionConfig(seed=cfg.seed), stats), {}
    from qgen.datasets.wikisql import wikisql_headers
    from qgen.samplers.wikisql_pool import ValuePool, sample_queries

    pool = ValuePool.from_examples(splits.train_raw, wikisql_headers(data_dir))
    records = list(sample_queries(pool, cfg.synthetic, seed=cfg.seed, stats=stats))
    return records, {r.id: pool.headers[json.loads(r.raw)["table_id"]] for r in records}


def _judge_parser(work: Path, cfg: DownstreamConfig, splits: Splits) -> Path:
    """``cfg.judge_with`` copied to ``work/judge/best.pt`` and calibrated there on the validation split
    (the original checkpoint is left as it is)."""
    import shutil

    from qgen.checkpoint import read_payload
    from qgen.parse import calibrate

    source = Path(cfg.judge_with)
    if not source.is_file():
        raise ValueError(f"judge_with: no parser checkpoint at {source}")
    judge = work / "judge" / "best.pt"
    if not judge.exists():  # checked before it is copied, so a wrong file leaves nothing behind
        if read_payload(source).get("task") != "parse":
            raise ValueError(f"judge_with: {source} is not a parser (qgen train --task parse)")
        judge.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, judge)
    if not (work / "judge" / "calibrated.json").exists():
        _write_json(work / "judge" / "calibrated.json",
                    {"source": str(source), **calibrate(judge, splits.parser_pairs(splits.valid))})
    return judge


def _judge(candidates: list[dict], parser: Path, lf_type: str, timings: dict, judge_with: str | None,
           k: int) -> None:
    """Each round-trip rule's verdict on every candidate (in place), timed per rule."""
    from qgen.synth.round_trip import RoundTripFilter

    from qgen.checkpoint import read_payload

    reads_header = read_payload(parser).get("input_context") is not None
    questions = [_parser_question(c, reads_header) for c in candidates]
    lfs = [c["lf_tokens"] for c in candidates]
    for rule in ("score", "token", "exact"):
        started = time.perf_counter()
        verdicts = RoundTripFilter(parser, rules={lf_type: rule}, k=k).judge(lf_type, questions, lfs)
        timings[f"round_trip_{rule}"] = round(time.perf_counter() - started, 1)
        for c, v in zip(candidates, verdicts):
            c[f"{rule}_score"], c[f"{rule}_keep"] = v.score, v.keep
            if rule == "exact":
                c["parse"] = v.parse
    for c in candidates:
        c["judged_by"], c["judged_with"], c["judged_k"] = JUDGED_BY, judge_with, k


def _parser_question(candidate: dict, reads_header: bool) -> list[str]:
    """A synthetic candidate's question as the parser reads it."""
    from qgen.table_context import with_header

    question = candidate["question"].split()
    return with_header(question, candidate["header"]) if reads_header and candidate.get("header") else question


def _write_lines(path: Path, rows: list[dict]) -> None:
    write_file(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def keep_rules(lf_type: str) -> dict[str, Callable[[dict], bool]]:
    """Which candidates each row keeps. "round_trip" and "both" use the default rule for ``lf_type``
    (qgen.synth.round_trip.DEFAULT_RULES); the other rules have rows of their own."""
    default = _default_rule(lf_type)
    return {
        "low_synthetic_unfiltered": lambda c: True,
        "low_synthetic_overcopy": lambda c: c["overcopy_keep"],
        "low_synthetic_round_trip_score": lambda c: c["score_keep"],
        "low_synthetic_round_trip_token": lambda c: c["token_keep"],
        "low_synthetic_round_trip_exact": lambda c: c["exact_keep"],
        "low_synthetic_both": lambda c: c["overcopy_keep"] and c[f"{default}_keep"],
    }


def _default_rule(lf_type: str) -> str:
    """The default rule as it runs here: the benchmark's tables have no cells, so the answers rule
    cannot run a parse and is the exact rule."""
    from qgen.synth.round_trip import DEFAULT_RULES

    rule = DEFAULT_RULES[lf_type]
    return "exact" if rule == "answers" else rule


FINETUNE = "finetune_"  # finetune_<row>: <row>'s parser fine-tuned on the low labels alone
# finetune_clean_<row>: <row>'s parser fine-tuned on the low labels plus the synthetic pairs that the
# exact rule keeps: pre-trained on many noisy pairs, then trained on the real ones and the cleanest
# synthetic ones, so the fine-tuning does not forget all that the synthetic corpus taught.
FINETUNE_CLEAN = "finetune_clean_"
CLEAN_ROW = "low_synthetic_round_trip_exact"


def _finetuning(row: str, base: str, work: Path) -> tuple[str, str]:
    """A fine-tuning row's training set (a row name) and the pre-trained parser it starts from."""
    prefix, training_set = (FINETUNE_CLEAN, CLEAN_ROW) if base.startswith(FINETUNE_CLEAN) else (FINETUNE, "low")
    pretrained_row = base[len(prefix):]
    pretrained = work / "rows" / pretrained_row
    if not (pretrained / "done.json").exists():
        raise ValueError(f"row {row} fine-tunes the parser of row {pretrained_row}: run that row first")
    return training_set, str(pretrained / "best.pt")


# soup_finetune_<row>: the uniform weight average (qgen.weight_soup) of the parsers that finetune_<row>
# trained with every parser seed run so far (finetune_<row>, finetune_<row>_seed<N>; at least two). They
# all start from <row>'s parser, which is what makes their average a model.
SOUP = "soup_"


def soup_ingredients(row: str, work: Path) -> list[str]:
    """The finished fine-tuning rows that the soup row ``row`` averages, sorted by name."""
    target = row[len(SOUP):]
    if not target.startswith(FINETUNE) or seeded_row(target)[1] is not None:
        raise ValueError(f"row {row}: a soup averages a fine-tuning row's seeds (soup_finetune_<row>)")
    # finished = evaluated: a row's done.json is written when it has trained, its result.json after dev
    names = sorted(p.parent.name for p in (work / "rows").glob("*/result.json")
                   if seeded_row(p.parent.name)[0] == target)
    if len(names) < 2:
        raise ValueError(f"row {row} averages the parsers of {target} and {target}_seed<N>: run at least two of "
                         f"them first (finished: {', '.join(names) or 'none'})")
    return names


def _soup_row(row: str, work: Path, splits: Splits, cfg: DownstreamConfig, log: Callable[[str], None]) -> None:
    """Average the fine-tuned parsers and evaluate the soup; again whenever another seed has finished."""
    from qgen.weight_soup import average_checkpoints

    ingredients = soup_ingredients(row, work)
    done = _read_json(work / "rows" / row / "result.json", {})
    if done.get("soup_of") == ingredients:
        return
    started = time.perf_counter()
    first = _read_json(work / "rows" / ingredients[0] / "result.json", {})
    checkpoint = average_checkpoints([work / "rows" / name / "best.pt" for name in ingredients],
                                     work / "rows" / row / "best.pt")
    _write_json(work / "rows" / row / "done.json", {"soup_of": ingredients})
    _evaluate_row(work, row, checkpoint, {"train_pairs": first.get("train_pairs"), "soup_of": ingredients},
                  started, splits, cfg, log)


def _evaluate_row(work: Path, row: str, checkpoint: Path, facts: dict, started: float, splits: Splits,
                  cfg: DownstreamConfig, log: Callable[[str], None]) -> None:
    """The row's parser on dev: ``result.json`` (with ``facts``) and ``predictions.txt`` in its folder."""
    evaluation = evaluate_parser(Parser.load(checkpoint), splits.parser_pairs(splits.dev), cfg.lf_type,
                                 beam=cfg.eval_beam)
    result = {"row": row, **facts, "dev_lf_em": evaluation["lf_exact_match"], "dev_examples": evaluation["examples"],
              "seconds": round(time.perf_counter() - started, 1)}
    if "parts" in evaluation:  # WikiSQL: sel, agg, conditions apart
        result["dev_parts"] = evaluation["parts"]
    _write_json(work / "rows" / row / "result.json", result)
    (work / "rows" / row / "predictions.txt").write_text("\n".join(evaluation["predictions"]) + "\n")
    log(f"{row}: dev LF exact match {result['dev_lf_em']:.4f} ({facts.get('train_pairs')} training pairs"
        + (f"; the average of {', '.join(facts['soup_of'])}" if "soup_of" in facts else "") + ")")


def _row_training_set(row: str, splits: Splits, work: Path, cfg: DownstreamConfig) -> list[Pair]:
    if row == "low":
        return splits.parser_pairs(splits.low)
    if row == "full":
        return splits.parser_pairs(splits.train)
    candidates = [json.loads(line) for line in (work / "synthetic.jsonl").read_text(encoding="utf-8").splitlines()]
    keeps = keep_rules(cfg.lf_type)
    if row.startswith("curve_"):
        candidates, keep = candidates[: int(row.split("_")[1])], keeps[cfg.curve_filter]
    else:
        keep = keeps[row]
    synthetic = [Pair(c["id"], _parser_question(c, cfg.reads_header), c["lf_tokens"], c["id"])
                 for c in candidates if keep(c)]
    return splits.parser_pairs(splits.low) + synthetic


def write_report(work: Path, results_dir: str | Path, cfg: DownstreamConfig, splits: Splits, timings: dict) -> dict:
    """metrics.json and a README table under ``results_dir/downstream/<dataset>`` from the finished rows."""
    from qgen.synth.audit import audit_pair

    rows = {p.parent.name: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((work / "rows").glob("*/result.json"))}
    for name, row in rows.items():  # how long each parser trained, and where
        done = _read_json(work / "rows" / name / "done.json", {})
        row.update(epochs_run=done.get("epochs_run"), best_epoch=done.get("best_epoch"), device=done.get("device"))
    keeps = keep_rules(cfg.lf_type)
    default = f"low_synthetic_round_trip_{_default_rule(cfg.lf_type)}"
    if default in rows:  # the "round trip" row: the default rule for the logical-form type
        rows["low_synthetic_round_trip"] = rows[default]
    candidates_path = work / "synthetic.jsonl"
    candidates = ([json.loads(line) for line in candidates_path.read_text(encoding="utf-8").splitlines()]
                  if candidates_path.exists() else [])
    for c in candidates:  # audited again here, so the table shows the audit as the code now defines it
        c["audit"] = list(audit_pair(cfg.lf_type, c["logical_form"], c["lf_tokens"], c["question"]).failures)
    sizes, audit = {}, {}
    for name, keep in [*keeps.items(), ("low_synthetic_round_trip", keeps[default])]:
        kept = [c for c in candidates if keep(c)]
        sizes[name] = len(kept)
        audit[name] = sum(not c["audit"] for c in kept) / len(kept) if kept else None
    for name in rows:
        if name.startswith("curve_"):
            kept = [c for c in candidates[: int(name.split("_")[1])] if keeps[cfg.curve_filter](c)]
            sizes[name] = len(kept)
            audit[name] = sum(not c["audit"] for c in kept) / len(kept) if kept else None
    low_ids = {p.id for p in splits.low}
    low_tokens = {p.id: p.src for p in splits.low}  # the SPARQL audit reads the tokens (entity names)
    real = [audit_pair(cfg.lf_type, r.logical_form, low_tokens[r.id], r.question or "")
            for r in splits.train_raw if r.id in low_ids]
    audit["low_real_questions"] = sum(a.passed for a in real) / len(real) if real else None
    spread: dict[str, dict[str, float]] = {}  # row -> parser seed -> dev LF EM, where a row ran with several
    for name, r in rows.items():
        base, seed = seeded_row(name)
        if seed is not None and base in rows:
            spread.setdefault(base, {str(cfg.seed): rows[base]["dev_lf_em"]})[str(seed)] = r["dev_lf_em"]
    metrics = {
        "dev_lf_em": {name: r["dev_lf_em"] for name, r in rows.items()},
        "dev_parts": {name: r["dev_parts"] for name, r in rows.items() if "dev_parts" in r},
        "dev_lf_em_by_parser_seed": spread,
        "synthetic_pairs": {"drawn": len(candidates), **sizes},
        "audit_pass_rate": audit,
        "train_pairs": {name: r["train_pairs"] for name, r in rows.items()},
        "epochs_run": {name: r["epochs_run"] for name, r in rows.items()},
        "round_trip_default_rule": _default_rule(cfg.lf_type),
        "seconds": {**timings, **{f"row_{name}": r["seconds"] for name, r in rows.items()}},
        "config": asdict(cfg), "split": SPLITS[cfg.dataset],
        "sizes": {"low": len(splits.low), "train": len(splits.train), "valid": len(splits.valid), "dev": len(splits.dev)},
        "device": sorted({r["device"] for r in rows.values() if r.get("device")}), "commit": code_version(),
        "command": _command(cfg),
    }
    out = Path(results_dir) / "downstream" / cfg.dataset
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / "metrics.json", metrics)
    (out / "README.md").write_text(_readme(metrics))
    return metrics


def _readme(m: dict) -> str:
    em, sizes, audit = m["dev_lf_em"], m["synthetic_pairs"], m["audit_pass_rate"]
    dataset = m["config"].get("dataset", "wikisql")
    title = {"wikisql": "WikiSQL", "webqsp": "WebQSP"}[dataset]
    share = f"{m['config']['low_fraction']:.0%}"
    header = m["config"].get("parser_header", False) and dataset == "wikisql"
    lines = [f"# Downstream: {title} parser trained on {share} of the labels plus a qgen corpus", "",
             f"Split: {m['split']}.", "",
             f"Sizes: low {m['sizes']['low']}, train {m['sizes']['train']}, valid {m['sizes']['valid']}, "
             f"dev {m['sizes']['dev']}; commit {m['commit']}; device {m['device']}.", "",
             "Every parser (`copynet_extended`) reads " + ("the question followed by its table's header "
             "(`qgen.table_context`)" if header else "the question only") + "; "
             "`finetune_<row>` is `<row>`'s parser trained further on the low labels alone, `finetune_clean_<row>` "
             "on the low labels plus the synthetic pairs that the exact rule keeps, `soup_finetune_<row>` the uniform "
             "average of the weights of `finetune_<row>`'s parsers of every parser seed (a model soup). "
             + (f"Each synthetic question is the first of the generator's {m['config']['generator_candidates']} "
                + (f"questions drawn at temperature {m['config']['generator_sampling']:g} "
                   if m["config"].get("generator_sampling") else "best ")
                + "that passes the faithfulness audit (else the first). "
                if m["config"].get("generator_candidates", 1) > 1 else "") +
             (f"Each logical form gives up to {m['config']['questions_per_lf']} pairs: that question and the next "
              "distinct candidates that pass the audit too, each judged on its own. "
              if m["config"].get("questions_per_lf", 1) > 1 else "") +
             (f"The round-trip rules use the parser `{m['config']['judge_with']}` (calibrated on the validation "
              "split), not the low row's: a second round over an earlier run's candidates. "
              if m["config"].get("judge_with") else "") +
             (f"The exact rule keeps a question when its logical form is among the parser's "
              f"{m['config'].get('round_trip_k', 1)} best parses. " if m["config"].get("round_trip_k", 1) > 1 else
              "The exact rule keeps a question when the judge's best parse is its logical form. ") +
             f"`low_synthetic_round_trip` is the row of the default round-trip rule for {LF_TYPES[dataset].upper()} "
             f"(`{m['round_trip_default_rule']}`). Each parser trains for up to {m['config']['parser_epochs']} epochs "
             f"or {m['config']['max_seconds']} s, whichever ends first (epochs run below), and is selected on "
             + ("the validation split's logical-form exact match (greedy, after every epoch)."
                if m["config"].get("select_on") == "accuracy" else "the validation split's loss."), "",
             "| row | training pairs | synthetic kept | audit pass rate of kept | epochs | dev LF exact match |",
             "|---|---:|---:|---:|---:|---:|"]
    rows = ["low", "low_synthetic_unfiltered", "low_synthetic_overcopy", "low_synthetic_round_trip",
            "low_synthetic_round_trip_score", "low_synthetic_round_trip_token", "low_synthetic_round_trip_exact",
            "low_synthetic_both", *sorted((k for k in em if k.startswith(("curve_", FINETUNE, SOUP))), key=_by_size), "full"]
    for name in rows:
        if name not in em:
            continue
        kept = sizes.get(name, "")
        rate = audit.get(name)
        lines.append(f"| {name} | {m['train_pairs'][name]} | {kept} | "
                     f"{'' if rate is None else f'{rate:.3f}'} | {m['epochs_run'].get(name) or ''} | {em[name]:.4f} |")
    lines += ["", f"Audit pass rate of the low set's real questions: {audit['low_real_questions']:.3f}."]
    if m.get("dev_lf_em_by_parser_seed"):
        lines += ["", "Run-to-run spread: the same row's parser trained with other seeds (same split, same "
                  "synthetic set).", "", "| row | dev LF exact match per parser seed | mean | range |",
                  "|---|---|---:|---:|"]
        for name, by_seed in m["dev_lf_em_by_parser_seed"].items():
            values = list(by_seed.values())
            shown = ", ".join(f"{seed}: {v:.4f}" for seed, v in by_seed.items())
            lines.append(f"| {name} | {shown} | {sum(values) / len(values):.4f} | {max(values) - min(values):.4f} |")
    lines += ["", "Seconds per step: " + ", ".join(f"{k} {v}" for k, v in m["seconds"].items()), "",
              f"Reproduce: `qgen preprocess {dataset} --out out/{dataset} && {m['command']}` (rows may run apart "
              "with `--rows`; the report collects every finished row).", ""]
    return "\n".join(lines)


def _by_size(row: str) -> tuple:
    """Sort key: ``curve_6000`` before ``curve_12000`` (numbers compare as numbers), then by name."""
    return tuple((1, int(part), "") if part.isdigit() else (0, 0, part) for part in re.split(r"(\d+)", row))


def _command(cfg: DownstreamConfig) -> str:
    """The ``qgen downstream`` command line for ``cfg`` (non-default options only)."""
    defaults, options = DownstreamConfig(), []
    names = {"low_fraction": "--low-fraction", "synthetic": "--synthetic", "parser_epochs": "--parser-epochs",
             "generator_epochs": "--generator-epochs", "hidden": "--hidden", "max_seconds": "--max-seconds",
             "seed": "--seed", "generator_candidates": "--generator-candidates",
             "questions_per_lf": "--questions-per-lf", "generator_sampling": "--generator-sampling",
             "round_trip_k": "--round-trip-k"}
    for field_name, option in names.items():
        value = getattr(cfg, field_name)
        if value != getattr(defaults, field_name) and value is not None:  # None: no budget, the option unset
            options.append(f"{option} {value:g}")
    if cfg.curve != defaults.curve:
        options.append(f"--curve {','.join(str(n) for n in cfg.curve)}" if cfg.curve else '--curve ""')
    if not cfg.parser_header and cfg.dataset == "wikisql":
        options.append("--question-only")
    if cfg.select_on != defaults.select_on:
        options.append(f"--select-on {cfg.select_on}")
    if cfg.curve_filter != defaults.curve_filter:
        options.append(f"--curve-filter {cfg.curve_filter.removeprefix('low_synthetic_')}")
    if cfg.judge_with:
        options.append(f"--judge-with {cfg.judge_with}")
    return " ".join([f"qgen downstream {cfg.dataset} --prep out/{cfg.dataset}", *options])


# What may differ between runs that share a work folder (rows run apart, resumed runs).
RESUMABLE = ("max_seconds", "curve")


def _check_config(work: Path, cfg: DownstreamConfig) -> None:
    """Refuse to mix results of another configuration into ``work`` (written by the first run)."""
    path = work / "config.json"
    wanted = {k: v for k, v in asdict(cfg).items() if k not in RESUMABLE}
    if path.exists():  # a setting added since that run had its default there
        saved = {k: v for k, v in {**asdict(DownstreamConfig()), **json.loads(path.read_text(encoding="utf-8"))}.items()
                 if k not in RESUMABLE}
        if saved != wanted:
            changed = sorted(k for k in wanted if saved.get(k) != wanted[k])
            raise ValueError(f"{work} holds a downstream run with other settings ({', '.join(changed)}); "
                             "use another --work-dir")
    else:
        _write_json(path, asdict(cfg))


def _merge_timings(work: Path, timings: dict) -> None:
    """Keep each step's time on disk as soon as it ends (a resumed run skips the step)."""
    _write_json(work / "timings.json", {**_read_json(work / "timings.json", {}), **timings})


def _read_json(path: Path, default: dict) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else default


def _write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, json.dumps(value, indent=2, ensure_ascii=False))
