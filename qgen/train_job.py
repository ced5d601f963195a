"""Train a question generator or a parser on a preprocessed examples file (what ``qgen train`` and
the flows call)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Callable

from qgen.checkpoint import file_checksum
from qgen.data import holdout
from qgen.model import VARIANTS, ModelConfig
from qgen.parse import PARSE_MAX_TGT_LEN, calibrate, lf_types_of, read_task_pairs, task_metadata
from qgen.train import TrainConfig, TrainResult, train


class TooFewExamplesError(ValueError):
    """Nothing would be left to train on once the validation examples are held out."""


def train_on_examples(examples: str | Path, out_dir: str | Path, model: ModelConfig | str = "scratchpad",
                      cfg: TrainConfig | None = None, valid_fraction: float = 0.1,
                      entity_replacement: bool = True, log: Callable[[str], None] = print,
                      task: str = "generate", augment_with: str | Path | None = None) -> TrainResult:
    """Hold out ``valid_fraction`` of the groups of ``examples`` (a ``qgen preprocess`` Parquet file)
    for model selection, and train; ``model`` is a ``ModelConfig`` or a row name of Table 1.

    ``task="parse"`` trains the semantic parser (question -> logical form, ``qgen.parse``): targets up
    to ``PARSE_MAX_TGT_LEN`` tokens unless ``cfg`` asks for more, and afterwards the round-trip
    calibration on the held-out pairs is stored in ``best.pt``.

    ``augment_with`` (a ``qgen preprocess`` file of the domain's logical forms, questions not needed):
    the training pairs' questions become templates that these forms fill (qgen.seed_templates); the
    model learns from both, and the epoch with the best greedy BLEU on the held-out pairs is kept, or its
    average with the later epochs when that scores higher (``train_keeping_best_bleu``).
    """
    model_cfg = VARIANTS[model].model if isinstance(model, str) else model
    cfg = cfg or TrainConfig()
    pairs = read_task_pairs(examples, task, entity_replacement)
    if not pairs:
        raise ValueError(f"{examples} holds no examples to train on")
    if task == "parse" and cfg.max_tgt_len < PARSE_MAX_TGT_LEN:
        cfg = replace(cfg, max_tgt_len=PARSE_MAX_TGT_LEN)
    train_pairs, valid_pairs = holdout(pairs, valid_fraction, seed=cfg.seed)
    if not train_pairs:  # one group, and validation holds it out: a model with empty vocabularies
        raise TooFewExamplesError(f"{examples} holds one group of examples only (one example, or the parses of "
                                  "one question), which validation holds out; train needs at least two")
    metadata = task_metadata(task, lf_types_of(examples), entity_replacement)
    # What a corpus card names the model by, beside its checksum (qgen.synth.card.model_facts).
    metadata["training_data"] = (f"{Path(examples).name} (sha256 {file_checksum(examples)[:12]}): "
                                 f"{len(train_pairs)} pairs, {len(valid_pairs)} held out for validation")
    # The examples themselves, which a resumed run must share (qgen.train refuses other ones); what is
    # added to them (--augment-with's filled templates, below) may be added on resuming.
    metadata["training_examples"] = metadata["training_data"]
    if augment_with is not None:
        if task != "generate":
            raise ValueError("template augmentation trains a question generator (--task generate)")
        sql_ids = {i for i, t in _lf_types_by_id(examples).items() if t == "sql"}
        filled = filled_templates([p for p in train_pairs if p.id in sql_ids], augment_with, entity_replacement,
                                  cfg.seed, log, known=train_pairs + valid_pairs)
        metadata["training_data"] += (f"; each {SEED_REPEATS} times an epoch, beside {len(filled)} questions of "
                                      f"their templates filled with {Path(augment_with).name}'s logical forms")
        result = train_keeping_best_bleu(train_pairs * SEED_REPEATS + filled, valid_pairs, model_cfg, cfg,
                                         Path(out_dir), log, metadata)
    else:
        result = train(train_pairs, valid_pairs, model_cfg, cfg, out_dir, log, metadata)
    if task == "parse":
        calibration = calibrate(Path(result.out_dir) / "best.pt", valid_pairs or train_pairs)
        log(f"round-trip calibration: score threshold {calibration['threshold']:.3f} "
            f"({calibration['percentile']:g}th percentile of {calibration['pairs']} held-out pairs)")
    return result


# Each seed pair this many times an epoch beside the filled templates: people's own wording weighs more
# than the templates' (benchmarks/results/adaptation: 1, 4 and 10 measured).
SEED_REPEATS = 4

# The checkpoints' moving average of the weights (TrainConfig.weight_average) that --augment-with trains
# with unless told otherwise: an average over the last 200 steps or so, about half an epoch of 500 seed
# pairs and their filled templates. The held-out BLEU by epoch then rises almost every epoch instead of
# swinging by up to 3.5 points (benchmarks/results/adaptation: 0.995 and 0.998 compared).
AUGMENT_WEIGHT_AVERAGE = 0.995


def _lf_types_by_id(path: str | Path) -> dict[str, str]:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["id", "lf_type"])
    return dict(zip(table.column("id").to_pylist(), table.column("lf_type").to_pylist()))


def filled_templates(seeds: list, forms_file: str | Path, entity_replacement: bool, seed: int,
                     log: Callable[[str], None], known: list | None = None) -> list:
    """The SQL forms of ``forms_file`` filled into the SQL seeds' templates (qgen.seed_templates), leaving
    out the forms of ``known`` pairs (the seeds' own, and the held-out ones, whose BLEU selects the epochs)."""
    from qgen.data import read_pairs
    from qgen.seed_templates import augment, template

    types = _lf_types_by_id(forms_file)
    forms = [f for f in read_pairs(forms_file, entity_replacement) if types[f.id] == "sql"]
    if not forms:
        raise ValueError(f"{forms_file} holds no SQL logical forms: templates are filled with SQL forms only")
    seen = {tuple(p.src) for p in known or ()}
    forms = [f for f in forms if tuple(f.src) not in seen]
    templates = sum(template(p) is not None for p in seeds)
    filled = augment(seeds, forms, seed=seed)
    log(f"templates: {templates} of {len(seeds)} seed questions make templates; they fill {len(filled)} of "
        f"{len(forms)} logical forms of {Path(forms_file).name}")
    return filled


def _without_training_state(source: Path, target: Path) -> None:
    """``source``'s model as ``target``, without what only resuming needs (the optimizer's moments, the
    last step's weights beside an average): best.pt as ``train`` writes it."""
    from qgen.averaged_weights import TRAINING_WEIGHTS
    from qgen.checkpoint import read_payload, write_payload

    write_payload(target, {k: v for k, v in read_payload(source).items() if k not in ("optimizer", TRAINING_WEIGHTS)})


def train_keeping_best_bleu(train_pairs: list, valid_pairs: list, model_cfg: ModelConfig, cfg: TrainConfig,
                            out: Path, log: Callable[[str], None], metadata: dict) -> TrainResult:
    """One epoch at a time within ``cfg.max_seconds`` (dev BLEU selection: qgen.dev_selection, resumable);
    then the weights of the best epoch and of every later one, averaged, if that scores higher still. The
    model kept becomes ``best.pt``. Why not the validation loss: with filled templates it is lowest after the
    first epoch and then rises, while BLEU peaks later (the templates say their columns word for word,
    people often do not, and the model grows sure of wordings the held-out questions lack). Why the
    average: after the first epoch the held-out BLEU swings by up to three and a half points from one epoch
    to the next (Adam at a constant rate), and averaged weights smooth that swing (benchmarks/results/adaptation: epochs 2-4 averaged 23.14,
    above each of them; the best, epoch 2, 22.83). Each scored epoch's checkpoint waits in ``epochs/`` until
    the run is complete; those older than the best are dropped as soon as a better one comes."""
    import shutil
    import time

    from qgen.dev_selection import BEST, STATE, NoEpochScored, greedy_bleu, train_selecting_on_dev
    from qgen.train import resolve_device
    from qgen.weight_soup import average_checkpoints

    deadline = None if cfg.max_seconds is None else time.perf_counter() + cfg.max_seconds
    runs: list[TrainResult] = []
    epochs = out / "epochs"  # each scored epoch's checkpoint, for the average; removed at the end

    def train_to(epoch: int) -> TrainResult:
        left = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
        runs.append(train(train_pairs, valid_pairs, model_cfg, replace(cfg, epochs=epoch, max_seconds=left), out,
                          log, metadata))
        return runs[-1]

    bleu = greedy_bleu(valid_pairs, resolve_device(cfg.device))

    state_file = out / STATE
    earlier = json.loads(state_file.read_text())["best"] if state_file.exists() else None  # None: none scored yet
    best_so_far = [earlier["dev_score"]] if earlier else []

    def scored(checkpoint: Path) -> tuple[float, list]:
        epoch = len(runs[-1].history)
        epochs.mkdir(exist_ok=True)
        shutil.copyfile(checkpoint, epochs / f"{epoch}.pt")
        score = bleu(checkpoint)
        if not best_so_far or score[0] > best_so_far[0]:  # never averaged from now on: the older epochs
            best_so_far[:] = [score[0]]
            for older in epochs.glob("*.pt"):
                if int(older.stem) < epoch:
                    older.unlink()
        return score

    try:  # the time budget is train_to's (one deadline for the whole run), not the training time alone
        state = train_selecting_on_dev(out, cfg.epochs, train_to, scored, log=log)
    except NoEpochScored:  # train() kept the model so far as best.pt, as without selection
        log("the time budget ended within the first epoch: best.pt is the model so far, not scored; start the "
            "run again to finish the epoch")
        return runs[-1]
    best, last = state["best"], state["history"][-1]["epoch"]
    _without_training_state(out / BEST, out / "best.pt")
    log(f"best epoch {best['epoch']}: validation BLEU {best['dev_score']:.2f} (greedy)")
    kept = [epochs / f"{e}.pt" for e in range(best["epoch"], last + 1) if (epochs / f"{e}.pt").is_file()]
    if len(kept) > 1:  # (a run extended after it was complete kept no earlier epochs: nothing to average)
        averaged = average_checkpoints(kept, out / "averaged.pt")
        score = bleu(averaged)[0]
        numbers = [int(path.stem) for path in kept]
        log(f"epochs {numbers[0]}-{numbers[-1]} averaged: validation BLEU {score:.2f}; best.pt is "
            + ("the average" if score > best["dev_score"] else f"epoch {best['epoch']}"))
        state["averaged"] = {"epochs": [numbers[0], numbers[-1]], "dev_score": score,
                             "kept": score > best["dev_score"]}
        if score > best["dev_score"]:
            shutil.copyfile(averaged, out / "best.pt")
        averaged.unlink()
        state_file.write_text(json.dumps({k: v for k, v in state.items() if k != "best_outputs"},
                                                       indent=2))
    if not state["stopped_within_epoch"]:  # complete: a run started again trains no epoch to average with these
        shutil.rmtree(epochs, ignore_errors=True)
    history = runs[-1].history if runs else []
    return TrainResult(str(out), len(history), best["epoch"], best["valid_nll"], history,
                       runs[-1].device if runs else str(resolve_device(cfg.device)),
                       runs[-1].pretrained_vectors if runs else "none")
