"""qgen against OpenNMT-py 3.5.1, side by side: the same model family on the same WebQSP token files.

    python benchmarks/peer_opennmt.py [--threads 2] [--device cpu|cuda] [--steps 20] [--questions 512]
        [--max-tokens 4096] [--model coverage_masked] [--rounds 3] [--wait-cpu-free MINUTES] [--peer-wheels DIR]

(benchmarks/results/peer-opennmt-cpu.json: ``python benchmarks/peer_opennmt.py``, two threads, nothing
else running.)

Writes benchmarks/results/peer-opennmt-<device>.json: each tool's training target tokens/s and
beam-4 questions/s, and ``qgen_over_opennmt`` (qgen's figure over OpenNMT-py's). Both tools are
measured ``--rounds`` times, one after the other; the file gives the median round of each figure, the
median of each ratio, and every round (``rounds``, ``rounds_figures``).

OpenNMT-py stays out of qgen's dependencies: it runs from a benchmark-only virtual environment,
out/peer-venv, which this script makes when it is missing (``--venv``), as

    python -m venv out/peer-venv
    out/peer-venv/bin/pip install --no-deps opennmt-py==3.5.1 torch==2.13.0 filelock typing-extensions \\
        sympy mpmath networkx jinja2 markupsafe fsspec numpy configargparse pyyaml pyonmttok regex \\
        sacrebleu portalocker tabulate colorama lxml rapidfuzz pyahocorasick fasttext-wheel

(opennmt-py 3.5.1 pins torch<2.2; with --no-deps it runs on torch 2.13.0, the CPU wheel qgen uses.
Two things are done around it: its child processes get TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1, since
torch >= 2.6 loads with weights_only and refuses OpenNMT-py's checkpoints, which pickle an
argparse.Namespace; and the checkpoint given to onmt_translate has its copy generator's weights
moved under the model's names, since 3.5.1's loader cannot find them where its trainer saves
them (``GENERATOR_FIX``), and onmt_translate runs through a driver that builds its data iterator
with the copy keys, which 3.5.1's inference engine leaves out, and reads copied words' ids against
the target vocabulary (``TRANSLATE_DRIVER``); and on a GPU its training and search run with the
copy scores' index tensors made on the GPU, where 3.5.1 makes them on the CPU and torch refuses
to mix the two (``COPY_SCORES_FIX``): four bugs of OpenNMT-py 3.5.1 with -copy_attn; none touches
the model or the search.)
Each package is what OpenNMT-py imports when onmt_build_vocab, onmt_train and onmt_translate start
(its transforms package imports every transform module, so rapidfuzz, pyahocorasick, fasttext and
sacrebleu load though no transform is used), plus torch's own imports. spacy, imported only by the
terminology transform, is a stand-in module there (spacy/__init__.py in the environment's
site-packages, or in peer-site below, written by this script) that fails if anything uses it;
ctranslate2, tensorboard, flask and waitress are not imported on these paths and are not installed.

On a machine with a CUDA GPU and no package index, ``--peer-wheels DIR`` takes the place of the
environment: DIR holds the wheels of opennmt-py 3.5.1 and of the packages of the list above that the
machine's Python lacks (configargparse, pyonmttok, rapidfuzz, pyahocorasick, fasttext-wheel; made
elsewhere with ``pip download --no-deps --only-binary=:all: --python-version 3.12 --platform
manylinux_2_28_x86_64 ...``), never torch. They are installed with this interpreter's pip (``pip
install --no-index --no-deps --target <--work>/peer-site DIR/*.whl``), and OpenNMT-py runs in this interpreter with that folder first on its
PYTHONPATH, on the same torch as qgen:

    python benchmarks/peer_opennmt.py --device cuda --peer-wheels DIR

Either way OpenNMT-py's tools run as ``python -m onmt.bin.build_vocab`` and ``python -m
onmt.bin.train`` (what its onmt_build_vocab and onmt_train scripts call).

Data (out/peer-opennmt/data): qgen's preprocessed WebQSP (``dataset_pairs("webqsp", prep, True)``:
entity names, the 90% train part, the first question per test group), one example a line, tokens
separated by spaces: src-train.txt / tgt-train.txt (sources cut to 200 tokens and targets to 40, as
qgen's training cuts them), src-test.txt (whole). OpenNMT-py's vocabularies come from
``onmt_build_vocab -n_sample -1`` over the train files (every token: qgen's vocabulary is every
training token too).

Configuration (the issue's model):

    qgen (registry model coverage_masked)    OpenNMT-py 3.5.1
    bidirectional GRU encoder, 2 layers,     -encoder_type brnn -rnn_type GRU -layers 2
      256 per direction                        -hidden_size 512 (brnn: 256 per direction)
    GRU decoder, 2 layers, hidden 512        -decoder_type rnn (same rnn_type, layers, hidden_size)
    word vectors 300                         -word_vec_size 300
    dropout 0.5                              -dropout 0.5
    Luong general score, input feeding       -global_attention general -input_feed 1 (defaults)
    copy (copy over V_in ∩ V_out, softmax    -copy_attn (See et al.'s pointer-generator over a
      masked to copyable positions; its own    dynamic source vocabulary; its own copy attention)
      copy attention)
    coverage (dim 10 a source position,      -coverage_attn (the summed attention, See et al.'s
      updated each step by a GRU over the      c_t; 3.5.1's decoder does not pass it to its
      copy attention, inside the copy score)   attention, so it feeds only a coverage loss, off
                                               here: -lambda_coverage 0, the default)
    Adam lr 1e-4, clip 5                     -optim adam -learning_rate 0.0001 -max_grad_norm 5
    batch 32 examples, length-bucketed       -batch_size 32 -batch_type sents (bucketed, sorted)
    teacher forcing 1.0 (here; the paper's   full teacher forcing (always)
      0.5 is train_throughput.py's figure)
    beam 4, max_len 40                       -beam_size 4 -max_length 40 -max_length_ratio 0
    token-budget batches of 4096 source      -batch_type tokens -batch_size 4096
      tokens (qgen.batching.token_batches)

So coverage costs OpenNMT-py one addition a step and qgen a small GRU a step: OpenNMT-py does a
little less work here. coverage_masked is the closest registry model: copy + coverage, no
scratchpad (OpenNMT-py has none), Luong's general score with input feeding (OpenNMT-py's
defaults); scratchpad_extended would add a memory that OpenNMT-py lacks. The copy differs in kind:
qgen copies source words that are in the question vocabulary, OpenNMT-py any source word (its
output distribution covers the target vocabulary plus the batch's source words).

Training, target tokens/s: both tools train ``2 * --steps`` steps; the first half is the warm-up
and the second half is timed. qgen: ``qgen.train.training_step`` (as train_throughput.py does) in
this process, length-bucketed batches of 32 (``bucketed_batches``), the timed window including
making each batch (OpenNMT-py's window includes its data iterator); target tokens = gold tokens
including EOS (``Batch.target_tokens``). The step-only rate (the time spent making batches taken
out, as train_throughput.py times it) is recorded too. OpenNMT-py: ``onmt_train -train_steps 2N
-report_every N -num_workers 0 -bucket_size <train examples>`` (one pass over the corpus sorted
into batches, as qgen's length buckets; its default, 262,144, reads the corpus 85 times before the
first step) in a child process; its report at step 2N covers exactly steps N+1..2N (its statistics
restart at each report) and its tgt tok/s counts the non-padding target tokens after BOS, EOS
included: the same count. The compared figure is that reported rate.

Translation, questions/s: the first ``--questions`` WebQSP test sources, beam 4, max length 40,
with untrained models (the compared figure; they rarely stop before max_len, so both do the same
number of decoder steps): qgen's model as built (seed 0), OpenNMT-py's as initialised (one
onmt_train step at learning rate 0, which moves no weight under Adam). Then again with the models
just trained (2N steps each, ``translate_trained``): these stop after a few words, so that figure
is mostly encoding and per-batch overhead. The mean output lengths are recorded. qgen:
``qgen.decode.beam_search`` over length-sorted token-budget batches, timed from the first batch
made to the last search done. OpenNMT-py: ``onmt_translate -report_time``; its "Average translation
time" (ms a sentence, over its whole translate loop: data iterator, search, detokenising) times the
number of questions.

Threads: both tools run alone, one after the other, with ``--threads`` intra-op threads
(torch.set_num_threads here; OMP_NUM_THREADS and MKL_NUM_THREADS for the child). On a CUDA machine
(``--device cuda``) qgen trains under bf16 autocast as its training loop does and OpenNMT-py in
float32 (its default), each on GPU 0.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from qgen.batching import token_batches  # noqa: E402
from qgen.benchmark import dataset_pairs  # noqa: E402
from qgen.data import bucketed_batches  # noqa: E402
from qgen.decode import beam_search  # noqa: E402
from qgen.model import VARIANTS, build_model, make_batch  # noqa: E402
from qgen.train import TrainConfig, build_vocabularies, make_optimizer, resolve_device, training_step  # noqa: E402
from qgen.version import code_version  # noqa: E402

ONMT_VERSION = "3.5.1"
TORCH_VERSION = "2.13.0"
PEER_PACKAGES = [f"opennmt-py=={ONMT_VERSION}", f"torch=={TORCH_VERSION}", "filelock", "typing-extensions", "sympy",
                 "mpmath", "networkx", "jinja2", "markupsafe", "fsspec", "numpy", "configargparse", "pyyaml",
                 "pyonmttok", "regex", "sacrebleu", "portalocker", "tabulate", "colorama", "lxml", "rapidfuzz",
                 "pyahocorasick", "fasttext-wheel"]
SPACY_STANDIN = ('"""Stand-in: OpenNMT-py imports spacy only for its terminology transform, which '
                 'benchmarks/peer_opennmt.py does not use."""\n\n\ndef __getattr__(name):\n'
                 '    raise ImportError("spacy is not installed in this benchmark environment")\n')
