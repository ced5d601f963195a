"""The ``qgen`` command line: thin typer commands, each calling one library function.

Errors are one line on stderr and a non-zero exit code; ``--debug`` shows the traceback.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Iterable, List, Optional

import typer

from qgen import option_help
from qgen.run_config import config_option

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="qgen: turn logical forms (SPARQL, SQL) into natural-language questions.")
_state = {"debug": False}


@app.callback()
def main(debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors.")) -> None:
    _state["debug"] = debug


def fail(message: str, code: int = 1) -> None:
    """Print one line to stderr and exit."""
    typer.echo(f"error: {' '.join(str(message).split())}", err=True)
    raise typer.Exit(code)


def _train_config(**fields):
    """A TrainConfig, or a one-line error for a bad value (e.g. --teacher-forcing 2)."""
    from qgen.train import TrainConfig

    try:
        return TrainConfig(**fields)
    except ValueError as error:
        fail(_as_option(str(error)), 2)


# The configuration field a message names -> the option of ``qgen train`` that sets it.
_TRAIN_OPTIONS = {"epochs": "--epochs", "batch_size": "--batch-size", "learning_rate": "--learning-rate",
                  "max_seconds": "--max-seconds", "teacher_forcing_per": "--teacher-forcing-per",
                  "teacher_forcing": "--teacher-forcing", "seed": "--seed", "hidden_size": "--hidden",
                  "embedding_dim": "--embedding", "num_layers": "--layers", "dropout": "--dropout",
                  "weight_average": "--weight-average"}


# The same for ``qgen synthesize`` (SynthesisConfig's fields that it sets).
_SYNTHESIS_OPTIONS = {"beam": "--beam", "shard_size": "--shard-size", "candidates": "--candidates",
                      "sampling": "--sampling", "max_tokens": "--max-tokens", "seed": "--seed"}


def _weight_average(given: float | None, augment_with: Path | None, out: Path) -> float:
    """--weight-average as given; else a run being resumed keeps its own (one written before the option
    had none), and a new one averages for template augmentation only (qgen.train_job says why)."""
    from qgen.train_job import AUGMENT_WEIGHT_AVERAGE

    if given is not None:
        return given
    if (out / "last.pt").is_file():
        from qgen.checkpoint import read_payload

        return float(read_payload(out / "last.pt").get("train_config", {}).get("weight_average", 0.0))
    return AUGMENT_WEIGHT_AVERAGE if augment_with is not None else 0.0


def _as_option(message: str, options: dict[str, str] = _TRAIN_OPTIONS) -> str:
    """A configuration error as the command line says it: 'batch_size must ...' -> '--batch-size must ...'."""
    field = message.split(" ", 1)[0]
    return options[field] + message[len(field):] if field in options else message


def _out_folder(out: Optional[Path]) -> None:
    """``--out`` names a folder to write into: a file there is a usage error, said before any work."""
    if out is None:
        return
    if Path(out).exists() and not Path(out).is_dir():
        fail(f"--out {out} is a file; it names the folder to write into", 2)
    blocking = next((p for p in Path(out).parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:  # the folder could not be made under it
        fail(f"--out {out}: {blocking} is a file, not a folder", 2)


def _model(name: Optional[Path], option: str = "--model/--checkpoint") -> Path:
    """``--checkpoint/--model`` (or the argument ``option``): a checkpoint file or an exported model folder;
    none (or ``default``) is the default model that ships with qgen."""
    from qgen.exported_model import is_exported, resolve_model

    try:
        path = resolve_model(name)
    except FileNotFoundError as err:
        fail(str(err), 2)
    if not path.exists():
        fail(f"{option} {path}: no such file or folder (a best.pt, an exported model folder, or default)", 2)
    if path.is_dir() and not is_exported(path):
        fail(f"{option} {path}: a folder without a qgen model (qgen-model.json); give a best.pt, an exported "
             "model folder, or default", 2)
    return path


def _check_generator(checkpoint: Path, lf_types: Iterable[str], any_fits: bool = False) -> None:
    """A usage error, before any work: a parser given as the model, or a model not trained on these logical
    forms (``any_fits``: on none of them)."""
    from qgen.model_match import ModelMismatchError, check_generator

    try:
        check_generator(checkpoint, list(lf_types), any_fits=any_fits)  # not a model: CheckpointError, exit 1
    except ModelMismatchError as err:
        fail(str(err), 2)


def _input_format(fmt: str, json_fields: Optional[str]):
    """``--format`` and ``--json-fields`` checked before any reading (exit 2); the generic format's fields."""
    from qgen.samplers.formats import FormatError, check_format

    try:
        return check_format(fmt, json_fields)
    except FormatError as err:
        fail(str(err), 2)


def _check_count(count: int, from_file: Optional[str]) -> None:
    """``--count 0`` means a whole ``--from-file``; with a sampler (graph, tables, endpoint) it would draw nothing."""
    if count == 0 and from_file is None:
        fail("--count 0 (all) reads a whole --from-file; give the number of logical forms to sample", 2)


def _device(name: str) -> str:
    """``--device``: auto, cpu, cuda or cuda:N, checked before any work starts."""
    import torch

    if name == "auto":
        return name
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        fail(f"--device must be auto, cpu, cuda or cuda:N, got {name!r}", 2)
    if device.type not in ("cpu", "cuda"):
        fail(f"--device must be auto, cpu, cuda or cuda:N, got {name!r}", 2)
    if device.type == "cuda" and not torch.cuda.is_available():
        fail(f"--device {name}: torch sees no CUDA GPU here (a CPU build of torch, or no driver)", 2)
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        fail(f"--device {name}: there are {torch.cuda.device_count()} CUDA devices", 2)
    return name


def _log(quiet: bool):
    """Where a command's progress lines go: the terminal, or nowhere with --quiet."""
    return (lambda line: None) if quiet else typer.echo


def _parse_names(pairs: List[str], option: str = "--name ID=NAME") -> dict[str, str]:
    names: dict[str, str] = {}
    for pair in pairs:
        ident, sep, name = pair.partition("=")
        if not sep or not ident.strip() or not name.strip():  # "m.01=" names nothing: a slip, said
            fail(f"{option.split()[0]} expects {option.split()[1]}, got {pair!r}", 2)
        names[ident.strip()] = name.strip()
    return names


@app.command()
def tokenize(
    lf: Optional[str] = typer.Argument(None, help="The logical form. Without it, --file, else JSON Lines from stdin."),
    lf_type: str = typer.Option("auto", "--lf-type", help="sparql, sql, mr (E2E), da (dialogue act), or auto: told "
                                                         "from each text (a line's own lf_type comes first)."),
    name: List[str] = typer.Option([], "--name", help="Entity name, ID=NAME (repeatable), e.g. m.01bkb=Bali."),
    no_validate: bool = typer.Option(False, "--no-validate", help="Skip rdflib/sqlglot validation."),
    dialect: str = typer.Option("sqlite", "--dialect", help="SQL dialect for sqlglot."),
    file: Optional[str] = typer.Option(None, "--file", help="The inputs generate reads: .jsonl/.parquet of {id, lf, "
                                                           "lf_type?, names?}, text (one a line), a dataset name."),
    input_format: str = typer.Option("auto", "--format", help=option_help.FORMAT),
    json_fields: Optional[str] = typer.Option(None, "--json-fields", help=option_help.JSON_FIELDS),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Datasets root, for a dataset name."),
) -> None:
    """Print the tokens of LF, space-separated; or tokenize each input of --file, or JSON Lines from stdin.

    Stdin lines: {"id": ..., "lf": ..., "lf_type": ..., "names": {id: name}}. Output lines: {"id": ...,
    "tokens": [...]} or {"id": ..., "error": "line N: ..."}, one per non-blank input line (or input of
    --file); a bad one never stops the stream, and the exit code is then 1.
    """
    from parsers import LF_TYPES
    from parsers.lf_type import AUTO
    from parsers.stream import tokenize_json_lines, tokenize_one

    if lf_type not in (*LF_TYPES, AUTO):
        fail(f"--lf-type must be one of {', '.join(LF_TYPES)} or {AUTO}, got {lf_type!r}", 2)
    names = _parse_names(name)
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(dialect)
    except ValueError as err:  # a usage error, said before any input is read
        fail(f"--dialect: {' '.join(str(err).split())}", 2)
    options = {"validate": not no_validate, "dialect": dialect}
    if lf is not None:
        if file is not None:
            fail("give a logical form or --file, not both", 2)
        result = tokenize_one(None, lf, lf_type, names, **options)
        if "error" in result:
            fail(result["error"])
        typer.echo(" ".join(result["tokens"]))
        return
    if file is not None:
        results = (tokenize_one(r.id, r.logical_form, r.lf_type, {**names, **r.names}, **options)
                   if r.load_error is None else {"id": r.id, "error": r.load_error}
                   for r in _file_records(file, lf_type, input_format, json_fields, data_dir))
    else:
        results = tokenize_json_lines(sys.stdin.buffer, lf_type, names, **options)
    failed = 0
    for result in results:
        typer.echo(json.dumps(result, ensure_ascii=False))
        failed += "error" in result
    if failed:
        raise typer.Exit(1)


