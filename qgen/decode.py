"""Decoding over the step function: greedy, sampling and batched beam search with length normalisation.

Both work with any model that has ``start(batch) -> state`` and ``step(prev, state)`` with a
batch-first state, so beams are reordered with ``{k: v[idx] for k, v in state.items()}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection

import torch

from qgen.cuda_graphs import step_function
from qgen.model.batch import Batch
from qgen.model.vocab import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Hypothesis:
    ids: list[int]  # without BOS and EOS
    score: float  # length-normalised log-probability
    log_prob: float  # total log-probability
    attns: dict[str, list[torch.Tensor]] = field(default_factory=dict)  # per step, (src_len,) each
    # Per token, the share of its probability that the copy distribution gave (``beam_search(...,
    # copy_shares=True)``); None when the search was not asked for them.
    copy_shares: list[float] | None = None


def _reorder(state: dict[str, torch.Tensor], index: torch.Tensor, keep: Collection[str] = ()) -> dict[str, torch.Tensor]:
    """The state's rows in ``index`` order; the keys in ``keep`` are passed on as they are."""
    return {k: v if k in keep else v.index_select(0, index) for k, v in state.items()}


# Beams wider than this buy nothing for questions (the paper decodes with 4) and cost memory in proportion
# (batch x beam rows): a beam of 100,000 had the process killed for memory instead of refused.
MAX_BEAM = 64


def unexpanded_keys(model: torch.nn.Module) -> set[str]:
    """The state keys that the model keeps one per example however many hypotheses it has."""
    return model.unexpanded_keys() if hasattr(model, "unexpanded_keys") else set()


def _expand(state: dict[str, torch.Tensor], size: int, copies: int, device: torch.device,
            shared: Collection[str]) -> dict[str, torch.Tensor]:
    """Each of ``size`` examples' rows ``copies`` times (beams, samples), example by example; the
    ``shared`` keys (``unexpanded_keys``) stay as they are."""
    index = torch.arange(size, device=device).repeat_interleave(copies)
    return _reorder(state, index, shared)


def block_repeat(log_probs: torch.Tensor, prev: torch.Tensor) -> torch.Tensor:
    """Forbid each row's previous token as its next one ("new york york" cannot be written).

    Greedy questions repeat a word immediately far more often than questions do (a third of them
    against 0.1% of the WebQSP references: the top-level README's results), so decoding can rule it out.
    The token that repeats is one id whether generated or copied (copies of in-vocabulary words map
    to their vocabulary id, unseen source words to one extended id each), so one entry per row suffices.
    The price: a name that repeats itself ("walla walla", "bora bora") cannot be written whole, which
    is why it is an option (``--no-repeat``), off by default.
    """
    return log_probs.scatter(1, prev.unsqueeze(1), float("-inf"))


def normalise(log_prob: float, length: int, alpha: float) -> float:
    """Length normalisation: log p / length^alpha (alpha 1 = mean log-probability per token)."""
    return log_prob / max(length, 1) ** alpha


