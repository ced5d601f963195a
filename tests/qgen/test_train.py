"""Training: each model family overfits 20 examples; a killed run resumes identically."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

import qgen.train
from qgen.checkpoint import load_checkpoint
from qgen.data import Pair, holdout
from qgen.decode import greedy
from qgen.model import ModelConfig, build_model, make_batch
from qgen.train import TrainConfig, train
from qgen.version import code_version

CITIES = ["bali", "paris", "lyon", "porto", "cologne", "seville", "nantes", "florence", "krakow", "budapest"]
RELATIONS = [("capital", "what is the capital of {} ?"), ("mayor", "who is the mayor of {} ?")]
PAIRS = [Pair(f"{c}-{r}", ["select", "?", "x", "where", "{", "ent:", c, "ns", r, "?", "x", "}"],
              q.format(c).split(), f"{c}-{r}") for c in CITIES for r, q in RELATIONS]
TINY = dict(embedding_dim=16, hidden_size=32, num_layers=1, dropout=0.0)
FAMILIES = {
    "seq2seq": ModelConfig(**TINY),
    "copynet": ModelConfig(**TINY, copy="intersection"),
    "coverage": ModelConfig(**TINY, copy="intersection", coverage_dim=10),
    "scratchpad": ModelConfig(**TINY, copy="intersection", coverage_dim=10, memory="scratchpad"),
    "scratchpad_extended": ModelConfig(**TINY, copy="extended", coverage_dim=10, memory="scratchpad"),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_family_overfits_twenty_examples(family: str, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    cfg = TrainConfig(epochs=150, batch_size=20, learning_rate=1e-2, teacher_forcing=1.0, seed=3)
    result = train(PAIRS, PAIRS[:4], FAMILIES[family], cfg, tmp_path, log=lambda _: None)
    assert result.history[-1].train_loss < 0.05, result.history[-1]
    model, src_vocab, tgt_vocab, _ = load_checkpoint(tmp_path / "best.pt")
    batch = make_batch([p.src for p in PAIRS], None, src_vocab, tgt_vocab, model.cfg.copy)
    decoded = [tgt_vocab.decode(h.ids, oovs) for h, oovs in zip(greedy(model, batch), batch.oovs)]
    assert sum(d == p.tgt for d, p in zip(decoded, PAIRS)) >= 18


def test_killed_run_resumes_identically(tmp_path: Path) -> None:
    torch.set_num_threads(1)
    model_cfg = FAMILIES["scratchpad"]
    base = dict(batch_size=8, learning_rate=3e-3, teacher_forcing=0.5, seed=5)
    train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(epochs=3, **base), tmp_path / "straight", log=lambda _: None)
    # "Killed" after epoch 1: a run with epochs=1, then the same output folder resumed to 3 epochs.
    train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(epochs=1, **base), tmp_path / "resumed", log=lambda _: None)
    train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(epochs=3, **base), tmp_path / "resumed", log=lambda _: None)
    a = load_checkpoint(tmp_path / "straight" / "last.pt")[0].state_dict()
    b = load_checkpoint(tmp_path / "resumed" / "last.pt")[0].state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_cpu_adam_is_fused_and_resumes_a_run_of_the_unfused_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Adam's fused kernel on a CPU; a checkpoint whose optimiser ran unfused (older runs) resumes fused."""
    torch.set_num_threads(1)
    model_cfg = FAMILIES["scratchpad"]
    cfg = TrainConfig(epochs=1, batch_size=8, learning_rate=3e-3, seed=5)
    model = build_model(model_cfg.with_vocab(10, 10))
    assert qgen.train.make_optimizer(model, cfg, torch.device("cpu")).param_groups[0]["fused"]
    assert not qgen.train.make_optimizer(model, TrainConfig(optimizer="sgd"), torch.device("cpu")).param_groups[0]["fused"]
    with monkeypatch.context() as unfused:  # the first epoch as older code ran it
        unfused.setattr(qgen.train, "fused_kernels", lambda cfg, device: False)
        train(PAIRS, PAIRS[:4], model_cfg, cfg, tmp_path, log=lambda _: None)
    groups = torch.load(tmp_path / "last.pt", weights_only=True)["optimizer"]["param_groups"]
    assert not any(group["fused"] for group in groups)
    resumed = train(PAIRS, PAIRS[:4], model_cfg, replace(cfg, epochs=2), tmp_path, log=lambda _: None)
    assert resumed.epochs_run == 2 and all(torch.isfinite(torch.tensor(h.train_loss)) for h in resumed.history)
    groups = torch.load(tmp_path / "last.pt", weights_only=True)["optimizer"]["param_groups"]
    assert all(group["fused"] for group in groups)


