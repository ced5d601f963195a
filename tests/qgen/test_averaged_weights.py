"""TrainConfig.weight_average: checkpoints hold the moving average of the weights, training goes on
from the last step's weights, and a stopped run resumes identically (qgen.averaged_weights)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from qgen.averaged_weights import TRAINING_WEIGHTS, WeightAverage
from qgen.checkpoint import load_checkpoint
from qgen.train import TrainConfig, evaluate_loss, resolve_device, train
from tests.qgen.test_train import FAMILIES, PAIRS

BASE = dict(batch_size=8, learning_rate=3e-3, teacher_forcing=1.0, seed=5)


def quiet(_: str) -> None:
    pass


def test_the_average_moves_part_of_the_way_to_each_step() -> None:
    model = torch.nn.Linear(2, 1)
    average = WeightAverage(model, 0.75)
    start = model.weight.detach().clone()
    with torch.no_grad():
        model.weight.add_(4.0)
    average.update(model)
    assert torch.allclose(average.module.weight, start + 1.0)  # a quarter of the way
    average.update(model)
    assert torch.allclose(average.module.weight, start + 1.75)
    assert not average.module.weight.requires_grad and not average.module.training


@pytest.mark.parametrize("decay", [0.0, 1.0, -0.5])
def test_a_decay_outside_zero_to_one_is_refused(decay: float) -> None:
    with pytest.raises(ValueError, match="decay"):
        WeightAverage(torch.nn.Linear(2, 1), decay)
    if decay != 0.0:  # 0 is TrainConfig's "off"
        with pytest.raises(ValueError, match="weight_average"):
            TrainConfig(weight_average=decay)


def test_checkpoints_hold_the_average_and_last_pt_the_training_weights(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    plain = train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], TrainConfig(epochs=2, **BASE), tmp_path / "plain",
                  log=quiet)
    averaged = train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], TrainConfig(epochs=2, weight_average=0.9, **BASE),
                     tmp_path / "averaged", log=quiet)
    model, src_vocab, tgt_vocab, payload = load_checkpoint(tmp_path / "averaged" / "last.pt")
    trained = load_checkpoint(tmp_path / "plain" / "last.pt")[0].state_dict()
    # Training is untouched by the average: the same last-step weights as the plain run, bit for bit.
    assert all(torch.equal(payload[TRAINING_WEIGHTS][k], trained[k]) for k in trained)
    # The checkpoint's model is another set of weights, and the validation loss recorded is its own.
    assert any(not torch.equal(model.state_dict()[k], trained[k]) for k in trained)
    cfg = TrainConfig(**BASE)
    assert averaged.history[-1].valid_loss == pytest.approx(
        evaluate_loss(model, PAIRS[:4], src_vocab, tgt_vocab, cfg, resolve_device("cpu")), rel=1e-5)
    assert averaged.history[-1].valid_loss != plain.history[-1].valid_loss
    assert TRAINING_WEIGHTS not in load_checkpoint(tmp_path / "averaged" / "best.pt")[3]
    # One epoch: best.pt is that epoch's model, the average, not the weights training goes on from.
    train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], TrainConfig(epochs=1, weight_average=0.9, **BASE), tmp_path / "one",
          log=quiet)
    best, last = (load_checkpoint(tmp_path / "one" / name) for name in ("best.pt", "last.pt"))
    assert all(torch.equal(best[0].state_dict()[k], v) for k, v in last[0].state_dict().items())
    assert any(not torch.equal(last[3][TRAINING_WEIGHTS][k], v) for k, v in last[0].state_dict().items())


def test_a_run_resumed_after_an_epoch_continues_identically(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    for run, epochs in (("straight", [2]), ("resumed", [1, 2])):
        for n in epochs:
            train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], TrainConfig(epochs=n, weight_average=0.9, **BASE),
                  tmp_path / run, log=quiet)
    (a, *_, pa), (b, *_, pb) = (load_checkpoint(tmp_path / run / "last.pt") for run in ("straight", "resumed"))
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    assert all(torch.equal(pa[TRAINING_WEIGHTS][k], pb[TRAINING_WEIGHTS][k]) for k in pa[TRAINING_WEIGHTS])


def test_a_run_stopped_within_an_epoch_resumes_identically(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    cfg = TrainConfig(epochs=2, weight_average=0.9, **BASE)
    train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], cfg, tmp_path / "straight", log=quiet)
    for _ in range(2):  # a budget of 0 s stops after one step each time (3 steps an epoch)
        train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], TrainConfig(**{**cfg.__dict__, "max_seconds": 0}),
              tmp_path / "stopped", log=quiet)
    assert load_checkpoint(tmp_path / "stopped" / "last.pt")[3]["partial"]["steps"] == 2
    train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], cfg, tmp_path / "stopped", log=quiet)
    (a, *_, pa), (b, *_, pb) = (load_checkpoint(tmp_path / run / "last.pt") for run in ("straight", "stopped"))
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    assert all(torch.equal(pa[TRAINING_WEIGHTS][k], pb[TRAINING_WEIGHTS][k]) for k in pa[TRAINING_WEIGHTS])
