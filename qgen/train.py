"""The one training loop for every model of the family.

Paper defaults (seed section 5): 75 epochs, batch 32, Adam at 1e-4, teacher forcing 0.5. Added:
gradient clipping, bf16 autocast on GPU, length bucketing, seeded and resumable runs (a checkpoint
every epoch, ``last.pt``; a killed run started again continues from it identically), model selection
on a validation split (``best.pt``, lowest validation loss per target token), and a time budget
(``max_seconds``) honoured within an epoch: the run stops after the step that spends it, saving where
it stopped in ``last.pt``, so a run started again finishes that epoch as if never stopped.
"""
from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

import torch

from qgen.averaged_weights import TRAINING_WEIGHTS, WeightAverage, training_state
from qgen.captured_training import CapturedTraining, applies as captured_applies
from qgen.checkpoint import load_checkpoint, save_checkpoint
from qgen.cpu_memory import reuse_freed_memory
from qgen.data import Pair, bucketed_batches, sequential_batches
from qgen.model import Batch, ModelConfig, Vocab, build_model, make_batch
from qgen.model.vocab import BOS, EOS
from qgen.model.seq2seq import QuestionGenerator
from qgen.version import code_version


OPTIMIZERS = ("adam", "sgd")
LOSS_REDUCTIONS = ("token", "sentence")


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 75
    batch_size: int = 32
    learning_rate: float = 1e-4
    teacher_forcing: float = 0.5
    teacher_forcing_per: str = "step"  # "step" or "sequence": the grain of the teacher-forcing coin
    clip_norm: float = 5.0
    seed: int = 1
    device: str = "auto"  # auto = cuda when available
    bf16: bool = True  # autocast on CUDA only
    max_src_len: int = 200
    max_tgt_len: int = 40
    glove_path: str | None = None
    max_seconds: float | None = None  # stop after the step that spends it (0: evaluate a resumed run)
    init_from: str | None = None  # a checkpoint to fine-tune (adaptation): its model, its vocabularies extended
    lr_decay: float = 1.0  # epoch e trains at learning_rate * lr_decay ** (e - 1) (seed 003: 0.5, halved every epoch)
    optimizer: str = "adam"  # adam | sgd (plain mini-batch SGD: seed 004 at learning rate 0.1)
    # What a batch's summed loss is divided by before the update: its target tokens ("token", the mean
    # per token) or its sentences ("sentence": each sentence's summed NLL, averaged over the batch, as
    # Torch7-era recipes such as seed 004's train; with SGD the step then grows with sentence length).
    loss_per: str = "token"
    # Checkpoints hold a moving average of the weights, moving 1 - weight_average of the way to each
    # step's weights (qgen.averaged_weights; 0: the weights themselves). Selection and scores see the average.
    weight_average: float = 0.0

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be 1 or more, got {getattr(self, name)!r}")
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be a finite number above 0, got {self.learning_rate}")
        if self.max_seconds is not None and not (math.isfinite(self.max_seconds) and self.max_seconds >= 0):
            raise ValueError(f"max_seconds must be a finite number of seconds, 0 or more, got {self.max_seconds}")
        if not 0.0 <= self.teacher_forcing <= 1.0:
            raise ValueError(f"teacher_forcing must be in [0, 1], got {self.teacher_forcing}")
        if self.seed < 0:
            raise ValueError(f"seed must be 0 or more, got {self.seed}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if not 0.0 < self.lr_decay <= 1.0:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay}")
        if not 0.0 <= self.weight_average < 1.0:
            raise ValueError(f"weight_average must be in [0, 1), got {self.weight_average}")
        if self.loss_per not in LOSS_REDUCTIONS:
            raise ValueError(f"loss_per must be one of {LOSS_REDUCTIONS}, got {self.loss_per!r}")
        if self.teacher_forcing_per not in ("step", "sequence"):
            raise ValueError(f"teacher_forcing_per must be 'step' or 'sequence', got {self.teacher_forcing_per!r}")
        if self.teacher_forcing in (0.0, 1.0):  # the coin always falls the same way: the grain is moot,
            object.__setattr__(self, "teacher_forcing_per", "step")  # so equal runs compare equal on resume

    @property
    def run_suffix(self) -> str:
        """'' with the paper's teacher forcing (0.5, our per-step reading) and the default seed 1;
        else e.g. '_tf1', '_tf0.5seq' or '_seed2' (both: '_tf1_seed2'), so such a run gets its own
        checkpoint and results folders."""
        forcing = ""
        if not (self.teacher_forcing == 0.5 and self.teacher_forcing_per == "step"):
            grain = "seq" if self.teacher_forcing_per == "sequence" else ""
            forcing = f"_tf{self.teacher_forcing:g}{grain}"
        return forcing + (f"_seed{self.seed}" if self.seed != 1 else "")


