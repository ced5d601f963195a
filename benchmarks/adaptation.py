"""Adaptation to a domain the model never saw: a generator trained with the default model's recipe on
WebQSP (and qgen's demo pairs), fine-tuned (``--init-from``) on N pairs of our WikiSQL training split within a
time budget, against the same pairs trained from scratch for the same time, and against the default model
(trained on the whole WikiSQL training split beside WebQSP): corpus BLEU on the full WikiSQL dev set.

    python benchmarks/adaptation.py base      # the WebQSP-only model (the default model's recipe)
    python benchmarks/adaptation.py adapt     # fine-tune it on 500 WikiSQL pairs, 600 s, two threads
    qgen preprocess data/demo/train_pairs.jsonl --out out/adaptation/demo-prep
    python benchmarks/adaptation.py base-sql  # WebQSP + the bundled demo pairs (SQL over invented tables)
    python benchmarks/adaptation.py adapt --base base-sql [--pairs 2000]   # other counts: the learning curve
    python benchmarks/adaptation.py scratch [--pairs 2000]   # the same pairs and budget from scratch
    python benchmarks/adaptation.py self-train --base base-sql --unlabeled 8000   # an experiment (see there)
    python benchmarks/adaptation.py augment --base base-sql --unlabeled 20000   # + the domain's logical forms
    python benchmarks/adaptation.py report    # score every run on WikiSQL dev, write the results

Every step takes ``--prep`` (the folder of ``qgen preprocess webqsp|wikisql``'s outputs). ``report`` scores
each run once (its metrics are kept beside its predictions in ``--work``) and writes one row a run.
Results: ``benchmarks/results/adaptation/`` (metrics.json, README.md).
"""
from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import default_model  # benchmarks/default_model.py, beside this script: the default model's recipe
import torch

from qgen.benchmark import dataset_pairs, evaluate_checkpoint
from qgen.checkpoint import read_payload
from qgen.data import read_pairs
from qgen.exported_model import resolve_model
from qgen.model import VARIANTS
from qgen.parse import task_metadata
from qgen.train import TrainConfig, train
from qgen.version import code_version

MODEL = replace(VARIANTS[default_model.MODEL].model, **default_model.SIZES)
ADAPTED = {"base": "adapted", "base-sql": "adapted-from-base-sql"}  # each base's adapted model's folder
DEFAULT_PAIRS = 500  # the example: a user's few hundred seed pairs
# augment: seconds of the budget kept for averaging the epochs and scoring the average after training
# (measured: under 10 s with the 1,588 validation pairs on two threads)
AVERAGE_RESERVE_S = 40.0


def _config(args: argparse.Namespace, **changes) -> TrainConfig:
    return TrainConfig(**{**default_model.RECIPE, "seed": 1, "device": "cpu", **changes})


def base(args: argparse.Namespace) -> None:
    train_pairs, valid_pairs, _ = dataset_pairs("webqsp", args.prep / "webqsp", True)
    torch.set_num_threads(args.threads)
    train(train_pairs, valid_pairs, MODEL, _config(args, epochs=args.epochs, max_seconds=args.max_seconds),
          args.work / "base", print, task_metadata("generate", ["sparql"], True))


def base_sql(args: argparse.Namespace) -> None:
    """The WebQSP base plus qgen's bundled demo pairs (``data/demo/train_pairs.jsonl``: 320 SPARQL and 200 SQL
    queries over an invented world, template questions): a model that knows SQL as the shipped one does, and
    has never seen WikiSQL's tables, vocabulary or question style."""
    train_pairs, valid_pairs, _ = dataset_pairs("webqsp", args.prep / "webqsp", True)
    demo = read_pairs(args.demo_prep / "train.parquet", True)
    torch.set_num_threads(args.threads)
    train(train_pairs + demo, valid_pairs, MODEL, _config(args, epochs=args.epochs, max_seconds=args.max_seconds),
          args.work / "base-sql", print, task_metadata("generate", ["sparql", "sql"], True))


def _few(args: argparse.Namespace):
    train_pairs, valid_pairs, _ = dataset_pairs("wikisql", args.prep / "wikisql", True)
    if not 1 <= args.pairs <= len(train_pairs):
        raise SystemExit(f"--pairs {args.pairs}: the WikiSQL training split has {len(train_pairs)} pairs")
    return random.Random(args.seed).sample(train_pairs, args.pairs), valid_pairs


