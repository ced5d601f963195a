"""Train and evaluate the seed paper's Table 1 models; write benchmarks/results/<dataset>/.

    python benchmarks/qgen_bench.py --dataset webqsp [--models scratchpad,coverage,...] [--epochs 75]
        [--max-seconds S] [--glove PATH] [--threads N] [--data-dir DIR]
        [--teacher-forcing P] [--teacher-forcing-per step|sequence]

A run is resumable: started again with the same options it continues from the last epoch's
checkpoint (out/benchmarks/<dataset>/<model>/last.pt), on CPU or GPU. Prints each epoch and the
metrics, and (re)writes the dataset's README table from every metrics.json present.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen import option_help  # noqa: E402
from qgen.benchmark import headline, rescore_results, run_benchmark  # noqa: E402
from qgen.model import VARIANTS  # noqa: E402
from qgen.train import TrainConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="webqsp", choices=["webqsp", "wikisql"])
    parser.add_argument("--models", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--epochs", type=int, default=75)
    parser.add_argument("--max-seconds", type=float, default=None, help="time budget per model (resumable)")
    parser.add_argument("--glove", default=None, help="GloVe-format vectors (300d) for the rows that use them")
    parser.add_argument("--teacher-forcing", type=float, default=0.5, help=option_help.TEACHER_FORCING)
    parser.add_argument("--teacher-forcing-per", default="step", choices=["step", "sequence"],
                        help=option_help.TEACHER_FORCING_PER)
    parser.add_argument("--no-repeat", action="store_true",
                        help=option_help.NO_REPEAT_BENCHMARK)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--data-dir", default=None, help="datasets root (default $QGEN_DATASETS or ../shared/datasets)")
    parser.add_argument("--work-dir", default=str(REPO / "out" / "benchmarks"))
    parser.add_argument("--results", default=str(REPO / "benchmarks" / "results"))
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
            full = rescore_results(args.dataset, Path(folder), Path(args.work_dir) / "prep" / args.dataset,
                                   datasets_dir(args.data_dir))["full"]
            print(f"{folder}: {headline(full)}  OverCopy (src) {full['overcopy_source']:.2f}")
        print(f"wrote {write_results_readme(Path(args.results) / args.dataset, args.dataset)}")
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        cfg = TrainConfig(epochs=args.epochs, max_seconds=args.max_seconds, glove_path=args.glove,
                          teacher_forcing=args.teacher_forcing, teacher_forcing_per=args.teacher_forcing_per)
    except ValueError as error:
        parser.error(str(error))
    readme = run_benchmark(args.dataset, args.models.split(","), cfg, args.work_dir, args.results, args.data_dir,
                           no_repeat=args.no_repeat, log=lambda line: print(line, flush=True))
    print(f"wrote {readme}")


if __name__ == "__main__":
    main()