@dataclass
class EpochStats:
    epoch: int
    train_loss: float  # per target token
    valid_loss: float
    seconds: float
    target_tokens_per_s: float
    # The code that ran this epoch (qgen.version.code_version): a run resumed across commits shows
    # each; "" in a history written before this field existed.
    commit: str = ""
    skipped_steps: int = 0  # updates left out for a non-finite gradient (see run_epoch)


@dataclass
class EpochProgress:
    """An epoch stopped by the time budget after ``steps`` of ``total_steps`` steps: what ``last.pt``
    keeps (plain numbers and a tensor, loadable without unpickling) to finish it on resume."""
    epoch: int
    steps: int
    total_steps: int
    loss_sum: float
    tokens: int
    skipped: int
    seconds: float
    forcing_state: torch.Tensor  # the teacher-forcing coin's generator state

    def as_payload(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    out_dir: str
    epochs_run: int
    best_epoch: int
    best_valid_loss: float
    history: list[EpochStats] = field(default_factory=list)
    device: str = "cpu"
    pretrained_vectors: str = "none"


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def build_vocabularies(pairs: Sequence[Pair], alphabet: str = "") -> tuple[Vocab, Vocab]:
    """The paper's vocabularies: every token of the training sources and targets; with an
    ``alphabet`` (a character model), that alphabet on both sides."""
    if alphabet:
        return Vocab(list(alphabet)), Vocab(list(alphabet))
    return Vocab.build(p.src for p in pairs), Vocab.build(p.tgt for p in pairs)


def train(train_pairs: Sequence[Pair], valid_pairs: Sequence[Pair], model_cfg: ModelConfig, cfg: TrainConfig,
          out_dir: str | Path, log: Callable[[str], None] = print,
          metadata: dict | None = None) -> TrainResult:
    """Train (or resume) into ``out_dir``; ``metadata`` (JSON-able: the task, the logical-form types,
    the preprocessing settings) is stored in every checkpoint, so a loader can tell what it holds."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    code_version()  # read now (it is cached): the code loaded at the start is the code that trains
    device = resolve_device(cfg.device)
    if device.type == "cpu":
        reuse_freed_memory()  # big activations every step: no fresh pages each time (qgen.cpu_memory)
    torch.manual_seed(cfg.seed)
    resume = out / "last.pt"
    stopped_in = None  # an epoch the time budget cut short, to finish first
    training_weights = None  # with a weight average, last.pt's "model" is the average: these, the last step's
    if resume.exists():
        model, src_vocab, tgt_vocab, payload = load_checkpoint(resume, device)
        if "optimizer" not in payload:  # a best.pt copied there: weights without the run's state
            raise ValueError(f"{resume} holds no training state to resume (the optimizer's); use another --out, "
                             "or delete it")
        stopped_in = payload.get("partial")
        training_weights = payload.get(TRAINING_WEIGHTS)
        differs = (_data_differences(payload, metadata or {}) + _run_differences(payload["train_config"], asdict(cfg))
                   + _model_differences(model.cfg, model_cfg))
        if differs:
            raise ValueError(f"{resume} was written with another configuration ({'; '.join(differs[:4])}); use "
                             "another --out, the same settings, or delete it")
        optimizer = make_optimizer(model, cfg, device)
        optimizer.load_state_dict(payload["optimizer"])
        for group in optimizer.param_groups:  # the saved groups carry the old device's kernel choice
            group["fused"] = fused_kernels(cfg, device)
            group["capturable"] = False  # a captured run sets it again (qgen/captured_training.py)
        torch.set_rng_state(payload["torch_rng"])
        start_epoch, history = int(payload["epoch"]), [EpochStats(**h) for h in payload["history"]]
        vectors = payload.get("pretrained_vectors", "none")
        if metadata and payload.get("lf_types"):  # an adapted model keeps the types it started with
            metadata = {**metadata, "lf_types": sorted(set(payload["lf_types"]) | set(metadata.get("lf_types") or []))}
        log(f"resuming from {resume} after epoch {start_epoch}")
    elif cfg.init_from:
        model, src_vocab, tgt_vocab, metadata = start_from(cfg.init_from, train_pairs, model_cfg, metadata, log,
                                                           cfg.max_src_len)
        model.to(device)
        vectors = f"initialised from {cfg.init_from}"
        optimizer = make_optimizer(model, cfg, device)
        start_epoch, history = 0, []
    else:
        src_vocab, tgt_vocab = build_vocabularies(train_pairs, getattr(model_cfg, "alphabet", ""))
        model = build_model(model_cfg.with_vocab(len(src_vocab), len(tgt_vocab))).to(device)
        vectors = _load_pretrained(model, src_vocab, tgt_vocab, cfg.glove_path, log)
        optimizer = make_optimizer(model, cfg, device)
        start_epoch, history = 0, []
    average = WeightAverage(model, cfg.weight_average) if cfg.weight_average else None
    if average is not None and training_weights is not None:
        model.load_state_dict(training_weights)  # the average was loaded (and copied): train on from the last step
    saved = average.module if average is not None else model  # what the checkpoints hold and validation scores
    captured = captured_training(model, optimizer, cfg, device, log)
    best = min(history, key=lambda h: h.valid_loss) if history else None
    partial_valid = math.nan
    started = time.perf_counter()
    deadline = None if cfg.max_seconds is None else started + cfg.max_seconds
    for epoch in range(start_epoch + 1, cfg.epochs + 1):
        if deadline is not None and history and time.perf_counter() >= deadline:
            log(f"stopping before epoch {epoch}: time budget of {cfg.max_seconds:.0f} s spent (resumable)")
            break
        resumed = EpochProgress(**stopped_in) if stopped_in and stopped_in["epoch"] == epoch else None
        if cfg.lr_decay != 1.0:  # set from the epoch number, so a resumed run trains at the same rate
            for group in optimizer.param_groups:
                group["lr"] = cfg.learning_rate * cfg.lr_decay ** (epoch - 1)
        stopped_in = None
        stats = run_epoch(model, optimizer, train_pairs, valid_pairs, src_vocab, tgt_vocab, cfg, epoch, device,
                          deadline=deadline, resume=resumed, log=log, captured=captured, average=average)
        if isinstance(stats, EpochProgress):
            log(f"stopping within epoch {epoch} after {stats.steps} of {stats.total_steps} steps: time budget of "
                f"{cfg.max_seconds:.0f} s spent (resumable: a run started again finishes the epoch)")
            extra = {"epoch": epoch - 1, "train_config": asdict(cfg), "history": [asdict(h) for h in history],
                     "torch_rng": torch.get_rng_state(), "pretrained_vectors": vectors,
                     "partial": stats.as_payload(), **(metadata or {})}
            if best is None:  # no finished epoch yet: the model so far is the run's model
                partial_valid = evaluate_loss(saved, valid_pairs, src_vocab, tgt_vocab, cfg, device)
                save_checkpoint(out / "best.pt", saved, src_vocab, tgt_vocab, extra)
            save_checkpoint(resume, saved, src_vocab, tgt_vocab, {**extra, **_resume_weights(model, average)},
                            optimizer)
            break
        history.append(stats)
        log(f"epoch {epoch}: train {stats.train_loss:.3f}  valid {stats.valid_loss:.3f}  "
            f"{stats.seconds:.0f} s  {stats.target_tokens_per_s:.0f} target tok/s"
            + (f"  ({stats.skipped_steps} steps skipped: non-finite gradient)" if stats.skipped_steps else ""))
        extra = {"epoch": epoch, "train_config": asdict(cfg), "history": [asdict(h) for h in history],
                 "torch_rng": torch.get_rng_state(), "pretrained_vectors": vectors, **(metadata or {})}
        if best is None or stats.valid_loss < best.valid_loss:
            best = stats
            save_checkpoint(out / "best.pt", saved, src_vocab, tgt_vocab, extra)
        save_checkpoint(resume, saved, src_vocab, tgt_vocab, {**extra, **_resume_weights(model, average)}, optimizer)
        (out / "history.json").write_text(json.dumps([asdict(h) for h in history], indent=2))
    if best is None:  # the budget ran out within the first epoch
        return TrainResult(str(out), 0, 0, partial_valid, history, str(device), vectors)
    return TrainResult(str(out), len(history), best.epoch, best.valid_loss, history, str(device), vectors)


def _resume_weights(model: QuestionGenerator, average: WeightAverage | None) -> dict:
    """With a weight average, what last.pt keeps beside it to train on from the last step's weights."""
    return training_state(model) if average is not None else {}


def start_from(checkpoint: str | Path, train_pairs: Sequence[Pair], model_cfg: ModelConfig,
               metadata: dict | None, log: Callable[[str], None],
               max_src_len: int = TrainConfig.max_src_len) -> tuple[QuestionGenerator, Vocab, Vocab, dict]:
    """Adaptation: the checkpoint's model, with each vocabulary extended by the training pairs' new
    tokens (new rows, initialised as a fresh model's; the old rows and every other weight kept; the
    target side only with the words it must generate, ``_words_to_generate``), and the
    metadata to record (the logical-form types of both). Refused: a checkpoint of another task or
    other preprocessing, or a ``model_cfg`` other than the checkpoint's."""
    old, old_src, old_tgt, payload = load_checkpoint(checkpoint, "cpu")
    differs = _model_differences(old.cfg, model_cfg)
    if differs:
        raise ValueError(f"--init-from {checkpoint}: the model's configuration comes from the checkpoint ("
                         f"{'; '.join(differs[:4])}); leave out --model and the size options, or start from scratch")
    metadata = dict(metadata or {})
    for key in ("task", "preprocessing"):
        theirs, ours = payload.get(key), metadata.get(key)
        if theirs is not None and ours is not None and theirs != ours:
            raise ValueError(f"--init-from {checkpoint}: it was trained with {key} {theirs!r}, these pairs "
                             f"need {ours!r}")
    if payload.get("lf_types") or metadata.get("lf_types"):
        metadata["lf_types"] = sorted(set(payload.get("lf_types") or []) | set(metadata.get("lf_types") or []))
    src_vocab = _extended(old_src, (p.src for p in train_pairs))
    tgt_vocab = _extended(old_tgt, _words_to_generate(train_pairs, old.cfg.copy, max_src_len))
    model = build_model(old.cfg.with_vocab(len(src_vocab), len(tgt_vocab)))
    state = model.state_dict()
    with torch.no_grad():
        for name, value in old.state_dict().items():
            # A vocabulary-sized dimension grew (embeddings, the output layer): the old rows come first.
            state[name][tuple(slice(0, n) for n in value.shape)] = value
    model.load_state_dict(state)
    log(f"initialised from {checkpoint}: {len(src_vocab) - len(old_src)} new source and "
        f"{len(tgt_vocab) - len(old_tgt)} new target tokens (new rows)")
    return model, src_vocab, tgt_vocab, metadata


def _words_to_generate(pairs: Sequence[Pair], copy: str, max_src_len: int) -> Iterable[Sequence[str]]:
    """The target words the output layer must learn. A model that copies out of its vocabulary (copy
    "extended") copies a word its source holds (within ``max_src_len``), so only the target words
    missing from their pair's source need rows; a copied word without a row is fed back to the decoder
    as UNK, as every copied out-of-vocabulary word is. On 500 WikiSQL pairs and their filled templates:
    168 new rows instead of 9,951 (the output layer, most of a step's work, 4x smaller: 0.18 s a step
    against 0.32-0.36 on one thread, the held-out BLEU by epoch about the same; benchmarks/results/
    adaptation). Other models: every word."""
    if copy != "extended":
        return (p.tgt for p in pairs)
    return ([t for t in p.tgt if t not in source] for p in pairs for source in [set(p.src[:max_src_len])])


def _extended(vocab: Vocab, sequences: Iterable[Sequence[str]]) -> Vocab:
    """``vocab`` (ids unchanged) plus the tokens of ``sequences`` it lacks, most frequent first."""
    new = Vocab.build(sequences)
    return Vocab(vocab.itos[4:] + [t for t in new.itos[4:] if t not in vocab])


# What may change between a run and its resumption: the epoch budget, the time budget and the
# device (a run started on CPU is finished on a GPU).
RESUMABLE_CHANGES = ("epochs", "max_seconds", "device")


def _data_differences(payload: dict, metadata: dict) -> list[str]:
    """The task and the training examples (file, checksum, pairs: ``qgen.train_job``) where both the
    checkpoint and this run name them and they differ: a run resumed on other examples would mix two runs'
    epochs and validation losses."""
    return [f"{label}: {payload[key]!r} -> {metadata[key]!r}" for key, label in (("task", "task"),
                                                                                 ("training_examples", "examples"))
            if payload.get(key) and metadata.get(key) and payload[key] != metadata[key]]


def _run_differences(saved: dict, current: dict) -> list[str]:
    """The training settings that differ, as ``name: saved -> now`` (empty: the run may resume)."""
    # A checkpoint written before a field existed ran with that field's default.
    saved = {**asdict(TrainConfig()), **saved}
    return [f"{k}: {saved.get(k)!r} -> {v!r}" for k, v in current.items()
            if k not in RESUMABLE_CHANGES and saved.get(k) != v]


def _model_differences(saved: ModelConfig, wanted: ModelConfig) -> list[str]:
    # The saved configuration carries the vocabulary sizes, which the training data set.
    old, new = (asdict(replace(c, src_vocab_size=0, tgt_vocab_size=0)) for c in (saved, wanted))
    return [f"{k}: {old[k]!r} -> {new[k]!r}" for k in old if old[k] != new[k]]


PROGRESS_EVERY_S = 30.0  # a progress line within an epoch at most this often (one host sync each)


def run_epoch(model: QuestionGenerator, optimizer: torch.optim.Optimizer, train_pairs: Sequence[Pair],
              valid_pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab, cfg: TrainConfig, epoch: int,
              device: torch.device, deadline: float | None = None, resume: EpochProgress | None = None,
              log: Callable[[str], None] | None = None,
              captured: CapturedTraining | None = None,
              average: WeightAverage | None = None) -> EpochStats | EpochProgress:
    """One epoch; ``EpochProgress`` instead of its statistics when the clock passes ``deadline`` (a
    ``time.perf_counter`` value) before its last step. ``resume`` finishes an epoch stopped so.
    ``captured``: its recorded steps train the batches (qgen/captured_training.py). ``average``: takes in
    the weights after every step, and the validation loss is its own (qgen.averaged_weights)."""
    # Per-epoch seeds make the batch order and teacher-forcing draws the same after a resume.
    rng = random.Random(cfg.seed * 1_000_003 + epoch)
    forcing = torch.Generator(device=device).manual_seed(cfg.seed * 7919 + epoch)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.bf16 and device.type == "cuda")
    model.train()
    started = time.perf_counter()
    batches = list(bucketed_batches(train_pairs, cfg.batch_size, rng))
    # Sums kept on the device: a step never waits for the host (see _update).
    total = torch.zeros((), device=device)
    tokens = torch.zeros((), dtype=torch.long, device=device)
    skipped = torch.zeros((), dtype=torch.long, device=device)
    done, earlier_seconds = 0, 0.0
    if resume is not None:  # the same batch order; skip the steps taken before the stop
        forcing.set_state(resume.forcing_state)
        total, tokens = total + resume.loss_sum, tokens + resume.tokens
        skipped, done, earlier_seconds = skipped + resume.skipped, resume.steps, resume.seconds
    last_report = started
    for step in range(done, len(batches)):
        batch = _batch(batches[step], src_vocab, tgt_vocab, model.cfg.copy, cfg)
        if captured is not None:
            loss, count, taken = captured.step(batch)
        elif getattr(model.decoder, "switching", False):
            loss, count, taken = switching_step(model, optimizer, batch.to(device), batches[step], src_vocab,
                                                tgt_vocab, cfg, autocast)
        else:
            loss, count, taken = training_step(model, optimizer, batch.to(device), cfg, forcing, autocast)
        if average is not None:
            average.update(model)
        total = total + torch.where(taken, loss.float(), 0.0)
        tokens = tokens + taken.long() * count
        skipped = skipped + (~taken).long()
        now = time.perf_counter()
        if deadline is not None and now >= deadline and step + 1 < len(batches):
            return EpochProgress(epoch, step + 1, len(batches), float(total), int(tokens), int(skipped),
                                 earlier_seconds + now - started, forcing.get_state())
        if log is not None and now - last_report >= PROGRESS_EVERY_S:
            last_report = now
            rate = (now - started) / (step + 1 - done)
            log(f"epoch {epoch}: step {step + 1}/{len(batches)}  train {float(total) / max(int(tokens), 1):.3f}  "
                f"{rate:.2f} s/step  about {rate * (len(batches) - step - 1):.0f} s left in the epoch")
    steps = len(batches)
    skipped_steps = int(skipped)
    if skipped_steps * 2 > steps:
        raise FloatingPointError(f"epoch {epoch}: {skipped_steps} of {steps} steps had a non-finite gradient; "
                                 "training diverged (resume from last.pt with another seed or learning rate)")
    total, tokens = float(total), int(tokens)
    seconds = earlier_seconds + time.perf_counter() - started
    scored = average.module if average is not None else model
    return EpochStats(epoch, total / max(tokens, 1), evaluate_loss(scored, valid_pairs, src_vocab, tgt_vocab, cfg, device),
                      seconds, tokens / seconds, code_version(), skipped_steps)