def adapt(args: argparse.Namespace) -> None:
    few, valid_pairs = _few(args)
    torch.set_num_threads(args.threads)
    cfg = _config(args, epochs=args.epochs, max_seconds=args.budget, init_from=str(args.work / args.base / "best.pt"),
                  learning_rate=args.learning_rate or default_model.RECIPE["learning_rate"])
    started = time.perf_counter()
    out = args.work / (ADAPTED[args.base] + (f"-lr{args.learning_rate:g}" if args.learning_rate else "") + _sized(args))
    train(few, valid_pairs, MODEL, cfg, out, print, task_metadata("generate", ["sql"], True))
    _record_run(args, out, time.perf_counter() - started, base=args.base)


def scratch(args: argparse.Namespace) -> None:
    few, valid_pairs = _few(args)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    out = args.work / ("scratch" + _sized(args))
    train(few, valid_pairs, MODEL, _config(args, epochs=args.epochs, max_seconds=args.budget), out,
          print, task_metadata("generate", ["sql"], True))
    _record_run(args, out, time.perf_counter() - started, base=None)


def self_train(args: argparse.Namespace) -> None:
    """Self-training, an experiment: a user adapting qgen holds many more logical forms of the domain than
    questions (the logical forms are what they want questions for). Within the one budget: a teacher adapted
    on the seed pairs (``--teacher-epochs``) asks ``--unlabeled`` other logical forms of the training split
    (greedy), the questions that pass the faithfulness audit become pairs, and a student adapted from the
    same base on the seed pairs and these learns the rest of the budget. The choice of the student's start
    (the base, not the teacher) follows He et al. (2020), "Revisiting self-training for neural sequence
    generation": a fresh student on the pseudo pairs, which the teacher has not already overfitted."""
    from qgen.dev_selection import greedy_questions
    from qgen.synth.audit import audit_pair

    if args.learning_rate:
        raise SystemExit("--learning-rate: self-train runs at the recipe's learning rate")
    started = time.perf_counter()
    few, valid_pairs = _few(args)
    torch.set_num_threads(args.threads)
    meta = task_metadata("generate", ["sql"], True)
    base = str(args.work / args.base / "best.pt")
    # A run's folders name what it was given (``train`` resumes a folder's last.pt: another setting needs another)
    named = f"-from-{args.base}{_sized(args)}-{args.teacher_epochs}epochs-{args.unlabeled}unlabeled"
    teacher = args.work / ("self-train-teacher" + named)
    train(few, valid_pairs, MODEL, _config(args, epochs=args.teacher_epochs, max_seconds=args.budget, init_from=base),
          teacher, print, meta)
    seed_ids = {p.id for p in few}
    pool, _, _ = dataset_pairs("wikisql", args.prep / "wikisql", True)
    others = [p for p in pool if p.id not in seed_ids]
    if not 1 <= args.unlabeled <= len(others):
        raise SystemExit(f"--unlabeled {args.unlabeled}: the training split has {len(others)} pairs "
                         "beside the seed pairs")
    unlabeled = random.Random(args.seed + 1).sample(others, args.unlabeled)
    forms = _logical_forms(args.prep / "wikisql" / "test.parquet", {p.id for p in unlabeled})
    pseudo = []
    questions = greedy_questions(teacher / "best.pt", unlabeled)
    for i in sorted(range(len(unlabeled)), key=lambda i: len(unlabeled[i].src)):  # the order the recorded run kept
        pair, question = unlabeled[i], questions[i]
        lf, lf_tokens = forms[pair.id]
        if question and audit_pair("sql", lf, lf_tokens, " ".join(question)).passed:
            pseudo.append(replace(pair, tgt=question))
    asked = time.perf_counter() - started
    print(f"teacher and pseudo pairs: {len(pseudo)} of {len(unlabeled)} questions pass the audit ({asked:.0f} s)")
    out = args.work / ("self-trained" + named)
    train(few + pseudo, valid_pairs, MODEL, _config(args, epochs=args.epochs, max_seconds=max(args.budget - asked, 0),
                                                    init_from=base), out, print, meta)
    _record_run(args, out, time.perf_counter() - started, base=args.base, unlabeled=len(unlabeled),
                pseudo_pairs=len(pseudo), teacher_epochs=args.teacher_epochs,
                teacher_and_pseudo_seconds=round(asked, 1))