MAX_SRC, MAX_TGT, MAX_LEN, BEAM = 200, 40, 40, 4
CPU_FREE = Path("/tmp/cpu_free")
# OpenNMT-py 3.5.1 saves a copy generator's weights apart (checkpoint["generator"]: "linear.weight", ...)
# but its loader (onmt/models/model.py, load_state_dict) looks them up as "weight" there and fails with
# "Missing key in checkpoint: generator.linear.weight". The same tensors moved under the model's own
# names load through its first branch: the weights are unchanged.
GENERATOR_FIX = """
import sys, torch
checkpoint = torch.load(sys.argv[1], map_location="cpu", weights_only=False)
checkpoint["model"].update({"generator." + k: v for k, v in checkpoint["generator"].items()})
checkpoint["generator"] = {}
torch.save(checkpoint, sys.argv[2])
"""
# OpenNMT-py 3.5.1's onmt_translate with a -copy_attn model: (1) its inference engine builds the data
# iterator without the copy keys (InferenceEnginePY.infer_file passes no copy=): KeyError 'src_map';
# (2) TranslationBuilder._build_target_tokens reads a copied token's id less the source vocabulary's
# size, where the extended ids start after the target vocabulary's: IndexError (or a wrong word).
# onmt_translate's own main, run with the iterator built as training builds it and with (2) fixed;
# the search itself is untouched (the fix turns finished ids into words).
# On a GPU, 3.5.1's collapse_copy_scores (training loss and search) builds its index tensors on the
# CPU and index_selects a CUDA tensor with them, which torch refuses ("Expected all tensors to be on
# the same device"). The same function with its indices made on the scores' device, put in place in
# the two modules that imported it by name; on a CPU it does what the original does.
COPY_SCORES_FIX = """
import torch
import onmt.modules.copy_generator, onmt.translate.translator, onmt.utils.loss
def collapse_copy_scores(scores, batch, tgt_vocab, batch_dim=1):
    offset = len(tgt_vocab)
    for b in range(scores.size(batch_dim)):
        blank, fill = [], []
        src_vocab = batch["src_ex_vocab"][b]
        for i in range(1, len(src_vocab)):
            ti = tgt_vocab[src_vocab.ids_to_tokens[i]]
            if ti != 0:
                blank.append(offset + i)
                fill.append(ti)
        if blank:
            blank = torch.tensor(blank, dtype=torch.int64, device=scores.device)
            fill = torch.tensor(fill, dtype=torch.int64, device=scores.device)
            score = scores[:, b] if batch_dim == 1 else scores[b]
            score.index_add_(1, fill, score.index_select(1, blank))
            score.index_fill_(1, blank, 1e-10)
    return scores
for module in (onmt.modules.copy_generator, onmt.translate.translator, onmt.utils.loss):
    module.collapse_copy_scores = collapse_copy_scores
"""
TRAIN_DRIVER = COPY_SCORES_FIX + """
import sys
from onmt.bin.train import main
sys.argv[0] = "onmt_train"
main()
"""
TRANSLATE_DRIVER = COPY_SCORES_FIX + """
import functools, sys
import onmt.inference_engine as engine
from onmt.bin.translate import main
from onmt.constants import DefaultTokens
from onmt.translate.translation import TranslationBuilder
engine.build_dynamic_dataset_iter = functools.partial(engine.build_dynamic_dataset_iter, copy=True)
original = TranslationBuilder._build_target_tokens
def build_target_tokens(self, src, srclen, pred, attn, voc, dyn_voc):
    if dyn_voc is None or self.replace_unk:
        return original(self, src, srclen, pred, attn, voc, dyn_voc)
    tokens = [voc[t] if t < len(voc) else dyn_voc.ids_to_tokens[t - len(voc)] for t in pred.tolist()]
    return tokens[:-1] if tokens and tokens[-1] == DefaultTokens.EOS else tokens
TranslationBuilder._build_target_tokens = build_target_tokens
sys.argv[0] = "onmt_translate"
main()
"""
# The arguments that start each OpenNMT-py tool after the peer's python (its console scripts call these mains).
ONMT_TOOLS = {"onmt_build_vocab": ["-m", "onmt.bin.build_vocab"], "onmt_train": ["-c", TRAIN_DRIVER],
              "onmt_translate": ["-c", TRANSLATE_DRIVER]}


