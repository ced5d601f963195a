"""The beam search as it was before its bookkeeping moved into tensors: a loop over rows with a
host read per step. Kept as the oracle that ``qgen.decode.beam_search`` must match exactly."""
from __future__ import annotations

import torch

from qgen.decode import Hypothesis, _expand, _reorder, block_repeat, normalise, unexpanded_keys
from qgen.model.batch import Batch
from qgen.model.vocab import BOS_ID, EOS_ID


@torch.inference_mode()
def reference_beam_search(model: torch.nn.Module, batch: Batch, beam: int = 4, max_len: int = 40, alpha: float = 1.0,
                num_return: int = 1, no_repeat: bool = False) -> list[list[Hypothesis]]:
    """Batched beam search; per example the ``num_return`` best finished hypotheses, best first.

    ``no_repeat`` forbids a token right after itself, in every beam (``block_repeat``).
    Scores are length-normalised (``normalise``) when hypotheses are compared at the end; during
    the search the beam keeps the ``beam`` best partial sums, as usual. A hypothesis is finished when
    it emits EOS among the ``beam`` best candidates; an example stops once its best candidate is
    an EOS; if too few finish within ``max_len`` the best open beams fill the list.
    """
    size = len(batch)
    # What the model keeps one per example (a factored memory's encoder states) is never reordered.
    shared = unexpanded_keys(model)
    state = _expand(model.start(batch), size, beam, batch.src.device, shared)
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
        state = _reorder(state, flat, shared)
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