@torch.no_grad()
def evaluate_loss(model: QuestionGenerator, pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab,
                  cfg: TrainConfig, device: torch.device) -> float:
    """Teacher-forced NLL per target token (nan for an empty set)."""
    if not pairs:
        return math.nan
    model.eval()
    total, tokens = torch.zeros((), device=device), 0
    for chunk in sequential_batches(pairs, 64):
        loss, count = model(_batch(chunk, src_vocab, tgt_vocab, model.cfg.copy, cfg).to(device))
        total, tokens = total + loss.detach().float(), tokens + count
    return float(total) / max(tokens, 1)


def training_step(model: QuestionGenerator, optimizer: torch.optim.Optimizer, batch: Batch, cfg: TrainConfig,
                  forcing: torch.Generator | None, autocast: torch.autocast,
                  divisor: torch.Tensor | None = None) -> tuple[torch.Tensor, int, torch.Tensor]:
    """One update on a batch already on the device: (summed NLL, target tokens, whether the update was
    taken (a device bool)). Nothing in it reads a number back from a GPU. ``divisor``: the target
    tokens as a device tensor, for a captured step (qgen/captured_training.py), whose count changes
    from one replay to the next."""
    with autocast:
        loss, count = model(batch, teacher_forcing=cfg.teacher_forcing, generator=forcing,
                            per_sequence=cfg.teacher_forcing_per == "sequence")
    optimizer.zero_grad(set_to_none=True)
    if divisor is None:
        divisor = _loss_divisor(cfg, count, batch)
    (loss / divisor).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
    return loss.detach(), count, _update(optimizer, norm)


