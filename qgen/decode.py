"""Decoding over the step function: greedy and batched beam search with length normalisation.

Both work with any model that has ``start(batch) -> state`` and ``step(prev, state)`` with a
batch-first state, so beams are reordered with ``{k: v[idx] for k, v in state.items()}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from qgen.model.batch import Batch
from qgen.model.vocab import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Hypothesis:
    ids: list[int]  # without BOS and EOS
    score: float  # length-normalised log-probability
    log_prob: float  # total log-probability
    attns: dict[str, list[torch.Tensor]] = field(default_factory=dict)  # per step, (src_len,) each


def _reorder(state: dict[str, torch.Tensor], index: torch.Tensor) -> dict[str, torch.Tensor]:
    return {k: v.index_select(0, index) for k, v in state.items()}


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
    """The most probable token at every step; ``no_repeat`` forbids a token right after itself."""
    state = model.start(batch)
    size = len(batch)
    prev = torch.full((size,), BOS_ID, dtype=torch.long, device=batch.src.device)
    done = torch.zeros(size, dtype=torch.bool, device=prev.device)
    total = torch.zeros(size, device=prev.device)
    steps: list[torch.Tensor] = []
    attn_steps: list[dict[str, torch.Tensor]] = []
    for _ in range(max_len):
        log_probs, state, attns = model.step(prev, state)
        if no_repeat:
            log_probs = block_repeat(log_probs, prev)
        best, prev = log_probs.max(dim=1)
        total = total + best.masked_fill(done, 0.0)
        steps.append(prev.masked_fill(done, EOS_ID))
        if keep_attention:
            attn_steps.append({k: v.detach().float().cpu() for k, v in attns.items() if k in ("read", "copy", "p_gen")})
        done = done | (prev == EOS_ID)
        if bool(done.all()):
            break
    ids = torch.stack(steps, dim=1).tolist()  # (batch, steps)
    out = []
    for row, seq in enumerate(ids):
        length = seq.index(EOS_ID) if EOS_ID in seq else len(seq)
        hyp = Hypothesis(seq[:length], normalise(float(total[row]), length + 1, alpha), float(total[row]))
        if keep_attention:
            hyp.attns = {k: [a[k][row] for a in attn_steps[: length + 1]] for k in attn_steps[0]} if attn_steps else {}
        out.append(hyp)
    return out


@torch.inference_mode()
def beam_search(model: torch.nn.Module, batch: Batch, beam: int = 4, max_len: int = 40, alpha: float = 1.0,
                num_return: int = 1, no_repeat: bool = False) -> list[list[Hypothesis]]:
    """Batched beam search; per example the ``num_return`` best finished hypotheses, best first.

    ``no_repeat`` forbids a token right after itself, in every beam (``block_repeat``).
    Scores are length-normalised (``normalise``) when hypotheses are compared at the end; during
    the search the beam keeps the ``beam`` best partial sums, as usual. A hypothesis is finished when
    it emits EOS among the ``beam`` best candidates; an example stops once its best candidate is
    an EOS; if too few finish within ``max_len`` the best open beams fill the list.
    """
    size = len(batch)
    state = _reorder(model.start(batch), torch.arange(size, device=batch.src.device).repeat_interleave(beam))
    device = batch.src.device
    prev = torch.full((size * beam,), BOS_ID, dtype=torch.long, device=device)
    scores = torch.full((size, beam), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: only the first may expand at step 1
    history = torch.zeros(size * beam, 0, dtype=torch.long, device=device)
    finished: list[list[Hypothesis]] = [[] for _ in range(size)]
    done = [False] * size
    for step in range(max_len):
        log_probs, state, _ = model.step(prev, state)  # (size * beam, extended)
        if no_repeat:
            log_probs = block_repeat(log_probs, prev)
        vocab = log_probs.size(1)
        candidates = (scores.view(-1, 1) + log_probs.float()).view(size, beam * vocab)
        top_scores, top_index = candidates.topk(2 * beam, dim=1)  # spare ones replace finished beams
        origin = top_index // vocab  # (size, 2 * beam)
        token = top_index % vocab
        new_scores = torch.full((size, beam), float("-inf"), device=device)
        new_origin = torch.zeros(size, beam, dtype=torch.long, device=device)
        new_token = torch.full((size, beam), EOS_ID, dtype=torch.long, device=device)
        top_scores_l, origin_l, token_l = top_scores.tolist(), origin.tolist(), token.tolist()
        for row in range(size):
            if done[row]:
                continue
            kept = 0
            for rank, (score, src_beam, tok) in enumerate(zip(top_scores_l[row], origin_l[row], token_l[row])):
                if score == float("-inf"):
                    break
                if tok == EOS_ID:
                    if rank < beam:  # an EOS among the beam best finishes a hypothesis
                        seq = history[row * beam + src_beam].tolist()
                        finished[row].append(Hypothesis(seq, normalise(score, len(seq) + 1, alpha), score))
                    continue
                if kept < beam:
                    new_scores[row, kept], new_origin[row, kept], new_token[row, kept] = score, src_beam, tok
                    kept += 1
            # OpenNMT-py's rule: a row is done once its best candidate ends (and enough have ended).
            if token_l[row][0] == EOS_ID and len(finished[row]) >= num_return:
                done[row] = True
                new_scores[row] = float("-inf")
        flat = (torch.arange(size, device=device).unsqueeze(1) * beam + new_origin).view(-1)
        state = _reorder(state, flat)
        history = torch.cat([history.index_select(0, flat), new_token.view(-1, 1)], dim=1)
        scores, prev = new_scores, new_token.view(-1)
        if all(done) or bool(torch.isinf(scores).all()):
            break
    results = []
    for row in range(size):
        pool = list(finished[row])
        if len(pool) < num_return:  # nothing (or too little) finished: take the best open beams
            for b in range(beam):
                score = float(scores[row, b])
                if score > float("-inf"):
                    seq = history[row * beam + b].tolist()
                    pool.append(Hypothesis(seq, normalise(score, len(seq), alpha), score))
        pool.sort(key=lambda h: h.score, reverse=True)
        results.append(pool[:num_return])
    return results


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
