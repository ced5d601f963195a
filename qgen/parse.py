"""The semantic parser: the question generator with source and target swapped.

Question tokens in, logical-form tokens out, with copy (names, literals and condition values come
from the question): the same skeleton, the same training loop and the same beam search as the
question generator, trained from the same preprocessed Parquet. A parser's checkpoint says so in
its metadata (``task: parse``, the logical-form types it was trained on, the preprocessing
settings), and carries the calibration the round-trip filter needs (``round_trip``: the scores of
held-out real pairs and the default threshold, their 5th percentile).

Accuracy is the share of questions whose top parse equals the gold logical form in canonical form
(``qgen.lf_canonical``: variables renamed, WikiSQL conditions as a set); for WikiSQL it is measured
on the rebuilt structured query (sel, agg, conds), as WikiSQL defines logical-form accuracy.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pyarrow.parquet as pq
import torch

from qgen.cpu_memory import reuse_freed_memory
from qgen.data import Pair, group_of
from qgen.decode import beam_search, forced_token_log_probs, normalise
from qgen.lf_canonical import same_logical_form, wikisql_part_accuracy
from qgen.model import make_batch

TASKS = ("generate", "parse")
# Logical forms are longer than questions: WikiSQL's rendered SQL has up to ~60 tokens, the demo's
# and WebQSP's SPARQL up to ~150 (a question: 40).
PARSE_MAX_TGT_LEN = 160
CALIBRATION_PERCENTILE = 5.0
# How a forced decoding's token log-probabilities become one score: their mean (length-normalised, as
# the beam search scores), or the least probable token's: one missing name or inverted comparison
# in a 60-token SPARQL query moves the mean little and the minimum a lot.
SCORE_AGGREGATES = ("mean", "min")
# The log-probability given to a logical-form token the parser cannot produce at all: neither in its
# vocabulary nor in the question to copy from. Teacher forcing scores such a token as <unk>, which
# training taught the parser to expect, so a question that drops a rare name or value would look
# fine; the name cannot be read from that question, so the pair gets the floor instead.
UNREACHABLE_LOG_PROB = -30.0


def read_task_pairs(path: str | Path, task: str = "generate", entity_replacement: bool = True) -> list[Pair]:
    """Pairs of a preprocessed examples file for ``task``: LF -> question, or question -> LF."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    column = "lf_tokens" if entity_replacement else "lf_tokens_raw"
    table = pq.read_table(path, columns=["id", column, "question_tokens", "source"])
    ids, lfs, questions, sources = (table.column(c).to_pylist() for c in ("id", column, "question_tokens", "source"))
    pairs = [Pair(i, lf, q, group_of(i, s)) for i, lf, q, s in zip(ids, lfs, questions, sources)]
    return pairs if task == "generate" else swapped([p for p in pairs if p.tgt])


def swapped(pairs: Sequence[Pair]) -> list[Pair]:
    """LF -> question pairs as question -> LF (the parser's direction)."""
    return [Pair(p.id, p.tgt, p.src, p.group) for p in pairs]


def lf_types_of(path: str | Path) -> list[str]:
    """The logical-form types a preprocessed examples file holds."""
    return sorted(set(pq.read_table(path, columns=["lf_type"]).column("lf_type").to_pylist()))


def task_metadata(task: str, lf_types: Sequence[str], entity_replacement: bool,
                  input_context: str | None = None) -> dict[str, Any]:
    """What a checkpoint records about the data it learnt from (checked before synthesis pairs a
    generator with a parser); ``input_context``: what a parser reads beside the question
    (``qgen.table_context.TABLE_HEADER``), None for the question alone."""
    metadata = {"task": task, "lf_types": sorted(lf_types),
                "preprocessing": {"entity_replacement": bool(entity_replacement), "lowercase": True}}
    if input_context is not None:
        metadata["input_context"] = input_context
    return metadata


