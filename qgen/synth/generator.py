"""Questions for logical forms without one: a trained checkpoint, batched beam search.

``QuestionWriter`` loads any model of the family (seed Table 1; the Copy + Scratchpad model is
the intended one). Its copy mode comes from the checkpoint: only a model trained with
``copy="extended"`` (See et al. 2017) can copy a token it never saw in training, such as the name
of an unseen entity; an ``intersection`` model (the seed's V_c = V_i ∩ V_o) copies only words of
its output vocabulary, and a ``none`` model copies nothing.

Per input it returns a ``PairRow`` or a ``RejectRow`` (stage ``load``, ``tokenize``, ``timeout``,
``unnamed_entity`` or ``generate``), in input order, never raising for a bad input.

``copy_fraction``: per token ``w`` of the chosen question, the share of its probability that came from
the copy distribution, ``(1 - p_gen) * sum_{i: x_i = w} beta_i / p(w)`` (seed Eq. 6-11), as the search
recorded it at the step that chose ``w`` (a hypothesis made elsewhere is fed back through the decoder,
teacher-forced, for the same shares: ``copy_shares`` below). A token counts as copied when
that share is at least one half (an extended-vocabulary token always is); ``copy_fraction`` is the
copied tokens over the question's length (0 for a model without copy).

``candidates`` N > 1: the search returns the N best questions of the beam (or, with ``sampling`` T > 0,
N questions drawn from the model at temperature T, in the order drawn), and the first of them
that passes the faithfulness audit (``qgen.synth.audit``: values, comparison direction, aggregate)
and that the corpus's over-copy filter (``overcopy``) keeps is written; when none passes both, the
first that passes the audit is (and the filter rejects it); when none passes the audit, the best one
is (and the audit reports it). For 12,000 sampled WikiSQL
logical forms and a generator trained on 1,429 pairs, 31.9% of the beam-4 best questions pass the
audit and 58.9% of the questions chosen among the 8 best (``benchmarks/results/downstream/wikisql``).

``round_trip`` (a ``qgen.synth.round_trip.RoundTripFilter``, set by a corpus run that filters by round
trip): the first ``ROUND_TRIP_TRIES`` candidates that pass the audit are parsed back, all of a batch in
one call, and the first whose round trip holds is written; when none holds, the first of them is, with
its failing verdict. With ``overcopy`` set too (the corpus's over-copy filter), a candidate that it
rejects is neither parsed back (so it uses up no try) nor written while another one passes it. Each
written question's verdict is left in ``round_trip_verdicts`` by record id. So a logical form whose best question the
parser misreads can still give a pair, through a later candidate that it reads back.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, NamedTuple, Sequence

import torch

from parsers import tokenize_lf
from qgen.checkpoint import file_checksum, load_checkpoint
from qgen.model_match import check_generator, unknown_lf_type
from qgen.cpu_memory import reuse_freed_memory
from qgen.datasets.records import RawExample
from qgen.decode import Hypothesis, beam_search, sample
from qgen.model import Batch, make_batch
from qgen.model.vocab import BOS_ID, EOS_ID, PAD_ID
from qgen.batching import default_max_tokens, token_batches
from qgen.synth.audit import passing
from qgen.synth.filter import DEFAULT_IGNORED_TOKENS, overcopy_score
from qgen.synth.schema import PairRow, RejectRow, record_json
from qgen.train import resolve_device

Result = PairRow | RejectRow
# Candidates parsed back per logical form when the round trip judges in the writer: each try is one
# more question in the parser's batched search, so more tries cost more parsing for fewer gains.
ROUND_TRIP_TRIES = 3


class _Candidate(NamedTuple):
    """A candidate question as ``qgen.synth.round_trip.judge_pairs`` reads a pair."""
    lf_type: str
    question: str
    lf_tokens: list[str]
    answers: list[str]


class TokenizeTimeout(Exception):
    """Tokenizing (and validating) one logical form took longer than the time limit."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise ``TokenizeTimeout`` after ``seconds`` (SIGALRM: main thread on POSIX only, else no limit)."""
    usable = seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def _expire(signum: int, frame: object) -> None:
        raise TokenizeTimeout(f"tokenizing took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))  # type: ignore[arg-type]
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class QuestionWriter:
    """A checkpoint loaded once; ``write(records)`` -> one ``PairRow`` or ``RejectRow`` per record."""

    def __init__(self, checkpoint: str | Path, beam: int = 4, alpha: float = 1.0, max_len: int = 40,
                 batch_size: int | None = None, max_src_len: int = 400, device: str | torch.device = "auto",
                 tokenize_timeout_s: float | None = 10.0, labels: Callable[[str], str | None] | None = None,
                 ignore_tokens: Collection[str] = DEFAULT_IGNORED_TOKENS,
                 created_at: datetime | None = None, no_repeat: bool = False, max_tokens: int | None = None,
                 candidates: int = 1, sampling: float = 0.0, seed: int | None = None) -> None:
        if beam < 1 or max_len < 1 or (batch_size is not None and batch_size < 1) or \
                (max_tokens is not None and max_tokens < 1):
            raise ValueError("beam, batch_size, max_tokens and max_len must be >= 1")
        if sampling < 0:
            raise ValueError(f"sampling is a temperature (0: beam search), got {sampling}")
        if candidates < 1 or (not sampling and candidates > beam):  # draws are not bound by the beam
            raise ValueError(f"candidates must be between 1 and the beam size {beam}, got {candidates}")
        self.device = resolve_device(device) if isinstance(device, str) else device
        if self.device.type == "cpu":
            reuse_freed_memory()  # the rewritten memory is tens of MB a step (qgen.cpu_memory)
        self.model, self.src_vocab, self.tgt_vocab, payload = load_checkpoint(checkpoint, self.device)
        check_generator(checkpoint, facts=payload)  # a parser writes no questions
        self.model_record = {key: payload.get(key) for key in ("task", "lf_types")}  # what it was trained on
        self.model_id = "sha256:" + file_checksum(checkpoint)
        self.copy_mode = self.model.cfg.copy
        self.beam, self.alpha, self.max_len = beam, alpha, max_len
        self.no_repeat = no_repeat  # no word right after itself (qgen.decode.block_repeat)
        self.candidates = candidates  # questions of the beam tried against the audit, best first
        # sampling T > 0: the candidates are drawn from the model at temperature T (qgen.decode.sample), tried
        # in the order drawn, instead of the beam's best. ``seed`` gives the writer its own random stream
        # (repeatable for the same batches); None draws from torch's, which a corpus seeds per shard.
        self.sampling = sampling
        self._draws = torch.Generator(device=self.device).manual_seed(seed) if sampling and seed is not None else None
        # A dict here collects, per record id, the candidates after the chosen one that pass the audit
        # too ((question, score), best first): more questions for one logical form (qgen.downstream).
        self.other_questions: dict[str, list[tuple[str, float]]] | None = None
        # A RoundTripFilter here makes the writer choose among the candidates by round trip too (see the
        # module docstring); the written questions' verdicts, by record id, are left for the caller.
        self.round_trip: Any = None
        # The corpus's OverCopyFilter, beside ``round_trip``: a candidate that it would reject is not
        # parsed back and not chosen while another candidate passes it (it judges the question, the logical
        # form and the score, all known here).
        self.overcopy: Any = None
        self.round_trip_verdicts: dict[str, Any] = {}
        self.batch_size, self.max_src_len = batch_size, max_src_len  # batch_size: at most so many LFs a batch
        # Source tokens a batch (rows x longest source, qgen.batching): what fits the device by default.
        self.max_tokens = max_tokens or default_max_tokens(self.device, self.model.cfg, beam)
        self.tokenize_timeout_s, self.labels = tokenize_timeout_s, labels
        self.ignore_tokens = tuple(ignore_tokens)
        self.created_at = created_at or datetime.now(timezone.utc)

    def write(self, records: Sequence[RawExample], positions: Sequence[int] | None = None) -> list[Result]:
        """One result per record, in order; ``positions`` (input positions) go into reject rows."""
        positions = list(positions) if positions is not None else list(range(len(records)))
        return self.generate(records, [self.tokenize(r, p) for r, p in zip(records, positions)], positions)

    def generate(self, records: Sequence[RawExample], tokenized: Sequence[list[str] | RejectRow],
                 positions: Sequence[int]) -> list[Result]:
        """The generation half of ``write``: per record its tokens (or its reject) -> one result each, in order."""
        results: list[Result | None] = [r if isinstance(r, RejectRow) else None for r in tokenized]
        ready = [(index, tokens) for index, tokens in enumerate(tokenized) if not isinstance(tokens, RejectRow)]
        ready.sort(key=lambda item: (len(item[1]), item[0]))  # length-sorted batches pad little
        for chunk in token_batches(ready, self.max_tokens, self.batch_size):
            for (index, tokens), result in zip(chunk, self._generate_or_split(chunk, records, positions)):
                results[index] = result
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]

    def tokenize(self, record: RawExample, position: int) -> list[str] | RejectRow:
        """One record -> its logical form's tokens, or its reject row (bad input never raises)."""
        def reject(stage: str, reason: str) -> RejectRow:
            return RejectRow(record.id, stage, " ".join(reason.split()), record_json(record, position))

        if record.load_error:
            return reject("load", record.load_error)
        wrong_type = unknown_lf_type(self.model_record, record.lf_type)
        if wrong_type is not None:
            return reject("input", f"lf_type {record.lf_type}: {wrong_type}")
        try:
            with time_limit(self.tokenize_timeout_s):
                parsed = tokenize_lf(record.logical_form, record.lf_type, names=record.names, labels=self.labels)
        except TokenizeTimeout as err:
            return reject("timeout", f"TokenizeTimeout: {err}")
        except Exception as err:  # a bad LF (LogicalFormError), an unknown type, a parser bug: never a crash
            text = str(err) if str(err).startswith(type(err).__name__) else f"{type(err).__name__}: {err}"
            return reject("tokenize", text)
        unnamed = [e for e in parsed.entities if e.name_source == "placeholder"]
        if unnamed:
            listed = ", ".join(f"{e.surface} ({e.name})" for e in unnamed)
            return reject("unnamed_entity", f"no name for {len(unnamed)} entity(ies): {listed}")
        if len(parsed.tokens) > self.max_src_len:
            return reject("tokenize", f"InputTooLong: {len(parsed.tokens)} tokens, "
                                      f"more than max_src_len {self.max_src_len}")
        return parsed.tokens

    def _generate_or_split(self, chunk: list[tuple[int, list[str]]], records: Sequence[RawExample],
                           positions: Sequence[int]) -> list[Result]:
        """``_generate``; a batch the device has no memory for is halved and tried again (down to one
        logical form, whose failure becomes its reject row)."""
        try:
            return self._generate(chunk, records, positions, raise_out_of_memory=len(chunk) > 1)
        except torch.OutOfMemoryError:
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            half = len(chunk) // 2
            return (self._generate_or_split(chunk[:half], records, positions)
                    + self._generate_or_split(chunk[half:], records, positions))

    def _generate(self, chunk: list[tuple[int, list[str]]], records: Sequence[RawExample],
                  positions: Sequence[int], raise_out_of_memory: bool = False) -> list[Result]:
        sources = [tokens for _, tokens in chunk]
        try:
            batch = make_batch(sources, None, self.src_vocab, self.tgt_vocab, self.copy_mode, self.max_src_len)
            batch = batch.to(self.device)
            if self.sampling:
                found = sample(self.model, batch, self.candidates, self.max_len, self.sampling, self.alpha,
                               self.no_repeat, self._draws, copy_shares=self.copy_mode != "none")
            else:
                found = beam_search(self.model, batch, self.beam, self.max_len, self.alpha,
                                    num_return=self.candidates, no_repeat=self.no_repeat,
                                    copy_shares=self.copy_mode != "none")
            ranked = [self._ranked(best, records[index], tokens, oovs)
                      for best, (index, tokens), oovs in zip(found, chunk, batch.oovs)]
            hyps = (self._round_trip_choice(ranked, chunk, records, batch.oovs) if self.round_trip is not None
                    else [tried[0] for tried in ranked])
            shares = self._copy_shares(batch, hyps)
        except torch.OutOfMemoryError as err:
            if raise_out_of_memory:  # the caller splits the batch
                raise
            return self._rejects(chunk, records, positions, f"OutOfMemoryError: {err}")
        except Exception as err:  # a model or device failure: the batch's inputs become rejects, the run goes on
            return self._rejects(chunk, records, positions, f"{type(err).__name__}: {err}")
        out: list[Result] = []
        for (index, tokens), hyp, oovs, share in zip(chunk, hyps, batch.oovs, shares):
            record = records[index]
            question = self.tgt_vocab.decode(hyp.ids, oovs)
            problem = None
            if len(hyp.ids) >= self.max_len:
                problem = f"unfinished: no end of question within max_len {self.max_len} tokens"
            elif not question:
                problem = "empty question"
            if problem:
                out.append(RejectRow(record.id, "generate", problem,
                                     record_json(record, positions[index], question=" ".join(question))))
                continue
            copied = sum(1 for s in share if s >= 0.5)
            out.append(PairRow(
                id=record.id, lf_type=record.lf_type, logical_form=record.logical_form, lf_tokens=list(tokens),
                question=" ".join(question), score=float(hyp.score),
                overcopy=overcopy_score(question, tokens, self.ignore_tokens),
                copy_fraction=copied / len(question), answers=[str(a) for a in record.answers],
                source=record.source, model_id=self.model_id, created_at=self.created_at))
        return out

    def _copy_shares(self, batch: Batch, hyps: Sequence[Hypothesis]) -> list[list[float]]:
        """Each question's per-token copy shares: as the search recorded them, else (hypotheses made
        elsewhere) by teacher-forcing the questions through the decoder again."""
        if self.copy_mode == "none":
            return [[0.0] * len(h.ids) for h in hyps]
        if all(h.copy_shares is not None for h in hyps):
            return [h.copy_shares for h in hyps]  # type: ignore[misc]
        return copy_shares(self.model, batch, hyps)

    def _ranked(self, best: list[Hypothesis], record: RawExample, tokens: list[str], oovs: list[str]
                ) -> list[Hypothesis]:
        """The candidates to write, in order: of the beam's best hypotheses (best first), the finished
        ones whose question passes the audit (as many as the round trip tries, else the first: without a
        round trip, the first that the over-copy filter keeps too, else the first); when none passes,
        the best one."""
        if len(best) == 1:
            return best
        finished = [h for h in best if 0 < len(h.ids) < self.max_len]
        questions = [" ".join(self.tgt_vocab.decode(h.ids, oovs)) for h in finished]
        order = list(passing(record.lf_type, record.logical_form, tokens, questions))
        if not order:
            return best[:1]
        if self.round_trip is None:  # (with one, _round_trip_choice skips what the over-copy filter rejects)
            # The first audited question that the over-copy filter keeps, not one that it would reject while a
            # later one passes both (default model, 400 logical forms, beam 4: the demo's tables 209 -> 297
            # pairs, WikiSQL 323 -> 360; the same generation).
            kept = next((i for i in order if self._overcopy_keeps(finished[i], questions[i], tokens)), order[0])
            order = [kept, *(i for i in order if i != kept)]
        chosen, passed = order[0], iter(order[1:])
        tried, seen = [finished[chosen]], {questions[chosen]}
        tries = ROUND_TRIP_TRIES if self.round_trip is not None else 1
        if self.other_questions is None and tries == 1:
            return tried  # the audit of the later candidates is not needed
        # A try is a parse: a candidate that the over-copy filter rejects is never parsed back
        # (_round_trip_choice), so it does not use one up. The first candidate stays in any case, as the
        # one written when none holds.
        parsed = int(self._overcopy_keeps(finished[chosen], questions[chosen], tokens))
        others: dict[str, float] = {}  # distinct questions, best first, each with its own score
        for i in passed:
            if parsed < tries and questions[i] not in seen:  # a distinct question: one more try
                seen.add(questions[i])
                if self._overcopy_keeps(finished[i], questions[i], tokens):
                    tried.append(finished[i])
                    parsed += 1
            if self.other_questions is not None and questions[i] != questions[chosen]:
                others.setdefault(questions[i], finished[i].score)
            elif self.other_questions is None and parsed == tries:
                break
        if self.other_questions is not None:
            self.other_questions[record.id] = list(others.items())
        return tried

    def _overcopy_keeps(self, hyp: Hypothesis, question: str, tokens: list[str]) -> bool:
        """Whether the corpus's over-copy filter (when set) keeps this question."""
        return self.overcopy is None or self.overcopy.judge(question.split(), tokens, hyp.score).keep

    def _round_trip_choice(self, ranked: list[list[Hypothesis]], chunk: list[tuple[int, list[str]]],
                           records: Sequence[RawExample], oovs: list[list[str]]) -> list[Hypothesis]:
        """Per logical form, the first of its ranked candidates that the over-copy filter (if set) keeps
        and whose round trip holds; else the first that the over-copy filter keeps; else the first. Every
        candidate of the batch that the over-copy filter keeps is judged in one call; the chosen ones'
        verdicts go to ``round_trip_verdicts``."""
        from qgen.synth.round_trip import judge_pairs

        judged: list[tuple[int, int]] = []  # (row in the chunk, rank) of each candidate judged
        candidates = []
        for row, (tried, (index, tokens), row_oovs) in enumerate(zip(ranked, chunk, oovs)):
            record = records[index]
            for rank, hyp in enumerate(tried):
                if 0 < len(hyp.ids) < self.max_len:  # an unfinished question is a generation reject
                    question = " ".join(self.tgt_vocab.decode(hyp.ids, row_oovs))
                    if not self._overcopy_keeps(hyp, question, tokens):
                        continue  # the corpus would reject it before its round trip
                    candidates.append(_Candidate(record.lf_type, question, tokens, [str(a) for a in record.answers]))
                    judged.append((row, rank))
        verdicts: dict[tuple[int, int], Any] = dict(zip(judged, judge_pairs(self.round_trip, candidates)))
        chosen = []
        for row, tried in enumerate(ranked):
            ranks = [r for r in range(len(tried)) if (row, r) in verdicts]  # finished, kept by the over-copy filter
            rank = next((r for r in ranks if verdicts[row, r].keep), ranks[0] if ranks else 0)
            if (row, rank) in verdicts:
                self.round_trip_verdicts[records[chunk[row][0]].id] = verdicts[row, rank]
            chosen.append(tried[rank])
        return chosen

    @staticmethod
    def _rejects(chunk: list[tuple[int, list[str]]], records: Sequence[RawExample], positions: Sequence[int],
                 reason: str) -> list[Result]:
        return [RejectRow(records[i].id, "generate", " ".join(reason.split()), record_json(records[i], positions[i]))
                for i, _ in chunk]