def _loss_divisor(cfg: TrainConfig, target_tokens: int, batch: Batch) -> int:
    """The batch's target tokens, or its sentences with ``loss_per="sentence"`` (TrainConfig)."""
    return len(batch) if cfg.loss_per == "sentence" else target_tokens


def switching_step(model: QuestionGenerator, optimizer: torch.optim.Optimizer, batch: Batch, pairs: Sequence[Pair],
                   src_vocab: Vocab, tgt_vocab: Vocab, cfg: TrainConfig,
                   autocast: torch.autocast) -> tuple[torch.Tensor, int, torch.Tensor]:
    """Seed 002's tailored training (qgen/model/roberti.py): an update on MR -> text, then one on the
    text the forward pass's teacher-forced outputs spell (argmax, cut at the first EOS, computed
    before the update) -> the MR, with the two GRUs' roles swapped. Returns the forward pass's
    figures (the reverse pass only trains). The argmax text is read on the host each step."""
    predictions: list[torch.Tensor] = []
    with autocast:
        loss, count = model(batch, teacher_forcing=1.0, predictions=predictions)
    optimizer.zero_grad(set_to_none=True)
    (loss / _loss_divisor(cfg, count, batch)).backward()
    taken = _update(optimizer, torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm))
    guessed = [tgt_vocab.decode(ids) for ids in torch.stack(predictions, dim=1).tolist()]
    # the reverse pair: <s> argmax text </s> -> the MR's characters (the source without <s> and </s>)
    reverse = [Pair(p.id, [BOS, *text, EOS], list(p.src[1:-1]), p.group) for p, text in zip(pairs, guessed)]
    model.encoder.reverse = True
    try:
        with autocast:
            back, back_count = model(_batch(reverse, src_vocab, tgt_vocab, model.cfg.copy, cfg).to(batch.src.device),
                                     teacher_forcing=1.0)
        optimizer.zero_grad(set_to_none=True)
        (back / _loss_divisor(cfg, back_count, batch)).backward()
        _update(optimizer, torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm))
    finally:
        model.encoder.reverse = False
    return loss.detach(), count, taken


