"""The results tables: train and evaluate the rows of the seed paper's Table 1 on one dataset.

Per dataset and model: ``<results>/<dataset>/<model>/`` with predictions.txt, references.txt,
ids.txt, no_oov_ids.txt (the paper's subset) and metrics.json (every metric, the configuration, the
split, the commit, the epochs actually run, wall time, device). Only the paper's rows trained as the
paper trains them (:data:`PAPER_ROWS`, any seed) go there; every other run (another configuration,
teacher forcing or decoding) goes to ``<results>/<dataset>/experiments/<run>/``, so the dataset's
README holds the paper's table and nothing else. Checkpoints go to ``<work>/<dataset>/<run>/`` (never
committed).

Splits. WebQSP: train = WebQSP train minus a 10% validation hold-out of questions (all parses of a
question on one side); test = the first parse of every test question (1,639). WikiSQL (the protocol
of shared/datasets/README.md, the train split being absent): train = official test minus a
table-disjoint 10% validation part; test = official dev.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Callable, Sequence

import torch

from qgen.data import Pair, holdout, read_pairs, sequential_batches
from qgen.decode import beam_search, greedy
from qgen.model import VARIANTS, Variant, Vocab, make_batch
from qgen.results_table import EXPERIMENTS, PAPER_ROWS
from qgen.train import TrainConfig, TrainResult, build_vocabularies, train
from qgen.version import code_version, invocation

PAPER_SPLITS = {
    "webqsp": "train: WebQSP train (all parses) minus 10% of questions held out for validation; "
              "test: WebQSP test, first parse of each of the 1,639 questions",
    "wikisql": "train: official WikiSQL test minus a table-disjoint 10% for validation; test: official dev "
               "(the paper trained on the official train split, 56,355 questions, 56,346 by its count; absent here)",
}


def dataset_pairs(dataset: str, prep_dir: Path, entity_replacement: bool,
                  data_dir: Path | None = None) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(train, valid, test) pairs of a preprocessed dataset (``qgen preprocess DATASET --out prep_dir``)."""
    if dataset == "webqsp":
        train_all = read_pairs(prep_dir / "train.parquet", entity_replacement)
        train_part, valid_part = holdout(train_all, 0.1, seed=1)
        return train_part, valid_part, first_per_group(read_pairs(prep_dir / "test.parquet", entity_replacement))
    if dataset == "wikisql":
        official_test = read_pairs(prep_dir / "test.parquet", entity_replacement)
        valid_ids = wikisql_valid_ids(prep_dir, data_dir)
        train_part = [p for p in official_test if p.id not in valid_ids]
        valid_part = [p for p in official_test if p.id in valid_ids]
        return train_part, valid_part, read_pairs(prep_dir / "dev.parquet", entity_replacement)
    raise ValueError(f"no benchmark protocol for dataset {dataset!r} (webqsp, wikisql)")


def wikisql_valid_ids(prep_dir: Path, data_dir: Path | None = None) -> set[str]:
    """Ids of the table-disjoint validation tenth of WikiSQL's official test split.

    Computed from the raw dataset (which needs sqlglot) once and kept in ``prep_dir/valid_ids.txt``,
    so a GPU machine given only the preprocessed folder draws the same split without the parsers.
    """
    saved = prep_dir / "valid_ids.txt"
    if not saved.exists():
        from qgen.datasets.registry import load_dataset
        from qgen.datasets.wikisql import table_disjoint_split

        _, valid_raw = table_disjoint_split(list(load_dataset("wikisql", data_dir, "test")), fraction=0.1, seed=1)
        _write_whole(saved, "".join(f"{r.id}\n" for r in valid_raw))
    return set(saved.read_text().split())


def first_per_group(pairs: Sequence[Pair]) -> list[Pair]:
    seen: dict[str, Pair] = {}
    for pair in pairs:
        seen.setdefault(pair.group, pair)
    return list(seen.values())


def is_paper_run(model: str, cfg: TrainConfig, no_repeat: bool = False) -> bool:
    """A row of the paper's table: one of :data:`PAPER_ROWS`, the paper's teacher forcing, plain decoding
    (any seed: the seeds of a row are averaged in the README)."""
    return model in PAPER_ROWS and cfg.run_suffix == (f"_seed{cfg.seed}" if cfg.seed != 1 else "") and not no_repeat