def _file_records(file: str, lf_type: str, input_format: str, json_fields: Optional[str], data_dir: Optional[Path]):
    """``--file`` (and ``--format``) as records; a missing file or a bad format is a usage error, a file that
    cannot be read at all a failure (one line each)."""
    from qgen.samplers.files import read_logical_forms

    fields = _input_format(input_format, json_fields)
    _check_file_exists(file, "--file", input_format)
    try:
        yield from read_logical_forms(file, lf_type, data_dir=data_dir, fmt=input_format, fields=fields)
    except (OSError, ValueError) as err:
        fail(_file_error(file, err), 1)


def _names_a_file(text: str) -> bool:
    """Whether a logical form given on the command line is the path of an existing file instead (a query
    can be no file name: too long for one, or a name the system refuses)."""
    try:
        return "\n" not in text and Path(text.strip()).is_file()
    except (OSError, ValueError):
        return False


def _check_file_exists(file: str, option: str = "--file", input_format: str = "auto") -> None:
    """A file option naming nothing: a usage error (exit 2). A dataset name stands without --format."""
    from qgen.datasets.registry import DATASETS

    if Path(file).exists() or (input_format == "auto" and file in DATASETS):
        return
    if file in DATASETS:
        fail(f"{option} {file} is a dataset name; --format is for files (leave it out)", 2)
    fail(f"{option} {file}: no such file (nor a dataset name: {', '.join(sorted(DATASETS))})", 2)


def _file_error(file: object, err: Exception, option: str = "--file") -> str:
    """``--file FILE: why``, in one line, naming the file once where the reader's message names it too
    (as given, or as the reader writes the path: ``./a.json`` is ``a.json`` to it)."""
    why = " ".join(str(err).split())
    for written in (str(file), str(Path(str(file)))):
        why = why.removeprefix(f"{written}: ")
    return f"{option} {file}: {why}"


@app.command()
def preprocess(
    dataset: str = typer.Argument(..., help="A dataset name (webqsp, wikisql, cwq, e2e, e2e_plus, "
                                            "wen2015_hotel, wen2015_restaurant), a .jsonl file of LFs, or an "
                                            "LC-QuAD / QALD .json file (or a folder of them named by split)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Datasets root (default $QGEN_DATASETS "
                                                                     "or ../shared/datasets)."),
    out: Path = typer.Option(Path("out/preprocessed"), "--out", help="Output folder for the Parquet files."),
    split: Optional[str] = typer.Option(None, "--split", help="Only this split (default: all)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Worker processes (default: all cores)."),
    input_format: str = typer.Option("auto", "--format", help=option_help.FORMAT + " A public format's "
                                     "--split: the file's split where its name does not say."),
    json_fields: Optional[str] = typer.Option(None, "--json-fields", help=option_help.JSON_FIELDS),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=option_help.QUIET),
) -> None:
    """Tokenize a dataset into <out>/<split>.parquet and <out>/rejects.parquet; print the counts."""
    import os

    from qgen.datasets.sparql_json import UnknownJsonError
    from qgen.datasets.paths import SplitError
    from qgen.datasets.registry import UnknownDatasetError
    from qgen.preprocess import NoRecordsError, preprocess_dataset
    from qgen.samplers.files import MissingColumnError
    from qgen.progress import progress_bar

    _out_folder(out)
    most = max(64, 4 * (os.cpu_count() or 1))  # a process each: 100,000 of them never started
    if workers is not None and not 1 <= workers <= most:
        fail(f"--workers must be between 1 and {most} (default: one a core), got {workers}", 2)
    fields = _input_format(input_format, json_fields)
    with progress_bar(f"preprocess {dataset}", quiet) as update:
        try:
            report = preprocess_dataset(dataset, out, data_dir=data_dir, split=split, workers=workers,
                                        progress=update, fmt=input_format, fields=fields)
        except (FileNotFoundError, SplitError, UnknownDatasetError) as err:  # not there, no such split or name
            fail(str(err), 2)
        except (UnknownJsonError, MissingColumnError, NoRecordsError) as err:  # no format qgen knows, no lf, nothing
            fail(" ".join(str(err).split()), 1)
    typer.echo(report.summary())
    typer.echo(f"inputs={report.inputs} examples={report.total_examples} rejects={report.rejects}")
    for path in report.files:
        typer.echo(f"wrote {path}")


