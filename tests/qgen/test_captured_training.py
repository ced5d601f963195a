"""The captured training step (qgen/captured_training.py): what it records runs here on a CPU as
plain eager code, so the bucket padding and the length-agnostic encoder are checked against the
ordinary step; the capture itself needs a GPU (the last test)."""
from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch

from qgen.captured_training import WARMUP_STEPS, CapturedTraining, applies, bucket_shape, pad_batch
from qgen.data import Pair
from qgen.model import VARIANTS, ModelConfig, Vocab, build_model, make_batch
from qgen.model.config import PartsConfig
from qgen.model.encoder import Encoder
from qgen.model.vocab import PAD_ID
from qgen.train import TrainConfig, build_vocabularies, make_optimizer, run_epoch, training_step

torch.set_num_threads(1)
SRC = [["select", "?x", "where", "{", "ns:m.01", "ns:film.director", "?x", "}"],
       ["count", "rows", "where", "a", ">", "3"], ["ns:m.02", "ns:people.spouse"]]
TGT = [["who", "directed", "ns:m.01", "?"], ["how", "many", "rows", "have", "a", "above", "3", "?"],
       ["spouse", "of", "zed"]]
SRC_VOCAB = Vocab.build(SRC)
TGT_VOCAB = Vocab.build(TGT[:2])  # "zed" and "ns:m.02" stay out of the output vocabulary: an extended id
TINY = dict(embedding_dim=8, hidden_size=16, num_layers=2, dropout=0.0)


def _model(name: str):
    torch.manual_seed(0)
    cfg = replace(VARIANTS[name].model, **TINY).with_vocab(len(SRC_VOCAB), len(TGT_VOCAB))
    return build_model(cfg).train()


def test_length_agnostic_encoder_matches_the_packed_one_outputs_finals_and_gradients() -> None:
    torch.manual_seed(0)
    encoder = Encoder(ModelConfig(src_vocab_size=30, tgt_vocab_size=30, **TINY))
    src = torch.randint(4, 30, (5, 9))
    lengths = torch.tensor([9, 3, 1, 6, 2])
    src[torch.arange(9).unsqueeze(0) >= lengths.unsqueeze(1)] = PAD_ID
    results = []
    addresses = [p.data_ptr() for p in encoder.parameters()]
    for agnostic in (False, True):
        encoder.zero_grad()
        encoder.length_agnostic = agnostic
        outputs, final = encoder(src, lengths)
        (outputs.square().sum() + final.sin().sum()).backward()
        results.append((outputs.detach(), final.detach(), [p.grad.clone() for p in encoder.parameters()]))
    (packed_out, packed_final, packed_grads), (out, final, grads) = results
    assert out.shape == packed_out.shape and final.shape == packed_final.shape
    assert torch.allclose(out, packed_out, atol=1e-6) and torch.allclose(final, packed_final, atol=1e-6)
    assert (out[4, 2:] == 0).all()  # padding positions stay zero, as pad_packed_sequence leaves them
    for a, b in zip(grads, packed_grads):
        assert torch.allclose(a, b, atol=1e-5)
    assert [p.data_ptr() for p in encoder.parameters()] == addresses  # the weights never move (CUDA graphs)


def test_bucket_shape_rounds_every_width_up() -> None:
    batch = make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, "extended")
    rows, src_len, tgt_len, extended = bucket_shape(batch, 32, len(TGT_VOCAB))
    assert (rows, src_len, tgt_len) == (32, 16, 16)
    assert extended == len(TGT_VOCAB) + 16 and batch.extended_size < extended


@pytest.mark.parametrize("name", ["copynet", "coverage", "scratchpad", "seq2seq", "scratchpad_extended"])
def test_a_padded_batch_trains_exactly_as_the_batch_itself(name: str) -> None:
    """One update on the batch padded to its bucket shape (extra rows, wider source, target and extended
    vocabulary; the encoder's length-agnostic path; the loss divided by a tensor) leaves the same loss
    and the same weights as the ordinary step on the batch itself."""
    cfg = TrainConfig(batch_size=8, teacher_forcing=1.0)
    autocast = torch.autocast("cpu", enabled=False)
    model = _model(name)
    batch = make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, model.cfg.copy)
    twin = copy.deepcopy(model)
    loss, count, taken = training_step(model, make_optimizer(model, cfg, torch.device("cpu")), batch, cfg, None,
                                       autocast)

    padded = pad_batch(batch, bucket_shape(batch, cfg.batch_size, len(TGT_VOCAB)))
    assert padded.src.shape == (8, 16) and padded.target_tokens == batch.target_tokens
    twin.encoder.length_agnostic = True
    padded_loss, _, padded_taken = training_step(twin, make_optimizer(twin, cfg, torch.device("cpu")), padded, cfg,
                                                 None, autocast, divisor=torch.tensor(float(count)))
    assert bool(taken) and bool(padded_taken)
    assert padded_loss.item() == pytest.approx(loss.item(), rel=1e-5)
    for (key, a), b in zip(model.state_dict().items(), twin.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), key