def results_folder(results_dir: str | Path, dataset: str, model: str, cfg: TrainConfig, no_repeat: bool = False) -> Path:
    """Where a run's results go: ``<results>/<dataset>/<run>`` for a paper row, else under ``experiments/``."""
    base = Path(results_dir) / dataset
    name = results_folder_name(model, cfg, no_repeat)
    return base / name if is_paper_run(model, cfg, no_repeat) else base / EXPERIMENTS / name


def no_oov_pairs(pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab) -> list[Pair]:
    """The paper's subset, "examples in the test set that do not contain out of vocabulary tokens": every
    source token in the source vocabulary and every reference token in the output one."""
    return [p for p in pairs if all(t in src_vocab for t in p.src) and all(t in tgt_vocab for t in p.tgt)]


def write_no_oov_ids(out_dir: Path, pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab) -> list[str]:
    """``out_dir/no_oov_ids.txt``: the subset's ids, one a line in ids.txt's order (as ids.txt writes them)."""
    ids = [p.id for p in no_oov_pairs(pairs, src_vocab, tgt_vocab)]
    _write_whole(Path(out_dir) / "no_oov_ids.txt", "".join(i + "\n" for i in ids))
    return ids


def results_folder_name(model: str, cfg: TrainConfig, no_repeat: bool = False) -> str:
    """A run's results folder (and its name in the tables): the model, then its teacher-forcing and seed
    suffixes when not the defaults (``_tf1``, ``_tf0.5seq``, ``_seed2``), then ``_norepeat`` when so decoded."""
    return model + cfg.run_suffix + ("_norepeat" if no_repeat else "")


def run_variant(dataset: str, variant: Variant | str, prep_dir: str | Path, work_dir: str | Path,
                results_dir: str | Path, train_cfg: TrainConfig, data_dir: Path | None = None,
                eval_beam: int | None = None, no_repeat: bool = False, log: Callable[[str], None] = print) -> dict:
    """Train (resuming if a checkpoint is there) and evaluate one model; returns its metrics.

    ``no_repeat`` decodes with a word never right after itself (``qgen.decode.block_repeat``); those
    results go to ``experiments/<model>_norepeat``, from the same checkpoint. A run that is not a paper
    row goes under ``experiments/`` too (:func:`results_folder`).
    """
    variant = VARIANTS[variant] if isinstance(variant, str) else variant
    train_pairs, valid_pairs, test_pairs = dataset_pairs(dataset, Path(prep_dir), variant.entity_replacement, data_dir)
    glove = train_cfg.glove_path if variant.pretrained_vectors else None
    cfg = TrainConfig(**{**asdict(train_cfg), "glove_path": glove})
    run_name = variant.name + cfg.run_suffix  # another teacher forcing or seed gets its own folders
    started = time.perf_counter()
    result = train(train_pairs, valid_pairs, variant.model, cfg, Path(work_dir) / dataset / run_name, log)
    train_seconds = time.perf_counter() - started
    results_name = results_folder_name(variant.name, cfg, no_repeat)
    out_dir = results_folder(results_dir, dataset, variant.name, cfg, no_repeat)
    metrics = evaluate_checkpoint(Path(result.out_dir) / "best.pt", test_pairs, eval_beam or variant.beam,
                                  out_dir, no_repeat=no_repeat)
    metrics.update({
        "dataset": dataset, "model": variant.name, "run": results_name, "split": PAPER_SPLITS[dataset],
        "sizes": {"train": len(train_pairs), "valid": len(valid_pairs), "test": len(test_pairs)},
        "variant": {"entity_replacement": variant.entity_replacement, **metrics["variant"],
                    "pretrained_vectors": result.pretrained_vectors},
        "train_config": asdict(cfg), "epochs_run": result.epochs_run, "epochs_planned": cfg.epochs,
        "best_epoch": result.best_epoch, "train_wall_s": round(train_seconds, 1),  # this invocation only
        "train_epochs_s": round(sum(h.seconds for h in result.history), 1),  # all epochs, across resumes
        "device": result.device,
        "history": [asdict(h) for h in result.history], "commit": code_version(), "command": invocation(),
    })
    _write_metrics(out_dir, metrics)
    return metrics