def captured_training(model: QuestionGenerator, optimizer: torch.optim.Optimizer, cfg: TrainConfig,
                      device: torch.device, log: Callable[[str], None]) -> CapturedTraining | None:
    """The recorded training step where it applies (a CUDA device; qgen/captured_training.py), else None."""
    if device.type != "cuda":
        return None  # the CPU path is the plain eager loop
    reason = captured_applies(model, cfg, device)
    if reason is not None:
        log(f"training step not captured: {reason}")
        return None
    log("training step captured as CUDA graphs per bucket shape (QGEN_CUDA_GRAPHS=on)")
    return CapturedTraining(model, optimizer, cfg, device)


def make_optimizer(model: QuestionGenerator, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """Adam or SGD; on a GPU their fused kernels, which read the skip flag of ``_update`` on the device.
    Adam is fused on a CPU too: one pass over each parameter instead of a kernel per operation, 3.4x
    faster on its own (0.057 against 0.19 s a step for the paper-size WikiSQL Scratchpad, 25M parameters,
    one thread; a whole training step 1.83 -> 1.56 s), the same update to rounding (1.5e-8)."""
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.learning_rate, fused=fused_kernels(cfg, device))
    return torch.optim.Adam(model.parameters(), lr=cfg.learning_rate, fused=fused_kernels(cfg, device))


