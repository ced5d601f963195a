"""Evaluation figures as PNG files: attention heatmaps with the copy switch, loss curves and the
cumulative attention-entropy curve of "Keeping Notes" (section 5.2, figure 2).

matplotlib is imported inside the functions and drives its Agg canvas directly (no pyplot, no
global backend switch), so importing this module costs nothing on a box without matplotlib and
plotting never needs a display. Every function returns the path it wrote; files are written to a
temporary name and renamed, so a crash never leaves a half PNG.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qgen.metrics.entropy import _as_array, cumulative_attention_entropy  # tensor/array/list -> float64

DPI = 150
MAX_LABEL_CHARS = 24  # longer tokens are cut with an ellipsis so the axes stay readable
ENTROPY_SENTENCES = 200  # sentences decoded for the cumulative-entropy figure


def _figure(width: float, height: float):
    """A matplotlib Figure on the Agg canvas (no pyplot state)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("qgen.plots needs matplotlib: pip install 'matplotlib>=3.8,<4'") from exc
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    fig.savefig(tmp, format="png", dpi=DPI)
    os.replace(tmp, path)
    return path


def _label(token: str) -> str:
    return token if len(token) <= MAX_LABEL_CHARS else token[: MAX_LABEL_CHARS - 1] + "\u2026"


