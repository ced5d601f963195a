"""Seed 003's test rows (Zhang et al., Table 1): each row's models of several seeds, as selected on dev
BLEU by ``benchmarks/zhang_pilot.py --select bleu --runs DIR``, decoded together as an ensemble
(per-step probability averaging, ``qgen.model.ensemble``) on the E2E test MRs with beam 10 and no
length normalisation, and scored with the official metrics beside the paper's test figures.

    python benchmarks/zhang_test.py --runs out/zhang --seeds 1,2 --out benchmarks/results/e2e-zhang

reads ``<runs>/<row>_seed<n>/best_bleu.pt`` (``best.pt`` when the run selected on validation NLL) and
writes ``<out>/test.json`` and ``<out>/test/<row>.tsv`` (the outputs, ``qgen score e2e`` reads them).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.datasets import e2e_bpe  # noqa: E402
from qgen.e2e_benchmark import PAPER, ROWS, decode_mrs, row_ensemble  # noqa: E402
from qgen.metrics import e2e_official  # noqa: E402
from qgen.train import resolve_device  # noqa: E402
from qgen.version import code_version  # noqa: E402

PAPER_TEST = {"zhang_caencoder_attreg": PAPER["test"]["zhang_caencoder_attreg"]}  # the paper's test figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "datasets" / "e2e"))
    parser.add_argument("--runs", required=True, help="the --runs folder of benchmarks/zhang_pilot.py")
    parser.add_argument("--seeds", default="1,2", help="comma-separated seeds, one ensemble member each")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=ROWS)
    parser.add_argument("--beam", type=int, default=10)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--no-java", action="store_true", help="BLEU and NIST only")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "e2e-zhang"))
    args = parser.parse_args()
    started, device = time.perf_counter(), resolve_device(args.device)
    seeds = [int(s) for s in args.seeds.split(",")]
    segment = e2e_bpe.Segmenter(e2e_bpe.codes_for(e2e_bpe.read_split(args.data, "train")))  # as in training
    references = e2e_official.read_references(Path(args.data) / "testset_w_refs.csv")
    out = Path(args.out)
    (out / "test").mkdir(parents=True, exist_ok=True)
    rows = {}
    for row in args.rows:
        model, src_vocab, tgt_vocab = row_ensemble(Path(args.runs), row, seeds, device)
        with torch.inference_mode():
            outputs = decode_mrs(model, src_vocab, tgt_vocab, list(references.mrs), segment, args.beam,
                                 e2e_bpe.MAX_TOKENS)
        (out / "test" / f"{row}.tsv").write_text(
            "MR\toutput\n" + "".join(f"{mr}\t{text}\n" for mr, text in zip(references.mrs, outputs)))
        rows[row] = e2e_official.score(outputs, references.references, java_metrics=not args.no_java)
        print(f"{row}: " + "  ".join(f"{k} {v:.4f}" for k, v in rows[row].items() if v is not None), flush=True)
    command = "python benchmarks/zhang_test.py " + shlex.join(sys.argv[1:])
    report = {"what": f"E2E test ({len(references.mrs)} MRs), ensembles of seeds {seeds}, beam {args.beam}, "
                      "no length normalisation", "command": command, "commit": code_version(), "device": str(device),
              "rows": rows, "paper_test": PAPER_TEST, "seconds": round(time.perf_counter() - started, 1)}
    (out / "test.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"{command}\nwrote {out / 'test.json'}")


if __name__ == "__main__":
    main()
