"""Training computes the output layer once over all the steps (QuestionGenerator's
``_output_layer_at_the_end``), each step's distribution without a gradient where the next input may be the
model's own argmax: the loss, its gradients and the argmaxes must be those of the step-by-step path."""
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


@pytest.mark.parametrize("teacher_forcing, per_sequence", [(1.0, False), (0.5, False), (0.5, True), (0.0, False)])
@pytest.mark.parametrize("name", SKELETON)
def test_the_output_layer_over_all_steps_gives_the_step_by_step_loss_gradients_and_argmaxes(
        name: str, teacher_forcing: float, per_sequence: bool) -> None:
    torch.manual_seed(0)
    cfg = replace(VARIANTS[name].model, embedding_dim=8, hidden_size=16, dropout=0.0,
                  mlp_hidden=12).with_vocab(len(SRC_VOCAB), len(TGT_VOCAB))
    model = build_model(cfg).train()
    batch = make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, cfg.copy)

    def loss_grads_and_argmaxes(forward) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        model.zero_grad()
        predictions: list[torch.Tensor] = []
        loss, tokens = forward(batch, teacher_forcing, torch.Generator().manual_seed(3), per_sequence, predictions)
        assert tokens == sum(len(t) + 1 for t in TGT)  # every word and the end of each question
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None], predictions

    stepwise_loss, stepwise_grads, stepwise_argmaxes = loss_grads_and_argmaxes(model._step_by_step)
    loss, grads, argmaxes = loss_grads_and_argmaxes(model)  # forward: the output layer at the end
    assert float(stepwise_loss) > 0
    assert [a.tolist() for a in argmaxes] == [a.tolist() for a in stepwise_argmaxes]
    torch.testing.assert_close(loss, stepwise_loss, rtol=1e-5, atol=1e-5)
    assert len(grads) == len(stepwise_grads)
    for fast, slow in zip(grads, stepwise_grads):
        torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-6)