# each part's throughput key, and each ratio's (qgen over OpenNMT-py) part
RATE = {"train": "target_tokens_per_s", "translate": "questions_per_s", "translate_trained": "questions_per_s"}
RATIO = {"target_tokens_per_s": "train", "questions_per_s": "translate", "questions_per_s_trained": "translate_trained"}


def measure_round(args, peer, work: Path, onmt_config: Path, train, test, translate: dict, device) -> dict:
    """One round: qgen trains and translates, then OpenNMT-py does; their figures and ratios."""
    qgen_model, qgen_train, src_vocab, tgt_vocab = qgen_training(args.model, train, args.steps, device)
    print("qgen train:", qgen_train, flush=True)
    torch.manual_seed(0)  # the trained model's initial weights
    untrained = build_model(qgen_model.cfg).to(device).eval()
    qgen_translate = qgen_translation(untrained, test, src_vocab, tgt_vocab, args.max_tokens, device)
    print("qgen translate (untrained):", qgen_translate, flush=True)
    qgen_trained = qgen_translation(qgen_model, test, src_vocab, tgt_vocab, args.max_tokens, device)
    print(f"qgen translate (trained {2 * args.steps} steps):", qgen_trained, flush=True)
    onmt_train = onmt_training(peer, work, onmt_config, args.steps, args.threads)
    print("OpenNMT-py train:", onmt_train, flush=True)
    onmt_translate = onmt_translation(checkpoint=onmt_untrained(peer, work, onmt_config, args.threads), **translate)
    print("OpenNMT-py translate (untrained):", onmt_translate, flush=True)
    onmt_trained = onmt_translation(checkpoint=work / f"model_step_{2 * args.steps}.pt", **translate)
    print(f"OpenNMT-py translate (trained {2 * args.steps} steps):", onmt_trained, flush=True)
    qgen = {"train": qgen_train, "translate": qgen_translate, "translate_trained": qgen_trained}
    opennmt = {"train": onmt_train, "translate": onmt_translate, "translate_trained": onmt_trained}
    ratios = {name: round(qgen[part][RATE[part]] / opennmt[part][RATE[part]], 2) for name, part in RATIO.items()}
    print("round:", json.dumps(ratios), flush=True)
    return {"qgen": qgen, "opennmt": opennmt, "qgen_over_opennmt": ratios}