def test_it_applies_to_the_skeleton_rows_on_a_gpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QGEN_CUDA_GRAPHS", "on")
    cuda = torch.device("cuda")
    assert applies(_model("scratchpad"), TrainConfig(), cuda) is None
    assert applies(_model("scratchpad"), TrainConfig(), torch.device("cpu")) == "not a CUDA device"
    assert "constant learning rate" in applies(_model("copynet"), TrainConfig(lr_decay=0.5), cuda)
    assert "per target token" in applies(_model("copynet"), TrainConfig(loss_per="sentence"), cuda)
    parts = PartsConfig(src_vocab_size=20, tgt_vocab_size=20, encoder="caencoder", decoder="cgru", **TINY)
    assert "other parts" in applies(build_model(parts), TrainConfig(), cuda)


def test_the_switch_turns_it_on_and_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QGEN_CUDA_GRAPHS", "off")
    assert applies(_model("scratchpad"), TrainConfig(), torch.device("cuda")) == "QGEN_CUDA_GRAPHS=off"
    monkeypatch.delenv("QGEN_CUDA_GRAPHS")  # auto, the default: captured on a GPU
    assert applies(_model("scratchpad"), TrainConfig(), torch.device("cuda")) is None


class EagerCaptured(CapturedTraining):
    """The captured trainer with its CUDA calls replaced: a warm-up runs the step, recording returns
    the step itself as the replay. Everything else (buckets, buffers, loads, outputs) is the real one."""

    def _prepare(self) -> None:
        self.recorded: list[tuple[int, ...]] = []

    def _warm_up(self, entry) -> None:
        self._run(entry)

    def _record(self, entry):
        self.recorded.append(tuple(entry.batch.src.shape))
        return lambda: self._run(entry)


def test_epochs_through_the_captured_trainer_match_the_eager_loop() -> None:
    """run_epoch with the captured trainer (graphs replaced by eager replays of the recorded step) gives
    the eager loop's losses and weights: each replay reads the batch loaded for it, and shapes are
    recorded after their warm-ups. SGD: Adam's normalised update turns the float-error differences of
    tiny gradients into steps of the learning rate's size, which would hide a real difference."""
    pairs = [Pair(str(i), ["<s>", *src, "</s>"], ["<s>", *tgt, "</s>"], str(i)) for i, (src, tgt) in
             enumerate(zip(SRC * 2, TGT * 2))]
    cfg = TrainConfig(batch_size=4, teacher_forcing=1.0, optimizer="sgd", learning_rate=0.5)
    src_vocab, tgt_vocab = build_vocabularies(pairs)
    device = torch.device("cpu")
    results = []
    for captured_run in (False, True):
        torch.manual_seed(0)
        model = build_model(replace(VARIANTS["scratchpad"].model, **TINY).with_vocab(len(src_vocab), len(tgt_vocab)))
        optimizer = make_optimizer(model, cfg, device)
        captured = EagerCaptured(model, optimizer, cfg, device) if captured_run else None
        history = [run_epoch(model, optimizer, pairs, pairs[:2], src_vocab, tgt_vocab, cfg, epoch, device,
                             captured=captured) for epoch in range(1, 6)]
        results.append((history, model.state_dict(), captured))
    (eager, eager_weights, _), (replayed, weights, captured) = results
    for a, b in zip(eager, replayed):
        assert b.train_loss == pytest.approx(a.train_loss, rel=1e-5)
        assert b.valid_loss == pytest.approx(a.valid_loss, rel=1e-5)
    for key, value in eager_weights.items():
        assert torch.allclose(weights[key], value, atol=1e-5), key
    assert eager[-1].train_loss < eager[0].train_loss - 0.1  # it learns: the comparison means something
    assert len(captured.recorded) == len(captured.shapes) == 2  # batches of 4 and 2 rows: two shapes, once each
    assert all(entry.runs == 5 for entry in captured.shapes.values()) and WARMUP_STEPS < 5


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_captured_training_follows_the_eager_steps_on_a_gpu() -> None:
    """Replayed graphs of two shapes, interleaved, train as the eager steps do (teacher forcing 1.0,
    float32, no dropout: within float error), and the weights never move to other memory."""
    cfg = TrainConfig(batch_size=4, teacher_forcing=1.0, bf16=False, learning_rate=1e-2)
    device = torch.device("cuda")
    eager_model = _model("scratchpad").to(device)
    eager_model.encoder.length_agnostic = True  # the captured step's encoder path (eager CUDA packs: cuDNN)
    model = copy.deepcopy(eager_model)
    eager_opt, opt = make_optimizer(eager_model, cfg, device), make_optimizer(model, cfg, device)
    captured = CapturedTraining(model, opt, cfg, device)
    addresses = [p.data_ptr() for p in model.parameters()]
    batches = [make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, model.cfg.copy),
               make_batch(SRC[2:] * 3, TGT[2:] * 3, SRC_VOCAB, TGT_VOCAB, model.cfg.copy)]  # another shape
    autocast = torch.autocast("cuda", enabled=False)
    for step in range(2 * (WARMUP_STEPS + 3)):  # per shape: eager warm-up, the capture, then replays
        batch = batches[step % 2]
        loss, count, taken = captured.step(batch)
        want, want_count, _ = training_step(eager_model, eager_opt, batch.to(device), cfg, None, autocast)
        assert count == want_count and bool(taken)
        assert loss.item() == pytest.approx(want.item(), rel=1e-3), step
    assert len(captured.shapes) == 2 and all(entry.replay is not None for entry in captured.shapes.values())
    assert [p.data_ptr() for p in model.parameters()] == addresses
    # On an H200, torch.allclose(atol=1e-3) on every weight failed while the losses agreed (the eager model
    # then packed its input for cuDNN). Adam can turn float-order noise in a near-zero gradient into a whole
    # step of +-lr, so: almost every weight must agree closely, and none may be further apart than those
    # steps allow. This form has not yet run on a GPU.
    diff = torch.cat([(a - b).abs().flatten() for a, b in zip(model.parameters(), eager_model.parameters())])
    assert float((diff > 1e-3).float().mean()) < 0.01
    assert float(diff.max()) <= 2 * cfg.learning_rate * 2 * (WARMUP_STEPS + 3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_captured_training_with_bf16_dropout_and_sampled_inputs_learns() -> None:
    """The run's own settings (bf16, dropout, teacher forcing 0.5, default generator) under replay:
    the loss falls."""
    cfg = TrainConfig(batch_size=4, teacher_forcing=0.5, learning_rate=1e-2)
    device = torch.device("cuda")
    torch.manual_seed(0)
    model = build_model(replace(VARIANTS["copynet"].model, **{**TINY, "dropout": 0.3})
                        .with_vocab(len(SRC_VOCAB), len(TGT_VOCAB))).to(device).train()
    captured = CapturedTraining(model, make_optimizer(model, cfg, device), cfg, device)
    batch = make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, model.cfg.copy)
    losses = [captured.step(batch)[0].item() / batch.target_tokens for _ in range(60)]
    assert sum(losses[-5:]) < 0.5 * sum(losses[:5])


