"""The results README of a dataset: our measured numbers beside the seed paper's."""
from __future__ import annotations

import json
from pathlib import Path

# Seed "Question Generation using a Scratchpad Encoder". WebQSP, Table 2: per-sentence BLEU /
# METEOR / ROUGE-L, then corpus BLEU / METEOR / ROUGE-L; OverCopy from appendix B.
PAPER_WEBQSP = {
    "scratchpad": (15.29, 34.7, 59.5, 27.64, 31.49, 59.44, 0.23),
    "coverage": (14.55, 33.7, 58.9, 26.78, 30.86, 58.91, 0.32),
    "copynet": (6.89, 27.1, 52.5, 17.42, 26.03, 52.56, 0.66),
    "seq2seq_priors": (7.51, 23.9, 47.1, 17.96, 22.9, 47.13, None),
    "seq2seq": (6.1, 21.5, 42.5, 15.11, 20.79, 42.48, None),
}
# WikiSQL, Table 6: corpus BLEU ("baseline" is the Seq2Seq row).
PAPER_WIKISQL = {"scratchpad": 26.10, "coverage": 25.01, "copynet": 15.11, "seq2seq": 17.34}
ORDER = ["seq2seq", "seq2seq_priors", "copynet", "coverage", "scratchpad", "scratchpad_extended"]
KEYS = ["bleu_sentence_mean", "meteor_sentence_mean", "rouge_l_sentence_mean", "bleu_corpus", "meteor_corpus",
        "rouge_l_corpus", "overcopy", "overcopy_source"]


def _row_order(name: str) -> tuple[int, str]:
    """Table 1's order; a run of another setting (``scratchpad_norepeat``, ``_tf1``) right after its model."""
    bases = [b for b in ORDER if name == b or name.startswith(b + "_")]
    base = max(bases, key=len) if bases else ""
    return (ORDER.index(base) if base else len(ORDER), name)


def _fmt(value: object, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, (int, float)) else str(value)


def _forcing_and_seed(run: dict) -> str:
    train = run.get("train_config", {})
    return (f"teacher forcing {train.get('teacher_forcing', 0.5):g} per {train.get('teacher_forcing_per', 'step')}, "
            f"seed {train.get('seed', 1)}")


def write_results_readme(dataset_dir: Path, dataset: str) -> Path:
    """(Re)write ``dataset_dir/README.md`` from every ``<model>/metrics.json`` there."""
    runs = {p.parent.name: json.loads(p.read_text()) for p in sorted(dataset_dir.glob("*/metrics.json"))}
    names = sorted(runs, key=_row_order)
    lines = [f"# Results: {dataset}", "",
             "Written by `benchmarks/qgen_bench.py` from the metrics.json files beside this README; every "
             "number in the 'ours' rows was measured by our code. Scores are on a 0-100 scale "
             "(OverCopy: extra word occurrences per question, appendix B, summed over every word type; "
             "OverCopy (src): the same sum over the words of the question's logical form only, not in the "
             "paper: it separates surplus copies from rewordings).", ""]
    header = ("| model | source | epochs | BLEU (sent) | METEOR (sent) | ROUGE-L (sent) | BLEU (corpus) | "
              "METEOR (corpus) | ROUGE-L (corpus) | OverCopy | OverCopy (src) |")
    lines += [header, "|" + "---|" * 11]
    for name in names:
        run, full = runs[name], runs[name]["full"]
        epochs = f"{run['epochs_run']}/{run['epochs_planned']}"
        lines.append(f"| {name} | ours | {epochs} | " + " | ".join(_fmt(full.get(k)) for k in KEYS) + " |")
        paper = PAPER_WEBQSP.get(name) if dataset == "webqsp" else None
        if paper:
            lines.append(f"| {name} | paper | 75 | " + " | ".join(_fmt(v) for v in paper) + " | – |")
        elif dataset == "wikisql" and name in PAPER_WIKISQL:
            lines.append(f"| {name} | paper | | | | | {PAPER_WIKISQL[name]:.2f} | | | | |")
    lines += ["", "No-OOV subset (test examples whose every source and reference token is in the training "
              "vocabularies):", "", "| model | n | BLEU (sent) | BLEU (corpus) | METEOR (corpus) | ROUGE-L (corpus) | OverCopy | "
              "OverCopy (src) | attention entropy |", "|" + "---|" * 9]
    for name in names:
        sub = runs[name]["no_oov"]
        lines.append(f"| {name} | {sub.get('n')} | " + " | ".join(_fmt(sub.get(k)) for k in
                     ["bleu_sentence_mean", "bleu_corpus", "meteor_corpus", "rouge_l_corpus", "overcopy",
                      "overcopy_source", "attention_entropy"]) + " |")
    lines += ["", "Runs:", ""]
    for name in names:
        run = runs[name]
        lines.append(f"- {name}: {run['epochs_run']} of {run['epochs_planned']} epochs on {run['device']} "
                     f"(best epoch {run['best_epoch']}), training {run.get('train_epochs_s', run['train_wall_s'])} s "
                     f"(sum over epochs, across resumes), decode "
                     f"{run['decode_wall_s']} s, beam {run['variant']['beam']}"
                     f"{', no word right after itself' if run['variant'].get('no_repeat') else ''}, vectors: "
                     f"{run['variant']['pretrained_vectors']}, {_forcing_and_seed(run)}, commit {run['commit']}; "
                     f"split: {run['split']}; "
                     f"sizes {run['sizes']}")
    out = dataset_dir / "README.md"
    out.write_text("\n".join(lines) + "\n")
    return out