@app.command()
def train(
    examples: Path = typer.Argument(..., help="A preprocessed examples file (qgen preprocess ... --out DIR: DIR/train.parquet)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Checkpoints: last.pt (resumable) and best.pt (default "
                                                             "out/model, with --task parse out/parser)."),
    model: Optional[str] = typer.Option(None, "--model", help="The architecture: scratchpad_extended (the default), "
                                                              "copynet_extended (the default with --task parse), the "
                                                              "paper's seq2seq, seq2seq_priors, copynet, coverage, "
                                                              "scratchpad, or another named configuration (a wrong "
                                                              "name lists them all)."),
    epochs: int = typer.Option(75, "--epochs"),
    batch_size: int = typer.Option(32, "--batch-size"),
    learning_rate: float = typer.Option(1e-4, "--learning-rate"),
    hidden: int = typer.Option(512, "--hidden", help="Hidden size (the paper: 512)."),
    embedding: int = typer.Option(300, "--embedding", help="Word vector size (the paper: 300)."),
    glove: Optional[Path] = typer.Option(None, "--glove", help="GloVe-format vectors of --embedding size."),
    max_seconds: Optional[float] = typer.Option(None, "--max-seconds", help="Time budget; the run is resumable."),
    seed: int = typer.Option(1, "--seed"),
    teacher_forcing: float = typer.Option(0.5, "--teacher-forcing", help=option_help.TEACHER_FORCING),
    teacher_forcing_per: str = typer.Option("step", "--teacher-forcing-per", help=option_help.TEACHER_FORCING_PER),
    task: str = typer.Option("generate", "--task", help="generate (logical form -> question) or parse (question -> "
                                                        "logical form: the semantic parser of the round-trip filter)."),
    layers: int = typer.Option(2, "--layers", help="GRU layers (the paper: 2)."),
    dropout: float = typer.Option(0.5, "--dropout", help="Dropout between GRU layers (the paper: 0.5)."),
    device: str = typer.Option("auto", "--device", help=option_help.DEVICE),
    config: Optional[Path] = config_option(),
    init_from: Optional[Path] = typer.Option(None, "--init-from", help="Fine-tune this model (a checkpoint, a model "
                                                                     "folder or default) on EXAMPLES "
                                                                     "(adaptation): its model and sizes, its "
                                                                     "vocabularies extended with the new tokens."),
    augment_with: Optional[Path] = typer.Option(None, "--augment-with", help="Your domain's SQL logical forms "
                                                "(qgen preprocess forms.jsonl --out DIR: DIR/unlabelled.parquet; "
                                                "questions not needed): EXAMPLES' questions become templates that "
                                                "these forms fill, trained on beside EXAMPLES; the epoch of the "
                                                "best validation BLEU is kept, or its average with the later "
                                                "epochs when that scores higher."),
    weight_average: Optional[float] = typer.Option(None, "--weight-average", help="Checkpoints hold a moving "
                                                   "average of the weights, moving 1 - DECAY of the way to each "
                                                   "step's (0: off, the default; with --augment-with, 0.995)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=option_help.QUIET),
) -> None:
    """Train a question generator or a parser (resuming from <out>/last.pt when it is there)."""
    from dataclasses import replace

    from qgen.model import VARIANTS
    from qgen.train_job import TooFewExamplesError, train_on_examples

    if task not in ("generate", "parse"):
        fail(f"--task must be generate or parse, got {task!r}", 2)
    _out_folder(out)
    model = model or ("copynet_extended" if task == "parse" else "scratchpad_extended")
    out = out or Path("out/parser" if task == "parse" else "out/model")
    if model not in VARIANTS:
        fail(f"--model must be one of {', '.join(VARIANTS)}, got {model!r}", 2)
    variant = VARIANTS[model]
    if glove is not None and init_from is None:  # checked before any preprocessing or training
        from qgen.glove import vector_size

        if not glove.is_file():
            fail(f"--glove {glove}: no such file", 2)
        size = vector_size(glove)
        if size < 1:  # no "word v1 v2 ..." first line: a binary file, another format
            fail(f"--glove {glove}: not a GloVe text file (its first line is not a word followed by numbers)", 2)
        if size != embedding:
            fail(f"--glove {glove} holds vectors of {size} values, the embedding has {embedding}; "
                 f"set --embedding {size} or give {embedding}-value vectors", 2)
    cfg = _train_config(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, seed=seed,
                        max_seconds=max_seconds, glove_path=str(glove) if glove else None,
                        teacher_forcing=teacher_forcing, teacher_forcing_per=teacher_forcing_per,
                        device=_device(device), weight_average=_weight_average(weight_average, augment_with, out))
    try:
        model_cfg = replace(variant.model, hidden_size=hidden, embedding_dim=embedding, num_layers=layers, dropout=dropout)
    except ValueError as error:
        fail(_as_option(str(error)), 2)
    _labelled_examples(examples, "train")  # the options first, then the file, before any work
    if augment_with is not None:
        _forms_file(augment_with, task)
    if init_from is not None:  # the model is the checkpoint's: its sizes, whatever the options say
        from qgen.checkpoint import read_payload

        init_from = _model(init_from, "--init-from")
        from qgen.model import ModelConfig

        model_cfg = ModelConfig.from_dict(read_payload(init_from)["config"])
        cfg = replace(cfg, init_from=str(init_from))
        typer.echo(f"fine-tuning {init_from} ({model_cfg.hidden_size} hidden, {model_cfg.num_layers} layers); "
                   "--model and the size options do not apply")
    try:
        result = train_on_examples(examples, out, model_cfg, cfg, entity_replacement=variant.entity_replacement,
                                   log=_log(quiet), task=task, augment_with=augment_with)
    except TooFewExamplesError as err:  # found before any training
        fail(str(err), 2)
    typer.echo(f"{result.epochs_run} epochs on {result.device}; best epoch {result.best_epoch} "
               f"(valid loss {result.best_valid_loss:.3f}); wrote {Path(result.out_dir).resolve() / 'best.pt'}")


@app.command()
def export(
    checkpoint: Path = typer.Argument(..., help="A trained model (best.pt), an exported folder or default."),
    out: Path = typer.Option(..., "--out", help="The model folder to write (safetensors, JSON, a model card)."),
    name: str = typer.Option("", "--name", help="The model's name on its card."),
) -> None:
    """Write a checkpoint as a model folder that loads without unpickling (fp16 safetensors, JSON
    configuration and vocabularies, README.md card); every command that takes a model takes the folder."""
    from qgen.checkpoint import CheckpointError
    from qgen.exported_model import export_model

    checkpoint = _model(checkpoint, "CHECKPOINT")  # "default", a missing path: said as every command says it
    _out_folder(out)
    try:
        folder = export_model(checkpoint, out, name=name)
    except (OSError, CheckpointError) as err:
        fail(str(err), 1)
    typer.echo(f"wrote {folder.resolve()}")


@app.command()
def evaluate(
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", "--model", help="A trained model: a best.pt, an "
                                                                                 "exported folder, or default (when "
                                                                                 "none is named)."),
    examples: Path = typer.Argument(..., help="A preprocessed examples file with questions (e.g. DIR/test.parquet)."),
    out: Path = typer.Option(Path("out/evaluation"), "--out", help="predictions.txt, references.txt, ids.txt, metrics.json."),
    beam: int = typer.Option(4, "--beam", help=option_help.BEAM),
    raw_entities: bool = typer.Option(False, "--raw-entities", help="Read lf_tokens_raw (a model trained without entity replacement)."),
    no_repeat: bool = typer.Option(False, "--no-repeat", help=option_help.NO_REPEAT),
    plots: bool = typer.Option(False, "--plots", help="Also write PNGs: attention heatmaps with the p_gen strip, "
                                                      "loss curves, cumulative attention entropy."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=option_help.QUIET),
) -> None:
    """Decode EXAMPLES and score them: BLEU, METEOR, ROUGE-L, OverCopy, attention entropy; for a parser
    (qgen train --task parse), logical-form exact match in canonical form."""
    import json

    from qgen.benchmark import evaluate_checkpoint, headline
    from qgen.data import read_pairs
    from qgen.decode import MAX_BEAM
    from qgen.model_match import model_record

    if not 1 <= beam <= MAX_BEAM:
        fail(f"--beam must be between 1 and {MAX_BEAM}, got {beam}", 2)
    checkpoint = _model(checkpoint)
    _out_folder(out)
    lf_types = _labelled_examples(examples, "evaluate")
    if model_record(checkpoint).get("task") == "parse":
        from qgen.parse import evaluate_parser_file

        result = evaluate_parser_file(checkpoint, examples, out, beam, not raw_entities)
        for lf_type, figures in result["by_type"].items():
            typer.echo(f"{lf_type}: logical-form exact match {figures['lf_exact_match']:.4f} "
                       f"of {figures['examples']} questions")
        typer.echo(f"wrote {out.resolve()}")
        return

    _check_generator(checkpoint, lf_types)
    pairs = read_pairs(examples, not raw_entities)
    from qgen.progress import progress_bar

    with progress_bar("evaluate", quiet) as update:
        metrics = evaluate_checkpoint(checkpoint, pairs, beam, out, no_repeat=no_repeat, progress=update)
    metrics["examples"] = str(examples)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    if plots:
        from qgen.plots import write_evaluation_plots

        for path in write_evaluation_plots(checkpoint, pairs, out / "plots", no_repeat=no_repeat):
            typer.echo(f"plot {path}")
    typer.echo(headline(metrics["full"]))
    typer.echo(f"wrote {out.resolve()}")


