"""Teacher-forced training computes the output layer once over all the steps (QuestionGenerator's
``_teacher_forced``): the loss and its gradients must be those of the step-by-step path."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from qgen.model import VARIANTS, Vocab, build_model, make_batch
from qgen.model.parts import uses_parts

SRC = [["select", "?", "x", "where", "ent:", "bali", "ns", "capital"],
       ["select", "?", "x", "where", "ent:", "atlantis", "ns", "capital", "limit", "1"],
       ["ask", "ent:", "paris"]]
TGT = [["what", "is", "the", "capital", "of", "bali", "?"],
       ["what", "is", "the", "capital", "of", "atlantis", "?"],  # "atlantis": copied, or an extended id
       ["is", "it", "paris", "?"]]
SRC_VOCAB = Vocab.build(SRC)
TGT_VOCAB = Vocab.build([TGT[0], TGT[2]])
SKELETON = sorted(name for name, v in VARIANTS.items() if not uses_parts(v.model))


@pytest.mark.parametrize("name", SKELETON)
def test_the_output_layer_over_all_steps_gives_the_step_by_step_loss_and_gradients(name: str) -> None:
    torch.manual_seed(0)
    cfg = replace(VARIANTS[name].model, embedding_dim=8, hidden_size=16, dropout=0.0,
                  mlp_hidden=12).with_vocab(len(SRC_VOCAB), len(TGT_VOCAB))
    model = build_model(cfg).train()
    batch = make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, cfg.copy)

    def loss_and_grads(step_by_step: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        model.zero_grad()
        # asking for each step's argmax keeps forward on the step-by-step path
        loss, tokens = model(batch, teacher_forcing=1.0, predictions=[] if step_by_step else None)
        assert tokens == sum(len(t) + 1 for t in TGT)  # every word and the end of each question
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    all_steps = []
    fast = model._teacher_forced
    model._teacher_forced = lambda b: all_steps.append(1) or fast(b)  # type: ignore[method-assign]
    stepwise_loss, stepwise_grads = loss_and_grads(step_by_step=True)
    assert all_steps == []
    loss, grads = loss_and_grads(step_by_step=False)
    assert all_steps == [1]  # teacher forcing 1 and no predictions asked: the all-steps path ran
    assert float(stepwise_loss) > 0
    torch.testing.assert_close(loss, stepwise_loss, rtol=1e-5, atol=1e-5)
    assert len(grads) == len(stepwise_grads)
    for fast, slow in zip(grads, stepwise_grads):
        torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-6)
