"""The results READMEs of a dataset: the paper's table with our rows beside it, and the experiments page.

``<results>/<dataset>/README.md`` holds the seed paper's rows (:data:`PAPER_ROWS`) on the paper's
protocol: the no-OOV subset first, the full test set second; per row the mean over the seeds there
(``<row>``, ``<row>_seed<N>``) with its spread when there are two or more, the epochs run and the device;
nothing else. Every other run lives under ``experiments/`` and is listed, one line each, on
``experiments/README.md``.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

# Seed "Question Generation using a Scratchpad Encoder". WebQSP, Table 2 (the test examples without
# out-of-vocabulary tokens): per-sentence BLEU / METEOR / ROUGE-L, then corpus BLEU / METEOR /
# ROUGE-L; OverCopy from appendix B.
PAPER_WEBQSP = {
    "scratchpad": (15.29, 34.7, 59.5, 27.64, 31.49, 59.44, 0.23),
    "coverage": (14.55, 33.7, 58.9, 26.78, 30.86, 58.91, 0.32),
    "copynet": (6.89, 27.1, 52.5, 17.42, 26.03, 52.56, 0.66),
    "seq2seq_priors": (7.51, 23.9, 47.1, 17.96, 22.9, 47.13, None),
    "seq2seq": (6.1, 21.5, 42.5, 15.11, 20.79, 42.48, None),
}
# WikiSQL, Table 6: corpus BLEU ("baseline" is the Seq2Seq row).
PAPER_WIKISQL = {"scratchpad": 26.10, "coverage": 25.01, "copynet": 15.11, "seq2seq": 17.34}
# Table 1's rows (seed 001's equations), in the paper's order: what the dataset's README reports.
PAPER_ROWS = ("seq2seq", "seq2seq_priors", "copynet", "coverage", "scratchpad")
DATASET_ROWS = {"webqsp": PAPER_ROWS, "wikisql": ("seq2seq", "copynet", "coverage", "scratchpad")}
EXPERIMENTS = "experiments"
# The paper's columns: per-sentence BLEU (unsmoothed) / METEOR / ROUGE-L, corpus BLEU / METEOR /
# ROUGE-L, then OverCopy (Eq. 17-19) and its copy-specific reading.
KEYS = ["bleu_sentence_unsmoothed_mean", "meteor_sentence_mean", "rouge_l_sentence_mean", "bleu_corpus",
        "meteor_corpus", "rouge_l_corpus", "overcopy", "overcopy_duplicates"]
HEADER = ("| model | | seeds | epochs | device | n | BLEU (sent) | METEOR (sent) | ROUGE-L (sent) | BLEU | METEOR | "
          "ROUGE-L | OverCopy | OverCopy (copies) |")
PROTOCOL = [
    "Protocol (seed 001, Table 2): per-sentence BLEU is unsmoothed (sacrebleu `sentence_bleu` with "
    "`smooth_method='none'` on all four orders: NLTK `sentence_bleu`'s default), METEOR (1.5) and ROUGE-L "
    "per sentence are means over the questions; BLEU / METEOR / ROUGE-L without (sent) are corpus figures. "
    "OverCopy: Eq. 17-19, the surplus of each generated word over the reference, summed per question and "
    "averaged; OverCopy (copies): its copy-specific reading, duplicates of logical-form words beyond the "
    "reference's count (at least one). No-OOV subset: test questions whose every logical-form token is in the "
    "training vocabulary of the model's inputs and every question token in that of its outputs (ids in each "
    "run's `no_oov_ids.txt`). With two or more seeds a cell is mean ± standard deviation over seeds. Every "
    "figure in an 'ours' row was measured by our code from the `metrics.json` beside this README; the 'paper' "
    "rows are the paper's own.",
]


def _fmt(value: object, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, (int, float)) else str(value)


def _seed_runs(dataset_dir: Path, row: str) -> dict[str, dict]:
    """The runs of a paper row in ``dataset_dir``: ``<row>`` (seed 1) and ``<row>_seed<N>``."""
    runs = {}
    for path in sorted(dataset_dir.glob(f"{row}*/metrics.json")):
        name = path.parent.name
        if name == row or re.fullmatch(re.escape(row) + r"_seed\d+", name):
            runs[name] = json.loads(path.read_text())
    return runs


def _cell(values: list, digits: int = 2) -> str:
    present = [v for v in values if v is not None]
    if not present or len(present) < len(values):
        return "–"
    if len(present) == 1:
        return _fmt(present[0], digits)
    return f"{statistics.mean(present):.{digits}f} ± {statistics.stdev(present):.{digits}f}"


def _device(run: dict) -> str:
    return run.get("device_name") or run.get("device", "?")


def _row_line(row: str, runs: dict[str, dict], part: str) -> str:
    if not runs:
        return f"| {row} | ours | not run | | | | " + " | ".join("" for _ in KEYS) + " |"
    seeds = len(runs)
    epochs = ", ".join(str(r["epochs_run"]) if r["epochs_run"] == r["epochs_planned"]
                       else f"{r['epochs_run']}/{r['epochs_planned']}" for r in runs.values())
    devices = ", ".join(dict.fromkeys(_device(r) for r in runs.values()))
    ns = sorted({r[part].get("n") for r in runs.values()})
    cells = [_cell([r[part].get(k) for r in runs.values()], 3 if k.startswith("overcopy") else 2) for k in KEYS]
    return (f"| {row} | ours | {seeds} seed{'s' if seeds > 1 else ''} | {epochs} | {devices} | "
            f"{', '.join(str(n) for n in ns)} | " + " | ".join(cells) + " |")


def _paper_line(dataset: str, row: str) -> str | None:
    if dataset == "webqsp" and row in PAPER_WEBQSP:
        return "| | paper | | 75 | | | " + " | ".join(_fmt(v) for v in PAPER_WEBQSP[row]) + " | |"
    if dataset == "wikisql" and row in PAPER_WIKISQL:
        return f"| | paper | | | | | | | | {PAPER_WIKISQL[row]:.2f} | | | | |"
    return None


def write_results_readme(dataset_dir: Path, dataset: str) -> Path:
    """(Re)write ``dataset_dir/README.md`` from the paper rows' ``metrics.json`` files there, and
    ``experiments/README.md`` when that folder exists."""
    dataset_dir = Path(dataset_dir)
    rows = DATASET_ROWS.get(dataset, PAPER_ROWS)
    runs = {row: _seed_runs(dataset_dir, row) for row in rows}
    source = ("Table 2 (its no-OOV subset)" if dataset == "webqsp"
              else "Table 6 (corpus BLEU only; the paper trained on WikiSQL's official train split, absent here: "
                   "our training split is smaller, see `metrics.json` `split`)")
    lines = [f"# Results: {dataset}", "",
             f"The seed paper's rows, from its {source}, beside ours. Written by `benchmarks/qgen_bench.py` "
             "(`qgen.results_table`).", "", *PROTOCOL, ""]
    for title, part in (("No-OOV subset (the paper's protocol)", "no_oov"), ("Full test set", "full")):
        lines += [f"## {title}", "", HEADER, "|" + "---|" * 14]
        for row in rows:
            lines.append(_row_line(row, runs[row], part))
            paper = _paper_line(dataset, row) if part == "no_oov" else None
            if paper:
                lines.append(paper)
        lines.append("")
    if (dataset_dir / "significance.md").is_file():
        lines += ["Paired significance of the rows' corpus BLEU differences: [significance.md](significance.md).", ""]
    if (dataset_dir / EXPERIMENTS).is_dir():
        lines += [f"Other configurations, decodings and snapshots: [{EXPERIMENTS}/]({EXPERIMENTS}/README.md).", ""]
        write_experiments_readme(dataset_dir / EXPERIMENTS, dataset)
    out = dataset_dir / "README.md"
    out.write_text("\n".join(lines))
    return out


# What each configuration is (the registry's names, qgen.model.config.VARIANTS).
CONFIGURATIONS = {
    "seq2seq_luong": "the first Seq2Seq (Luong's general score, input feeding; raw ids)",
    "seq2seq_priors_luong": "the first Seq2Seq + Priors (Luong's general score, input feeding; names, beam 2)",
    "copynet_luong": "Copynet in seed 000's form (Luong's general score, input feeding)",
    "coverage_luong": "Coverage in seed 000's form (Luong's general score, input feeding)",
    "scratchpad_luong": "Scratchpad in seed 000's form (Luong's general score, input feeding)",
    "copynet_masked": "the first Copynet: copy softmax masked to copyable positions, linear p_gen, Luong's score",
    "coverage_masked": "the first Coverage: as copynet_masked with coverage added outside the copy score",
    "scratchpad_masked": "the first Scratchpad: as coverage_masked (coverage included) with a linear write gate",
    "scratchpad_extended": "scratchpad_masked with the extended-vocabulary copy (See et al.): synthesis's generator",
    "copynet_extended": "copynet_masked with the extended-vocabulary copy: the semantic parser",
    "scratchpad_focus": "experiment: scratchpad_masked whose write gate also sees its position's copy weight",
}
CONFIGURATIONS.update({row: f"the paper's {row} row (seed 001's equations)" for row in PAPER_ROWS})


def _setting(run: dict) -> str:
    """How a run differs from its configuration's paper setting: seed, teacher forcing, decoding, epochs."""
    train = run.get("train_config", {})
    parts = []
    if train.get("seed", 1) != 1:
        parts.append(f"seed {train['seed']}")
    if (train.get("teacher_forcing", 0.5), train.get("teacher_forcing_per", "step")) != (0.5, "step"):
        parts.append(f"teacher forcing {train['teacher_forcing']:g} per {train.get('teacher_forcing_per', 'step')}")
    if run.get("variant", {}).get("no_repeat"):
        parts.append("decoded with no word right after itself (same checkpoint)")
    if run["epochs_run"] < 75:
        parts.append(f"stopped after {run['epochs_run']} epochs")
    return "; ".join(parts) or "seed 1, the paper's training"