def _median_round(figures: list[dict], key: str) -> dict:
    """The figures of the round whose ``key`` is the median (the lower one of an even count)."""
    return sorted(figures, key=lambda f: f[key])[(len(figures) - 1) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--steps", type=int, default=20, help="timed training steps (after as many warm-up steps)")
    parser.add_argument("--questions", type=int, default=512, help="WebQSP test sources translated (0: all 1,639)")
    parser.add_argument("--max-tokens", type=int, default=4096, help="source tokens a translation batch")
    parser.add_argument("--model", default="coverage_masked", help="qgen's registry model")
    parser.add_argument("--venv", default=str(REPO / "out" / "peer-venv"))
    parser.add_argument("--peer-wheels", metavar="DIR",
                        help="no venv: install the wheels in DIR into <work>/peer-site and run OpenNMT-py in this "
                             "interpreter (its torch) with that folder on PYTHONPATH")
    parser.add_argument("--work", default=str(REPO / "out" / "peer-opennmt"))
    parser.add_argument("--prep", default=str(REPO / "out" / "benchmarks" / "prep" / "webqsp"))
    parser.add_argument("--rounds", type=int, default=3,
                        help="times both tools are measured, one after the other; medians are reported")
    parser.add_argument("--wait-cpu-free", type=float, default=0.0,
                        help="minutes to wait for /tmp/cpu_free before timing (0: do not wait)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    work, prep = Path(args.work), Path(args.prep)
    if args.peer_wheels:
        peer = peer_from_wheels(Path(args.peer_wheels), work / "peer-site")
    else:
        peer = ensure_venv(Path(args.venv))
    train, _, test = dataset_pairs("webqsp", prep, True)
    test = test[: args.questions] if args.questions else test
    data = write_token_files(work / "data", train, test)
    onmt_config = write_onmt_config(work, data, args.steps, args.device, len(train))
    onmt(peer, "onmt_build_vocab", ["-config", str(onmt_config), "-n_sample", "-1"], args.threads, work / "vocab.log")

    note = wait_for_cpu(args.wait_cpu_free) if args.wait_cpu_free else None
    translate = dict(peer=peer, work=work, data=data, questions=len(test), max_tokens=args.max_tokens,
                     threads=args.threads, device=args.device)
    rounds = [measure_round(args, peer, work, onmt_config, train, test, translate, device)
              for _ in range(args.rounds)]
    # On a shared 2-core machine single timings swing by a fifth: each part's figure is the round with
    # the median throughput, and each ratio the median of the rounds' ratios (every round is kept).
    qgen_figures = {part: _median_round([r["qgen"][part] for r in rounds], RATE[part]) for part in RATE}
    onmt_figures = {part: _median_round([r["opennmt"][part] for r in rounds], RATE[part]) for part in RATE}
    ratios = {name: statistics.median(r["qgen_over_opennmt"][name] for r in rounds) for name in RATIO}

    report = {
        "command": "python benchmarks/peer_opennmt.py " + " ".join(sys.argv[1:]),
        "commit": code_version(), "device": str(device), "machine": platform.machine(), "threads": args.threads,
        "versions": {"qgen_torch": torch.__version__, "opennmt_py": peer_version(peer, "onmt"),
                     "opennmt_torch": peer_version(peer, "torch")},
        "data": {"train_examples": len(train), "test_questions": len(test), "token_files": str(data.relative_to(REPO))
                 if data.is_relative_to(REPO) else str(data)},
        "model": {"qgen": args.model, "hidden": 512, "word_vectors": 300, "layers": 2, "dropout": 0.5,
                  "batch": 32, "beam": BEAM, "max_len": MAX_LEN, "translation_batch_tokens": args.max_tokens,
                  "training_steps_each": 2 * args.steps, "timed_steps": args.steps},
        "qgen": qgen_figures, "opennmt": onmt_figures, "qgen_over_opennmt": ratios,
        "rounds": [r["qgen_over_opennmt"] for r in rounds],
        "rounds_figures": rounds,
    }
    if device.type == "cuda":
        report["gpu"] = torch.cuda.get_device_name(device)
    if note:
        report["note"] = note
    out = REPO / "benchmarks" / "results" / f"peer-opennmt-{device.type}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["qgen_over_opennmt"]), f"\nwrote {out}")


@dataclass(frozen=True)
class Peer:
    """How OpenNMT-py runs: ``python`` (the venv's, or this interpreter with ``site`` first on PYTHONPATH)."""
    python: str
    site: Path | None = None

    def run(self, args: list[str], threads: int | None = None, **kwargs) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        # torch >= 2.6 loads with weights_only=True by default, which refuses OpenNMT-py 3.5.1's own
        # checkpoints (they pickle its options, an argparse.Namespace): the old default, for its files only.
        env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
        if threads:
            env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        if self.site:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.site), env.get("PYTHONPATH")]))
        return subprocess.run([self.python, *args], env=env, **kwargs)