@torch.inference_mode()
def copy_shares(model: torch.nn.Module, batch: Batch, hyps: Sequence[Hypothesis]) -> list[list[float]]:
    """Per hypothesis and token: the share of its probability that the copy distribution gave
    (``(1 - p_gen) * sum_{i: x_i = w} beta_i / p(w)``, Eq. 6-11), by teacher-forcing the chosen ids."""
    steps = max((len(h.ids) for h in hyps), default=0)
    device = batch.src.device
    ids = torch.full((len(hyps), max(steps, 1)), PAD_ID, dtype=torch.long)  # (batch, steps), filled on the host
    for row, hyp in enumerate(hyps):
        if hyp.ids:
            ids[row, : len(hyp.ids)] = torch.tensor(hyp.ids)
    ids = ids.to(device)  # one copy to the device, not one per row
    state = model.start(batch)
    prev = torch.full((len(hyps),), BOS_ID, dtype=torch.long, device=device)  # (batch,)
    shares = torch.zeros(len(hyps), max(steps, 1), device=device)  # (batch, steps)
    for t in range(steps):
        log_probs, state, attns = model.step(prev, state)  # (batch, extended)
        word = ids[:, t]  # (batch,)
        hits = (batch.copy_ids == word.unsqueeze(1)).float()  # (batch, src_len)
        p_copy = (1 - attns["p_gen"].float()) * (attns["copy"].float() * hits).sum(dim=1)  # (batch,)
        p_word = log_probs.float().gather(1, word.clamp_max(log_probs.size(1) - 1).unsqueeze(1)).squeeze(1).exp()
        shares[:, t] = (p_copy / p_word.clamp_min(1e-12)).clamp(0.0, 1.0)
        prev = word.masked_fill(word == PAD_ID, EOS_ID)
    return [shares[row, : len(h.ids)].tolist() for row, h in enumerate(hyps)]