def test_the_encoder_trains_length_agnostic_on_a_cpu_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CPU the packed GRU's backward is slow (a zero copy of the packed input per time step), so the
    encoder takes the length-agnostic path there when gradients flow; without them (decoding) it packs,
    which skips the padding; told ``length_agnostic = False``, it packs."""
    import qgen.model.encoder as encoder_module

    encoder = Encoder(ModelConfig(src_vocab_size=30, tgt_vocab_size=30, **TINY))
    src, lengths = torch.randint(4, 30, (2, 5)), torch.tensor([5, 5])
    packed_calls = []
    real_pack = encoder_module.pack_padded_sequence
    monkeypatch.setattr(encoder_module, "pack_padded_sequence",
                        lambda *a, **k: packed_calls.append(1) or real_pack(*a, **k))
    assert encoder.length_agnostic is None
    encoder(src, lengths)
    assert packed_calls == []
    with torch.no_grad():
        encoder(src, lengths)
    assert packed_calls == [1]
    encoder.length_agnostic = False
    encoder(src, lengths)
    assert packed_calls == [1, 1]


def test_the_loss_per_sentence_scales_the_update_by_tokens_over_sentences() -> None:
    """loss_per="sentence" divides the summed NLL by the batch's sentences, not its target tokens: with
    plain SGD and no clipping the update is the per-token one times tokens / sentences."""
    steps = {}
    for loss_per in ("token", "sentence"):
        cfg = TrainConfig(batch_size=3, teacher_forcing=1.0, optimizer="sgd", learning_rate=0.1, clip_norm=1e9,
                          loss_per=loss_per)
        model = _model("copynet")
        before = [p.detach().clone() for p in model.parameters()]
        batch = make_batch(SRC, TGT, SRC_VOCAB, TGT_VOCAB, model.cfg.copy)
        _, count, _ = training_step(model, make_optimizer(model, cfg, torch.device("cpu")), batch, cfg, None,
                                    torch.autocast("cpu", enabled=False))
        steps[loss_per] = [p.detach() - b for p, b in zip(model.parameters(), before)]
    ratio = count / len(SRC)  # 15 target tokens (with </s>) over 3 sentences
    assert ratio > 1
    for token_step, sentence_step in zip(steps["token"], steps["sentence"]):
        assert torch.allclose(sentence_step, token_step * ratio, atol=1e-6, rtol=1e-4)
    with pytest.raises(ValueError, match="loss_per"):
        TrainConfig(loss_per="batch")
