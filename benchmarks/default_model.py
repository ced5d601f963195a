"""Build qgen's default model: ``scratchpad_extended`` trained on WebQSP train and our WikiSQL
training split together, scored on the full WebQSP test set and WikiSQL dev, and exported as
safetensors (fp16) + JSON with a model card.

    python benchmarks/default_model.py train --hidden 256 --embedding 128 --out out/default-model/h256
    python benchmarks/default_model.py evaluate --out out/default-model/h256
    python benchmarks/default_model.py export --out out/default-model/h256 --to qgen/models/default

``train`` resumes from ``<out>/last.pt``; validation is WebQSP's seeded tenth of its training groups
plus WikiSQL's table-disjoint tenth (``qgen.benchmark.dataset_pairs``), so neither test set is seen.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import torch

from qgen.benchmark import dataset_pairs, evaluate_checkpoint
from qgen.checkpoint import load_checkpoint, read_payload
from qgen.exported_model import resolve_model
from qgen.model import VARIANTS
from qgen.parse import task_metadata
from qgen.short_relations import entity_query_pairs, short_relation_pairs
from qgen.train import TrainConfig, train
from qgen.version import code_version

DATASETS = ("webqsp", "wikisql")
MODEL = "scratchpad_extended"
# The recipe (the options' defaults; benchmarks/adaptation.py trains its models with it too)
SIZES = dict(hidden_size=256, embedding_dim=128, num_layers=1, dropout=0.2)
RECIPE = dict(batch_size=32, learning_rate=2e-3, teacher_forcing=1.0)


def _splits(prep_root: Path) -> dict[str, tuple]:
    return {name: dataset_pairs(name, prep_root / name, True) for name in DATASETS}


def train_default(args: argparse.Namespace) -> None:
    splits = _splits(args.prep)
    # --repeat-webqsp N shows each WebQSP pair N times an epoch: WebQSP is a sixth of the pairs, and a
    # WebQSP-only model of this size needs about 9 passes over it where the mixture stops at about 6.
    repeats = {"webqsp": args.repeat_webqsp, "wikisql": 1}
    train_pairs = [p for name in DATASETS for _ in range(repeats[name]) for p in splits[name][0]]
    if args.short_relations:  # each WebQSP pair once more with DBpedia-style short relations (qgen.short_relations)
        train_pairs += short_relation_pairs(splits["webqsp"][0], seed=args.seed)
    if args.entity_queries:  # WikiSQL's one-hop queries once more as SPARQL entity queries (qgen.short_relations)
        train_pairs += entity_query_pairs(splits["wikisql"][0], seed=args.seed)
    valid_pairs = [p for name in DATASETS for p in splits[name][1]]
    model_cfg = replace(VARIANTS[MODEL].model, hidden_size=args.hidden, embedding_dim=args.embedding, num_layers=args.layers,
                        dropout=args.dropout)
    cfg = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
                      teacher_forcing=args.teacher_forcing, seed=args.seed, device=args.device,
                      max_seconds=args.max_seconds,
                      init_from=str(resolve_model(args.init_from)) if args.init_from else None)
    metadata = task_metadata("generate", ["sparql", "sql"], True)
    shown = f", each {args.repeat_webqsp} times an epoch" if args.repeat_webqsp > 1 else ""
    if args.short_relations:
        shown += ", and once more with each relation written as a short name under a common prefix (dbo:placeOfBirth)"
    entity = "; its one-hop queries once more as SPARQL entity queries" if args.entity_queries else ""
    metadata["training_data"] = (f"WebQSP train ({len(splits['webqsp'][0])} pairs{shown}) and the WikiSQL training split "
                                 f"(official test minus a table-disjoint tenth: {len(splits['wikisql'][0])} pairs{entity}); "
                                 f"{len(valid_pairs)} held out for validation")
    if cfg.init_from:  # a second stage: say what the model it starts from was trained on
        base = load_checkpoint(cfg.init_from, "cpu")[3].get("training_data", cfg.init_from)
        metadata["training_data"] = (f"{base}; then fine-tuned at learning rate {cfg.learning_rate:g} on "
                                     + metadata["training_data"])
    torch.set_num_threads(args.threads)
    result = train(train_pairs, valid_pairs, model_cfg, cfg, args.out, print, metadata)
    print(f"{result.epochs_run} epochs; best epoch {result.best_epoch} (valid loss {result.best_valid_loss:.3f})")


def evaluate_default(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    splits = _splits(args.prep)
    figures = {}
    for name in DATASETS:
        started = time.perf_counter()
        metrics = evaluate_checkpoint(args.out / "best.pt", splits[name][2], args.beam, args.out / f"eval-{name}")
        full = metrics["full"]
        figures[name] = {"split": "test (full)" if name == "webqsp" else "dev (full)", "questions": full["n"],
                         "bleu": full["bleu_corpus"], "meteor": full.get("meteor_corpus"),
                         "rouge_l": full["rouge_l_corpus"],
                         "seconds": round(time.perf_counter() - started, 1)}
        print(name, json.dumps(figures[name]))
    result = {"beam": args.beam, "metrics": figures, "commit": code_version(), "device": "cpu",
              "threads": args.threads}
    (args.out / "metrics.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out / 'metrics.json'}")


NOTES = """## Use and limits

