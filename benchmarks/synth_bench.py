"""Synthesis benchmarks: generation throughput at the paper's size, and memory while streaming.

    python benchmarks/synth_bench.py throughput [--checkpoint best.pt | --untrained] [--inputs 512] [--max-tokens N]
        [--dataset webqsp|wikisql --split test|dev --report FILE] [--threads N | --workers N]
    python benchmarks/synth_bench.py memory --sizes 10000,100000,1000000

throughput: questions per second of ``QuestionWriter.generate`` (beam 4, copy shares included,
token-budget batches; tokenizing, timed apart, is host work that shards spread over processes) on WebQSP test logical forms (repeated to ``--inputs``) with a paper-size model (hidden
512, vectors 300, 2 layers; a trained checkpoint if given, else an untrained ``scratchpad_extended``,
which rarely stops before max_len, so its figure is a lower bound), and the arithmetic floor: FLOPs
per question over the device's measured float32 matmul rate. Writes synth-throughput-<device>.json
and the ``synthesis`` entry of throughput-<device>.json; with ``--report FILE`` only FILE (another
dataset or a trained checkpoint of another size, beside the paper-size figure). ``--workers N`` (CPU):
N one-thread processes share the inputs, as synthesis runs on N cores with ``--dask-workers N``; their
floor is the better of one N-thread process's matmul rate and N one-thread processes' together.
memory: peak RSS of a whole ``synthesize`` run (tiny model) over N templated SPARQL queries that are
generated lazily, one child process per N, to show that memory stays flat as the input grows.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.version import code_version  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
WORKER_TIMEOUT_S = 3600  # --workers: how long to wait for a worker before giving up


def throughput(args: argparse.Namespace) -> None:
    from dataclasses import replace

    from qgen.benchmark import dataset_pairs
    from qgen.checkpoint import save_checkpoint
    from qgen.datasets.registry import load_dataset
    from qgen.model import VARIANTS, build_model
    from qgen.synth.generator import QuestionWriter
    from qgen.train import build_vocabularies

    if args.threads:
        torch.set_num_threads(args.threads)
    test = [r for r in load_dataset(args.dataset, args.data_dir, args.split) if not r.load_error]
    # More inputs than the test set: its logical forms again, each copy under its own id.
    records = [replace(test[i % len(test)], id=f"{test[i % len(test)].id}#{i // len(test)}") for i in range(args.inputs)]
    untrained = args.untrained or args.checkpoint is None
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint
        if untrained:  # a paper-size model with random weights: it rarely stops before max_len (a lower bound)
            prep = REPO / "out" / "benchmarks" / "prep" / "webqsp"
            src_vocab, tgt_vocab = build_vocabularies(dataset_pairs("webqsp", prep, True)[0])
            torch.manual_seed(0)
            model = build_model(VARIANTS[args.model].model.with_vocab(len(src_vocab), len(tgt_vocab)))
            checkpoint = str(save_checkpoint(Path(tmp) / "untrained.pt", model, src_vocab, tgt_vocab))
        writer = QuestionWriter(checkpoint, beam=args.beam, max_tokens=args.max_tokens)
        if args.workers > 1 and writer.device.type != "cpu":
            sys.exit("--workers is for CPUs (one-thread processes); a GPU decodes one big batch at a time")
        # Tokenizing (the parsers, on the host) is timed apart from generating (the model, on the device):
        # the test set's logical forms once, then their tokens again for each further copy.
        started = time.perf_counter()
        tokens = [writer.tokenize(record, i) for i, record in enumerate(test)]
        tokenize_s = time.perf_counter() - started
        tokenized = [tokens[i % len(test)] for i in range(len(records))]
        positions = list(range(len(records)))
        if args.workers > 1:
            timings, steps = worker_timings(args, checkpoint, records, tokenized)
        else:
            writer.generate(records[:256], tokenized[:256], positions[:256])  # warm-up
            _sync(writer.device)
            timings = []
            for _ in range(args.repeat):  # the median of a few: on a busy machine one timing can swing 20%
                started = time.perf_counter()
                results = writer.generate(records, tokenized, positions)
                _sync(writer.device)
                timings.append(time.perf_counter() - started)
            steps = question_steps(results)
        seconds = statistics.median(timings)  # of an even count, the mean of the middle two
    rate = len(records) / seconds
    sources = [len(t) for t in tokenized if isinstance(t, list)]
    src_len = sum(sources) / len(sources)
    flops, lengths = question_flops(writer.model, steps, args.beam, src_len)
    matmul = measured_matmul_flops(writer.device)
    if args.workers > 1:  # the machine's rate over as many cores: the better of one process's and the workers'
        matmul = max(matmul, concurrent_matmul_flops(args.workers))
    floor = matmul / flops
    report = {"command": "python benchmarks/synth_bench.py " + " ".join(sys.argv[1:]), "commit": code_version(),
              "device": str(writer.device), "threads": torch.get_num_threads() if args.workers <= 1 else args.workers,
              "workers": max(args.workers, 1), "inputs": len(records),
              "beam": args.beam, "model": "untrained " + args.model if untrained else args.checkpoint,
              "hidden": writer.model.cfg.hidden_size, "batch_tokens": writer.max_tokens,
              "seconds": round(seconds, 2), "questions_per_s": round(rate, 1),
              "questions_per_s_each_run": [round(len(records) / t, 1) for t in timings], "trained_checkpoint": not untrained,
              "tokenize_logical_forms_per_s": round(len(test) / tokenize_s, 1),
              "dataset": f"{args.dataset} {args.split}", "mean_source_tokens": round(src_len, 1),
              "mean_question_steps": lengths, "flops_per_question": flops, "matmul_flops_per_s": matmul,
              "floor_questions_per_s": round(floor, 1), "fraction_of_floor": round(rate / floor, 3)}
    if writer.device.type == "cuda":
        report["gpu"] = torch.cuda.get_device_name(writer.device)
    print(json.dumps(report, indent=2))
    device = writer.device.type
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=2) + "\n")
        return
    (RESULTS / f"synth-throughput-{device}.json").write_text(json.dumps(report, indent=2) + "\n")
    # The throughput file's synthesis entry (train_throughput.py writes the rest of it).
    summary = RESULTS / f"throughput-{device}.json"
    whole = json.loads(summary.read_text()) if summary.exists() else {}
    whole["synthesis"] = {key: report[key] for key in ("questions_per_s", "beam", "model", "hidden", "batch_tokens",
                                                       "fraction_of_floor", "inputs", "commit", "command")}
    summary.write_text(json.dumps(whole, indent=2) + "\n")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def worker_timings(args: argparse.Namespace, checkpoint: str, records: list, tokenized: list) -> tuple[list[float], list[int]]:
    """``--workers N`` on a CPU: N processes of one thread each (as ``--dask-workers N`` runs synthesis),
    each generating every N-th input; a run's time is the slowest worker's, all started together.
    Returns the runs' times and the decoding steps of every question."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(args.workers, timeout=WORKER_TIMEOUT_S), context.Queue()
    workers = [context.Process(target=_generate_worker,
                               args=(checkpoint, args.beam, args.max_tokens, records[w::args.workers],
                                     tokenized[w::args.workers], args.repeat, start, results))
               for w in range(args.workers)]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=WORKER_TIMEOUT_S) for _ in workers]  # a worker that died: an error, not a hang
    for worker in workers:
        worker.join()
    timings = [max(report[0][run] for report in reports) for run in range(args.repeat)]
    return timings, [n for report in reports for n in report[1]]