def test_time_budget_stops_within_an_epoch_and_the_run_finishes_it_identically(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    torch.set_num_threads(1)
    model_cfg = FAMILIES["scratchpad"]
    base = dict(epochs=2, batch_size=8, learning_rate=3e-3, teacher_forcing=0.5, seed=5)  # 3 steps an epoch
    train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(**base), tmp_path / "straight", log=lambda _: None)
    lines: list[str] = []
    monkeypatch.setattr(qgen.train, "PROGRESS_EVERY_S", 0.0)  # a progress line after every step
    # A zero budget is spent by the first step: the run stops within epoch 1, twice, then finishes.
    first = train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(**base, max_seconds=0), tmp_path / "cut", log=lines.append)
    assert first.epochs_run == 0 and (tmp_path / "cut" / "best.pt").exists()  # a usable model already
    assert any("stopping within epoch 1 after 1 of 3 steps" in line for line in lines), lines
    assert load_checkpoint(tmp_path / "cut" / "last.pt")[3]["partial"]["steps"] == 1
    train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(**base, max_seconds=0), tmp_path / "cut", log=lines.append)
    assert load_checkpoint(tmp_path / "cut" / "last.pt")[3]["partial"]["steps"] == 2
    done = train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(**base), tmp_path / "cut", log=lines.append)
    assert done.epochs_run == 2
    assert any(line.startswith("epoch 2: step 1/3  train ") and "s/step" in line for line in lines), lines
    a = load_checkpoint(tmp_path / "straight" / "last.pt")[0].state_dict()
    b, _, _, payload = load_checkpoint(tmp_path / "cut" / "last.pt")
    assert all(torch.equal(a[k], b.state_dict()[k]) for k in a) and "partial" not in payload
    straight = [h.train_loss for h in train(PAIRS, PAIRS[:4], model_cfg, TrainConfig(**base),
                                            tmp_path / "straight", log=lambda _: None).history]
    assert [h.train_loss for h in done.history] == pytest.approx(straight, rel=1e-6)


def test_resume_with_another_configuration_is_refused(tmp_path: Path) -> None:
    cfg = TrainConfig(epochs=1, batch_size=20, learning_rate=1e-2)
    train(PAIRS, PAIRS[:4], FAMILIES["copynet"], cfg, tmp_path, log=lambda _: None)
    with pytest.raises(ValueError, match=r"another configuration \(batch_size: 20 -> 10\)"):  # says what differs
        train(PAIRS, PAIRS[:4], FAMILIES["copynet"], TrainConfig(epochs=2, batch_size=10, learning_rate=1e-2),
              tmp_path, log=lambda _: None)
    with pytest.raises(ValueError, match=r"another configuration \(coverage_dim: 0 -> "):  # another model there
        train(PAIRS, PAIRS[:4], FAMILIES["coverage"], TrainConfig(epochs=2, batch_size=20, learning_rate=1e-2),
              tmp_path, log=lambda _: None)
    # Other examples (or another task) resumed into the run: its epochs and validation losses would mix two data sets.
    data = {"task": "generate", "training_examples": "train.parquet (sha256 aaaa): 20 pairs, 4 held out"}
    train(PAIRS, PAIRS[:4], FAMILIES["copynet"], cfg, tmp_path / "data", log=lambda _: None, metadata=data)
    other = {**data, "training_examples": "small.parquet (sha256 bbbb): 8 pairs, 2 held out"}
    with pytest.raises(ValueError, match=r"another configuration \(examples: 'train.parquet \(sha256 aaaa\)"):
        train(PAIRS, PAIRS[:4], FAMILIES["copynet"], replace(cfg, epochs=2), tmp_path / "data", log=lambda _: None,
              metadata=other)
    with pytest.raises(ValueError, match=r"another configuration \(task: 'generate' -> 'parse'"):
        train(PAIRS, PAIRS[:4], FAMILIES["copynet"], replace(cfg, epochs=2), tmp_path / "data", log=lambda _: None,
              metadata={**data, "task": "parse"})
    assert train(PAIRS, PAIRS[:4], FAMILIES["copynet"], replace(cfg, epochs=2), tmp_path / "data",
                 log=lambda _: None, metadata=data).epochs_run == 2  # the same data resumes
    (tmp_path / "data" / "best.pt").replace(tmp_path / "data" / "last.pt")  # weights only: nothing to resume
    with pytest.raises(ValueError, match="last.pt holds no training state to resume"):
        train(PAIRS, PAIRS[:4], FAMILIES["copynet"], replace(cfg, epochs=3), tmp_path / "data", log=lambda _: None,
              metadata=data)