def augment(args: argparse.Namespace) -> None:
    """Template augmentation (``qgen train --augment-with``, qgen.seed_templates): the seed pairs' questions,
    their columns and values cut out, filled with ``--unlabeled`` other logical forms of the training split
    (their questions unused). Within the one budget, a model adapted from the base on the seed pairs
    (``--seed-repeats`` times an epoch) and the filled ones, keeping the epoch of the best greedy BLEU on
    the validation tenth (qgen.train_job.train_keeping_best_bleu, which says why not the loss)."""
    from qgen.seed_templates import augment as fill_templates
    from qgen.train_job import AUGMENT_WEIGHT_AVERAGE, SEED_REPEATS, train_keeping_best_bleu

    started = time.perf_counter()
    few, valid_pairs = _few(args)
    seed_ids = {p.id for p in few}
    pool, _, _ = dataset_pairs("wikisql", args.prep / "wikisql", True)
    others = [p for p in pool if p.id not in seed_ids]
    unlabeled = random.Random(args.seed + 1).sample(others, min(args.unlabeled, len(others)))
    filled = fill_templates(few, unlabeled, seed=args.seed, per_form=args.templates_per_form)
    made = time.perf_counter() - started
    print(f"templates: {len(filled)} of {len(unlabeled)} logical forms filled ({made:.1f} s)")
    repeats = args.seed_repeats or SEED_REPEATS
    average = AUGMENT_WEIGHT_AVERAGE if args.weight_average is None else args.weight_average
    torch.set_num_threads(args.threads)
    out = args.work / (f"augmented-from-{args.base}{_sized(args)}-{len(unlabeled)}unlabeled"
                       + (f"-{args.templates_per_form}per-form" if args.templates_per_form != 1 else "")
                       + f"-seeds{repeats}x" + (f"-decay{args.lr_decay:g}" if args.lr_decay != 1.0 else "")
                       + (f"-average{average:g}" if average else ""))
    if (out / "last.pt").exists():
        raise SystemExit(f"{out} holds a run already: remove it to measure again (the budget is one run's)")
    train_keeping_best_bleu(few * repeats + filled, valid_pairs, MODEL,
                            _config(args, epochs=args.epochs, max_seconds=max(args.budget - made - AVERAGE_RESERVE_S, 0),
                                    init_from=str(args.work / args.base / "best.pt"), lr_decay=args.lr_decay,
                                    weight_average=average),
                            out, print, task_metadata("generate", ["sql"], True))
    selection = json.loads((out / "selection.json").read_text())
    _record_run(args, out, time.perf_counter() - started, base=args.base, unlabeled=len(unlabeled),
                filled_pairs=len(filled), templates_per_form=args.templates_per_form, seed_repeats=repeats,
                templates_seconds=round(made, 1), lr_decay=args.lr_decay,
                weight_average=average, selected_on="validation BLEU (greedy)",
                validation_bleu_by_epoch=[round(h["dev_score"], 2) for h in selection["history"]],
                averaged=selection.get("averaged"))


