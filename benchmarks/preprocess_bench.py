"""Preprocessing benchmark: prints the figures of the foundation issue and the command that made them.

    python benchmarks/preprocess_bench.py [--data-dir DIR] [--templated N] [--out FILE]

1. tokenization alone, logical forms per second on one core (WebQSP SPARQL, WikiSQL SQL, E2E MRs);
2. ``qgen preprocess webqsp`` wall time (train + test, rdflib validation, all cores);
3. N SPARQL queries drawn from at most 100 WebQSP query shapes (other entities and literals),
   preprocessed end to end on all cores (validation cached per shape), queries per second;
4. the WebQSP and WikiSQL accounting: inputs = examples + rejects, and the reject rate.
Results are printed and written as JSON with the commit and the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from parsers import tokenize_lf  # noqa: E402
from parsers.sparql.lexer import lex  # noqa: E402
from parsers.sparql.validate import shape_key  # noqa: E402
from qgen.datasets.paths import datasets_dir  # noqa: E402
from qgen.datasets.records import RawExample  # noqa: E402
from qgen.datasets.registry import load_dataset  # noqa: E402
from qgen.preprocess import preprocess_records  # noqa: E402
from qgen.version import code_version  # noqa: E402

_MID = re.compile(r"ns:m\.[0-9a-z_]+")
_YEAR = re.compile(r'"(\d{4})')


def tokens_per_second(records: list[RawExample], rounds: int = 3) -> float:
    """Best of ``rounds`` passes (the first warms the caches a long run would have warm anyway)."""
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for record in records:
            tokenize_lf(record.logical_form, record.lf_type, names=record.names, validate=False)
        best = max(best, len(records) / (time.perf_counter() - started))
    return best


def templated_queries(webqsp: list[RawExample], count: int, shapes: int = 100, seed: int = 13) -> list[RawExample]:
    """``count`` queries over at most ``shapes`` WebQSP shapes with fresh entities and years."""
    templates: dict[str, RawExample] = {}
    for record in webqsp:
        if _MID.search(record.logical_form):
            templates.setdefault(shape_key(lex(record.logical_form)), record)
        if len(templates) == shapes:
            break
    rng = random.Random(seed)
    chosen = list(templates.values())
    out = []
    for i in range(count):
        template = rng.choice(chosen)
        names: dict[str, str] = {}

        def new_mid(_: re.Match) -> str:
            mid = "m.0" + "".join(rng.choice("0123456789abcdefghjklmnpqrstvwxyz_") for _ in range(5))
            names[mid] = f"entity {rng.randrange(10**6)}"
            return "ns:" + mid

        lf = _YEAR.sub(lambda m: f'"{rng.randrange(1800, 2020)}', _MID.sub(new_mid, template.logical_form))
        out.append(RawExample(f"t{i}", "train", "sparql", lf, template.question, "templated", "{}", names=names))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None, help="datasets root (default $QGEN_DATASETS or ../shared/datasets)")
    parser.add_argument("--templated", type=int, default=100_000, help="queries in the templated run")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "preprocess.json"))
    args = parser.parse_args()
    root = datasets_dir(args.data_dir)
    if root is None:
        sys.exit("no datasets directory: pass --data-dir or set QGEN_DATASETS")
    cores = os.cpu_count() or 1
    results: dict[str, object] = {
        "command": "python benchmarks/preprocess_bench.py " + " ".join(sys.argv[1:]),
        "commit": code_version(), "machine": f"{platform.machine()}, {cores} cores, Python {platform.python_version()}",
    }

    webqsp = list(load_dataset("webqsp", root))
    wikisql = list(load_dataset("wikisql", root, "dev"))
    e2e = list(load_dataset("e2e", root, "dev"))
    results["tokenize_per_core_lf_per_s"] = {
        "webqsp_sparql": round(tokens_per_second(webqsp)),
        "wikisql_dev_sql": round(tokens_per_second(wikisql)),
        "e2e_dev_mr": round(tokens_per_second(e2e)),
    }
    print("1. tokenization alone, one core (LF/s):", results["tokenize_per_core_lf_per_s"], flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", "from qgen.cli import run; run()", "preprocess", "webqsp",
                               "--data-dir", str(root), "--out", tmp], capture_output=True, text=True, cwd=REPO)
        seconds = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"qgen preprocess webqsp failed: {proc.stderr.strip()}")
        counts = json.loads((Path(tmp) / "counts.json").read_text())
    results["preprocess_webqsp"] = {"wall_s": round(seconds, 1), "workers": cores, **counts,
                                    "reject_rate": round(counts["rejects"] / counts["inputs"], 4)}
    print(f"2. qgen preprocess webqsp: {seconds:.1f} s wall on {cores} cores; {proc.stdout.splitlines()[0]}", flush=True)

    queries = templated_queries(webqsp, args.templated)
    with tempfile.TemporaryDirectory() as tmp:
        report = preprocess_records(queries, "templated", tmp, workers=cores)
    rate = report.inputs / report.seconds
    shapes = len({shape_key(lex(q.logical_form)) for q in queries[:2000]})
    results["templated_sparql"] = {"queries": report.inputs, "shapes_at_most": 100, "seconds": round(report.seconds, 1),
                                   "lf_per_s": round(rate), "workers": cores, "rejects": report.rejects}
    print(f"3. {report.inputs} templated SPARQL queries (<=100 shapes; {shapes} seen in the first 2,000): "
          f"{report.seconds:.1f} s, {rate:.0f} LF/s on {cores} cores, {report.rejects} rejects", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        wiki = preprocess_records(list(load_dataset("wikisql", root)), "wikisql", tmp, workers=cores)
    results["preprocess_wikisql"] = {"inputs": wiki.inputs, "examples": wiki.examples, "rejects": wiki.rejects,
                                     "seconds": round(wiki.seconds, 1)}
    print(f"4. WebQSP: {counts['inputs']} parses = {sum(counts['examples'].values())} examples + "
          f"{counts['rejects']} rejects ({100 * counts['rejects'] / counts['inputs']:.2f}%); {wiki.summary()}")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
