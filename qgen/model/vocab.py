"""Vocabularies and the per-example extended vocabulary used by the copy mechanism."""
from __future__ import annotations

import json
from collections import Counter
from typing import Iterable, Sequence

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)


class Vocab:
    """Token <-> id. Ids 0-3 are the specials; the rest by descending frequency, then alphabetically."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.itos = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, sequences: Iterable[Sequence[str]], min_count: int = 1) -> "Vocab":
        """The paper's vocabulary: every training token (``min_count`` 1)."""
        counts = Counter(t for seq in sequences for t in seq)
        ordered = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        return cls(ordered)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi.get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int], oovs: Sequence[str] = ()) -> list[str]:
        """Ids -> tokens, stopping at EOS; ids past the vocabulary index ``oovs`` (extended copy)."""
        out = []
        for i in ids:
            if i == EOS_ID:
                break
            if i in (PAD_ID, BOS_ID):
                continue
            out.append(self.itos[i] if i < len(self.itos) else oovs[i - len(self.itos)])
        return out

    def to_json(self) -> str:
        return json.dumps(self.itos[len(SPECIALS):], ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Vocab":
        return cls(json.loads(text))


def copy_ids(src_tokens: Sequence[str], tgt_vocab: Vocab, mode: str) -> tuple[list[int], list[str]]:
    """Where each source position's copy probability goes, and the example's OOV list.

    ``intersection`` (the paper, V_c = V_i ∩ V_o): a source token in the output vocabulary copies to
    its id; any other gets -1 (cannot be copied). ``extended`` (See et al. 2017): such a token gets
    an id past the vocabulary, ``len(tgt_vocab) + k``, for the k-th distinct OOV of the example.
    """
    ids: list[int] = []
    oovs: list[str] = []
    for token in src_tokens:
        if token in tgt_vocab.stoi:
            ids.append(tgt_vocab.stoi[token])
        elif mode == "extended":
            if token not in oovs:
                oovs.append(token)
            ids.append(len(tgt_vocab) + oovs.index(token))
        else:
            ids.append(-1)
    return ids, oovs


def target_ids(tgt_tokens: Sequence[str], tgt_vocab: Vocab, oovs: Sequence[str]) -> list[int]:
    """Gold ids: in-vocabulary ids, else the extended id of a copyable OOV, else UNK; then EOS."""
    ids = []
    for token in tgt_tokens:
        if token in tgt_vocab.stoi:
            ids.append(tgt_vocab.stoi[token])
        elif token in oovs:
            ids.append(len(tgt_vocab) + list(oovs).index(token))
        else:
            ids.append(UNK_ID)
    return ids + [EOS_ID]