@torch.inference_mode()
def greedy(model: torch.nn.Module, batch: Batch, max_len: int = 40, keep_attention: bool = False,
           alpha: float = 1.0, no_repeat: bool = False) -> list[Hypothesis]:
    """The most probable token at every step; ``no_repeat`` forbids a token right after itself.

    Rows that are done leave the batch once they are an eighth of it (as in ``beam_search``; not
    with ``keep_attention``): a batch otherwise runs every row to its longest output (up to 400
    characters for the character models)."""
    state = model.start(batch)
    size = len(batch)
    device = batch.src.device
    prev = torch.full((size,), BOS_ID, dtype=torch.long, device=device)
    done = torch.zeros(size, dtype=torch.bool, device=device)  # of the rows still in the batch
    live = torch.arange(size, device=device)  # their indices in the batch given
    total = torch.zeros(size, device=device)
    tokens = torch.full((size, max_len), EOS_ID, dtype=torch.long, device=device)
    attn_steps: list[dict[str, torch.Tensor]] = []
    steps = 0
    for step in range(max_len):
        log_probs, state, attns = model.step(prev, state)
        if no_repeat:
            log_probs = block_repeat(log_probs, prev)
        best, prev = log_probs.max(dim=1)
        total[live] += best.masked_fill(done, 0.0)
        tokens[live, step] = prev.masked_fill(done, EOS_ID)
        steps = step + 1
        if keep_attention:
            attn_steps.append({k: v.detach().float().cpu() for k, v in attns.items() if k in ("read", "copy", "p_gen")})
        done = done | (prev == EOS_ID)
        ended = int(done.sum())
        if ended == len(done):
            break
        if not keep_attention and ended * 8 >= len(done):
            kept = (~done).nonzero().squeeze(1)
            state = {k: v.index_select(0, kept) for k, v in state.items()}
            prev, done, live = prev[kept], done[kept], live[kept]
    ids = tokens[:, :steps].tolist()  # (batch, steps)
    out = []
    for row, seq in enumerate(ids):
        length = seq.index(EOS_ID) if EOS_ID in seq else len(seq)
        hyp = Hypothesis(seq[:length], normalise(float(total[row]), length + 1, alpha), float(total[row]))
        if keep_attention:
            hyp.attns = {k: [a[k][row] for a in attn_steps[: length + 1]] for k in attn_steps[0]} if attn_steps else {}
        out.append(hyp)
    return out


@torch.inference_mode()
def sample(model: torch.nn.Module, batch: Batch, num: int = 1, max_len: int = 40, temperature: float = 1.0,
           alpha: float = 1.0, no_repeat: bool = False, generator: torch.Generator | None = None,
           compact: bool = True, copy_shares: bool = False) -> list[list[Hypothesis]]:
    """``num`` questions per example drawn token by token from the model's distribution (softmax of the
    log-probabilities over ``temperature``), in the order drawn; each hypothesis's ``log_prob`` is under
    the model itself (temperature 1). ``compact``: examples whose draws have all ended leave the batch
    (the same draws either way). ``copy_shares``: per token the copy distribution's share, as in
    ``beam_search``.

    Why: the beam's best questions are the model's most generic ones. Synthetic sources for training
    the reverse model (back-translation) help more when sampled than when taken from the beam (Edunov et
    al. 2018, "Understanding Back-Translation at Scale"): they keep the variety of the real ones.
    """
    device = batch.src.device
    size = len(batch) * num
    shared = unexpanded_keys(model)
    state = _expand(model.start(batch), len(batch), num, device, shared)
    prev = torch.full((size,), BOS_ID, dtype=torch.long, device=device)
    rows = torch.arange(size, device=device)  # the rows still drawing, among all
    done = torch.zeros(size, dtype=torch.bool, device=device)  # of those rows
    total = torch.zeros(size, device=device)
    tokens = torch.full((size, max_len), EOS_ID, dtype=torch.long, device=device)
    shares = torch.zeros(size, max_len, device=device) if copy_shares else None
    for step in range(max_len):
        log_probs, state, attns = model.step(prev, state)
        if no_repeat:
            log_probs = block_repeat(log_probs, prev)
        drawn = _draw(torch.softmax(log_probs.float() / temperature, dim=1), size, rows, generator)
        drawn_log_probs = log_probs.gather(1, drawn.unsqueeze(1)).squeeze(1)  # (rows,)
        total.index_add_(0, rows, drawn_log_probs.masked_fill(done, 0.0))
        tokens[rows, step] = drawn.masked_fill(done, EOS_ID)
        if shares is not None:
            copy_ids = batch.copy_ids.index_select(0, torch.div(rows, num, rounding_mode="floor"))
            shares[rows, step] = token_copy_shares(drawn_log_probs, drawn, attns["copy"], attns["p_gen"], copy_ids)
        prev, done = drawn, done | (drawn == EOS_ID)
        if bool(done.all()):
            break
        # Examples whose draws have all ended leave the batch once they are an eighth of it (as in
        # beam_search): otherwise every example runs to the batch's longest question.
        ended = done.view(-1, num).all(1)
        if compact and _worth_compacting(ended):
            state, kept_rows = _keep_examples(state, (~ended).nonzero().squeeze(1), num, shared)
            prev, done, rows = prev[kept_rows], done[kept_rows], rows[kept_rows]
    out: list[list[Hypothesis]] = [[] for _ in range(len(batch))]
    row_shares = shares.tolist() if shares is not None else None
    for row, seq in enumerate(tokens.tolist()):
        length = seq.index(EOS_ID) if EOS_ID in seq else len(seq)
        log_prob = float(total[row])
        out[row // num].append(Hypothesis(seq[:length], normalise(log_prob, length + 1, alpha), log_prob,
                                          copy_shares=row_shares[row][:length] if row_shares is not None else None))
    return out