def _forms_file(forms: Path, task: str) -> None:
    """``--augment-with``: a preprocessed file holding SQL logical forms, for a question generator."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if task != "generate":
        fail("--augment-with trains a question generator: drop it or --task parse", 2)
    if not forms.is_file():
        fail(f"--augment-with {forms}: no such file (qgen preprocess forms.jsonl --out DIR writes "
             "DIR/unlabelled.parquet)", 2)
    try:
        types = pq.read_table(forms, columns=["lf_type"]).column("lf_type").to_pylist()
    except (OSError, pa.ArrowException) as err:
        fail(f"--augment-with {forms}: not a preprocessed file (qgen preprocess writes them); "
             f"{' '.join(str(err).split())}", 1)
    if "sql" not in types:
        fail(f"--augment-with {forms}: no SQL logical forms in it ({len(types)} rows); templates are filled "
             "with SQL forms only", 2)


def _labelled_examples(examples: Path, command: str) -> list[str]:
    """The logical-form types of a file ``train`` can learn from and ``evaluate`` can score: a preprocessed
    examples file with at least one example, each with its question; otherwise a one-line error (exit 1
    unreadable, 2 the wrong file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    split = "train" if command == "train" else "test"
    if examples.is_dir():  # qgen preprocess's output folder, most likely: name the file in it
        inside = examples / f"{split}.parquet"
        fail(f"{examples}: a folder, not a preprocessed examples file" + (f"; give {inside}" if inside.is_file() else
             f" (qgen preprocess writes DIR/{split}.parquet)"), 2)
    if not examples.is_file():
        fail(f"{examples}: no such file (a preprocessed examples file: qgen preprocess writes DIR/{split}.parquet)", 2)
    columns = ["id", "lf_type", "question_tokens"]
    try:
        names = pq.read_schema(examples).names
        missing = [c for c in columns if c not in names]
        if missing:  # another Parquet file (a rejects file, a corpus shard): its schema is no reason to print
            fail(f"{examples}: not a preprocessed examples file (no column {', '.join(missing)}; qgen preprocess "
                 f"writes them: DIR/{split}.parquet)", 2)
        table = pq.read_table(examples, columns=columns)
    except (OSError, pa.ArrowException) as err:
        fail(f"{examples}: not a preprocessed examples file (qgen preprocess writes them: DIR/{split}.parquet); "
             f"{' '.join(str(err).split())}", 1)
    if table.num_rows == 0:
        fail(f"{examples}: no examples to {command} on; give a split with examples (qgen preprocess: "
             f"DIR/{split}.parquet)", 2)
    unlabelled = [i for i, q in zip(table.column("id").to_pylist(), table.column("question_tokens").to_pylist())
                  if not q]
    if unlabelled:
        fail(f"{examples}: {len(unlabelled)} of {table.num_rows} examples have no question to "
             f"{'learn from' if command == 'train' else 'score against'} (e.g. {unlabelled[0]}); {command} on a "
             f"split with questions (DIR/{split}.parquet, not unlabelled.parquet)", 2)
    return sorted(set(table.column("lf_type").to_pylist()))


@app.command()
def generate(
    lf: Optional[str] = typer.Argument(None, help="A logical form; without it, the inputs of --file or stdin."),
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", "--model", help=option_help.MODEL),
    lf_type: str = typer.Option("auto", "--lf-type", help="sparql, sql, mr, da, or auto: told from each text "
                                                         "(an input's own lf_type comes first)."),
    name: List[str] = typer.Option([], "--name", help="Entity name, ID=NAME (repeatable)."),
    file: Optional[str] = typer.Option(None, "--file", help="A .jsonl/.parquet of {id, lf, lf_type?, names?}, a "
                                                           "dataset name, or text: one logical form (or JSON "
                                                           "record) per line."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Datasets root, for a dataset name."),
    input_format: str = typer.Option("auto", "--format", help=option_help.FORMAT),
    json_fields: Optional[str] = typer.Option(None, "--json-fields", help=option_help.JSON_FIELDS),
    beam: int = typer.Option(4, "--beam", help=option_help.BEAM),
    num_return: int = typer.Option(1, "--num-return", help="Questions per logical form."),
    as_json: bool = typer.Option(False, "--json", help="JSON Lines: one {id, lf, lf_type, rank, question, score, "
                                                       "fails (with the checks)} per question, {id, lf, error} per "
                                                       "bad input."),
    no_repeat: bool = typer.Option(False, "--no-repeat", help=option_help.NO_REPEAT),
    checks: bool = typer.Option(True, "--checks/--no-checks", help="Of the beam's questions, those that pass "
                                "the faithfulness audit (every value and name, the comparison's direction, the "
                                "aggregate) and then the over-copy filter come first: the first is the one "
                                "synthesis would write (its round trip aside), whatever --num-return; a "
                                "question that still fails one is printed with what it fails. The search runs "
                                "until the whole beam has finished. --no-checks: the plain search, best score "
                                "first (it stops once --num-return questions have finished)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=option_help.QUIET),
) -> None:
    """One-off generation: print the question(s) for logical forms, with their scores.

    An input that cannot be read gets one ``error: ...`` line on stderr (with --json, also its
    {"id", "lf", "error"} object on stdout) and the others still run; the exit code is then 1.
    """
    from parsers import LF_TYPES
    from parsers.lf_type import AUTO
    from qgen.generate import generate_questions, read_generate_inputs

    if lf_type not in (*LF_TYPES, AUTO):
        fail(f"--lf-type must be one of {', '.join(LF_TYPES)} or {AUTO}, got {lf_type!r}", 2)
    from qgen.decode import MAX_BEAM

    if not 1 <= beam <= MAX_BEAM:
        fail(f"--beam must be between 1 and {MAX_BEAM}, got {beam}", 2)
    if not 1 <= num_return <= beam:
        fail(f"--num-return ({num_return}) must be between 1 and --beam ({beam})", 2)
    if lf is not None and file is not None:
        fail("give a logical form or --file, not both", 2)
    if lf is not None and not lf.strip():
        fail("the logical form is empty; give a query, or --file (or stdin) for many", 2)
    if lf is not None and _names_a_file(lf):
        fail(f"{lf.strip()} is a file, not a logical form: give it as --file {lf.strip()}", 2)
    fields = _input_format(input_format, json_fields)
    if file is not None:
        _check_file_exists(file, "--file", input_format)
    try:
        inputs = read_generate_inputs(lf, file, lf_type, data_dir, input_format, fields)
    except (OSError, ValueError) as err:
        fail(_file_error(file, err), 1)
    if not inputs:
        fail("no logical form given (an argument, --file or stdin)", 2)
    from qgen.progress import progress_bar

    failed = 0
    checkpoint = _model(checkpoint)
    # A file of mixed types is refused only when the model takes none of them; the others are per-line errors.
    _check_generator(checkpoint, {item.lf_type for item in inputs if item.error is None}, any_fits=True)
    results = generate_questions(inputs, checkpoint, names=_parse_names(name), beam=beam, num_return=num_return,
                                 no_repeat=no_repeat, checks=checks)
    with progress_bar("generate", quiet or len(inputs) == 1) as update:
        for done, result in enumerate(results, 1):
            update(done, len(inputs))
            failed += _print_generated(result, as_json)
    if failed:
        raise typer.Exit(1)


def _print_generated(result: dict, as_json: bool) -> int:
    """One input's questions (or its error) as ``generate`` prints them; 1 for an error, else 0."""
    import json

    if "error" in result:
        typer.echo(f"error: {' '.join(str(result['error']).split())}", err=True)
        if as_json:
            typer.echo(json.dumps(result, ensure_ascii=False))
        return 1
    failures = result.get("failures") or [None] * len(result["questions"])  # None: not checked (--no-checks)
    for rank, ((question, score), failed) in enumerate(zip(result["questions"], failures), 1):
        if as_json:
            checked = {} if failed is None else {"fails": failed}
            typer.echo(json.dumps({"id": result["id"], "lf": result["lf"], "lf_type": result["lf_type"],
                                   "rank": rank, "question": question, "score": score, **checked},
                                  ensure_ascii=False))
        else:
            typer.echo(f"{score:.3f}\t{question}" + (f"\tfails: {' | '.join(failed)}" if failed else ""))
    return 0


BENCHMARK_DEFAULT_MODELS = "seq2seq,seq2seq_priors,copynet,coverage,scratchpad,scratchpad_extended"
BENCHMARKS = ("webqsp", "wikisql", "e2e", "wen-hotel", "wen-restaurant", "e2e-char", "e2e-plus", "hotel-char",
              "restaurant-char", "downstream")


@app.command()
def benchmark(
    dataset: str = typer.Argument("webqsp", help="webqsp or wikisql; e2e (Zhang et al.'s CAEncoder); wen-hotel or "
                                                 "wen-restaurant (Kiddon et al.'s checklist); e2e-char, e2e-plus, "
                                                 "hotel-char or restaurant-char (Roberti et al.'s character "
                                                 "models); or "
                                                 "downstream (then TARGET: wikisql or webqsp)."),
    target: Optional[str] = typer.Argument(None, help="With downstream: the dataset (wikisql or webqsp)."),
    models: Optional[str] = typer.Option(None, "--models",
                               help="Comma-separated rows (default: all of the table): the seed paper's Table 1 "
                                    "(seq2seq,seq2seq_priors,copynet,coverage,scratchpad) + scratchpad_extended; "
                                    "e2e: zhang_baseline,zhang_caencoder,zhang_caencoder_attreg; "
                                    "wen-*: kiddon_checklist,kiddon_attention; *-char, e2e-plus: roberti_eda,roberti_eda_c,roberti_eda_s,"
                                    "roberti_eda_cs,roberti_eda_cs_tl."),
    epochs: Optional[int] = typer.Option(None, "--epochs", min=1,
                                         help="Epochs per model (default: the paper's 75; e2e: 5; wen-*: at most "
                                              "50, *-char: at most 100, stopping early on dev BLEU)."),
    max_seconds: Optional[float] = typer.Option(None, "--max-seconds", help="Time budget per model; resumable "
                                                 "(e2e, *-char, e2e-plus: training time per run over every "
                                                 "start; a start gets what is left)."),
    glove: Optional[Path] = typer.Option(None, "--glove", help="GloVe-format 300d vectors, if you have them."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Datasets root."),
    work_dir: Path = typer.Option(Path("out/benchmarks"), "--work-dir", help="Checkpoints and preprocessed data."),
    results: Path = typer.Option(Path("benchmarks/results"), "--results", help="Where the results files go."),
    teacher_forcing: float = typer.Option(0.5, "--teacher-forcing", help=option_help.TEACHER_FORCING_BENCHMARK),
    teacher_forcing_per: str = typer.Option("step", "--teacher-forcing-per", help=option_help.TEACHER_FORCING_PER),
    no_repeat: bool = typer.Option(False, "--no-repeat", help=option_help.NO_REPEAT_BENCHMARK),
    seed: int = typer.Option(1, "--seed", help=option_help.BENCHMARK_SEED),
) -> None:
    """Train and evaluate the Table 1 models; write predictions, metrics.json and a results README.

    `qgen benchmark downstream wikisql|webqsp` is the downstream benchmark instead (see `qgen downstream --help`)."""
    from qgen.benchmark import run_benchmark

    if dataset == "downstream":  # DownstreamConfig's defaults; `qgen downstream` has every option
        from dataclasses import replace

        from qgen.downstream import DownstreamConfig, run_downstream

        name = target or "wikisql"
        try:
            ds_cfg = replace(DownstreamConfig(), dataset=name, seed=seed,
                             **({"max_seconds": max_seconds} if max_seconds else {}))
        except ValueError as error:
            fail(str(error), 2)
        run_downstream(work_dir / "prep" / name, work_dir / "downstream" / name, results, ds_cfg, data_dir,
                       log=typer.echo)
        typer.echo(f"wrote {results / 'downstream' / name / 'metrics.json'}")
        return

    if dataset == "e2e":  # seed 003's table (qgen/e2e_benchmark.py)
        from qgen.dev_selection import BudgetSpent
        from qgen.e2e_benchmark import ROWS as E2E_ROWS
        from qgen.e2e_benchmark import E2EBenchConfig, run_e2e_benchmark

        rows = tuple(models.split(",")) if models else E2E_ROWS
        e2e_cfg = E2EBenchConfig(epochs=epochs or 5, seeds=(seed, seed + 1), max_seconds=max_seconds)
        try:
            readme = run_e2e_benchmark(rows, e2e_cfg, work_dir / "e2e", results, data_dir, log=typer.echo)
        except (ValueError, FileNotFoundError) as error:
            fail(str(error), 2)
        except BudgetSpent as stopped:  # not an error: the run is saved and goes on when started again
            typer.echo(f"stopped, results not written yet: {stopped}")
            return
        typer.echo(f"wrote {readme}")
        return
    if dataset in ("e2e-char", "e2e-plus", "hotel-char", "restaurant-char"):  # seed 002 (qgen/char_benchmark.py)
        from qgen.char_benchmark import ROWS as CHAR_ROWS
        from qgen.char_benchmark import CharBenchConfig, run_char_benchmark
        from qgen.dev_selection import NoEpochScored

        rows = tuple(models.split(",")) if models else CHAR_ROWS[:4]  # the transfer row when asked for
        char_cfg = CharBenchConfig(epochs=epochs or 100, seed=seed, max_seconds=max_seconds)
        try:
            name = "e2e_plus" if dataset == "e2e-plus" else dataset.split("-", 1)[0]
            readme = run_char_benchmark(name, rows, char_cfg, work_dir / "char", results,
                                        data_dir, log=typer.echo)
        except (ValueError, FileNotFoundError) as error:
            fail(str(error), 2)
        except NoEpochScored as stopped:  # the budget ended a row's first epoch: saved, it goes on when started again
            typer.echo(f"stopped (the rows finished before it are written): {stopped}")
            return
        typer.echo(f"wrote {readme}")
        return
    if dataset in ("wen-hotel", "wen-restaurant"):  # seed 004's dialogue table (qgen/wen_benchmark.py)
        from qgen.wen_benchmark import ROWS, WenBenchConfig, run_wen_benchmark

        rows = tuple(models.split(",")) if models else ROWS
        wen_cfg = WenBenchConfig(epochs=epochs or 50, seed=seed, max_seconds=max_seconds)
        try:
            readme = run_wen_benchmark(dataset.split("-", 1)[1], rows, wen_cfg, work_dir / "wen", results, data_dir,
                                       log=typer.echo)
        except (ValueError, FileNotFoundError) as error:
            fail(str(error), 2)
        typer.echo(f"wrote {readme}")
        return

    if dataset not in ("webqsp", "wikisql"):
        fail(f"unknown benchmark {dataset!r}; give one of: {', '.join(BENCHMARKS)}", 2)
    from qgen.model import VARIANTS

    names = (models or BENCHMARK_DEFAULT_MODELS).split(",")
    unknown = [name for name in names if name not in VARIANTS]
    if unknown:
        fail(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}", 2)
    cfg = _train_config(epochs=epochs or 75, max_seconds=max_seconds, glove_path=str(glove) if glove else None,
                        teacher_forcing=teacher_forcing, teacher_forcing_per=teacher_forcing_per, seed=seed)
    readme = run_benchmark(dataset, names, cfg, work_dir, results, data_dir,
                           no_repeat=no_repeat,
                           log=typer.echo)
    typer.echo(f"wrote {readme}")


@app.command()
def downstream(
    dataset: str = typer.Argument("wikisql", help="wikisql or webqsp."),
    prep: Optional[Path] = typer.Option(None, "--prep", help="qgen preprocess DATASET --out DIR: DIR (default out/DATASET)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Datasets root."),
    work_dir: Optional[Path] = typer.Option(None, "--work-dir", help="Checkpoints and the synthetic corpus "
                                                                     "(default out/downstream/DATASET)."),
    results: Path = typer.Option(Path("benchmarks/results"), "--results", help="Where metrics.json and README.md go."),
    rows: Optional[str] = typer.Option(None, "--rows", help="Comma-separated rows to run (default: all); "
                                                             "the report collects every finished row."),
    low_fraction: float = typer.Option(0.1, "--low-fraction", help="Share of the training questions kept as labels."),
    synthetic: int = typer.Option(4000, "--synthetic", help="Synthetic logical forms drawn."),
    curve: str = typer.Option("1000,2000", "--curve", help="Smaller synthetic sizes for the curve rows."),
    curve_filter: str = typer.Option("both", "--curve-filter", help="The filter of the curve rows: unfiltered, overcopy, "
                                     "round_trip_score, round_trip_token, round_trip_exact or both."),
    parser_epochs: int = typer.Option(20, "--parser-epochs"),
    generator_epochs: int = typer.Option(25, "--generator-epochs"),
    hidden: int = typer.Option(256, "--hidden"),
    max_seconds: Optional[float] = typer.Option(1500.0, "--max-seconds", help="Time budget per training run."),
    seed: int = typer.Option(1, "--seed"),
    parser_header: bool = typer.Option(True, "--parser-header/--question-only",
                                       help="A WikiSQL parser reads the question followed by its table's header, "
                                            "or the question alone."),
    generator_candidates: int = typer.Option(1, "--generator-candidates", help="The synthetic question is the first of "
                                              "the generator's N best that passes the faithfulness audit."),
    questions_per_lf: int = typer.Option(1, "--questions-per-lf", help="Up to N pairs per logical form: the chosen "
                                          "question and the next candidates that pass the audit."),
    generator_sampling: float = typer.Option(0.0, "--generator-sampling", help="Draw the generator's candidates at "
                                              "this temperature instead of taking the beam's best (0: beam)."),
    select_on: str = typer.Option("loss", "--select-on", help="Keep each parser's epoch of lowest validation loss "
                                                              "(loss) or best validation exact match (accuracy)."),
    judge_with: Optional[Path] = typer.Option(None, "--judge-with", help="A parser checkpoint that judges the "
                                              "candidates instead of the low row's parser (a second round: an "
                                              "earlier run's fine-tuned parser)."),
    round_trip_k: int = typer.Option(4, "--round-trip-k", help="The exact rule keeps a question when its logical "
                                     "form is among the parser's K best parses (default 4: its whole beam)."),
) -> None:
    """Downstream benchmark: a parser trained on a tenth of WikiSQL or WebQSP, with and without a filtered qgen corpus."""
    from qgen.downstream import DownstreamConfig, run_downstream

    try:
        cfg = DownstreamConfig(low_fraction=low_fraction, synthetic=synthetic,
                               curve=tuple(int(n) for n in curve.split(",") if n.strip()), seed=seed, hidden=hidden,
                               parser_epochs=parser_epochs, generator_epochs=generator_epochs, max_seconds=max_seconds,
                               parser_header=parser_header, dataset=dataset, select_on=select_on,
                               generator_candidates=generator_candidates, questions_per_lf=questions_per_lf,
                               generator_sampling=generator_sampling, curve_filter=f"low_synthetic_{curve_filter}",
                               judge_with=str(judge_with) if judge_with else None, round_trip_k=round_trip_k)
    except ValueError as error:
        fail(str(error), 2)
    prep = prep or Path("out") / dataset
    work_dir = work_dir or Path("out/downstream") / dataset
    try:
        metrics = run_downstream(prep, work_dir, results, cfg, data_dir, rows.split(",") if rows else None,
                                 log=typer.echo)
    except ValueError as error:  # other settings in the work folder, a row before its prerequisite, no headers
        fail(str(error), 2)
    for row, value in metrics["dev_lf_em"].items():
        typer.echo(f"{row}: dev LF exact match {value:.4f}")
    typer.echo(f"wrote {results / 'downstream' / dataset / 'metrics.json'}")


def _check_parser(parser: Path) -> None:
    """``--parser``: a parser (qgen train --task parse), refused before any work as --model refuses a parser."""
    from qgen.checkpoint import CheckpointError
    from qgen.model_match import model_record

    if not parser.exists():
        fail(f"--parser {parser}: no such file or folder", 2)
    try:
        task = model_record(parser).get("task")
    except CheckpointError as err:
        fail(str(err), 1)
    if task != "parse":
        fail(f"--parser {parser}: a question generator, not a parser (train one with qgen train --task parse, or "
             "leave --parser out)", 2)


# Commands that take no arguments but catch stray words (context.args) to say why they are refused: most
# often a shell glob after an option of one value (--from-tables data/*.csv), which click would refuse as
# "unexpected extra argument" without saying why.
STRAY_WORDS = {"allow_extra_args": True}


def _refuse_stray(stray: List[str]) -> None:
    if stray:
        fail(f"{stray[0]}: a word that no option takes; each option takes one value, so repeat it (--from-tables "
             "a.csv --from-tables b.csv) or give --from-tables a folder", 2)


@app.command(context_settings=STRAY_WORDS)
def synthesize(
    context: typer.Context,
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", "--model", help=option_help.MODEL),
    out: Path = typer.Option(Path("qgen-out/corpus"), "--out", help="The corpus folder (resumable)."),
    from_file: Optional[str] = typer.Option(None, "--from-file", help="LFs: .jsonl/.parquet (id, lf, lf_type?, names?), "
                                                                     "text (one a line) or a dataset name."),
    from_graph: Optional[Path] = typer.Option(None, "--from-graph", help="Sample WebQSP-shaped SPARQL from an RDF file."),
    from_endpoint: Optional[str] = typer.Option(None, "--from-endpoint", help="Sample through a SPARQL endpoint URL."),
    from_tables: List[Path] = typer.Option([], "--from-tables", help="Sample WikiSQL-shaped SQL from CSV/Parquet files (repeat the option), a folder of them or one SQLite db."),
    substitute_from: Optional[str] = typer.Option(None, "--substitute-from", help="With --from-graph: seed LFs whose topic entity is swapped."),
    count: int = typer.Option(1000, "--count", min=0, help="Logical forms to sample (or to read from a file; "
                                                           "0 = all)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the samplers and the generator."),
    max_answers: int = typer.Option(10, "--max-answers", min=1, help="Keep sampled queries with 1..K answers."),
    beam: int = typer.Option(4, "--beam", help=option_help.BEAM),
    candidates: Optional[int] = typer.Option(None, "--candidates", help=option_help.CANDIDATES),
    sampling: float = typer.Option(0.0, "--sampling", help=option_help.SAMPLING),
    shard_size: int = typer.Option(1000, "--shard-size", help="Inputs per Parquet shard."),
    max_overcopy: int = typer.Option(0, "--max-overcopy", help="Excess copies of LF tokens allowed per question."),
    max_repeated_ngrams: int = typer.Option(0, "--max-repeated-ngrams", help="Repeated n-grams (n>=2) allowed."),
    min_score: Optional[float] = typer.Option(None, "--min-score", help="Floor on the length-normalised log-probability."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Datasets root, for a dataset name."),
    input_format: str = typer.Option("auto", "--format", help=option_help.FORMAT + " For --from-file."),
    json_fields: Optional[str] = typer.Option(None, "--json-fields", help=option_help.JSON_FIELDS),
    no_repeat: bool = typer.Option(False, "--no-repeat", help=option_help.NO_REPEAT),
    parser: Optional[Path] = typer.Option(None, "--parser", help="A parser (qgen train --task parse) for the round-trip "
                                                                 "filter; default: ../parser/best.pt beside the "
                                                                 "checkpoint's folder when there is one."),
    no_round_trip: bool = typer.Option(False, "--no-round-trip", help="No round-trip filter, even with a parser."),
    round_trip_rule: List[str] = typer.Option([], "--round-trip-rule", help="TYPE=RULE (repeatable), RULE exact, "
                                                                             "score, token or answers (sql with "
                                                                             "--from-tables: a parse that runs to "
                                                                             "the same answers counts); default "
                                                                             "sparql=token, sql=answers."),
    round_trip_k: int = typer.Option(4, "--round-trip-k", help="Rules exact and answers: a match among the "
                                     "parser's K best parses (default 4: its whole beam; 1: the best alone)."),
    device: str = typer.Option("auto", "--device", help=option_help.DEVICE),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1,
                                             help="Source tokens per generation batch (logical forms x longest "
                                                  "one); default: what fits the device."),
    config: Optional[Path] = config_option(),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=option_help.QUIET),
    split_by: str = typer.Option("none", "--split-by", help="template: also write train/validation/test splits "
                                                            "that share no logical-form template (splits/)."),
    dedup_against: List[Path] = typer.Option([], "--dedup-against", help="Leave out logical forms that these "
                                                                          "corpora (or folders of corpora) hold "
                                                                          "as pairs or as rejects of their filters "
                                                                          "(repeatable); a sampler draws new ones "
                                                                          "in their places, up to --count."),
    round_trip_threshold: List[str] = typer.Option([], "--round-trip-threshold",
                                                   help="RULE=FLOOR (repeatable) for the score rule (mean log p) or the "
                                                        "token rule (least probable token's log p); default: the "
                                                        "parser's calibration."),
) -> None:
    """Generate a (logical form, question) corpus: pairs/ and rejects/ Parquet shards, manifest.json, README.md."""
    from qgen.synth.config import SynthesisConfig
    _refuse_stray(context.args)
    device = _device(device)  # before any reading or sampling
    checkpoint = _model(checkpoint)
    # A parser as the model, or a sampler's logical-form type the model lacks (a file's types: in synthesize).
    _check_generator(checkpoint, (["sparql"] if from_graph or from_endpoint else []) + (["sql"] if from_tables else []))
    if split_by not in ("none", "template"):
        fail(f"--split-by must be none or template, got {split_by!r}", 2)
    _check_count(count, from_file)
    fields = _input_format(input_format, json_fields)
    if input_format != "auto" and not from_file:
        fail("--format is the format of --from-file", 2)
    from qgen.synth.round_trip import THRESHOLD_RULES, RoundTripOptions, default_parser
    from qgen.synth.run import synthesize_from_source
    from qgen.synth.sources import open_source

    if parser is not None and not no_round_trip:
        _check_parser(parser)
    parser = None if no_round_trip else (parser or default_parser(checkpoint))
    round_trip = None
    # Checked whether or not a parser is at hand: a mistyped option is refused, not silently unused.
    rules = _parse_names(round_trip_rule, "--round-trip-rule TYPE=RULE")
    floors = {}
    for rule, value in _parse_names(round_trip_threshold, "--round-trip-threshold RULE=FLOOR").items():
        if rule not in THRESHOLD_RULES:
            fail(f"--round-trip-threshold sets the floor of the {' or '.join(THRESHOLD_RULES)} rule, got "
                 f"{rule}={value!r}", 2)
        try:
            floors[rule] = float(value)
        except ValueError:
            fail(f"--round-trip-threshold expects RULE=FLOOR with a number, got {rule}={value!r}", 2)
    if parser is None and (rules or floors):  # asked for a filter that cannot run
        why = "--no-round-trip is given" if no_round_trip else "no parser is beside the model (--parser PATH names one)"
        fail(f"--round-trip-rule/--round-trip-threshold set the round-trip filter, but {why}", 2)
    if parser is not None:
        try:
            round_trip = RoundTripOptions(str(parser), tuple(sorted(rules.items())), round_trip_k,
                                          tuple(sorted(floors.items())) or None, tables=tuple(map(str, from_tables)))
        except ValueError as err:  # an unknown rule or logical-form type: a usage error
            fail(f"--round-trip-rule: {err}", 2)
    try:
        config = SynthesisConfig.build(max_overcopy, max_repeated_ngrams, min_score, round_trip, beam=beam,
                                       candidates=candidates, shard_size=shard_size, seed=seed, no_repeat=no_repeat,
                                       max_tokens=max_tokens, device=device, sampling=sampling)
    except ValueError as err:  # named by its field ("shard_size must be >= 1"): said by its option here
        fail(_as_option(str(err), _SYNTHESIS_OPTIONS), 2)
    from qgen.datasets.sparql_json import UnknownJsonError
    from qgen.synth.sources import SourceError

    named = [("--from-file", from_file), ("--from-graph", from_graph), *(("--from-tables", p) for p in from_tables)]
    for option, path in named:  # a usage error, whatever the file's suffix
        if not path or Path(path).exists():
            continue
        if option != "--from-file":
            fail(f"{option} {path}: no such file", 2)
        _check_file_exists(path, option, input_format)
    known, corpora = None, []
    if dedup_against:
        from qgen.synth.dedup import known_logical_forms

        try:
            known, corpora = known_logical_forms([str(p) for p in dedup_against], out)
        except ValueError as err:
            fail(str(err), 2)
    try:
        source = open_source(from_file, str(from_graph) if from_graph else None, from_endpoint,
                             [str(p) for p in from_tables], substitute_from, count, seed, max_answers,
                             data_dir=data_dir, fmt=input_format, fields=fields, known=known)
    except SourceError as err:  # a file that cannot be read, an empty --from-file, a sampler that kept nothing
        fail(str(err), 1)
    except UnknownJsonError as err:  # a --from-file .json of no format qgen knows, found on its first record
        fail(_file_error(from_file, err, "--from-file"), 1)
    except ValueError as err:  # no source or several, a dataset name that is none
        fail(str(err), 2)
    # Said once the source opened: a source refused above is all the user needs to read.
    if round_trip is not None and not quiet:
        typer.echo(f"round-trip filter: parser {parser}")
    elif not no_round_trip and not quiet:
        typer.echo("round-trip filter: off (no parser beside the model; --parser PATH names one)")
    if dedup_against:
        source.options["dedup_against"] = corpora
        if not corpora and not quiet:
            typer.echo(f"--dedup-against: no corpus (a folder with pairs/) under {', '.join(map(str, dedup_against))} "
                       "yet; nothing is left out")
    from qgen.io.output_folder import claimed_folder
    from qgen.model_match import ModelMismatchError
    from qgen.progress import progress_bar
    from qgen.synth.corpus import CORPUS_FOLDER, CorpusError

    # One hold of the folder for the run and its split: another run claiming it in between would
    # delete the splits half-written, or split a corpus that is no longer this one.
    with claimed_folder(out, CORPUS_FOLDER, CorpusError):
        with progress_bar("synthesize", quiet) as update:
            try:
                manifest = synthesize_from_source(source, checkpoint, out, config, log=_log(quiet),
                                                  progress=lambda done: update(done, None))
            except ModelMismatchError as err:  # checked before anything is written
                fail(str(err), 2)
            except KeyboardInterrupt:
                if (Path(out) / "manifest.json").is_file():
                    typer.echo(f"interrupted: {out} is unfinished (its manifest says running, it has no card yet); the "
                               "same command resumes it", err=True)
                raise
            except UnknownJsonError as err:  # a --from-file .json of no format qgen knows, found on reading it
                fail(_file_error(from_file, err, "--from-file"), 1)
        counts = manifest["counts"]
        typer.echo(f"inputs={counts['inputs']} pairs={counts['pairs']} rejects={counts['rejects']}")
        if source.left_unread is not None and source.left_unread():  # --count's default caps a file too
            typer.echo(f"note: read the first {count} records of {from_file}; more follow (--count 0 reads them all)",
                       err=True)
        if split_by == "template":
            from qgen.synth.template_split import split_corpus

            summary = split_corpus(out, seed=seed)
            typer.echo("split by template: " + ", ".join(f"{name} {s['pairs']} pairs / {s['templates']} templates"
                                                         for name, s in summary["splits"].items()))
    typer.echo(f"wrote {out.resolve()}")


@app.command()
def demo(
    out: Path = typer.Option(Path("qgen-out"), "--out", help="Output folder (its previous demo output is replaced)."),
    quick: bool = typer.Option(False, "--quick", help="A smoke run (about a minute): small models, a few epochs, 30 LFs a corpus."),
    dask_address: Optional[str] = typer.Option(None, "--dask-address", help="Synthesis shards on this Dask scheduler."),
    dask_workers: int = typer.Option(0, "--dask-workers", help="Synthesis shards on a LocalCluster of N workers."),
) -> None:
    """Run the main job on the bundled demo data (data/demo) as Prefect flows: preprocess, train,
    synthesize from the demo graph and tables; print the counts and where things went."""
    from flows.demo import run_demo

    for line in run_demo(out, quick=quick, dask_address=dask_address, dask_workers=dask_workers):
        typer.echo(line)


@app.command(context_settings=STRAY_WORDS)
def serve(
    context: typer.Context,
    checkpoint: Path = typer.Option(..., "--checkpoint", "--model", help="The model the scheduled runs use (a "
                                                                       "best.pt, an exported folder or default)."),
    out: str = typer.Option("qgen-out/scheduled/{date}-{time}", "--out",
                            help="The corpus folder of each run; {date} and {time} are the run's scheduled day "
                                 "and time (UTC), so each run writes its own."),
    from_graph: Optional[Path] = typer.Option(None, "--from-graph", help="Sample SPARQL from this RDF file."),
    from_tables: List[Path] = typer.Option([], "--from-tables", help="Sample SQL from these CSV/Parquet tables (repeat the option) or a folder of them."),
    from_file: Optional[str] = typer.Option(None, "--from-file", help="LFs from a .jsonl/.parquet file."),
    from_endpoint: Optional[str] = typer.Option(None, "--from-endpoint", help="Sample through a SPARQL endpoint."),
    count: int = typer.Option(1000, "--count", min=0, help="Logical forms per run (0: a whole --from-file)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="One seed for every run (default: each run's "
                                                           "scheduled time, so runs differ)."),
    beam: int = typer.Option(4, "--beam", help=option_help.BEAM),
    shard_size: int = typer.Option(1000, "--shard-size"),
    cron: str = typer.Option("0 3 * * *", "--cron", help="When to run (cron; default 03:00 daily)."),
    timezone: Optional[str] = typer.Option(None, "--timezone", help="The cron's time zone (default UTC)."),
    name: str = typer.Option("scheduled-corpus", "--name", help="The deployment's name."),
    dask_address: Optional[str] = typer.Option(None, "--dask-address", help="Shards on this Dask scheduler."),
    dask_workers: int = typer.Option(0, "--dask-workers", help="Shards on a LocalCluster of N workers."),
    once: bool = typer.Option(False, "--once", help="Register, poll once and exit (the schedule stays active)."),
    work_pool: Optional[str] = typer.Option(None, "--work-pool", help="Register for this work pool's workers "
                                                                      "instead of serving here."),
    no_repeat: bool = typer.Option(False, "--no-repeat", help=option_help.NO_REPEAT),
    dedup_against: List[Path] = typer.Option([], "--dedup-against", help="Each run leaves out logical forms "
                                                                          "these corpora hold (a folder of "
                                                                          "corpora: the earlier runs')."),
) -> None:
    """Serve the synthesize flow as a scheduled deployment (qgen-synthesize/NAME) until stopped."""
    from flows.serve import deploy_to_work_pool, deployment_parameters, serve_synthesis

    _refuse_stray(context.args)

    _check_count(count, from_file)
    _check_schedule(cron, timezone)
    for option, path in [("--from-graph", from_graph), *(("--from-tables", p) for p in from_tables)]:
        if path is not None and not path.exists():  # refused now, not at every scheduled run
            fail(f"{option} {path}: no such file", 2)
    checkpoint = _model(checkpoint)  # refused now, not at the first scheduled run
    _check_generator(checkpoint, (["sparql"] if from_graph or from_endpoint else []) + (["sql"] if from_tables else []))
    if from_file:  # now, not at the first scheduled run
        _check_file_exists(from_file, "--from-file")
    if from_file and Path(from_file).is_file():  # a dataset name is read at the run; a file's first types now
        from qgen.samplers.files import read_logical_forms
        from qgen.synth.corpus import leading_types

        try:
            file_types, _ = leading_types(read_logical_forms(from_file, "auto"))
        except (OSError, ValueError) as err:
            fail(_file_error(from_file, err, "--from-file"), 1)
        _check_generator(checkpoint, file_types, any_fits=True)

    runs_folder = Path(out.split("{", 1)[0]).resolve()  # where the runs' folders go ({date} and {time} aside)
    for folder in dedup_against:  # a missing one may only be where the runs go, before the first run
        if folder.exists() and not folder.is_dir():
            fail(f"--dedup-against {folder}: not a folder (give a corpus folder, with pairs/, or a folder of them)", 2)
        if not folder.exists() and not runs_folder.is_relative_to(folder.resolve()):
            fail(f"--dedup-against {folder}: no such folder (only the folder the runs write to, {runs_folder}, may "
                 "not exist yet)", 2)
    try:
        params = deployment_parameters(str(checkpoint.resolve()), str(Path(out).resolve()),
                                       str(from_graph.resolve()) if from_graph else None,
                                       [str(p.resolve()) for p in from_tables],
                                       str(Path(from_file).resolve()) if from_file and Path(from_file).exists()
                                       else from_file, from_endpoint, count, seed,
                                       beam, shard_size, dask_address, dask_workers, no_repeat=no_repeat,
                                       dedup_against=[str(p.resolve()) for p in dedup_against])
    except ValueError as err:  # no source or several: a usage error
        fail(str(err), 2)
    when = f"cron '{cron}'{f' ({timezone})' if timezone else ''}"
    if work_pool:
        deployment_id = deploy_to_work_pool(params, work_pool, cron=cron, name=name, timezone=timezone)
        typer.echo(f"deployment {deployment_id} (qgen-synthesize/{name}, {when}) registered on work pool "
                   f"{work_pool!r}; start a worker: prefect worker start --pool {work_pool}")
        return
    from prefect.settings import PREFECT_API_URL

    if not once and not PREFECT_API_URL.value():  # the embedded server schedules nothing: serving would idle
        fail("serving a schedule needs a Prefect server, which the embedded one is not (it runs no scheduler): "
             "start one (prefect server start) and set PREFECT_API_URL=http://127.0.0.1:4200/api, or give "
             "--work-pool, or --once to register and exit", 2)
    typer.echo(f"serving qgen-synthesize/{name} on {when} with {json.dumps(params)}")
    try:
        deployment_id = serve_synthesis(params, cron=cron, name=name, timezone=timezone, run_once=once)
    except KeyboardInterrupt:  # Ctrl-C: paused on the way out as for SIGTERM, and said alike
        typer.echo(f"stopped serving qgen-synthesize/{name}" + ("" if once else "; its schedule is paused"))
        raise
    typer.echo(f"deployment {deployment_id} registered; its schedule is active" if once else
               f"stopped serving deployment {deployment_id}; its schedule is paused")


def _check_schedule(cron: str, timezone: str | None) -> None:
    """Refuse a cron expression or time zone that Prefect would refuse, before anything is printed or registered."""
    from zoneinfo import available_timezones

    from prefect.schedules import Cron

    try:
        Cron(cron)
    except ValueError as err:
        fail(f"--cron {cron!r}: {err}", 2)
    if timezone is not None and timezone not in available_timezones():  # as Prefect checks it (ZoneInfo also
        # opens right/UTC or posixrules, which Prefect refuses)
        fail(f"--timezone {timezone!r}: not a time zone (an IANA name such as Europe/Berlin)", 2)


score_app = typer.Typer(add_completion=False, no_args_is_help=True,
                        help="Score system outputs with a dataset's official metrics.")
app.add_typer(score_app, name="score")


@score_app.command("e2e")
def score_e2e(
    outputs: Path = typer.Argument(..., help="A TSV 'MR<TAB>output', one output per distinct MR of the "
                                             "references, in their order (header 'MR\toutput' optional)."),
    refs: Optional[Path] = typer.Option(None, "--refs", help="The E2E reference CSV (columns mr, ref); default "
                                                             "e2e/testset_w_refs.csv under the datasets directory."),
    datasets: Optional[Path] = typer.Option(None, "--datasets", help="The datasets directory (default "
                                                                     "$QGEN_DATASETS, else ../shared/datasets)."),
    no_java: bool = typer.Option(False, "--no-java", help="Only BLEU and NIST (METEOR, ROUGE_L, CIDEr need Java; "
                                                         "printed as null)."),
) -> None:
    """The E2E challenge's official figures (e2e-metrics): BLEU, NIST, METEOR, ROUGE_L, CIDEr, as JSON."""
    from qgen.metrics.e2e_official import E2EInputError, score_files
    from qgen.metrics.meteor import MetricUnavailableError

    try:
        figures = score_files(outputs, refs, java_metrics=not no_java, datasets=datasets)
    except E2EInputError as error:
        fail(str(error), 2)
    except MetricUnavailableError as error:
        fail(f"{error}; use --no-java for BLEU and NIST only", 2)
    typer.echo(json.dumps({k: (None if v is None else round(v, 4)) for k, v in figures.items()}))


@score_app.command("wen")
def score_wen(
    outputs: Path = typer.Argument(..., help="A text file with one output per line, line i for test record i "
                                             "(1,075 hotel, 1,039 restaurant); or lines 'act<TAB>output', the "
                                             "act checked against the test file's."),
    domain: str = typer.Option(..., "--domain", help="hotel or restaurant."),
    test_file: Optional[Path] = typer.Option(None, "--test-file", help="The RNNLG test file; default "
                                                                       "wen2015_sf/<domain>/test.json under the "
                                                                       "datasets directory."),
    datasets: Optional[Path] = typer.Option(None, "--datasets", help="The datasets directory (default "
                                                                     "$QGEN_DATASETS, else ../shared/datasets)."),
    no_java: bool = typer.Option(False, "--no-java", help="BLEU only (METEOR needs Java; printed as null)."),
) -> None:
    """SF Hotel / SF Restaurant (Wen et al. 2015) with the RNNLG protocol: BLEU-4 and METEOR (0-100), as JSON."""
    from qgen.metrics.meteor import MetricUnavailableError
    from qgen.metrics.wen import WenInputError, score_files

    try:
        figures = score_files(outputs, domain, test_file=test_file, java_metrics=not no_java, datasets=datasets)
    except WenInputError as error:
        fail(str(error), 2)
    except MetricUnavailableError as error:
        fail(f"{error}; use --no-java for BLEU only", 2)
    typer.echo(json.dumps({k: (None if v is None else round(v, 4)) for k, v in figures.items()}))


def run() -> None:
    """Console entry point: one-line errors unless --debug."""
    try:
        # Without standalone mode click *returns* the code of a typer.Exit (raised by ``fail``) instead
        # of raising it, so it must be passed on, or every refused input would exit 0.
        code = app(standalone_mode=False, prog_name="qgen")
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, EOFError):
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the CLI promise: one line, never a traceback
        if _state["debug"] or "--debug" in sys.argv:
            raise
        import click

        if isinstance(exc, (click.ClickException, typer.TyperException)) and hasattr(exc, "format_message"):
            # A usage error (typer raises its own vendored click's): click's message, in one line with the
            # command's help to read, instead of click's usage block; exit code 2 (click's own code).
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            message = " ".join(exc.format_message().split())
            if message:  # empty when the help was the answer (no arguments at all): nothing to add
                typer.echo(f"error: {message}{hint}", err=True)
            sys.exit(exc.exit_code)
        typer.echo(f"error: {type(exc).__name__}: {' '.join(str(exc).split())}", err=True)
        sys.exit(1)