def fused_kernels(cfg: TrainConfig, device: torch.device) -> bool:
    """Whether the optimiser runs its fused kernel (a resumed run sets the same on its loaded groups)."""
    return sync_free(device) or (cfg.optimizer == "adam" and device.type == "cpu")


def sync_free(device: torch.device) -> bool:
    """Whether updates are skipped on the device (a GPU) or decided on the host (a CPU, where reading a
    number back costs nothing)."""
    return device.type == "cuda"


def _update(optimizer: torch.optim.Optimizer, norm: torch.Tensor) -> torch.Tensor:
    """Take the step unless the gradient is not finite; returns whether it was taken (a device bool).

    One non-finite gradient, clipped (inf * 0 = nan) and taken by Adam, turns every weight into NaN
    for good: a bf16 run on the GPU (WebQSP Copy + Coverage, seed 3) trained with NaN loss from epoch
    65 on. Such an update is skipped, as AMP's GradScaler does: on a GPU the flag goes to the fused
    Adam kernel as ``found_inf`` (it leaves weights, moments and the step count alone), so the host
    never waits for the norm; on a CPU the host reads it and skips the call.
    """
    taken = torch.isfinite(norm)
    if sync_free(norm.device):
        optimizer.found_inf = (~taken).float()  # type: ignore[attr-defined]
        optimizer.step()
    elif bool(taken):
        optimizer.step()
    return taken


def _batch(pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab, copy: str, cfg: TrainConfig):
    return make_batch([p.src for p in pairs], [p.tgt[: cfg.max_tgt_len] for p in pairs], src_vocab, tgt_vocab, copy,
                      cfg.max_src_len)


def _load_pretrained(model: QuestionGenerator, src_vocab: Vocab, tgt_vocab: Vocab, path: str | None,
                     log: Callable[[str], None]) -> str:
    if not path:
        return "none (random initialisation: no GloVe file given)"
    from qgen.glove import load_vectors

    found_src = load_vectors(path, src_vocab, model.encoder.embedding)
    found_tgt = load_vectors(path, tgt_vocab, model.decoder.embedding)
    log(f"pretrained vectors from {path}: {found_src}/{len(src_vocab)} source, {found_tgt}/{len(tgt_vocab)} target words")
    return f"{Path(path).name} ({found_src} source, {found_tgt} target words)"