def attention_heatmap(src_tokens: Sequence[str], tgt_tokens: Sequence[str], read: Any, p_gen: Any | None,
                      path: str | Path, title: str = "") -> Path:
    """Read attention ``(tgt_len, src_len)`` as a heatmap (source tokens along the top, generated
    tokens down the side) and, under it, one strip with ``p_gen`` per generated token (1 = generate
    from the vocabulary, 0 = copy), both on one 0-1 colour bar."""
    attn = _as_array(read)  # (tgt_len, src_len)
    n_tgt, n_src = len(tgt_tokens), len(src_tokens)
    if attn.ndim != 2:
        raise ValueError(f"read attention must be 2-D (tgt_len, src_len), got shape {attn.shape}")
    if attn.shape != (n_tgt, n_src):
        raise ValueError(f"read attention has shape {attn.shape} but there are {n_tgt} generated and "
                         f"{n_src} source tokens: expected ({n_tgt}, {n_src})")
    if n_tgt == 0 or n_src == 0:
        raise ValueError(f"nothing to plot: {n_tgt} generated and {n_src} source tokens")
    if not np.all(np.isfinite(attn)):
        raise ValueError("read attention contains NaN or infinite values")
    switch = None
    if p_gen is not None:
        switch = _as_array(p_gen).reshape(-1)  # (tgt_len,)
        if switch.shape[0] != n_tgt:
            raise ValueError(f"p_gen has {switch.shape[0]} values but there are {n_tgt} generated tokens")

    small = n_src > 40
    x_font, y_font = (6 if small else 8), (7 if n_tgt > 25 else 8)
    longest_src = max(len(_label(t)) for t in src_tokens)
    width = max(6.0, 0.15 * n_src + 0.07 * max(len(_label(t)) for t in tgt_tokens) + 1.5)
    height = 0.22 * n_tgt + 0.06 * longest_src + (1.6 if switch is not None else 0.6) + (0.3 if title else 0)
    fig = _figure(width, max(3.0, height))
    if switch is not None:
        grid = fig.add_gridspec(2, 1, height_ratios=[max(n_tgt, 1), max(1.6, n_tgt / 12)])
        ax = fig.add_subplot(grid[0])
        strip = fig.add_subplot(grid[1])
    else:
        ax, strip = fig.add_subplot(1, 1, 1), None
    image = ax.imshow(attn, aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_xticks(range(n_src), [_label(t) for t in src_tokens], rotation=90, fontsize=x_font)
    ax.set_yticks(range(n_tgt), [_label(t) for t in tgt_tokens], fontsize=y_font)
    ax.xaxis.tick_top()
    ax.tick_params(axis="x", length=0, pad=2)
    ax.set_ylabel("generated", fontsize=9)
    ax.set_xlabel("source (logical form)", fontsize=9)
    ax.xaxis.set_label_position("top")
    if strip is not None:
        strip.imshow(switch[None, :], aspect="auto", cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        strip.set_xticks(range(n_tgt), [_label(t) for t in tgt_tokens], rotation=90, fontsize=y_font)
        strip.set_yticks([0], ["p_gen"], fontsize=8)
        for col, value in enumerate(switch):
            strip.text(col, 0, f"{value:.2f}", ha="center", va="center", fontsize=6,
                       color="black" if value > 0.6 else "white")
        strip.set_xlabel("generated token (p_gen: 1 = generate, 0 = copy)", fontsize=8)
    fig.colorbar(image, ax=[a for a in (ax, strip) if a is not None], fraction=0.03, pad=0.01,
                 label="read attention" + (" / p_gen" if strip is not None else ""))
    if title:
        fig.suptitle(title, fontsize=9)
    return _save(fig, path)


def _history_rows(history: Sequence[Any] | str | Path) -> list[dict[str, Any]]:
    if isinstance(history, (str, Path)):
        history = json.loads(Path(history).read_text())
    rows = [asdict(h) if is_dataclass(h) else dict(h) for h in history]
    if not rows:
        raise ValueError("history is empty: no epoch to plot")
    for row in rows:
        missing = {"epoch", "train_loss", "valid_loss"} - row.keys()
        if missing:
            raise ValueError(f"history row {row} lacks {', '.join(sorted(missing))}")
    return rows


def loss_curves(history: Sequence[Any] | str | Path, path: str | Path) -> Path:
    """Train and validation loss per target token by epoch (``history.json`` of ``qgen.train`` or
    its rows); validation BLEU on a second axis where rows carry ``valid_bleu``."""
    rows = _history_rows(history)
    epochs = [r["epoch"] for r in rows]
    fig = _figure(7.0, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(epochs, [r["train_loss"] for r in rows], marker="o", markersize=3, label="train loss")
    ax.plot(epochs, [r["valid_loss"] for r in rows], marker="o", markersize=3, label="valid loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("NLL per target token")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    bleu = [(r["epoch"], r["valid_bleu"]) for r in rows if r.get("valid_bleu") is not None]
    if bleu:
        twin = ax.twinx()
        twin.plot(*zip(*bleu), color="tab:green", marker="s", markersize=3, label="valid BLEU")
        twin.set_ylabel("BLEU")
        more = twin.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels))
    ax.set_title("Loss by epoch")
    return _save(fig, path)


def mean_cumulative_entropy(attentions: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Mean over sentences of the cumulative attention entropy at each decoding step, averaging at
    step ``t`` over the sentences that reach it; returns (means, sentence counts), both (max_len,)."""
    curves = [cumulative_attention_entropy(a) for a in attentions]
    if not curves:
        raise ValueError("no sentence attention given")
    longest = max(len(c) for c in curves)
    sums, counts = np.zeros(longest), np.zeros(longest)
    for curve in curves:
        sums[: len(curve)] += curve
        counts[: len(curve)] += 1
    return sums / counts, counts


def cumulative_entropy_plot(curves: Mapping[str, Sequence[Any]], path: str | Path) -> Path:
    """Figure 2 of "Keeping Notes": per model, the corpus mean of the cumulative attention entropy
    against the decoding step. ``curves`` maps a model name to its sentences' read attentions,
    each ``(tgt_len, src_len)`` over the real source positions only."""
    if not curves:
        raise ValueError("no model given: curves is empty")
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    for name, attentions in curves.items():
        if not attentions:
            raise ValueError(f"model {name!r} has no sentence attention")
        means, counts = mean_cumulative_entropy(attentions)
        ax.plot(np.arange(1, len(means) + 1), means, marker="o", markersize=2,
                label=f"{name} ({int(counts[0])} sentences)")
    ax.set_xlabel("decoding step")
    ax.set_ylabel("cumulative attention entropy (nats)")
    ax.set_title("Cumulative attention entropy by decoding step")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return _save(fig, path)


def _file_id(ident: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", ident) or "example"


def write_evaluation_plots(checkpoint: str | Path, pairs: Sequence[Any], out_dir: str | Path, n_examples: int = 3,
                           history: Sequence[Any] | str | Path | None = None, device: str | None = None,
                           batch_size: int = 64, no_repeat: bool = False) -> list[Path]:
    """Greedy-decode ``pairs`` with ``checkpoint`` (``no_repeat`` as the evaluation decoded) and write, under ``out_dir``:
    ``attention_<id>.png`` for the first ``n_examples`` pairs, ``cumulative_entropy.png`` over up to
    200 pairs, and ``loss_curves.png`` from ``history`` or the ``history.json`` beside the checkpoint."""
    import torch

    from qgen.checkpoint import load_checkpoint
    from qgen.decode import greedy
    from qgen.model import make_batch

    checkpoint, out = Path(checkpoint), Path(out_dir)
    if not pairs:
        raise ValueError("no pairs to decode")
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model, src_vocab, tgt_vocab, _ = load_checkpoint(checkpoint, dev)
    chosen = list(pairs[: max(n_examples, min(ENTROPY_SENTENCES, len(pairs)))])
    decoded: list[tuple[Any, list[str], int]] = []  # per chosen pair: (hypothesis, oovs, source length)
    for start in range(0, len(chosen), batch_size):
        chunk = chosen[start : start + batch_size]
        batch = make_batch([p.src for p in chunk], None, src_vocab, tgt_vocab, model.cfg.copy).to(dev)
        hyps = greedy(model, batch, keep_attention=True, no_repeat=no_repeat)
        decoded.extend(zip(hyps, batch.oovs, batch.src_lengths.tolist()))

    def read_matrix(i: int) -> np.ndarray:
        hyp, _, length = decoded[i]
        return torch.stack(hyp.attns["read"])[:, :length].double().numpy()  # (steps, src_len)

    written: list[Path] = []
    for i, pair in enumerate(chosen[:n_examples]):
        hyp, oovs, length = decoded[i]
        steps = len(hyp.attns["read"])
        labels = [(tgt_vocab.itos[t] if t < len(tgt_vocab) else oovs[t - len(tgt_vocab)]) for t in hyp.ids]
        labels = (labels + ["</s>"])[:steps]  # the last step emitted EOS unless max_len cut it
        p_gen = torch.stack(hyp.attns["p_gen"]).numpy() if hyp.attns.get("p_gen") else None
        title = f"{pair.id}  reference: {' '.join(pair.tgt)}"
        title = title if len(title) <= 140 else title[:139] + "\u2026"
        written.append(attention_heatmap(list(pair.src[:length]) or ["<unk>"], labels, read_matrix(i), p_gen,
                                         out / f"attention_{_file_id(pair.id)}.png", title))
    name = checkpoint.parent.name or checkpoint.stem
    written.append(cumulative_entropy_plot({name: [read_matrix(i) for i in range(len(chosen))]},
                                           out / "cumulative_entropy.png"))
    beside = checkpoint.parent / "history.json"
    if history is None and beside.exists():
        history = beside
    if history is not None:
        written.append(loss_curves(history, out / "loss_curves.png"))
    return written