def write_experiments_readme(experiments_dir: Path, dataset: str) -> Path:
    """(Re)write ``experiments/README.md``: one line per run folder there, saying what it is."""
    experiments_dir = Path(experiments_dir)
    runs = {p.parent.name: json.loads(p.read_text()) for p in sorted(experiments_dir.glob("*/metrics.json"))}
    lines = [f"# Experiments: {dataset}", "",
             "Runs that are not rows of the paper's table (see [../README.md](../README.md)): earlier "
             "configurations, decodings, snapshots and probes. Folder names are the configuration's registry "
             "name (`qgen.model.config.VARIANTS`) and the setting's suffix. Figures measured by our code "
             "(`metrics.json` in each folder); corpus BLEU, full test set and no-OOV subset.", "",
             "| run | configuration | setting | epochs | device | BLEU (full) | BLEU (no-OOV) |",
             "|---|---|---|---|---|---|---|"]
    for name in sorted(runs, key=lambda n: (runs[n].get("model", n), n)):
        run = runs[name]
        model = run.get("model", name)
        what = CONFIGURATIONS.get(model, model)
        lines.append(f"| {name} | `{model}`: {what} | {_setting(run)} | {run['epochs_run']}/{run['epochs_planned']} | "
                     f"{_device(run)} | {_fmt(run['full'].get('bleu_corpus'))} | "
                     f"{_fmt(run.get('no_oov', {}).get('bleu_corpus'))} |")
    if (experiments_dir / "significance.md").is_file():
        lines += ["", "Paired significance among these runs: [significance.md](significance.md)."]
    out = experiments_dir / "README.md"
    out.write_text("\n".join(lines) + "\n")
    return out