def ensure_venv(venv: Path) -> Peer:
    """The benchmark-only environment for OpenNMT-py (see the docstring), made when missing."""
    python = venv / "bin" / "python"
    if not (venv / "bin" / "onmt_train").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *PEER_PACKAGES], check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    write_spacy_standin(Path(site))
    return Peer(str(python))


def peer_from_wheels(wheels: Path, site: Path) -> Peer:
    """OpenNMT-py from the wheels in ``wheels`` (no torch among them), installed into ``site`` when missing."""
    if not (site / "onmt").exists():
        found = sorted(wheels.glob("*.whl"))
        if not found:
            raise SystemExit(f"no wheels in {wheels}")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--target", str(site), *map(str, found)], check=True)
    write_spacy_standin(site)
    return Peer(sys.executable, site)


def write_spacy_standin(site: Path) -> None:
    standin = site / "spacy" / "__init__.py"
    if not standin.exists():
        standin.parent.mkdir(parents=True, exist_ok=True)
        standin.write_text(SPACY_STANDIN)


def peer_version(peer: Peer, module: str) -> str:
    code = f"import {module}; print({module}.__version__)"
    return peer.run(["-c", code], check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]


def write_token_files(folder: Path, train, test) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    files = {"src-train.txt": [p.src[:MAX_SRC] for p in train], "tgt-train.txt": [p.tgt[:MAX_TGT] for p in train],
             "src-test.txt": [p.src for p in test]}
    for name, lines in files.items():
        (folder / name).write_text("".join(" ".join(tokens) + "\n" for tokens in lines))
    return folder