def _generate_worker(checkpoint: str, beam: int, max_tokens: int | None, records: list, tokenized: list,
                     repeat: int, start: Any, results: Any) -> None:
    from qgen.synth.generator import QuestionWriter

    torch.set_num_threads(1)
    writer = QuestionWriter(checkpoint, beam=beam, max_tokens=max_tokens)
    positions = list(range(len(records)))
    writer.generate(records[:128], tokenized[:128], positions[:128])  # warm-up
    timings = []
    for _ in range(repeat):
        start.wait()
        started = time.perf_counter()
        generated = writer.generate(records, tokenized, positions)
        timings.append(time.perf_counter() - started)
    results.put((timings, question_steps(generated)))


def concurrent_matmul_flops(workers: int, rounds: int = 3) -> float:
    """The float32 matmul rate of ``workers`` one-thread processes timed together: per round, all start
    at once and their rates are summed; the best round."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(workers, timeout=WORKER_TIMEOUT_S), context.Queue()
    procs = [context.Process(target=_matmul_worker, args=(start, results, rounds)) for _ in range(workers)]
    for proc in procs:
        proc.start()
    rates = [results.get(timeout=WORKER_TIMEOUT_S) for _ in procs]
    for proc in procs:
        proc.join()
    return max(sum(worker[r] for worker in rates) for r in range(rounds))


def _matmul_worker(start: Any, results: Any, rounds: int) -> None:
    torch.set_num_threads(1)
    results.put(matmul_rates(torch.device("cpu"), rounds=rounds, before_each=start.wait))


def question_steps(results: list) -> list[int]:
    """Decoding steps per written question (its words and the end)."""
    return [len(r.question.split()) + 1 for r in results if hasattr(r, "question")]


def question_flops(model: torch.nn.Module, steps: list[int], beam: int, src_len: float) -> tuple[float, float]:
    """FLOPs per question (2 x the multiply-adds of the products the decoder computes; ``src_len``
    source positions, the inputs' mean, about 80 on WebQSP): the encoder once, then per decoding step
    and beam hypothesis:

    - the decoder GRU: per layer 3h x (input + h), the first layer's input the word vector and the
      input-fed state (Luong) or the read context (Bahdanau);
    - each attention (read, and copy): the query (general score: W s, h x h; MLP score: the query's and
      the update's projection, h x A each, and v over the positions, src_len x A) and the scores and
      context over the positions, src_len x h each;
    - the post-read layer (2h x h), the output layer (h x vocab), the switch;
    - coverage as the code computes it: the state's projection once per hypothesis (3c x h), the
      update's projection for the kept memory term (3c x h) and the cell's hidden product per
      position (src_len x c x 3c), not the equation's per-position input product (src_len x (1 + 2h)
      x 3c), which the kept projections avoid;
    - the scratchpad: the update (2h x h, or its MLP), the write gate's step term and its position term
      (MLP gates: src_len x A), and the write over the memory (src_len x h, one multiply-add each).
    Elementwise work (softmaxes, gates' nonlinearities) is not counted."""
    cfg = model.cfg
    h, e, layers, vocab, c = cfg.hidden_size, cfg.embedding_dim, cfg.num_layers, cfg.tgt_vocab_size, cfg.coverage_dim
    units = cfg.mlp_units
    mlp_scores, mlp_gates = cfg.attention == "bahdanau", cfg.gates == "mlp"
    steps = steps or [40]
    mean_steps = sum(steps) / len(steps)
    half = h // 2  # each direction of the bidirectional encoder
    enc = src_len * 2 * 3 * half * ((e + half) + (layers - 1) * (h + half))
    attentions = 2 if cfg.copy != "none" else 1  # read, and copy
    kept = (attentions * units if mlp_scores else 0) + 3 * c  # projections of the memory kept in the state
    kept += (units if mlp_gates else 1) if cfg.memory != "none" else 0
    enc += src_len * h * kept
    step = 3 * h * ((e + h + h) + (layers - 1) * 2 * h)  # decoder GRU
    # the MLP score: the query's and the update's projections, v over the positions, the context; the
    # general score: the query's projection, the scores and the context
    attention = (2 * h * units + src_len * units + src_len * h) if mlp_scores else (h * h + 2 * src_len * h)
    step += attention * attentions
    step += 2 * h * h + h * vocab  # post-read layer, output layer
    if cfg.copy != "none":
        step += (2 * h * units + units) if mlp_gates else (2 * h + e)  # the switch p_gen
    if c:
        step += 2 * 3 * c * h + src_len * 3 * c * c
    if cfg.memory != "none":
        step += (2 * h * units + units * h) if mlp_gates else 2 * h * h  # the update u
        step += (2 * h * units + src_len * units + units * h) if mlp_gates else (2 * h + h)  # the write gate
        step += src_len * h  # the write
    return 2.0 * (enc + mean_steps * beam * step), round(mean_steps, 1)


def measured_matmul_flops(device: torch.device, n: int = 1024) -> float:
    """The device's sustained float32 matmul rate (what a well-batched GRU step can reach); decoding
    runs in float32. The best of three timings: a floor is the device's rate, and one timing of a
    tenth of a second on a CPU swung from 54 to 296 GFLOP/s with what else the machine ran."""
    return max(matmul_rates(device, n))


def matmul_rates(device: torch.device, n: int = 1024, rounds: int = 3,
                 before_each: Callable[[], Any] | None = None) -> list[float]:
    """The float32 matmul rate of each of ``rounds`` timings of ten n x n products (8192 on a GPU);
    ``before_each`` runs before each timing (the workers' barrier)."""
    n = n if device.type == "cpu" else 8192
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    torch.mm(a, b)
    _sync(device)
    rates = []
    for _ in range(rounds):
        if before_each is not None:
            before_each()
        started = time.perf_counter()
        for _ in range(10):
            torch.mm(a, b)
        _sync(device)
        rates.append(10 * 2 * n**3 / (time.perf_counter() - started))
    return rates


def memory(args: argparse.Namespace) -> None:
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        proc = subprocess.run([sys.executable, __file__, "memory-child", "--n", str(size)],
                              capture_output=True, text=True, cwd=REPO)
        if proc.returncode != 0:
            sys.exit(proc.stderr[-3000:])
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    report = {"command": "python benchmarks/synth_bench.py " + " ".join(sys.argv[1:]), "commit": code_version(),
              "runs": rows}
    (RESULTS / "synth-memory.json").write_text(json.dumps(report, indent=2) + "\n")


def memory_child(n: int) -> None:
    from qgen.data import Pair
    from qgen.datasets.records import RawExample
    from qgen.model import ModelConfig
    from qgen.synth.config import SynthesisConfig
    from qgen.synth.corpus import synthesize
    from qgen.train import TrainConfig, train

    torch.set_num_threads(1)
    cities = [f"city{i}" for i in range(50)]
    pairs = [Pair(c, ["select", "?", "x", "where", "{", "ent:", c, "ns", "capital", "?", "x", "}"],
                  ["what", "is", "the", "capital", "of", c, "?"], c) for c in cities]
    with tempfile.TemporaryDirectory() as tmp:
        model = ModelConfig(embedding_dim=8, hidden_size=16, num_layers=1, dropout=0.0, copy="extended")
        train(pairs, pairs[:5], model, TrainConfig(epochs=30, batch_size=50, learning_rate=1e-2), tmp, log=lambda _: None)

        def records():  # lazily generated: the input itself never sits in memory
            for i in range(n):
                yield RawExample(f"q{i}", "synthetic", "sparql",
                                 f"SELECT ?x WHERE {{ ns:m.0{i:07d} ns:location.country.capital ?x }}",
                                 None, "bench", "{}", names={f"m.0{i:07d}": f"Country {i}"})

        started = time.perf_counter()
        manifest = synthesize(records(), Path(tmp) / "best.pt", Path(tmp) / "corpus",
                              SynthesisConfig(shard_size=10_000, beam=4, batch_size=256), log=lambda _: None)
        seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"inputs": n, "pairs": manifest["counts"]["pairs"], "seconds": round(seconds, 1),
                      "questions_per_s": round(n / seconds, 1), "peak_rss_mib": round(peak_mib, 1)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["throughput", "memory", "memory-child"])
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--inputs", type=int, default=512)
    parser.add_argument("--untrained", action="store_true", help="a paper-size model with random weights (the default "
                                                                    "without --checkpoint)")
    parser.add_argument("--model", default="scratchpad_extended", help="the untrained model's configuration")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=None, help="source tokens a batch (default: what fits)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1, help="CPU: this many one-thread processes, each generating "
                                                               "every N-th input (as --dask-workers N synthesizes)")
    parser.add_argument("--repeat", type=int, default=1, help="time the generation this many times, report the median")
    parser.add_argument("--dataset", default="webqsp", help="whose logical forms (webqsp, wikisql, ...)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--report", default=None, help="write the report here only (not the committed results)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args()
    {"throughput": throughput, "memory": memory, "memory-child": lambda a: memory_child(a.n)}[args.what](args)


if __name__ == "__main__":
    main()
