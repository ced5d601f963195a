"""Seed 002's benchmark (Roberti et al. 2019, Tables 2-3): character-level models on E2E, E2E+ (train
rebuilt), Hotel and Restaurant, trained with selection on dev BLEU, decoded greedily once per distinct MR and scored with
the official E2E metrics against the ASCII-folded references (as the authors scored) and the
canonical ones, beside the paper's figures.

Protocol (../shared/specs/data-to-text-seeds.md, seed 002, and its open choices 4-8): Adam at 1e-4,
batch 16, teacher forcing 1, gradient norm clipped at 1; up to 100 epochs, dev BLEU after each, the
best epoch kept (``best_bleu.pt``), stopping after 10 epochs without a better one; greedy decoding up
to 400 characters. Checkpoints under ``work_dir/<dataset>/<row>_seed<n>`` (resumable); results under
``results_dir/roberti-<dataset>``.

Rows: EDA, EDA_C, EDA_S and EDA_CS (Table 2's ablation; the paper's EDA_S figures are cut off in the
text we have), and EDA_CS^TL (``roberti_eda_cs_tl``): EDA_CS started from the E2E+ (train rebuilt)
run's selected checkpoint (``qgen benchmark e2e-plus --models roberti_eda_cs`` first, same seed) and
trained further on the dataset, every weight.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

ROWS = ("roberti_eda", "roberti_eda_c", "roberti_eda_s", "roberti_eda_cs", "roberti_eda_cs_tl")
TRANSFER = {"roberti_eda_cs_tl": "roberti_eda_cs"}  # row -> the model it is; it starts from E2E+'s run of it
METRICS = ("BLEU", "NIST", "METEOR", "ROUGE_L", "CIDEr")
# Roberti et al. Table 3 (and Table 2's EDA_C on E2E): B N M R C.
_PAPER_ROWS = {
    "e2e_plus": {"roberti_eda": (0.3773, 5.7835, 0.2672, 0.4638, 0.2689),
                 "roberti_eda_cs": (0.6197, 9.2103, 0.4428, 0.6610, 2.8118)},
    "e2e": {"roberti_eda": (0.4999, 7.1146, 0.3369, 0.5634, 1.3176), "roberti_eda_c": (0.6255, 7.7934, 0.4401, 0.6582, 1.7286),
            "roberti_eda_cs": (0.6705, 8.5150, 0.4449, 0.6894, 2.2355),
            "roberti_eda_cs_tl": (0.6580, 8.5615, 0.4516, 0.6740, 2.1803)},
    "hotel": {"roberti_eda": (0.4316, 5.9708, 0.3552, 0.6609, 3.9213),
              "roberti_eda_cs": (0.5515, 7.4447, 0.4379, 0.7499, 5.1376),
              "roberti_eda_cs_tl": (0.5769, 7.4286, 0.4439, 0.7616, 5.3456)},
    "restaurant": {"roberti_eda": (0.3599, 5.5104, 0.3367, 0.5892, 3.3792),
                   "roberti_eda_cs": (0.4925, 6.9813, 0.4191, 0.7002, 4.7821),
                   "roberti_eda_cs_tl": (0.5099, 7.3359, 0.4340, 0.7131, 4.9915)},
}
PAPER = {d: {row: dict(zip(METRICS, values)) for row, values in rows.items()} for d, rows in _PAPER_ROWS.items()}


@dataclass(frozen=True)
class CharBenchConfig:
    epochs: int = 100
    patience: int = 10
    batch_size: int = 16
    learning_rate: float = 1e-4
    clip_norm: float = 1.0
    seed: int = 1
    device: str = "auto"
    java_metrics: bool = True  # METEOR, ROUGE_L and CIDEr need Java; BLEU and NIST do not
    hidden: int | None = None  # None: the row's (2H = 512); smaller for a smoke run
    layers: int | None = None
    max_seconds: float | None = None  # training time per row over every start; stops within an epoch, resumable


def decode_mrs(model, src_vocab, tgt_vocab, mrs: Sequence[str], batch_size: int = 64) -> list[str]:
    """One output per MR, greedy, up to MAX_CHARS characters."""
    from qgen.datasets.char_d2t import MAX_CHARS, source_chars
    from qgen.decode import greedy
    from qgen.model import make_batch

    device = next(model.parameters()).device
    outputs = []
    for start in range(0, len(mrs), batch_size):
        sources = [source_chars(mr) for mr in mrs[start:start + batch_size]]
        batch = make_batch(sources, None, src_vocab, tgt_vocab, model.cfg.copy, max_src_len=MAX_CHARS).to(device)
        outputs += ["".join(tgt_vocab.decode(h.ids)) for h in greedy(model, batch, max_len=MAX_CHARS)]
    return outputs


def run_char_benchmark(dataset: str, rows: Sequence[str], cfg: CharBenchConfig, work_dir: str | Path,
                       results_dir: str | Path, data_dir: str | Path | None = None,
                       log: Callable[[str], None] = print) -> Path:
    """Train each row (dev BLEU selection), decode test, write ``<results_dir>/roberti-<dataset>/``."""
    from dataclasses import replace

    from qgen.checkpoint import load_checkpoint
    from qgen.datasets import char_d2t
    from qgen.datasets.paths import datasets_dir
    from qgen.dev_selection import seconds_left, train_selecting_on_dev
    from qgen.metrics import e2e_official
    from qgen.model import VARIANTS
    from qgen.train import TrainConfig, resolve_device, train
    from qgen.version import code_version, invocation

    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        raise ValueError(f"unknown row(s) {', '.join(unknown)}; the rows are {', '.join(ROWS)}")
    if dataset == "e2e_plus" and any(r in TRANSFER for r in rows):
        raise ValueError("the transfer rows start from E2E+; on E2E+ itself train roberti_eda_cs")
    for row in rows:  # a transfer row's starting point must exist before anything trains
        if row in TRANSFER and not _transfer_source(work_dir, row, cfg.seed).is_file():
            raise FileNotFoundError(f"{row} starts from {_transfer_source(work_dir, row, cfg.seed)}: run "
                                    f"qgen benchmark e2e-plus --models {TRANSFER[row]} --seed {cfg.seed} first")
    root = datasets_dir(data_dir)
    if root is None:
        raise FileNotFoundError("no datasets folder: give --data-dir or set QGEN_DATASETS")
    splits = {s: char_d2t.read_split(root, dataset, s) for s in ("train", "dev", "test")}
    canonical_test = char_d2t.read_split(root, dataset, "test", fold=False)
    train_pairs = char_d2t.to_pairs(splits["train"], "train")
    valid_pairs = char_d2t.to_pairs(splits["dev"], "dev")
    out = Path(results_dir) / f"roberti-{dataset}"
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(cfg.device)
    label = "E2E+ (train rebuilt)" if dataset == "e2e_plus" else dataset
    # Rows accumulate: a row run later (the transfer row) joins those already in metrics.json.
    saved = out / "metrics.json"
    report = json.loads(saved.read_text()) if saved.is_file() else {"rows": {}}
    report.update(dataset=label, paper=PAPER.get(dataset, {}),
                  split=f"{label}: train {len(train_pairs)} rows, dev {len(splits['dev'].mrs)} MRs (selection), "
                        f"test {len(splits['test'].mrs)} MRs")
    for row in rows:
        model_cfg = VARIANTS[TRANSFER.get(row, row)].model
        sizes = {k: v for k, v in (("hidden_size", cfg.hidden), ("num_layers", cfg.layers)) if v}
        model_cfg = replace(model_cfg, **sizes)
        train_cfg = TrainConfig(batch_size=cfg.batch_size, learning_rate=cfg.learning_rate, teacher_forcing=1.0,
                                clip_norm=cfg.clip_norm, seed=cfg.seed, device=cfg.device,
                                max_src_len=char_d2t.MAX_CHARS, max_tgt_len=char_d2t.MAX_CHARS,
                                max_seconds=cfg.max_seconds,
                                init_from=str(_transfer_source(work_dir, row, cfg.seed)) if row in TRANSFER else None)
        run_dir = Path(work_dir) / dataset / f"{row}_seed{cfg.seed}"
        say = lambda line, row=row: log(f"  {row}: {line}")  # noqa: E731

        def train_to(epoch: int, model_cfg=model_cfg, train_cfg=train_cfg, run_dir=run_dir, say=say):
            # The row's budget is its training time over every start: an epoch stops (resumable) when it is spent.
            left = seconds_left(run_dir, cfg.max_seconds)
            return train(train_pairs, valid_pairs, model_cfg, replace(train_cfg, epochs=epoch, max_seconds=left),
                         run_dir, log=say)

        def dev_bleu(checkpoint: Path) -> tuple[float, list]:
            model, src_vocab, tgt_vocab, _ = load_checkpoint(checkpoint, device)
            outputs = decode_mrs(model, src_vocab, tgt_vocab, splits["dev"].mrs)
            return e2e_official.bleu(outputs, splits["dev"].references), outputs

        state = train_selecting_on_dev(run_dir, cfg.epochs, train_to, dev_bleu, patience=cfg.patience,
                                       max_seconds=cfg.max_seconds, log=say)
        model, src_vocab, tgt_vocab, _ = load_checkpoint(run_dir / "best_bleu.pt", device)
        with torch.inference_mode():
            outputs = decode_mrs(model, src_vocab, tgt_vocab, splits["test"].mrs)
        (out / f"{row}_test.tsv").write_text("MR\toutput\n" + "".join(
            f"{mr}\t{text}\n" for mr, text in zip(splits["test"].mrs, outputs)))
        entry = {"dev": e2e_official.score(state["best_outputs"], splits["dev"].references,
                                           java_metrics=cfg.java_metrics),
                 "test": e2e_official.score(outputs, splits["test"].references, java_metrics=cfg.java_metrics),
                 "test_canonical": e2e_official.score(outputs, canonical_test.references,
                                                      java_metrics=cfg.java_metrics),
                 "selected_epoch": state["best"]["epoch"], "epochs_run": len(state["history"]),
                 "stopped_by": "time budget" if cfg.max_seconds is not None and state["train_seconds"]
                 >= cfg.max_seconds else "epochs or patience",
                 "train_seconds": round(state["train_seconds"], 1), "decode_seconds": round(state["decode_seconds"], 1),
                 "config": asdict(cfg), "commit": code_version(), "command": invocation(), "device": str(device),
                 "threads": torch.get_num_threads()}
        report["rows"][row] = entry
        log(f"{row} test: " + "  ".join(f"{k} {v:.4f}" for k, v in entry["test"].items() if v is not None))
        saved.write_text(json.dumps(report, indent=2) + "\n")
        (out / "README.md").write_text(_readme(report))
    return out / "README.md"


def _transfer_source(work_dir: str | Path, row: str, seed: int) -> Path:
    """The E2E+ checkpoint a transfer row starts from."""
    return Path(work_dir) / "e2e_plus" / f"{TRANSFER[row]}_seed{seed}" / "best_bleu.pt"


def _cells(figures: dict) -> str:
    return " | ".join("–" if figures.get(m) is None else f"{figures[m]:.4f}" for m in METRICS)


def _readme(report: dict) -> str:
    lines = [f"# Roberti et al. (seed 002), {report['dataset']}: character-level models", "",
             f"Split: {report['split']}. Each row: Adam, batch 16, teacher forcing 1, selection on dev BLEU "
             "after every epoch (stopping after `patience` epochs without a better one, or at the time budget), "
             "greedy decoding up to 400 characters, one output per distinct MR; its configuration, commit, "
             "device and threads are in metrics.json.", "",
             "Test, official E2E metrics against the ASCII-folded references (the authors' scoring) and the "
             "canonical ones. The paper's rows are its Table 3 (and Table 2 for E2E).", "",
             "| row | | references | " + " | ".join(METRICS) + " | epoch selected / run | training |",
             "|---|---|---|" + "---:|" * (len(METRICS) + 2)]
    for row, entry in report["rows"].items():
        lines.append(f"| {row} | ours | folded | {_cells(entry['test'])} | {entry['selected_epoch']} / "
                     f"{entry['epochs_run']} ({entry['stopped_by']}) | {entry['train_seconds']:.0f} s, "
                     f"{entry['device']}, {entry['threads']} thread(s) |")
        lines.append(f"| | ours | canonical | {_cells(entry['test_canonical'])} | | |")
        if row in report["paper"]:
            lines.append(f"| | paper | folded | {_cells(report['paper'][row])} | | |")
        else:
            lines.append("| | paper | | not available (not in the paper for this dataset, or cut off) | | |")
    lines += ["", "Dev (the selection split), BLEU: " + "; ".join(
        f"{row} {entry['dev']['BLEU']:.4f}" for row, entry in report["rows"].items()), ""]
    return "\n".join(lines)