def write_onmt_config(work: Path, data: Path, steps: int, device: str, examples: int) -> Path:
    import yaml  # qgen's environment has it (OpenNMT-py reads the file in its own)

    config = {
        "save_data": str(work / "run"), "overwrite": True,
        "src_vocab": str(work / "vocab.src"), "tgt_vocab": str(work / "vocab.tgt"),
        "data": {"webqsp": {"path_src": str(data / "src-train.txt"), "path_tgt": str(data / "tgt-train.txt")}},
        "encoder_type": "brnn", "decoder_type": "rnn", "rnn_type": "GRU", "layers": 2, "hidden_size": 512,
        "word_vec_size": 300, "dropout": 0.5, "global_attention": "general", "input_feed": 1,
        "copy_attn": True, "coverage_attn": True,
        "optim": "adam", "learning_rate": 0.0001, "max_grad_norm": 5, "batch_size": 32, "batch_type": "sents",
        "train_steps": 2 * steps, "report_every": steps, "save_checkpoint_steps": 2 * steps,
        "save_model": str(work / "model"), "num_workers": 0, "bucket_size": examples, "seed": 1,
        "valid_steps": 10 * steps,
    }
    if device == "cuda":
        # OpenNMT-py turns cuDNN's deterministic mode on for any seed > 0, which slows its GRUs on a
        # GPU; qgen runs without it, so OpenNMT-py runs with its own default seed (-1) there too.
        config.update({"world_size": 1, "gpu_ranks": [0], "seed": -1})
    path = work / "train.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def onmt(peer: Peer, tool: str, options: list[str], threads: int, log: Path) -> str:
    """Run one OpenNMT-py tool (``ONMT_TOOLS``) in the benchmark environment; its output also goes to ``log``."""
    done = peer.run([*ONMT_TOOLS[tool], *options], threads, capture_output=True, text=True)
    text = done.stdout + done.stderr
    log.write_text(text)
    if done.returncode:
        raise SystemExit(f"{tool} failed ({done.returncode}); see {log}\n{text[-3000:]}")
    return text


def wait_for_cpu(minutes: float) -> str | None:
    deadline = time.monotonic() + 60 * minutes
    while not CPU_FREE.exists():
        if time.monotonic() > deadline:
            return f"{CPU_FREE} never appeared within {minutes:g} minutes: measured while other jobs may have run"
        time.sleep(30)
    return None


def qgen_training(name: str, train, steps: int, device: torch.device):
    variant = VARIANTS[name]
    src_vocab, tgt_vocab = build_vocabularies(train)
    torch.manual_seed(0)
    model = build_model(variant.model.with_vocab(len(src_vocab), len(tgt_vocab))).to(device).train()
    cfg = TrainConfig(batch_size=32, teacher_forcing=1.0)
    optimizer = make_optimizer(model, cfg, device)
    forcing = torch.Generator(device=device).manual_seed(0)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    groups = list(bucketed_batches(train, 32, random.Random(0)))[: 2 * steps]

    def make(pairs):
        return make_batch([p.src for p in pairs], [p.tgt[: cfg.max_tgt_len] for p in pairs], src_vocab, tgt_vocab,
                          variant.model.copy, cfg.max_src_len)

    for pairs in groups[:steps]:  # warm-up, not timed
        training_step(model, optimizer, make(pairs).to(device), cfg, forcing, autocast)
    _sync(device)
    started = time.perf_counter()
    tokens, making = 0, 0.0
    for pairs in groups[steps:]:
        made = time.perf_counter()
        batch = make(pairs).to(device)
        making += time.perf_counter() - made
        tokens += training_step(model, optimizer, batch, cfg, forcing, autocast)[1]
    _sync(device)
    seconds = time.perf_counter() - started
    figures = {"target_tokens_per_s": round(tokens / seconds), "target_tokens_per_s_step_only":
               round(tokens / (seconds - making)), "s_per_step": round(seconds / steps, 4), "timed_steps": steps,
               "target_tokens": tokens, "teacher_forcing": cfg.teacher_forcing,
               "parameters": sum(p.numel() for p in model.parameters())}
    return model.eval(), figures, src_vocab, tgt_vocab


def qgen_translation(model, test, src_vocab, tgt_vocab, max_tokens: int, device: torch.device) -> dict:
    items = sorted(enumerate(p.src for p in test), key=lambda item: (len(item[1]), item[0]))
    lengths = []
    _sync(device)
    started = time.perf_counter()
    for chunk in token_batches(items, max_tokens):
        batch = make_batch([tokens for _, tokens in chunk], None, src_vocab, tgt_vocab, model.cfg.copy).to(device)
        lengths += [len(hyps[0].ids) for hyps in beam_search(model, batch, beam=BEAM, max_len=MAX_LEN)]
    _sync(device)
    seconds = time.perf_counter() - started
    return {"questions": len(test), "seconds": round(seconds, 2), "questions_per_s": round(len(test) / seconds, 2),
            "mean_output_tokens": round(sum(lengths) / len(lengths), 2), "max_tokens": max_tokens}