def evaluate_checkpoint(checkpoint: Path, pairs: Sequence[Pair], beam: int, out_dir: Path,
                        batch_size: int = 64, no_repeat: bool = False,
                        progress: Callable[[int, int | None], None] | None = None) -> dict:
    """Decode ``pairs``, write predictions/references/ids and return every metric (full and no-OOV).

    ``no_repeat``: no word right after itself, in the greedy and the beam pass alike;
    ``progress(done, total)`` after each batch (a progress bar's feed)."""
    from qgen.checkpoint import load_checkpoint

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, src_vocab, tgt_vocab, _ = load_checkpoint(checkpoint, device)
    predictions: dict[str, list[str]] = {}
    attentions: dict[str, torch.Tensor] = {}
    started = time.perf_counter()
    for chunk in sequential_batches(pairs, batch_size):
        batch = make_batch([p.src for p in chunk], None, src_vocab, tgt_vocab, model.cfg.copy).to(device)
        # The greedy pass gives the read attentions for the entropy metric; with beam > 1 the
        # predictions come from a second, beam pass (beam search keeps no attentions).
        greedy_hyps = greedy(model, batch, keep_attention=True, no_repeat=no_repeat)
        best = greedy_hyps if beam == 1 else [row[0] for row in beam_search(model, batch, beam=beam,
                                                                             no_repeat=no_repeat)]
        for pair, hyp, g, oovs, length in zip(chunk, best, greedy_hyps, batch.oovs, batch.src_lengths.tolist()):
            predictions[pair.id] = tgt_vocab.decode(hyp.ids, oovs)
            steps = g.attns.get("read", [])
            attentions[pair.id] = torch.stack(steps)[:, :length] if steps else torch.zeros(0, length)
        if progress is not None:
            progress(len(predictions), len(pairs))
    decode_seconds = time.perf_counter() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    ids = [p.id for p in pairs]
    (out_dir / "predictions.txt").write_text("".join(" ".join(predictions[i]) + "\n" for i in ids))
    (out_dir / "references.txt").write_text("".join(" ".join(p.tgt) + "\n" for p in pairs))
    (out_dir / "ids.txt").write_text("".join(i + "\n" for i in ids))
    write_no_oov_ids(out_dir, pairs, src_vocab, tgt_vocab)
    metrics = score_predictions(pairs, predictions, src_vocab, tgt_vocab, attentions)
    metrics.update({"variant": {"beam": beam, "no_repeat": no_repeat,
                                "model": model.cfg.as_dict()},  # as trained: with its vocabulary sizes
                    "decode_wall_s": round(decode_seconds, 1), "decode_device": str(device),
                    "checkpoint": str(checkpoint)})
    return metrics


def score_predictions(pairs: Sequence[Pair], predictions: dict[str, list[str]], src_vocab: Vocab, tgt_vocab: Vocab,
                      attentions: dict[str, torch.Tensor] | None = None) -> dict:
    """Every metric on the full test set and on the paper's no-OOV subset (``full``, ``no_oov``).

    The no-OOV part is :func:`no_oov_pairs`. Without ``attentions`` the attention entropy is left out.
    """
    from qgen.metrics import evaluate_corpus

    in_vocab = no_oov_pairs(pairs, src_vocab, tgt_vocab)
    return {"full": _metrics(pairs, predictions, attentions, evaluate_corpus),
            "no_oov": _metrics(in_vocab, predictions, attentions, evaluate_corpus)}


def _metrics(pairs: Sequence[Pair], predictions: dict, attentions: dict | None, evaluate_corpus: Callable) -> dict:
    if not pairs:
        return {"n": 0}
    attention_list = None if attentions is None else [attentions[p.id].numpy() for p in pairs]
    return evaluate_corpus([predictions[p.id] for p in pairs], [p.tgt for p in pairs],
                           attentions=attention_list, sources=[p.src for p in pairs])


