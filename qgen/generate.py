"""One-off generation (``qgen generate``): logical forms in, questions with scores out."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import torch

from parsers.jsonl import TextLine, read_text_lines
from qgen.checkpoint import load_checkpoint
from qgen.decode import beam_search
from qgen.batching import default_max_tokens, token_batches
from qgen.model import make_batch


def read_logical_form_lines(path: str | Path | None = None) -> list[TextLine]:
    """The non-blank lines of ``path`` (stdin without one), one logical form each: split at ``\\n``
    only (a U+2028 or ``\\r`` stays inside its line); a line too long or not UTF-8 carries its error."""
    if path is None:
        return list(read_text_lines(sys.stdin.buffer))
    with open(path, "rb") as handle:
        return list(read_text_lines(handle))


def generate_questions(lfs: Sequence[str | TextLine], checkpoint: str | Path, lf_type: str = "sparql",
                       names: Mapping[str, str] | None = None, beam: int = 4, num_return: int = 1,
                       batch_size: int | None = None, no_repeat: bool = False,
                       max_tokens: int | None = None) -> Iterator[dict]:
    """Per logical form, in order: ``{"lf", "questions": [(question, score), ...]}`` best first
    (score: length-normalised log-probability), or ``{"lf", "error"}`` for one that cannot be read
    (from a ``TextLine``: its error, or the parser's after ``line N:``). ``no_repeat``: no word right
    after itself. Batches: at most ``max_tokens`` source tokens (default: what fits the device) and
    ``batch_size`` logical forms (default: no limit)."""
    from parsers import LogicalFormError, tokenize_lf

    if num_return > beam:
        raise ValueError(f"--num-return ({num_return}) cannot exceed --beam ({beam})")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, src_vocab, tgt_vocab, _ = load_checkpoint(checkpoint, device)
    parsed: list[list[str] | str] = []
    for item in lfs:
        where = f"line {item.number}: " if isinstance(item, TextLine) else ""
        if isinstance(item, TextLine) and item.error is not None:
            parsed.append(str(item.error))
            continue
        try:
            parsed.append(tokenize_lf(_text(item), lf_type, names=names).tokens)
        except LogicalFormError as err:
            parsed.append(f"{where}{err}")
    good = [i for i, p in enumerate(parsed) if isinstance(p, list)]
    answers: dict[int, list[tuple[str, float]]] = {}
    by_length = sorted(((i, parsed[i]) for i in good), key=lambda item: (len(item[1]), item[0]))
    budget = max_tokens or default_max_tokens(device, model.cfg, beam)
    for items in token_batches(by_length, budget, batch_size):
        chunk = [i for i, _ in items]
        batch = make_batch([tokens for _, tokens in items], None, src_vocab, tgt_vocab, model.cfg.copy).to(device)
        for i, hyps, oovs in zip(chunk, beam_search(model, batch, beam=beam, num_return=num_return,
                                                             no_repeat=no_repeat), batch.oovs):
            answers[i] = [(" ".join(tgt_vocab.decode(h.ids, oovs)), round(h.score, 4)) for h in hyps]
    for i, item in enumerate(lfs):
        lf = _text(item)
        yield {"lf": lf, "questions": answers[i]} if i in answers else {"lf": lf, "error": parsed[i]}


def _text(item: str | TextLine) -> str:
    return item.text if isinstance(item, TextLine) else item