qgen's default question generator (`qgen generate` and `qgen synthesize` use it when no model is
named). It has seen Freebase-style SPARQL (WebQSP: entity names, relations like
`people.person.place_of_birth`), the same queries with short relation names under a prefix as DBpedia
and schema.org write them (`dbo:birthPlace`), WikiSQL's one-hop queries written as such SPARQL, and
single-table SQL (WikiSQL: `SELECT agg col FROM t WHERE col op value`). Queries over other
vocabularies (Wikidata's `wdt:P6`) tokenize to words it does not know, and their questions are
nonsense; DBpedia-style ones come out uneven (of eight one-hop probes in benchmarks/README.md, four
read as the query means, one is vague and three are wrong). For your own knowledge base,
adapt it on a few hundred of your pairs: `qgen train PAIRS.parquet --init-from default --out
out/adapted` (new tokens get new rows). Synthesis with it runs without the round-trip filter unless a
parser is named (`--parser PATH`)."""


def export_default(args: argparse.Namespace) -> None:
    from qgen.exported_model import export_model

    metrics = json.loads((args.out / "metrics.json").read_text())
    payload = read_payload(args.out / "best.pt")
    best = len(payload["history"])
    trained = len(read_payload(args.out / "last.pt")["history"]) if (args.out / "last.pt").is_file() else best
    stage = "of fine-tuning" if payload["train_config"].get("init_from") else "trained"
    after = f"{trained - best} epoch{'s' if trained - best != 1 else ''}"
    selection = (f"Selected at epoch {best} of {trained} {stage} (the lowest validation loss; training ended "
                 f"after {after} without a lower one).")
    path = export_model(args.out / "best.pt", args.to, metrics=metrics, command=args.command,
                        name="qgen default (scratchpad_extended, WebQSP + WikiSQL)", notes=selection + "\n\n" + NOTES)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("train", "evaluate", "export"))
    parser.add_argument("--out", type=Path, default=Path("out/default-model"))
    parser.add_argument("--prep", type=Path, default=Path("out"), help="Holds webqsp/ and wikisql/ from qgen preprocess.")
    parser.add_argument("--hidden", type=int, default=SIZES["hidden_size"])
    parser.add_argument("--embedding", type=int, default=SIZES["embedding_dim"])
    parser.add_argument("--layers", type=int, default=SIZES["num_layers"])
    parser.add_argument("--dropout", type=float, default=SIZES["dropout"])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=RECIPE["batch_size"])
    parser.add_argument("--learning-rate", type=float, default=RECIPE["learning_rate"])
    parser.add_argument("--teacher-forcing", type=float, default=RECIPE["teacher_forcing"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat-webqsp", type=int, default=1, help="WebQSP pairs shown this many times an epoch.")
    parser.add_argument("--short-relations", action="store_true",
                          help="Show each WebQSP pair once more with its relations as short names (dbo:placeOfBirth).")
    parser.add_argument("--entity-queries", action="store_true",
                        help="Show WikiSQL's one-hop queries once more as SPARQL entity queries (dbr:X dbo:col ?x).")
    parser.add_argument("--init-from", default=None,
                        help="Start from this model (a checkpoint, a model folder or 'default') instead of from scratch.")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--to", type=Path, default=Path("qgen/models/default"))
    parser.add_argument("--command", default="", help="The command line recorded in the model card.")
    args = parser.parse_args()
    {"train": train_default, "evaluate": evaluate_default, "export": export_default}[args.step](args)


if __name__ == "__main__":
    main()