def test_checkpoint_loads_without_unpickling_objects(tmp_path: Path) -> None:
    train(PAIRS, PAIRS[:4], FAMILIES["copynet"], TrainConfig(epochs=1, batch_size=20), tmp_path, log=lambda _: None)
    payload = torch.load(tmp_path / "best.pt", weights_only=True)  # raises if any object needs pickle
    assert payload["format"] == "qgen-checkpoint-1" and payload["epoch"] == 1


def test_holdout_keeps_groups_together() -> None:
    pairs = [Pair(f"q{i}.P{j}", ["a"], ["b"], f"q{i}") for i in range(30) for j in range(2)]
    train_part, valid_part = holdout(pairs, 0.2, seed=1)
    assert len(valid_part) == 12 and not {p.group for p in train_part} & {p.group for p in valid_part}


def test_teacher_forcing_is_validated_and_names_the_run() -> None:
    assert TrainConfig().run_suffix == ""  # the paper's 0.5, tossed per step
    assert TrainConfig(teacher_forcing=1.0).run_suffix == "_tf1"
    assert TrainConfig(teacher_forcing=0.5, teacher_forcing_per="sequence").run_suffix == "_tf0.5seq"
    assert TrainConfig(seed=2).run_suffix == "_seed2"  # another seed: its own folders, same split
    assert TrainConfig(teacher_forcing=1.0, seed=3).run_suffix == "_tf1_seed3"
    with pytest.raises(ValueError, match="seed must be 0 or more, got -1"):
        TrainConfig(seed=-1)
    assert TrainConfig(teacher_forcing=1.0, teacher_forcing_per="sequence") == TrainConfig(teacher_forcing=1.0)
    with pytest.raises(ValueError, match="teacher_forcing must be in"):
        TrainConfig(teacher_forcing=1.5)
    with pytest.raises(ValueError, match="'step' or 'sequence'"):
        TrainConfig(teacher_forcing_per="token")


def test_checkpoint_from_before_a_new_setting_resumes(tmp_path: Path) -> None:
    """A last.pt whose train_config lacks a field added since ran with that field's default."""
    cfg = TrainConfig(epochs=1, batch_size=20, learning_rate=1e-2)
    train(PAIRS, PAIRS[:4], FAMILIES["copynet"], cfg, tmp_path, log=lambda _: None)
    payload = torch.load(tmp_path / "last.pt", weights_only=True)
    del payload["train_config"]["teacher_forcing_per"]
    for epoch in payload["history"]:
        del epoch["commit"]  # nor did the history record the code's version per epoch
    torch.save(payload, tmp_path / "last.pt")
    result = train(PAIRS, PAIRS[:4], FAMILIES["copynet"], TrainConfig(epochs=2, batch_size=20, learning_rate=1e-2),
                   tmp_path, log=lambda _: None)
    assert result.epochs_run == 2
    assert [epoch.commit for epoch in result.history] == ["", code_version()]  # the resumed epoch says its code
    with pytest.raises(ValueError, match="another configuration"):  # but a real difference is still refused
        train(PAIRS, PAIRS[:4], FAMILIES["copynet"], TrainConfig(epochs=3, batch_size=20, learning_rate=1e-2,
                                                                 teacher_forcing_per="sequence"),
              tmp_path, log=lambda _: None)