def rescore_results(dataset: str, model_dir: Path, prep_dir: Path, data_dir: Path | None = None) -> dict:
    """Recompute the metrics of a results folder from its predictions.txt, without the checkpoint
    (e.g. after a metric was added). The attention entropy, which needs the model, is kept as it was."""
    model_dir = Path(model_dir)
    metrics = json.loads((model_dir / "metrics.json").read_text())
    train_pairs, _, test_pairs = dataset_pairs(dataset, Path(prep_dir), metrics["variant"]["entity_replacement"], data_dir)
    ids = (model_dir / "ids.txt").read_text().splitlines()
    lines = (model_dir / "predictions.txt").read_text().splitlines()
    if ids != [p.id for p in test_pairs] or len(lines) != len(ids):
        raise ValueError(f"{model_dir}: ids.txt / predictions.txt do not match the {dataset} test split "
                         f"({len(ids)} ids, {len(lines)} predictions, {len(test_pairs)} test examples)")
    src_vocab, tgt_vocab = build_vocabularies(train_pairs)
    write_no_oov_ids(model_dir, test_pairs, src_vocab, tgt_vocab)
    scores = score_predictions(test_pairs, {i: line.split() for i, line in zip(ids, lines)}, src_vocab, tgt_vocab)
    for part in ("full", "no_oov"):
        if "attention_entropy" in metrics.get(part, {}):
            scores[part]["attention_entropy"] = metrics[part]["attention_entropy"]
    metrics.update(scores)
    # Files written before the trained configuration was recorded carry vocabulary sizes of 0.
    metrics["variant"]["model"].update(src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab))
    metrics["rescored_by"] = code_version()
    _write_metrics(model_dir, metrics)
    return metrics


def headline(scores: dict) -> str:
    """One line of the main figures of a ``full`` / ``no_oov`` metrics part (METEOR may be skipped: no Java)."""
    meteor = scores.get("meteor_corpus")
    unsmoothed = scores.get("bleu_sentence_unsmoothed_mean")
    duplicates = scores.get("overcopy_duplicates")
    return (f"n={scores['n']}  corpus BLEU {scores['bleu_corpus']:.2f}  sentence BLEU "
            f"{'–' if unsmoothed is None else f'{unsmoothed:.2f}'} unsmoothed / {scores['bleu_sentence_mean']:.2f} smoothed  "
            f"METEOR {'skipped' if meteor is None else f'{meteor:.2f}'}  ROUGE-L {scores['rouge_l_corpus']:.2f}  "
            f"OverCopy {scores['overcopy']:.3f}" + ("" if duplicates is None else f" (copies {duplicates:.3f})"))


def _write_metrics(model_dir: Path, metrics: dict) -> None:
    _write_whole(model_dir / "metrics.json", json.dumps(metrics, indent=2) + "\n")


def _write_whole(path: Path, text: str) -> None:
    """Written aside and renamed: runs of other models in parallel read the prep folder's validation
    ids and every metrics.json (for the README), and must never see half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def sized_variant(name: str, model_sizes: dict[str, int] | None = None) -> Variant:
    """The table row ``name``, its model shrunk to ``model_sizes`` (e.g. ``{"hidden_size": 16}``) if given."""
    variant = VARIANTS[name]
    return replace(variant, model=replace(variant.model, **model_sizes)) if model_sizes else variant


def prepare_dataset(dataset: str, work_dir: str | Path, data_dir: str | Path | None = None,
                    log: Callable[[str], None] = print) -> Path:
    """The preprocessed dataset under ``<work_dir>/prep/<dataset>`` (WikiSQL's validation ids too), made once."""
    prep = Path(work_dir) / "prep" / dataset
    if not (prep / "counts.json").exists():
        from qgen.preprocess import preprocess_dataset  # the parsers (rdflib, sqlglot): only when preprocessing

        log(preprocess_dataset(dataset, prep, data_dir=data_dir).summary())
    if dataset == "wikisql":
        wikisql_valid_ids(prep, Path(data_dir) if data_dir else None)
    return prep


def run_benchmark(dataset: str, models: Sequence[str], train_cfg: TrainConfig, work_dir: str | Path,
                  results_dir: str | Path, data_dir: str | Path | None = None, no_repeat: bool = False,
                  log: Callable[[str], None] = print, model_sizes: dict[str, int] | None = None) -> Path:
    """Preprocess (once), train and evaluate each model, and rewrite the dataset's results README.

    ``model_sizes`` (e.g. ``{"hidden_size": 16}``) shrinks every model: a smoke run, not a table row.
    """
    from qgen.results_table import write_results_readme

    unknown = [m for m in models if m not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    prep = prepare_dataset(dataset, work_dir, data_dir, log)
    for name in models:
        log(f"== {dataset} / {name}")
        metrics = run_variant(dataset, sized_variant(name, model_sizes), prep, work_dir, results_dir, train_cfg,
                              data_dir=Path(data_dir) if data_dir else None, no_repeat=no_repeat, log=log)
        log(f"{name}: {headline(metrics['full'])}  ({metrics['epochs_run']} epochs, {metrics['device']})")
    return write_results_readme(Path(results_dir) / dataset, dataset)  # experiments/README.md too