def token_copy_shares(token_log_probs: torch.Tensor, tokens: torch.Tensor, copy: torch.Tensor, p_gen: torch.Tensor,
                      copy_ids: torch.Tensor) -> torch.Tensor:
    """Per row, the share of its token's probability that the copy distribution gave: (1 - p_gen) x the
    copy attention on the positions that copy the token, over the token's probability (Eq. 6-11).
    token_log_probs and tokens (rows,), copy (rows, src_len), p_gen (rows,), copy_ids (rows, src_len) -> (rows,)."""
    hits = copy_ids == tokens.unsqueeze(1)  # (rows, src_len)
    p_copy = (1 - p_gen.float()) * (copy.float() * hits).sum(dim=1)
    return (p_copy / token_log_probs.float().exp().clamp_min(1e-12)).clamp(0.0, 1.0)


def _worth_compacting(ended: torch.Tensor) -> bool:
    """Drop the ended examples (``ended``: one flag an example) once they are an eighth of the batch."""
    return int(ended.sum()) * 8 >= len(ended)


def _keep_examples(state: dict[str, torch.Tensor], kept: torch.Tensor, copies: int,
                   shared: Collection[str]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The state of the ``kept`` examples only (each with its ``copies`` rows: beams, draws; the ``shared``
    keys have one row an example), and the kept rows' indices among the current ones."""
    rows = (kept.unsqueeze(1) * copies + torch.arange(copies, device=kept.device)).view(-1)
    return {k: v.index_select(0, kept if k in shared else rows) for k, v in state.items()}, rows


def _draw(probs: torch.Tensor, size: int, rows: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row of ``probs`` (rows ``rows`` of ``size``), by inverse transform sampling.

    Why not ``torch.multinomial``: one uniform number is drawn for every one of the ``size`` rows each
    step, whether the row still draws or has left the batch, so a row's draws do not depend on which
    other examples have ended: the same seed gives the same questions with and without compaction.
    """
    uniform = torch.rand(size, generator=generator, device=probs.device, dtype=torch.float64)[rows]
    # in float64, so that u x total rounds up to the total (and past the last token with any mass) about
    # once in 2^53 draws rather than once in 2^24
    cdf = probs.double().cumsum(1)
    drawn = torch.searchsorted(cdf, (uniform * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    return drawn.clamp_max(probs.size(1) - 1)


@torch.inference_mode()
def beam_search(model: torch.nn.Module, batch: Batch, beam: int = 4, max_len: int = 40, alpha: float = 1.0,
                num_return: int = 1, no_repeat: bool = False, check_every: int | None = None,
                copy_shares: bool = False) -> list[list[Hypothesis]]:
    """Batched beam search; per example the ``num_return`` best finished hypotheses, best first.

    ``no_repeat`` forbids a token right after itself, in every beam (``block_repeat``).
    Scores are length-normalised (``normalise``) when hypotheses are compared at the end; during
    the search the beam keeps the ``beam`` best partial sums, as usual. A hypothesis is finished when
    it emits EOS among the ``beam`` best candidates; an example stops once its best candidate is
    an EOS and at least ``num_return`` have finished (OpenNMT-py's rule); if too few finish within
    ``max_len`` the best open beams fill the list.

    All bookkeeping is tensor work on the model's device: per step no Python loop over rows and no
    host synchronisation. Whether every example is done is read every ``check_every`` steps (default:
    every step on the CPU, where reading costs nothing, every 4 on a GPU); the steps run past the end
    change nothing, since a finished example takes no more hypotheses.

    Examples that are done leave the batch (``_BeamState.compact``) once they are an eighth of it:
    questions of one batch end at different steps, and a trained model's batch otherwise runs every
    example to its longest question (3x the steps needed on WikiSQL dev). Not with a captured CUDA
    step, whose shapes are fixed.

    ``copy_shares`` (copy models): each hypothesis also carries, per token, the share of its probability
    that the copy distribution gave, (1 - p_gen) sum_{i: x_i = w} beta_i / p(w) (Eq. 6-11), read off the
    step that chose the token; the same numbers as teacher-forcing the chosen tokens again
    (``qgen.synth.generator.copy_shares``), without that second pass through the decoder (a quarter of
    a synthesis run's time on a CPU).
    """
    return _search(model, batch, beam, max_len, alpha, num_return, no_repeat, check_every, copy_shares).results()


def _search(model: torch.nn.Module, batch: Batch, beam: int, max_len: int, alpha: float, num_return: int,
            no_repeat: bool, check_every: int | None, copy_shares: bool) -> "_BeamState":
    """``beam_search``'s loop; the state it leaves (``results``)."""
    if not 1 <= beam <= MAX_BEAM:
        raise ValueError(f"the beam size must be between 1 and {MAX_BEAM}, got {beam}")
    if not 1 <= num_return <= beam:  # zero would return nothing, more than the beam cannot be kept
        raise ValueError(f"num_return must be between 1 and the beam size {beam}, got {num_return}")
    device = batch.src.device
    if check_every is None:
        check_every = 1 if device.type == "cpu" else 4
    search = _BeamState(len(batch), beam, max_len, alpha, num_return, device, copy_shares)
    copy_ids = batch.copy_ids if copy_shares else None  # (examples, src_len): the word each position copies
    shared = unexpanded_keys(model)
    state = _expand(model.start(batch), len(batch), beam, device, shared)
    prev = torch.full((len(batch) * beam,), BOS_ID, dtype=torch.long, device=device)
    step_fn = step_function(model, device, len(batch) * beam, batch.src.size(1))  # model.step, or its CUDA graph
    # What the step never changes is the same in every beam of an example: a reorder (within examples) keeps it.
    fixed = model.per_example_keys() if hasattr(model, "per_example_keys") else set()
    for step in range(max_len):
        log_probs, state, attns = step_fn(prev, state)  # (size * beam, extended)
        if no_repeat:
            log_probs = block_repeat(log_probs, prev)
        copying = (attns["copy"], attns["p_gen"], copy_ids) if copy_ids is not None else None
        flat, prev = search.advance(step, log_probs, copying)
        state = _reorder(state, flat, fixed)
        if (step + 1) % check_every == 0:
            if search.all_done():
                break
            if step_fn == model.step and search.worth_compacting():
                kept = search.compact()  # (examples kept,)
                copy_ids = copy_ids.index_select(0, kept) if copy_ids is not None else None
                state, rows = _keep_examples(state, kept, beam, shared)
                prev = prev.index_select(0, rows)
    return search


class _BeamState:
    """The bookkeeping of ``beam_search`` as tensors, for ``size`` examples of ``beam`` beams each.

    ``pool`` keeps, per example, the ``num_return`` best finished hypotheses so far, in the order a
    stable sort by normalised score would leave them (earlier finished first among equal scores),
    so it is exactly the head of the full list of finished hypotheses.

    After ``compact`` the tensors hold the examples still searched, ``live`` their indices among the
    ``size`` of the start; the pools of those that left wait in ``final``.
    """

    def __init__(self, size: int, beam: int, max_len: int, alpha: float, num_return: int,
                 device: torch.device, copy_shares: bool = False) -> None:
        self.size, self.beam, self.max_len, self.alpha, self.keep = size, beam, max_len, alpha, num_return
        self.device = device
        self.scores = torch.full((size, beam), float("-inf"), device=device)
        self.scores[:, 0] = 0.0  # all beams start identical: only the first may expand at step 1
        self.history = torch.full((size, beam, max_len), EOS_ID, dtype=torch.long, device=device)
        self.steps = 0  # tokens in the history
        self.done = torch.zeros(size, dtype=torch.bool, device=device)
        self.finished = torch.zeros(size, dtype=torch.long, device=device)  # how many have finished
        self.pool_score = torch.full((size, num_return), float("-inf"), dtype=torch.float64, device=device)
        self.pool_raw = torch.full((size, num_return), float("-inf"), dtype=torch.float64, device=device)
        self.pool_len = torch.zeros(size, num_return, dtype=torch.long, device=device)
        self.pool_ids = torch.full((size, num_return, max_len), EOS_ID, dtype=torch.long, device=device)
        # With copy_shares, each token's copy share beside it: kept, reordered and pooled as the tokens are.
        self.shares = torch.zeros(size, beam, max_len, device=device) if copy_shares else None
        self.pool_shares = torch.zeros(size, num_return, max_len, device=device) if copy_shares else None
        self.rows = torch.arange(size, device=device).unsqueeze(1)  # (size, 1)
        self.live = torch.arange(size, device=device)
        self.final = [t.clone() for t in self._pools()]

    def _pools(self) -> list[torch.Tensor]:
        pools = [self.pool_score, self.pool_raw, self.pool_len, self.pool_ids]
        return pools + [self.pool_shares] if self.pool_shares is not None else pools

    def advance(self, step: int, log_probs: torch.Tensor,
                copying: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: log_probs (size * beam, vocab) -> (the flat beam each new beam comes from,
        the new beams' tokens (size * beam,)). ``copying``: the step's copy attention (size * beam,
        src_len) and switch (size * beam,) and the examples' copy ids (size, src_len), for the shares."""
        size, beam = self.size, self.beam
        vocab = log_probs.size(1)
        candidates = (self.scores.view(-1, 1) + log_probs.float()).view(size, beam * vocab)
        top_scores, top_index = candidates.topk(2 * beam, dim=1)  # spare ones replace finished beams
        origin, token = top_index // vocab, top_index % vocab  # (size, 2 * beam)
        open_row = ~self.done.unsqueeze(1)  # (size, 1)
        real = top_scores > float("-inf")  # topk sorts, so the -inf candidates are the tail
        is_eos = token == EOS_ID
        # An EOS among the beam best finishes a hypothesis; an EOS elsewhere is dropped.
        ends = (is_eos & real & open_row)[:, :beam]  # (size, beam)
        shares = self._copy_shares(log_probs, origin, token, *copying) if copying is not None else None
        self._finish(step, top_scores[:, :beam], origin[:, :beam], ends)
        # The other candidates fill the beams in rank order, ``beam`` of them at most.
        goes_on = ~is_eos & real & open_row  # (size, 2 * beam)
        slot = goes_on.long().cumsum(dim=1) - 1
        slot = torch.where(goes_on & (slot < beam), slot, torch.full_like(slot, beam))  # beam = discard
        new_scores = torch.full((size, beam + 1), float("-inf"), device=self.device)
        new_origin = torch.zeros(size, beam + 1, dtype=torch.long, device=self.device)
        new_token = torch.full((size, beam + 1), EOS_ID, dtype=torch.long, device=self.device)
        new_scores.scatter_(1, slot, top_scores)
        new_origin.scatter_(1, slot, origin)
        new_token.scatter_(1, slot, token)
        new_scores, new_origin, new_token = new_scores[:, :beam], new_origin[:, :beam], new_token[:, :beam]
        if shares is not None:  # given exactly when the search keeps shares
            new_shares = torch.zeros(size, beam + 1, device=self.device).scatter_(1, slot, shares)[:, :beam]
            self.shares = self.shares.gather(1, new_origin.unsqueeze(2).expand(-1, -1, self.max_len))
            self.shares[:, :, step] = new_shares
        # OpenNMT-py's rule: an example is done once its best candidate ends (and enough have ended).
        stops = open_row.squeeze(1) & is_eos[:, 0] & (self.finished >= self.keep)
        self.done = self.done | stops
        new_scores = new_scores.masked_fill(stops.unsqueeze(1), float("-inf"))
        self.history = self.history.gather(1, new_origin.unsqueeze(2).expand(-1, -1, self.max_len))
        self.history[:, :, step] = new_token
        self.steps = step + 1
        self.scores = new_scores
        flat = (self.rows * beam + new_origin).view(-1)
        return flat, new_token.reshape(-1)

    def _copy_shares(self, log_probs: torch.Tensor, origin: torch.Tensor, token: torch.Tensor, copy: torch.Tensor,
                     p_gen: torch.Tensor, copy_ids: torch.Tensor) -> torch.Tensor:
        """The copy share of each candidate (size, 2 * beam): (1 - p_gen) x the copy attention on the
        positions that copy its token, over the token's probability, of the beam it extends."""
        size, candidates = origin.shape
        rows = (self.rows * self.beam + origin).view(-1)  # (size * 2 * beam,) the beams extended
        token = token.reshape(-1)
        return token_copy_shares(log_probs[rows, token], token, copy.index_select(0, rows), p_gen.index_select(0, rows),
                                 copy_ids.repeat_interleave(candidates, dim=0)).view(size, candidates)

    def _finish(self, step: int, scores: torch.Tensor, origin: torch.Tensor, ends: torch.Tensor) -> None:
        """Merge this step's finished hypotheses (``ends``, (size, beam)) into the pool."""
        raw = scores.double().masked_fill(~ends, float("-inf"))
        length = step  # tokens before the EOS
        normalised = raw / max(length + 1, 1) ** self.alpha
        by_origin = origin.unsqueeze(2).expand(-1, -1, self.max_len)
        ids = self.history.gather(1, by_origin)  # (size, beam, max_len)
        shares = self.shares.gather(1, by_origin) if self.shares is not None else None
        self.finished = self.finished + ends.sum(dim=1)
        self._merge(normalised, raw, torch.full_like(origin, length), ids, shares)

    def _merge(self, score: torch.Tensor, raw: torch.Tensor, length: torch.Tensor, ids: torch.Tensor,
               shares: torch.Tensor | None = None) -> None:
        # Pool first, newcomers after, in rank order: a stable sort keeps earlier ones first on ties.
        # Candidates that are not hypotheses have score -inf and sort last; the pool's empty slots too.
        score = torch.cat([self.pool_score, score], dim=1)
        order = score.sort(dim=1, descending=True, stable=True).indices[:, : self.keep]
        self.pool_score = score.gather(1, order)
        self.pool_raw = torch.cat([self.pool_raw, raw], dim=1).gather(1, order)
        self.pool_len = torch.cat([self.pool_len, length], dim=1).gather(1, order)
        by_order = order.unsqueeze(2).expand(-1, -1, self.max_len)
        self.pool_ids = torch.cat([self.pool_ids, ids], dim=1).gather(1, by_order)
        if self.pool_shares is not None and shares is not None:
            self.pool_shares = torch.cat([self.pool_shares, shares], dim=1).gather(1, by_order)

    def _merge_open(self, short: torch.Tensor) -> None:
        """Too few finished (``short``, (size,)): the open beams join the pool, scored over the tokens they have."""
        raw = self.scores.double().masked_fill(~short.unsqueeze(1), float("-inf"))
        self._merge(raw / max(self.steps, 1) ** self.alpha, raw,
                    torch.full_like(self.pool_len[:, :1], self.steps).expand(-1, self.beam), self.history, self.shares)

    def _ended(self) -> torch.Tensor:
        """(size,) True for an example that takes no more hypotheses."""
        return self.done | torch.isinf(self.scores).all(dim=1)

    def all_done(self) -> bool:
        return bool(self._ended().all())

    def worth_compacting(self) -> bool:
        return _worth_compacting(self._ended())

    def compact(self) -> torch.Tensor:
        """Drop the examples that have ended (their pools are final: an ended example merges nothing
        more, not even in ``results``); returns the kept ones' indices among the current examples."""
        self._save_pools()
        ended = self._ended()
        kept = (~ended).nonzero().squeeze(1)
        for name in ("scores", "history", "done", "finished", "pool_score", "pool_raw", "pool_len", "pool_ids",
                     "live", "shares", "pool_shares"):
            if getattr(self, name) is not None:
                setattr(self, name, getattr(self, name).index_select(0, kept))
        self.size = len(kept)
        self.rows = self.rows[: self.size]
        return kept

    def _save_pools(self) -> None:
        for final, pool in zip(self.final, self._pools()):
            final.index_copy_(0, self.live, pool)

    def results(self) -> list[list[Hypothesis]]:
        self._merge_open(self.finished < self.keep)  # too few finished: the open beams fill the list
        self._save_pools()
        return _hypotheses(self.final, self.keep)


def _hypotheses(pools: list[torch.Tensor], keep: int) -> list[list[Hypothesis]]:
    """Per example, the pools' (score, log-prob, length, ids[, copy shares]) as hypotheses, best first."""
    score, log_prob, length, ids = (t.tolist() for t in pools[:4])
    shares = pools[4].tolist() if len(pools) > 4 else None
    out = []
    for row in range(len(score)):
        out.append([Hypothesis(ids[row][k][: length[row][k]], score[row][k], log_prob[row][k],
                               copy_shares=shares[row][k][: length[row][k]] if shares is not None else None)
                    for k in range(keep) if log_prob[row][k] > float("-inf")])
    return out


@torch.inference_mode()
def forced_token_log_probs(model: torch.nn.Module, batch: Batch) -> list[list[float]]:
    """Per example, the log-probability of each token of its gold target (``batch.tgt``, EOS
    included) under teacher forcing: one batched pass over the step function."""
    assert batch.tgt is not None, "forced scoring needs targets"
    tgt = batch.tgt  # (batch, tgt_len)
    state = model.start(batch)
    prev = torch.full((tgt.size(0),), BOS_ID, dtype=torch.long, device=tgt.device)
    steps = []
    for t in range(tgt.size(1)):
        log_probs, state, _ = model.step(prev, state)  # (batch, extended)
        gold = tgt[:, t]  # (batch,)
        steps.append(log_probs.float().gather(1, gold.clamp_max(log_probs.size(1) - 1).unsqueeze(1)).squeeze(1))
        prev = gold.masked_fill(gold == PAD_ID, EOS_ID)
    picked = torch.stack(steps, dim=1).tolist()  # (batch, tgt_len)
    lengths = (tgt != PAD_ID).sum(dim=1).tolist()  # (batch,) target tokens incl. EOS
    return [row[:n] for row, n in zip(picked, lengths)]


def forced_scores(model: torch.nn.Module, batch: Batch, alpha: float = 1.0) -> list[float]:
    """Per example, the length-normalised log-probability of its gold target: the score a beam
    search would give it (``normalise`` over the tokens incl. EOS)."""
    return [normalise(sum(row), len(row), alpha) for row in forced_token_log_probs(model, batch)]