def test_checkpoint_loads_onto_another_device_and_resumes(tmp_path: Path) -> None:
    """The payload stays on the CPU whatever the model's device: a GPU resume once failed because its
    RNG state was mapped to CUDA. The meta device stands in for a GPU here (CI has none)."""
    train(PAIRS, PAIRS[:4], FAMILIES["copynet"], TrainConfig(epochs=1, batch_size=20), tmp_path, log=lambda _: None)
    model, _, _, payload = load_checkpoint(tmp_path / "last.pt", "meta")
    assert all(p.device.type == "meta" for p in model.parameters())
    assert payload["torch_rng"].device.type == "cpu"
    torch.set_rng_state(payload["torch_rng"])  # what a resume does first


@pytest.mark.parametrize("on_device", [False, True])
def test_non_finite_gradient_skips_the_update(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_device: bool) -> None:
    """Decided on the host (the CPU path) or on the device (fused Adam's found_inf, the GPU path)."""
    monkeypatch.setattr(qgen.train, "sync_free", lambda device: on_device)
    torch.manual_seed(0)
    calls = {"n": 0}
    original = torch.nn.utils.clip_grad_norm_

    def poisoned_first_step(params, max_norm):  # the first step's gradient turns NaN, as on the GPU once
        params = list(params)
        calls["n"] += 1
        if calls["n"] == 1:
            params[0].grad.fill_(float("nan"))
        return original(params, max_norm)

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", poisoned_first_step)
    result = train(PAIRS, PAIRS[:4], FAMILIES["copynet"], TrainConfig(epochs=1, batch_size=5, learning_rate=1e-2),
                   tmp_path, log=lambda _: None)
    assert calls["n"] == 4 and result.history[0].skipped_steps == 1
    model = load_checkpoint(tmp_path / "last.pt")[0]
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert torch.isfinite(torch.tensor(result.history[0].train_loss))


@pytest.mark.parametrize("on_device", [False, True])
def test_diverged_training_stops_with_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    on_device: bool) -> None:
    monkeypatch.setattr(qgen.train, "sync_free", lambda device: on_device)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", lambda params, max_norm: torch.tensor(float("inf")))
    with pytest.raises(FloatingPointError, match="non-finite gradient"):
        train(PAIRS, PAIRS[:4], FAMILIES["copynet"], TrainConfig(epochs=1, batch_size=5), tmp_path, log=lambda _: None)


def test_the_device_side_update_trains_as_the_host_side_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU's sync-free loop (fused Adam, skip flag and sums on the device), run on the CPU, gives the
    plain loop's losses within float tolerance; a run resumed across the two paths goes on."""
    cfg = TrainConfig(epochs=2, batch_size=5, learning_rate=1e-2)
    host = train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], cfg, tmp_path / "host", log=lambda _: None)
    monkeypatch.setattr(qgen.train, "sync_free", lambda device: True)
    device = train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], cfg, tmp_path / "device", log=lambda _: None)
    for a, b in zip(host.history, device.history):
        assert a.train_loss == pytest.approx(b.train_loss, rel=1e-4)
        assert a.valid_loss == pytest.approx(b.valid_loss, rel=1e-4)
    resumed = train(PAIRS, PAIRS[:4], FAMILIES["scratchpad"], TrainConfig(epochs=3, batch_size=5, learning_rate=1e-2),
                    tmp_path / "host", log=lambda _: None)
    assert resumed.epochs_run == 3


