"""E2E pairs as Zhang et al. (seed 003) prepared them: flattened MR and text, Moses-tokenised, joint BPE.

    MR   "name[The Eagle], eatType[coffee shop]" -> Moses tokens -> BPE units + "</s>"
    text "The Eagle is a coffee shop."          -> Moses tokens -> BPE units

Moses tokenisation is sacremoses' port of tokenizer.perl with ``escape=False`` (no &apos; entities);
one set of 1000 BPE merges (subword-nmt) is learnt on the training sources and targets together, as
subword-nmt's learn_joint_bpe_and_vocab does. No delexicalisation. Outputs go back to text by removing
"@@ " and keeping the Moses tokens (their submission is tokenised text, "... city centre .").
The source's appended EOS (the spec: "source has an appended EOS") is the vocabulary's "</s>", which
every Vocab maps to EOS_ID.
"""
from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qgen.data import Pair
from qgen.datasets import e2e
from qgen.model.vocab import EOS

MERGES = 1000
MAX_TOKENS = 100  # pairs longer than this (in BPE units) are dropped from training; no E2E pair is
SEPARATOR = "@@"
_SLOT = re.compile(r"\s*([^\[\],]+?)\s*\[([^\]]*)\]")


def flatten_mr(mr: str) -> str:
    """``attr[value], attr[value], ...`` with single spaces, whatever the CSV's spacing."""
    slots = _SLOT.findall(mr)
    if not slots:
        raise ValueError(f"not an E2E MR: {mr!r}")
    return ", ".join(f"{attr.strip()}[{value.strip()}]" for attr, value in slots)


_TOKENIZER = None


def moses_tokens(text: str) -> list[str]:
    """tokenizer.perl -l en (sacremoses), no XML escaping."""
    global _TOKENIZER
    if _TOKENIZER is None:
        from sacremoses import MosesTokenizer

        _TOKENIZER = MosesTokenizer(lang="en")
    return _TOKENIZER.tokenize(text, escape=False)


def learn_codes(sequences: Iterable[Sequence[str]], merges: int = MERGES) -> str:
    """BPE codes (subword-nmt's file format) learnt on token sequences, ``merges`` merge operations."""
    from subword_nmt.learn_bpe import learn_bpe

    codes = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()):  # subword-nmt draws a progress bar there
        learn_bpe(io.StringIO("".join(" ".join(s) + "\n" for s in sequences)), codes, merges)
    return codes.getvalue()


class Segmenter:
    """Moses tokens -> BPE units with the "@@" continuation mark (subword-nmt's apply_bpe)."""

    def __init__(self, codes: str) -> None:
        from subword_nmt.apply_bpe import BPE

        self.bpe = BPE(io.StringIO(codes), separator=SEPARATOR)

    def __call__(self, tokens: Sequence[str]) -> list[str]:
        return self.bpe.segment_tokens(list(tokens))


def remove_bpe(units: Sequence[str]) -> str:
    """BPE units -> Moses-tokenised text ("@@ " joins a unit to the next; a dangling "@@" is dropped)."""
    text = " ".join(units).replace(SEPARATOR + " ", "")
    return text[: -len(SEPARATOR)] if text.endswith(SEPARATOR) else text


@dataclass(frozen=True)
class Example:
    """One E2E row: the flattened MR, its reference (None in an MR-only file), Moses tokens of both."""
    id: str
    mr: str
    ref: str | None
    mr_tokens: list[str]
    ref_tokens: list[str]


def read_split(data_dir: str | Path, split: str) -> list[Example]:
    """The split's rows (qgen.datasets.e2e), Moses-tokenised; unreadable rows are left out."""
    out = []
    for raw in e2e.load(Path(data_dir), split):
        if raw.load_error:
            continue
        mr = flatten_mr(raw.logical_form)
        ref = raw.question
        out.append(Example(raw.id, mr, ref, moses_tokens(mr), moses_tokens(ref) if ref else []))
    return out


def codes_for(train: Sequence[Example], merges: int = MERGES) -> str:
    """Joint codes: the training MRs and references in one corpus."""
    return learn_codes([e.mr_tokens for e in train] + [e.ref_tokens for e in train], merges)


def to_pairs(examples: Sequence[Example], segment: Segmenter, max_tokens: int | None = None) -> list[Pair]:
    """Pairs of BPE units, the source with its EOS; grouped by MR (the references of one MR stay together).
    ``max_tokens``: pairs with a longer side are dropped (training only)."""
    pairs = []
    for e in examples:
        src, tgt = segment(e.mr_tokens) + [EOS], segment(e.ref_tokens)
        if max_tokens is None or max(len(src) - 1, len(tgt)) <= max_tokens:
            pairs.append(Pair(e.id, src, tgt, e.mr))
    return pairs