@dataclass
class Parser:
    """A loaded parser checkpoint: parse questions, score logical forms given questions."""

    model: torch.nn.Module
    src_vocab: Any
    tgt_vocab: Any
    payload: dict[str, Any]
    device: torch.device
    max_len: int = PARSE_MAX_TGT_LEN
    batch_size: int = 64

    @classmethod
    def load(cls, checkpoint: str | Path, device: str | torch.device = "cpu", **options: Any) -> "Parser":
        from qgen.checkpoint import CheckpointError, load_checkpoint

        model, src_vocab, tgt_vocab, payload = load_checkpoint(checkpoint, device)
        if torch.device(device).type == "cpu":
            reuse_freed_memory()  # beam search on big batches (qgen.cpu_memory)
        if payload.get("task") != "parse":
            raise CheckpointError(f"{checkpoint} is a question generator, not a parser "
                                  "(train one with qgen train --task parse)")
        return cls(model, src_vocab, tgt_vocab, payload, torch.device(device), **options)

    @property
    def lf_types(self) -> list[str]:
        return list(self.payload.get("lf_types", []))

    @property
    def input_context(self) -> str | None:
        """What the parser reads after the question (``table_header``), None for the question alone."""
        return self.payload.get("input_context")

    def parse(self, questions: Sequence[Sequence[str]], beam: int = 4, k: int = 1) -> list[list[tuple[list[str], float]]]:
        """Per question, the ``k`` best parses (tokens, length-normalised log-probability), best first."""
        out: list[list[tuple[list[str], float]]] = [[] for _ in questions]
        order = sorted(range(len(questions)), key=lambda i: len(questions[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            batch = make_batch([questions[i] or ["<unk>"] for i in chunk], None, self.src_vocab, self.tgt_vocab,
                               self.model.cfg.copy).to(self.device)
            for i, hyps, oovs in zip(chunk, beam_search(self.model, batch, beam=max(beam, k), max_len=self.max_len,
                                                        num_return=k), batch.oovs):
                out[i] = [(self.tgt_vocab.decode(h.ids, oovs), h.score) for h in hyps]
        return out

    def score(self, questions: Sequence[Sequence[str]], lfs: Sequence[Sequence[str]],
              aggregate: str = "mean") -> list[float]:
        """log p(LF | question) by forced decoding, batched: length-normalised (``mean``, the score a
        beam search gives), or the least probable token's (``min``)."""
        if aggregate not in SCORE_AGGREGATES:
            raise ValueError(f"aggregate must be one of {SCORE_AGGREGATES}, got {aggregate!r}")
        out = [0.0] * len(questions)
        order = sorted(range(len(questions)), key=lambda i: len(questions[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            batch = make_batch([questions[i] or ["<unk>"] for i in chunk], [list(lfs[i])[: self.max_len] for i in chunk],
                               self.src_vocab, self.tgt_vocab, self.model.cfg.copy).to(self.device)
            for i, row in zip(chunk, forced_token_log_probs(self.model, batch)):
                question = set(questions[i])
                for j, token in enumerate(list(lfs[i])[: self.max_len]):
                    if token not in self.tgt_vocab.stoi and token not in question:
                        row[j] = UNREACHABLE_LOG_PROB
                out[i] = normalise(sum(row), len(row), 1.0) if aggregate == "mean" else min(row)
        return out


def evaluate_parser(parser: Parser, pairs: Sequence[Pair], lf_type: str, beam: int = 4) -> dict[str, Any]:
    """Exact match of the top parse against the gold LF in canonical form (see the module docstring)."""
    questions = [p.src for p in pairs]
    parses = parser.parse(questions, beam=beam)
    hits = [bool(best) and same_logical_form(best[0][0], pair.tgt, lf_type) for best, pair in zip(parses, pairs)]
    result = {"examples": len(pairs), "hits": sum(hits), "lf_exact_match": sum(hits) / len(pairs) if pairs else None,
              "beam": beam, "predictions": [" ".join(best[0][0]) if best else "" for best in parses]}
    if lf_type == "sql":  # which part of a WikiSQL query the parser gets wrong
        result["parts"] = wikisql_part_accuracy([best[0][0] if best else [] for best in parses], [p.tgt for p in pairs])
    return result


def calibrate(checkpoint: str | Path, valid_pairs: Sequence[Pair], percentile: float = CALIBRATION_PERCENTILE) -> dict:
    """Score held-out real pairs with the parser and store the round-trip calibration in the checkpoint:
    the threshold of the ``score`` rule defaults to their ``percentile``-th percentile."""
    from qgen.checkpoint import read_payload, write_payload

    parser = Parser.load(checkpoint)
    pairs = [p for p in valid_pairs if p.src]
    if not pairs:
        raise ValueError("calibration needs held-out pairs with questions")
    calibration: dict[str, Any] = {"percentile": percentile, "pairs": len(pairs)}
    for aggregate in SCORE_AGGREGATES:  # "threshold" (mean) and "threshold_min"
        scores = torch.tensor(parser.score([p.src for p in pairs], [p.tgt for p in pairs], aggregate))
        key = "threshold" if aggregate == "mean" else f"threshold_{aggregate}"
        calibration[key] = float(torch.quantile(scores, percentile / 100.0))
        calibration[key.replace("threshold", "median")] = float(scores.median())
    payload = read_payload(checkpoint)
    payload["round_trip"] = calibration
    write_payload(checkpoint, payload)
    return calibration


def evaluate_parser_file(checkpoint: str | Path, examples: str | Path, out_dir: str | Path, beam: int = 4,
                         entity_replacement: bool = True) -> dict[str, Any]:
    """Parse the questions of a preprocessed examples file and score the parses (logical-form exact
    match in canonical form, per logical-form type and overall); write predictions.txt, ids.txt and
    metrics.json into ``out_dir``."""
    import json

    parser = Parser.load(checkpoint)
    if parser.input_context is not None:
        raise ValueError(f"the parser {checkpoint} reads each question with its {parser.input_context.replace('_', ' ')}, "
                         f"which {examples} does not hold; evaluate it where it was trained (qgen downstream)")
    pairs = read_task_pairs(examples, "parse", entity_replacement)
    types = dict(zip(*(pq.read_table(examples, columns=["id", "lf_type"]).column(c).to_pylist()
                       for c in ("id", "lf_type"))))
    predictions: dict[str, str] = {}
    metrics: dict[str, Any] = {"checkpoint": str(checkpoint), "examples": str(examples), "beam": beam, "by_type": {}}
    hits = 0
    for lf_type in sorted({types[p.id] for p in pairs}):
        chosen = [p for p in pairs if types[p.id] == lf_type]
        result = evaluate_parser(parser, chosen, lf_type, beam)
        metrics["by_type"][lf_type] = {"examples": result["examples"], "lf_exact_match": result["lf_exact_match"],
                                       **({"parts": result["parts"]} if "parts" in result else {})}
        hits += result["hits"]
        predictions.update({p.id: text for p, text in zip(chosen, result["predictions"])})
    metrics["examples_scored"] = len(pairs)
    metrics["lf_exact_match"] = hits / len(pairs) if pairs else None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ids.txt").write_text("".join(f"{p.id}\n" for p in pairs))
    (out / "predictions.txt").write_text("".join(f"{predictions[p.id]}\n" for p in pairs))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics
