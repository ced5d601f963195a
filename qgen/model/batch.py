"""Examples -> padded tensors (batch-first), with the copy ids of the example's extended vocabulary."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from qgen.model.vocab import PAD_ID, Vocab, copy_ids, target_ids


@dataclass
class Batch:
    src: torch.Tensor  # (batch, src_len) source ids
    src_lengths: torch.Tensor  # (batch,)
    src_mask: torch.Tensor  # (batch, src_len) bool
    copy_ids: torch.Tensor  # (batch, src_len) output/extended id per source position, -1 = not copyable
    extended_size: int  # output vocabulary + the largest OOV list of the batch
    tgt: torch.Tensor | None  # (batch, tgt_len) gold ids incl. EOS, PAD after it
    oovs: list[list[str]]  # per example: the tokens of its extended ids
    # Target tokens (EOS included), counted on the host when the batch is made, so that training
    # never reads the count back from the device.
    target_tokens: int = 0

    def to(self, device: torch.device | str) -> "Batch":
        move = lambda t: t.to(device, non_blocking=True) if t is not None else None  # noqa: E731
        return Batch(move(self.src), self.src_lengths, move(self.src_mask), move(self.copy_ids),
                     self.extended_size, move(self.tgt), self.oovs, self.target_tokens)

    def __len__(self) -> int:
        return self.src.size(0)


def make_batch(sources: Sequence[Sequence[str]], targets: Sequence[Sequence[str]] | None,
               src_vocab: Vocab, tgt_vocab: Vocab, copy_mode: str, max_src_len: int = 400) -> Batch:
    """Pad a list of token lists. ``copy_mode`` none|intersection|extended (see ``vocab.copy_ids``)."""
    sources = [list(s[:max_src_len]) or ["<unk>"] for s in sources]
    src_len = max(len(s) for s in sources)
    src = torch.full((len(sources), src_len), PAD_ID, dtype=torch.long)
    cids = torch.full((len(sources), src_len), -1, dtype=torch.long)
    oovs: list[list[str]] = []
    for row, tokens in enumerate(sources):
        src[row, : len(tokens)] = torch.tensor(src_vocab.encode(tokens))
        ids, example_oovs = copy_ids(tokens, tgt_vocab, "extended" if copy_mode == "extended" else "intersection")
        cids[row, : len(tokens)] = torch.tensor(ids)
        oovs.append(example_oovs)
    lengths = torch.tensor([len(s) for s in sources])
    tgt = None
    if targets is not None:
        gold = [target_ids(t, tgt_vocab, o if copy_mode == "extended" else ()) for t, o in zip(targets, oovs)]
        tgt = torch.full((len(gold), max(len(g) for g in gold)), PAD_ID, dtype=torch.long)
        for row, ids in enumerate(gold):
            tgt[row, : len(ids)] = torch.tensor(ids)
    extended = len(tgt_vocab) + max((len(o) for o in oovs), default=0)
    target_tokens = int((tgt != PAD_ID).sum()) if tgt is not None else 0
    return Batch(src, lengths, src != PAD_ID, cids, extended, tgt, oovs, target_tokens)