def onmt_training(peer: Peer, work: Path, config: Path, steps: int, threads: int) -> dict:
    started = time.perf_counter()
    log = onmt(peer, "onmt_train", ["-config", str(config)], threads, work / "train.log")
    wall = time.perf_counter() - started
    # Step 40/   40; acc: 0.1; ppl: 2716.3; xent: 7.9; lr: 0.00010; sents:     640; bsz: 1661/ 247/32; 1234/ 184 tok/s;
    reports = re.findall(r"Step\s+(\d+)/\s*\d+;.*?bsz:\s*(\d+)/\s*(\d+)/\s*(\d+);\s*(\d+)/\s*(\d+) tok/s", log)
    last = [r for r in reports if int(r[0]) == 2 * steps]
    if not last:
        raise SystemExit(f"no training report at step {2 * steps} in {work / 'train.log'}")
    step, _, tgt_per_batch, _, src_rate, tgt_rate = (int(x) for x in last[0])
    params = re.search(r"\* number of parameters: (\d+)", log)
    return {"target_tokens_per_s": tgt_rate, "source_tokens_per_s": src_rate,
            "s_per_step": round(tgt_per_batch / tgt_rate, 4), "timed_steps": steps,
            "target_tokens": tgt_per_batch * steps, "teacher_forcing": 1.0,
            "parameters": int(params.group(1)) if params else None, "wall_s_whole_run": round(wall, 1),
            "counted": f"its log's tgt tok/s at step {step} (steps {steps + 1}..{2 * steps})"}


def onmt_untrained(peer: Peer, work: Path, config: Path, threads: int) -> Path:
    """OpenNMT-py's model as initialised: one step at learning rate 0 (Adam then moves no weight)."""
    onmt(peer, "onmt_train", ["-config", str(config), "-train_steps", "1", "-learning_rate", "0", "-report_every", "1",
                              "-save_checkpoint_steps", "1", "-save_model", str(work / "untrained")],
         threads, work / "untrained.log")
    return work / "untrained_step_1.pt"


def onmt_translation(peer: Peer, work: Path, checkpoint: Path, data: Path, questions: int, max_tokens: int,
                     threads: int, device: str) -> dict:
    output = work / f"pred-{checkpoint.stem}.txt"
    fixed = work / f"{checkpoint.stem}.fixed.pt"
    peer.run(["-c", GENERATOR_FIX, str(checkpoint), str(fixed)], threads, check=True)
    options = ["-model", str(fixed), "-src", str(data / "src-test.txt"),
               "-output", str(output), "-beam_size", str(BEAM), "-max_length", str(MAX_LEN), "-max_length_ratio", "0",
               "-batch_type", "tokens", "-batch_size", str(max_tokens), "-report_time", "-seed", "1"]
    if device == "cuda":
        options[-1] = "-1"  # no deterministic cuDNN (see write_onmt_config)
        options += ["-gpu", "0"]
    log = onmt(peer, "onmt_translate", options, threads, work / f"translate-{checkpoint.stem}.log")
    average_ms = float(re.search(r"Average translation time \(ms\): ([\d.]+)", log).group(1))
    lines = output.read_text().splitlines()
    assert len(lines) == questions, (len(lines), questions)
    seconds = average_ms * questions / 1000
    return {"questions": questions, "seconds": round(seconds, 2), "questions_per_s": round(questions / seconds, 2),
            "mean_output_tokens": round(sum(len(line.split()) for line in lines) / len(lines), 2),
            "max_tokens": max_tokens,
            "counted": "its -report_time 'Average translation time (ms)' times the questions"}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