def test_init_from_adapts_a_trained_model_to_new_tokens(tmp_path: Path) -> None:
    """Adaptation: the old vocabulary and weights are kept, new tokens get new rows, and training starts ahead."""
    from qgen.train import start_from

    torch.set_num_threads(1)
    model_cfg = FAMILIES["copynet"]
    old_pairs, new_pairs = PAIRS[:10], PAIRS[10:]  # five cities, then five others with the same relations
    base = dict(batch_size=10, learning_rate=1e-2, teacher_forcing=1.0, seed=3)
    meta = {"task": "generate", "lf_types": ["sparql"], "preprocessing": {"entity_replacement": True}}
    train(old_pairs, old_pairs[:2], model_cfg, TrainConfig(epochs=60, **base), tmp_path / "old", lambda _: None, meta)
    old, old_src, old_tgt, _ = load_checkpoint(tmp_path / "old" / "best.pt")
    model, src, tgt, recorded = start_from(tmp_path / "old" / "best.pt", new_pairs, model_cfg,
                                           {**meta, "lf_types": ["sql"]}, lambda _: None)
    assert src.itos[: len(old_src)] == old_src.itos and tgt.itos[: len(old_tgt)] == old_tgt.itos
    assert "krakow" in src and "krakow" not in old_src and len(tgt) > len(old_tgt)
    assert recorded["lf_types"] == ["sparql", "sql"]
    weights, before = model.state_dict(), old.state_dict()
    for name, value in before.items():
        assert torch.equal(weights[name][tuple(slice(0, n) for n in value.shape)], value), name
    adapted = train(new_pairs, new_pairs[:2], model_cfg, TrainConfig(epochs=1, init_from=str(tmp_path / "old" / "best.pt"),
                                                                     **base), tmp_path / "adapted", lambda _: None, meta)
    scratch = train(new_pairs, new_pairs[:2], model_cfg, TrainConfig(epochs=1, **base), tmp_path / "scratch",
                    lambda _: None, meta)
    assert adapted.history[0].train_loss < scratch.history[0].train_loss
    with pytest.raises(ValueError, match="comes from the checkpoint"):
        start_from(tmp_path / "old" / "best.pt", new_pairs, FAMILIES["coverage"], meta, lambda _: None)
    with pytest.raises(ValueError, match="trained with task 'generate', these pairs need 'parse'"):
        start_from(tmp_path / "old" / "best.pt", new_pairs, model_cfg, {**meta, "task": "parse"}, lambda _: None)


def test_init_from_a_model_copying_any_word_adds_only_the_words_it_must_generate(tmp_path: Path) -> None:
    """copy "extended" copies a word of the logical form even out of the vocabulary: new output rows only
    for words a question says that its form does not hold."""
    from qgen.train import start_from

    torch.set_num_threads(1)
    meta = {"task": "generate", "lf_types": ["sparql"], "preprocessing": {"entity_replacement": True}}
    train(PAIRS[:10], PAIRS[:2], FAMILIES["scratchpad_extended"], TrainConfig(epochs=1, batch_size=10), tmp_path / "old",
          lambda _: None, meta)
    new = [Pair("n1", ["select", "?", "x", "where", "{", "ent:", "oslo", "ns", "founder", "?", "x", "}"],
                "who founded oslo , long ago ?".split(), "n1")]
    _, src, tgt, _ = start_from(tmp_path / "old" / "best.pt", new, FAMILIES["scratchpad_extended"], meta, lambda _: None)
    _, old_src, old_tgt, _ = load_checkpoint(tmp_path / "old" / "best.pt")
    assert {"oslo", "founder"} <= set(src.itos[len(old_src):])  # the source side takes every new token
    assert tgt.itos[len(old_tgt):] == [",", "ago", "founded", "long"]  # not "oslo" (copied), nor "who" (known)
    batch = make_batch([new[0].src], [new[0].tgt], src, tgt, "extended")
    assert batch.tgt[0, 2] == len(tgt) + batch.oovs[0].index("oslo")  # its gold id is its copy's, not UNK


def test_glove_vectors_with_a_trailing_space_are_read(tmp_path: Path) -> None:
    import torch

    from qgen.glove import load_vectors, vector_size
    from qgen.model.vocab import Vocab

    path = tmp_path / "vectors.txt"
    path.write_text("oslo 0.5 -1.0 2.0 \r\nbergen 1 2 3\n")
    assert vector_size(path) == 3
    vocab = Vocab.build([["oslo", "bergen"]])
    embedding = torch.nn.Embedding(len(vocab), 3)
    assert load_vectors(path, vocab, embedding) == 2
    assert embedding.weight[vocab.stoi["oslo"]].tolist() == [0.5, -1.0, 2.0]