def _logical_forms(path: Path, ids: set[str]) -> dict[str, tuple[str, list[str]]]:
    """id -> (logical form, its tokens) of a preprocessed examples file, for the audit."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["id", "logical_form", "lf_tokens"]).to_pylist()
    return {row["id"]: (row["logical_form"], row["lf_tokens"]) for row in table if row["id"] in ids}


def _sized(args: argparse.Namespace) -> str:
    """A run's folder suffix: the learning curve's runs (``--pairs``) sit beside the 500-pair ones."""
    return "" if args.pairs == DEFAULT_PAIRS else f"-{args.pairs}pairs"


def _record_run(args: argparse.Namespace, out: Path, seconds: float, base: str | None, **more: Any) -> None:
    """What ``report`` needs to put a run in its row: its seed pairs, its base, its wall time and threads
    (and ``more``: self-training's teacher and pseudo pairs)."""
    run = {"pairs": args.pairs, "base": base, "budget_s": args.budget, "threads": args.threads,
           "learning_rate": args.learning_rate, "wall_seconds": round(seconds, 1), "commit": code_version(), **more}
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    print(f"trained in {seconds:.0f} s")


def _scored(checkpoint: Path, dev, args: argparse.Namespace, name: str) -> dict:
    """WikiSQL dev metrics of one checkpoint, kept beside its predictions and reused while the checkpoint is
    older (a report after one more learning-curve run decodes that run only)."""
    kept = args.work / f"eval-{name}" / "metrics.json"
    if kept.is_file() and kept.stat().st_mtime > checkpoint.stat().st_mtime:
        metrics = json.loads(kept.read_text())
        if metrics["variant"]["beam"] == args.beam and metrics["full"]["n"] == len(dev):  # scored as asked now
            return metrics
    metrics = evaluate_checkpoint(checkpoint, dev, args.beam, kept.parent)
    kept.write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def report(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    _, _, dev = dataset_pairs("wikisql", args.prep / "wikisql", True)
    figures = {}
    runs = ["base", "base-sql"] + sorted(p.parent.name for p in args.work.glob("*/run.json"))
    for name in runs:
        checkpoint = args.work / name / "best.pt"
        if checkpoint.is_file():
            metrics = _scored(checkpoint, dev, args, name)
            history = read_payload(checkpoint).get("history") or []  # the epochs up to the one selected
            figures[name] = {"bleu": metrics["full"]["bleu_corpus"], "selected_epoch": len(history),
                             "train_seconds": round(sum(h["seconds"] for h in history), 1)}
            if history:
                figures[name]["valid_loss_selected"] = round(history[-1]["valid_loss"], 4)
            every = args.work / name / "history.json"  # every epoch the run trained
            if every.is_file():
                figures[name]["epochs_run"] = len(json.loads(every.read_text()))
            run = args.work / name / "run.json"
            if run.is_file():
                figures[name].update(json.loads(run.read_text()))
            print(name, figures[name])
    # The whole-domain model: the shipped default (it saw WebQSP too), scored here on the same dev set.
    default = _scored(resolve_model("default"), dev, args, "default")["full"]
    figures["default_whole_domain"] = {"bleu": default["bleu_corpus"]}
    print("default", figures["default_whole_domain"])
    ratios = {name: figures[name]["bleu"] / default["bleu_corpus"]
              for name in figures if figures[name].get("pairs") is not None}
    result = {"figures": figures, "of_whole_domain": ratios, "budget_s": args.budget,
              "threads": args.threads, "beam": args.beam, "device": "cpu", "commit": code_version(),
              "split": "WikiSQL: pairs drawn (seed) from our training split (official test minus a table-disjoint "
                       "tenth), validation on that tenth, scores on the full official dev set (8,421)",
              "command": "qgen preprocess data/demo/train_pairs.jsonl --out out/adaptation/demo-prep && "
                         "python benchmarks/adaptation.py base-sql && python benchmarks/adaptation.py adapt "
                         "--base base-sql [--pairs N] && python benchmarks/adaptation.py scratch [--pairs N] && "
                         "python benchmarks/adaptation.py self-train --base base-sql --unlabeled 8000 && "
                         "python benchmarks/adaptation.py augment --base base-sql --unlabeled 20000 && "
                         "python benchmarks/adaptation.py report (each with --prep out/benchmarks/prep)"}
    out = args.results
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("base", "base-sql", "adapt", "scratch", "self-train", "augment", "report"))
    parser.add_argument("--base", choices=tuple(ADAPTED), default="base", help="The model that adapt starts from.")
    parser.add_argument("--demo-prep", type=Path, default=Path("out/adaptation/demo-prep"),
                        help="qgen preprocess data/demo/train_pairs.jsonl --out DIR (for base-sql).")
    parser.add_argument("--prep", type=Path, default=Path("out"), help="Holds webqsp/ and wikisql/ from qgen preprocess.")
    parser.add_argument("--work", type=Path, default=Path("out/adaptation"))
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results/adaptation"))
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS,
                        help="Seed pairs drawn from the WikiSQL training split (other counts: the learning curve).")
    parser.add_argument("--budget", type=float, default=600.0, help="Seconds of adaptation (and of scratch training).")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="adapt's (default: the recipe's; a folder of its own, -lrX, when given)")
    parser.add_argument("--max-seconds", type=float, default=None, help="The base model's time budget.")
    parser.add_argument("--unlabeled", type=int, default=4000,
                        help="self-train, augment: logical forms of the domain without their questions (asked by the "
                             "teacher; filled into the seed pairs' templates)")
    parser.add_argument("--teacher-epochs", type=int, default=6, help="self-train: the teacher's epochs")
    parser.add_argument("--templates-per-form", type=int, default=1,
                        help="augment: filled templates per logical form (distinct seeds' templates)")
    parser.add_argument("--seed-repeats", type=int, default=None,
                        help="augment: each seed pair this many times in an epoch beside the filled ones "
                             "(default: qgen train --augment-with's)")
    parser.add_argument("--lr-decay", type=float, default=1.0,
                        help="augment: the learning rate's factor per epoch (1: constant, the recipe's)")
    parser.add_argument("--weight-average", type=float, default=None,
                        help="augment: the checkpoints' moving average of the weights, its decay per step "
                             "(TrainConfig.weight_average; 0: off; default: qgen train --augment-with's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    {"base": base, "base-sql": base_sql, "adapt": adapt, "scratch": scratch, "self-train": self_train,
     "augment": augment, "report": report}[args.step](args)


if __name__ == "__main__":
    main()
