"""The question generator: encoder + step-wise decoder, trained with teacher forcing.

One skeleton for all five rows of the seed paper's Table 1; the variants differ only in the parts
``ModelConfig`` plugs in (generator, coverage, scratchpad). A ``PartsConfig`` swaps the encoder and
decoder for other parts (qgen/model/parts.py) and adds loss terms computed from the step attentions
(qgen/model/losses.py).
"""
from __future__ import annotations

import torch
from torch import nn

from qgen.model.batch import Batch
from qgen.model.config import ModelConfig
from qgen.model.decoder import Decoder, State
from qgen.model.encoder import Encoder
from qgen.model.losses import LOSS_TERMS
from qgen.model.vocab import BOS_ID, PAD_ID
from qgen.model.parts import build_decoder, build_encoder, initialise, uses_parts


class QuestionGenerator(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        if not cfg.src_vocab_size or not cfg.tgt_vocab_size:
            raise ValueError("ModelConfig needs the vocabulary sizes (use cfg.with_vocab)")
        self.cfg = cfg
        if uses_parts(cfg):
            self.encoder, memory_dim = build_encoder(cfg)
            self.decoder = build_decoder(cfg, memory_dim)
            if hasattr(self.decoder, "bind"):  # a decoder that runs parts of the encoder (seed 002's switch)
                self.decoder.bind(self.encoder)
        else:
            self.encoder = Encoder(cfg)
            self.decoder = Decoder(cfg)
        initialise(self, cfg)
        self.loss_terms = [LOSS_TERMS[name] for name in getattr(cfg, "terms", ())]

    def start(self, batch: Batch) -> State:
        """Encode a batch and return the decoder's initial state."""
        # An encoder may return its memory's own mask (the checklist's agenda items), else the memory
        # is one state per source token.
        outputs, final, *memory_mask = self.encoder(batch.src, batch.src_lengths)
        copy_ids = batch.copy_ids if self.cfg.copy != "none" else torch.full_like(batch.copy_ids, -1)
        extended = batch.extended_size if self.cfg.copy == "extended" else self.cfg.tgt_vocab_size
        mask = memory_mask[0] if memory_mask else batch.src_mask
        return self.decoder.init_state(outputs, final, mask, copy_ids, extended)

    def per_example_keys(self) -> set[str]:
        return self.decoder.per_example_keys()

    def unexpanded_keys(self) -> set[str]:
        return self.decoder.unexpanded_keys() if hasattr(self.decoder, "unexpanded_keys") else set()

    def step(self, prev_tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State, dict[str, torch.Tensor]]:
        return self.decoder.step(prev_tokens, state)

    def forward(self, batch: Batch, teacher_forcing: float = 1.0, generator: torch.Generator | None = None,
                per_sequence: bool = False, predictions: list[torch.Tensor] | None = None) -> tuple[torch.Tensor, int]:
        """Summed NLL of the gold targets and the number of target tokens; ``predictions``, if given,
        receives each step's argmax (batch,) (seed 002's switching GRUs read the argmax text).

        With probability ``teacher_forcing`` the next input is the gold token, else the model's own
        argmax (the paper trains with 0.5 and does not say at what grain). The coin is tossed per
        example and step, or with ``per_sequence`` once per example for all its steps (the PyTorch
        seq2seq tutorial's way).
        """
        assert batch.tgt is not None, "training needs targets"
        if isinstance(self.decoder, Decoder):
            return self._output_layer_at_the_end(batch, teacher_forcing, generator, per_sequence, predictions)
        return self._step_by_step(batch, teacher_forcing, generator, per_sequence, predictions)

    def _step_by_step(self, batch: Batch, teacher_forcing: float = 1.0, generator: torch.Generator | None = None,
                      per_sequence: bool = False, predictions: list[torch.Tensor] | None = None
                      ) -> tuple[torch.Tensor, int]:
        """``forward`` one step's distribution and loss at a time: any decoder's path, and the reference
        that ``_output_layer_at_the_end`` is tested against."""
        assert batch.tgt is not None, "training needs targets"
        state = self.start(batch)
        tgt = batch.tgt  # (batch, tgt_len)
        prev = torch.full((tgt.size(0),), BOS_ID, dtype=torch.long, device=tgt.device)
        total = torch.zeros((), device=tgt.device)
        sequence_coin = (torch.rand(tgt.size(0), device=tgt.device, generator=generator) < teacher_forcing
                         if per_sequence and teacher_forcing < 1.0 else None)
        # Loss terms in training only: the validation loss stays the NLL, comparable between rows.
        terms = self.loss_terms if self.training else []
        steps: list[dict[str, torch.Tensor]] = []
        for t in range(tgt.size(1)):
            log_probs, state, attns = self.step(prev, state)  # (batch, extended)
            if predictions is not None:
                predictions.append(log_probs.detach().argmax(dim=1))
            if terms:
                steps.append(attns)
            gold = tgt[:, t]
            nll = -log_probs.gather(1, gold.clamp_max(log_probs.size(1) - 1).unsqueeze(1)).squeeze(1)
            total = total + nll.masked_fill(gold == PAD_ID, 0.0).sum()
            if teacher_forcing >= 1.0:
                prev = gold
            else:
                use_gold = sequence_coin if sequence_coin is not None else (
                    torch.rand(gold.shape, device=gold.device, generator=generator) < teacher_forcing)
                prev = torch.where(use_gold, gold, log_probs.argmax(dim=1))
        if terms:
            stacked = {k: torch.stack([a[k] for a in steps], dim=1) for k in steps[0]}  # (batch, tgt_len, ...)
            for term in terms:
                total = total + term(stacked, state["src_mask"], tgt != PAD_ID)
        # The count made on the host with the batch (no device read); a batch built by hand counts here.
        return total, batch.target_tokens or int((tgt != PAD_ID).sum())

    def _output_layer_at_the_end(self, batch: Batch, teacher_forcing: float, generator: torch.Generator | None,
                                 per_sequence: bool, predictions: list[torch.Tensor] | None
                                 ) -> tuple[torch.Tensor, int]:
        """``forward`` for the ``Decoder``: the loss's output layer runs once over all the steps (one large
        matrix product, and one for its weight's gradient, instead of one per step: with WikiSQL's 14,495
        words that per-step gradient was a quarter of a CPU training step) and only at the gold words. A
        step whose next input may be the model's own word computes its distribution without a gradient,
        for the argmax. The same loss and the same argmax as the step-by-step path, to rounding."""
        assert batch.tgt is not None
        state = self.start(batch)
        tgt = batch.tgt  # (batch, tgt_len)
        prev = torch.full((tgt.size(0),), BOS_ID, dtype=torch.long, device=tgt.device)
        sequence_coin = (torch.rand(tgt.size(0), device=tgt.device, generator=generator) < teacher_forcing
                         if per_sequence and teacher_forcing < 1.0 else None)
        steps: list[dict[str, torch.Tensor]] = []
        for t in range(tgt.size(1)):
            _, next_state, attns = self.decoder.step(prev, state, distribution=False)
            steps.append(attns)
            gold = tgt[:, t]
            if teacher_forcing < 1.0 or predictions is not None:
                with torch.no_grad():
                    argmax = self.decoder.step_distribution(attns, state).argmax(dim=1)
                if predictions is not None:
                    predictions.append(argmax)
            if teacher_forcing >= 1.0:
                prev = gold
            else:
                use_gold = sequence_coin if sequence_coin is not None else (
                    torch.rand(gold.shape, device=gold.device, generator=generator) < teacher_forcing)
                prev = torch.where(use_gold, gold, argmax)
            state = next_state
        terms = self.loss_terms if self.training else []  # loss terms in training only, as in forward
        wanted = set(steps[0]) if terms else {"post", "copy", "p_gen"}  # the output layer's inputs
        stacked = {k: torch.stack([a[k] for a in steps], dim=1) for k in steps[0] if k in wanted}  # (batch, tgt_len, ...)
        gold_log_probs = self.decoder.gold_log_probs(stacked, state, tgt)  # (batch, tgt_len)
        total = -gold_log_probs.masked_fill(tgt == PAD_ID, 0.0).sum()
        for term in terms:
            total = total + term(stacked, state["src_mask"], tgt != PAD_ID)
        return total, batch.target_tokens or int((tgt != PAD_ID).sum())


def build_model(cfg: ModelConfig) -> QuestionGenerator:
    return QuestionGenerator(cfg)
