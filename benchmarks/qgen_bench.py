"""Train and evaluate the seed paper's Table 1 models; write benchmarks/results/<dataset>/.

    python benchmarks/qgen_bench.py --dataset webqsp [--models scratchpad,coverage,...] [--epochs 75]
        [--max-seconds S] [--glove PATH] [--threads N] [--data-dir DIR]
        [--teacher-forcing P] [--teacher-forcing-per step|sequence] [--seed N] [--parallel [--archive PATH]]

A run is resumable: started again with the same options it continues from the last epoch's
checkpoint (out/benchmarks/<dataset>/<model><suffix>/last.pt, suffix as in TrainConfig.run_suffix),
on CPU or GPU. Prints each epoch and the metrics, and (re)writes the dataset's README (the paper's
rows, the no-OOV subset then the full test set) and experiments/README.md (every other run) from the
metrics.json files present. The paper's rows (seq2seq ... scratchpad at the paper's teacher forcing,
any --seed) go to results/<dataset>/<model>[_seed<N>]/; every other run (scratchpad_extended,
--no-repeat, another --teacher-forcing) to results/<dataset>/experiments/<run>/.

--rescore FOLDER... recomputes every metric of results folders from their predictions.txt (the
checkpoint is not needed; attention entropy is kept), writes no_oov_ids.txt beside them, and
rewrites the READMEs.

--parallel trains the models at once, one process each (--threads each), logging to
<work-dir>/logs/<dataset>-<model>.log: the way to fill a GPU, which one model's step-by-step decoder
leaves mostly idle, or a CPU's cores (one thread per process: two threads per process beside other
work ran 3-5x slower on the 2-core machine). Each run rewrites the README as it ends, and the
parent once more when all have ended. --archive PATH then packs the dataset's results folder and
the logs into one .tar.gz (what comes back from a device run's $OUT).
--hidden / --embedding shrink the models for a smoke run, which needs its own --work-dir and
--results (the checkpoints and results folders carry the model's name only).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen import option_help  # noqa: E402
from qgen.benchmark import headline, prepare_dataset, rescore_results, run_benchmark  # noqa: E402
from qgen.model import BENCHMARK_MODELS, VARIANTS  # noqa: E402
from qgen.train import TrainConfig  # noqa: E402

DEFAULT_WORK_DIR = REPO / "out" / "benchmarks"
DEFAULT_RESULTS = REPO / "benchmarks" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="webqsp", choices=["webqsp", "wikisql"])
    parser.add_argument("--models", default=",".join(BENCHMARK_MODELS),
                        help=f"comma-separated, of {', '.join(VARIANTS)} (default: {', '.join(BENCHMARK_MODELS)})")
    parser.add_argument("--epochs", type=int, default=75)
    parser.add_argument("--max-seconds", type=float, default=None, help="time budget per model (resumable)")
    parser.add_argument("--glove", default=None, help="GloVe-format vectors (300d) for the rows that use them")
    parser.add_argument("--teacher-forcing", type=float, default=0.5, help=option_help.TEACHER_FORCING)
    parser.add_argument("--teacher-forcing-per", default="step", choices=["step", "sequence"],
                        help=option_help.TEACHER_FORCING_PER)
    parser.add_argument("--no-repeat", action="store_true",
                        help=option_help.NO_REPEAT_BENCHMARK)
    parser.add_argument("--seed", type=int, default=1, help=option_help.BENCHMARK_SEED)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--data-dir", default=None, help="datasets root (default $QGEN_DATASETS or ../shared/datasets)")
    parser.add_argument("--work-dir", default=str(DEFAULT_WORK_DIR))
    parser.add_argument("--results", default=str(DEFAULT_RESULTS))
    parser.add_argument("--parallel", action="store_true", help="one process per model, all at once")
    parser.add_argument("--archive", default=None, help="with --parallel: pack results and logs into this .tar.gz")
    parser.add_argument("--hidden", type=int, default=None, help="shrink the models (a smoke run, not a table row)")
    parser.add_argument("--embedding", type=int, default=None, help="shrink the word vectors (a smoke run)")
    parser.add_argument("--rescore", nargs="+", metavar="RESULTS_FOLDER", default=None,
                        help="recompute the metrics of these results folders from their predictions.txt "
                             "(no training, no checkpoint) and rewrite the README table")
    args = parser.parse_args()
    if args.rescore:
        from qgen.datasets.paths import datasets_dir
        from qgen.results_table import write_results_readme

        missing = [f for f in args.rescore if not (Path(f) / "metrics.json").is_file()]
        if missing:
            parser.error(f"--rescore takes results folders with a metrics.json; not one: {', '.join(missing)}")
        for folder in args.rescore:
            scores = rescore_results(args.dataset, Path(folder), Path(args.work_dir) / "prep" / args.dataset,
                                     datasets_dir(args.data_dir))
            for part in ("no_oov", "full"):
                print(f"{folder} [{part}]: {headline(scores[part])}", flush=True)
        print(f"wrote {write_results_readme(Path(args.results) / args.dataset, args.dataset)}")
        return
    if args.archive and not args.parallel:
        parser.error("--archive goes with --parallel")
    models = list(dict.fromkeys(args.models.split(",")))  # a model named twice runs once
    real_folders = Path(args.work_dir).resolve() == DEFAULT_WORK_DIR or Path(args.results).resolve() == DEFAULT_RESULTS
    if (args.hidden or args.embedding) and real_folders:
        parser.error("--hidden / --embedding make a smoke run: give it its own --work-dir and --results")
    unknown = [m for m in models if m not in VARIANTS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        cfg = TrainConfig(epochs=args.epochs, max_seconds=args.max_seconds, glove_path=args.glove,
                          teacher_forcing=args.teacher_forcing, teacher_forcing_per=args.teacher_forcing_per, seed=args.seed)
    except ValueError as error:
        parser.error(str(error))
    if args.parallel:
        sys.exit(run_in_parallel(args, models))
    sizes = {k: v for k, v in (("hidden_size", args.hidden), ("embedding_dim", args.embedding)) if v}
    readme = run_benchmark(args.dataset, models, cfg, args.work_dir, args.results, args.data_dir,
                           no_repeat=args.no_repeat, log=lambda line: print(line, flush=True), model_sizes=sizes)
    print(f"wrote {readme}")


def run_in_parallel(args: argparse.Namespace, models: list[str]) -> int:
    """Run this script once per model, all at once; wait; rewrite the README; archive. 0 if all succeeded."""
    from qgen.results_table import write_results_readme

    prepare_dataset(args.dataset, args.work_dir, args.data_dir)  # once, before the runs could race to it
    logs = Path(args.work_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    runs = {}
    for model in models:
        log = logs / f"{args.dataset}-{model}.log"
        with open(log, "a") as out:
            runs[model] = (log, subprocess.Popen([sys.executable, __file__, *single_model_argv(args, model)],
                                                 stdout=out, stderr=subprocess.STDOUT,
                                                 env={**os.environ, "PYTHONUNBUFFERED": "1"}))
        print(f"started {model} (pid {runs[model][1].pid}), log {log}", flush=True)
    failed = []
    for model, (log, process) in runs.items():
        code = process.wait()
        lines = log.read_text().splitlines()
        print(f"{model}: exit {code}; {lines[-1] if lines else '(no output)'}", flush=True)
        if code:
            failed.append(model)
    results = Path(args.results) / args.dataset
    if results.is_dir():  # not when every run failed before writing anything
        print(f"wrote {write_results_readme(results, args.dataset)}")  # once all are written
    if args.archive:  # the logs always: on a device they are all that tells what went wrong
        with tarfile.open(args.archive, "w:gz") as archive:
            if results.is_dir():
                archive.add(results, arcname=f"results/{args.dataset}")
            for log, _ in runs.values():
                archive.add(log, arcname=f"logs/{log.name}")
        print(f"wrote {args.archive}")
    if failed:
        print(f"failed: {', '.join(failed)} (see their logs)", file=sys.stderr)
    return 1 if failed else 0


def single_model_argv(args: argparse.Namespace, model: str) -> list[str]:
    """This script's options for one model of a --parallel run."""
    argv = ["--dataset", args.dataset, "--models", model, "--epochs", str(args.epochs),
            "--teacher-forcing", str(args.teacher_forcing), "--teacher-forcing-per", args.teacher_forcing_per,
            "--seed", str(args.seed), "--work-dir", str(args.work_dir), "--results", str(args.results)]
    for option, value in (("--max-seconds", args.max_seconds), ("--glove", args.glove), ("--threads", args.threads),
                          ("--data-dir", args.data_dir), ("--hidden", args.hidden), ("--embedding", args.embedding)):
        if value is not None:
            argv += [option, str(value)]
    return argv + (["--no-repeat"] if args.no_repeat else [])


if __name__ == "__main__":
    main()
