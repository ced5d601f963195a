"""OverCopy ("Question Generation using a Scratchpad Encoder", appendix B, Eq. 17-19), and the
repetition counts the synthesis filter uses.

Per generated sentence, Eq. 17-19 sum over word types ``w`` the excess count
``max(count_gen(w) - count_ref(w), 0)``; the metric is the mean over the corpus. The paper writes
the difference as ``count_ref(w) - count_gen(w)``, but over-copying means the *generated* sentence
holds a word more often than the reference, so this module uses ``gen - ref`` (with the paper's
order a sentence that copies "the" three times against a reference's one would score 0).

Readings reported beside each other (qgen.benchmark, the results tables): :func:`overcopy` (the
equations over every word type, the over-copying direction) and :func:`overcopy_duplicates` (the
copy-specific reading: duplicates of logical-form words beyond the reference's count, at least one);
:func:`overcopy_source` and :func:`overcopy_literal` (the paper's literal ``ref - gen``) are kept in
metrics.json.

Multi-reference: ``count_ref(w)`` is the largest count of ``w`` in any one reference (the clipping
count of BLEU's modified precision), so a repetition is excess only if no reference has it.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from qgen.metrics.corpus import References, Tokens, align, mean, token_list


def excess_count(generated: Counter[str], allowed: Counter[str], words: Iterable[str] | None = None) -> int:
    """``sum_w max(generated[w] - allowed[w], 0)`` over ``words`` (default: every generated word)."""
    keys = generated.keys() if words is None else words
    return sum(max(generated[w] - allowed[w], 0) for w in keys)


def _reference_counts(group: Sequence[Sequence[str]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for ref in group:
        counts |= Counter(ref)  # element-wise max
    return counts


def overcopy_sentence(generated: Tokens, reference: Tokens | Sequence[Tokens]) -> int:
    """Eq. 17-19 for one sentence: total excess of generated word counts over the reference's."""
    hyps, refs = align([generated], [reference])
    return excess_count(Counter(hyps[0]), _reference_counts(refs[0]))


def overcopy_scores(generated: Sequence[Tokens], references: References) -> list[int]:
    """OverCopy of each generated sentence (a count of excess tokens, >= 0)."""
    hyps, refs = align(generated, references)
    return [excess_count(Counter(h), _reference_counts(group)) for h, group in zip(hyps, refs)]


def overcopy(generated: Sequence[Tokens], references: References) -> float:
    """Corpus OverCopy: the mean of :func:`overcopy_scores`."""
    return mean(overcopy_scores(generated, references))


def _content_words(source: Sequence[str]) -> set[str]:
    """The source's word types that hold a letter or digit (``?``, ``(``, ``.`` are syntax, not words)."""
    return {t for t in source if any(c.isalnum() for c in t)}


def overcopy_source_scores(generated: Sequence[Tokens], references: References,
                           sources: Sequence[Tokens]) -> list[int]:
    """Eq. 17-19 restricted to the word types of each sentence's source (logical form) tokens.

    Not in the paper: an aid to reading :func:`overcopy`. That sum also counts rewordings ("is" for
    "does") as excess, so it mixes paraphrase with copying; restricted to words the model could have
    copied from its input (entity names, relation words), it isolates repeated or surplus copies such
    as "james james polk polk". Source words are those holding a letter or digit.
    """
    hyps, refs = align(generated, references)
    if len(sources) != len(hyps):
        raise ValueError(f"{len(hyps)} hypotheses but {len(sources)} sources: one source per hypothesis")
    return [excess_count(Counter(h), _reference_counts(group), _content_words(token_list(src, f"source {i}")))
            for i, (h, group, src) in enumerate(zip(hyps, refs, sources))]


def overcopy_source(generated: Sequence[Tokens], references: References, sources: Sequence[Tokens]) -> float:
    """Corpus mean of :func:`overcopy_source_scores`."""
    return mean(overcopy_source_scores(generated, references, sources))


def overcopy_duplicates_scores(generated: Sequence[Tokens], references: References,
                               sources: Sequence[Tokens]) -> list[int]:
    """The copy-specific reading of Eq. 17-19: duplicates of logical-form words beyond the reference.

    Per sentence ``sum_{w in LF words} max(count_gen(w) - max(count_ref(w), 1), 0)``: a word of the
    logical form (one holding a letter or digit) counts once it appears more often than the reference
    has it, and never for its first occurrence, so a copied name the reference words differently is not
    excess (as it is in :func:`overcopy_source`) while "james james polk polk" is 2. Not the paper's
    wording, which sums over every word type; on our WebQSP predictions it is the reading that reaches
    the magnitude of the paper's figures (its Copynet: 0.66).
    """
    hyps, refs = align(generated, references)
    if len(sources) != len(hyps):
        raise ValueError(f"{len(hyps)} hypotheses but {len(sources)} sources: one source per hypothesis")
    scores = []
    for i, (h, group, src) in enumerate(zip(hyps, refs, sources)):
        words = _content_words(token_list(src, f"source {i}"))
        allowed = _reference_counts(group)
        floor = Counter({w: max(allowed[w], 1) for w in words})
        scores.append(excess_count(Counter(h), floor, words))
    return scores


def overcopy_duplicates(generated: Sequence[Tokens], references: References, sources: Sequence[Tokens]) -> float:
    """Corpus mean of :func:`overcopy_duplicates_scores`."""
    return mean(overcopy_duplicates_scores(generated, references, sources))


def overcopy_literal_scores(generated: Sequence[Tokens], references: References) -> list[int]:
    """Eq. 17-19 with the paper's literal order, ``sum_w max(count_ref(w) - count_gen(w), 0)``: the
    reference's words the generated sentence holds fewer times (missing words, not surplus ones).
    Kept in metrics.json for the record; :func:`overcopy_scores` is the over-copying direction."""
    hyps, refs = align(generated, references)
    return [excess_count(_reference_counts(group), Counter(h)) for h, group in zip(hyps, refs)]


def overcopy_literal(generated: Sequence[Tokens], references: References) -> float:
    """Corpus mean of :func:`overcopy_literal_scores`."""
    return mean(overcopy_literal_scores(generated, references))


def overcopy_against_source(
    generated_tokens: Tokens, source_tokens: Tokens, copyable: set[str] | None = None
) -> int:
    """Excess copies relative to the logical form, for the synthesis filter.

    ``sum_{w in C} max(count_question(w) - count_source(w), 0)`` where ``C`` is ``copyable`` (e.g. the
    entity-name tokens) or, when ``None``, every token of the source: a word the question holds more
    often than the logical form offers it was copied more than once (or generated on top of a copy).
    """
    question = token_list(generated_tokens, "generated_tokens")
    source = token_list(source_tokens, "source_tokens")
    words = set(source) if copyable is None else copyable
    return excess_count(Counter(question), Counter(source), words)


def repeated_ngrams(tokens: Tokens, n_min: int = 2, n_max: int | None = None) -> int:
    """The number of distinct n-grams (``n_min <= n <= n_max``, default up to the length) that occur
    more than once in ``tokens``, overlapping occurrences included (``a a a`` repeats ``a a``)."""
    if n_min < 1:
        raise ValueError(f"n_min must be >= 1, got {n_min}")
    words = token_list(tokens, "tokens")
    top = len(words) - 1 if n_max is None else min(n_max, len(words) - 1)
    total = 0
    for n in range(n_min, top + 1):
        counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
        repeats = sum(1 for c in counts.values() if c > 1)
        if repeats == 0:
            break  # no repeated n-gram means no repeated longer one either
        total += repeats
    return total


def immediate_repeat_share(questions: Sequence[Tokens]) -> float:
    """The share of questions that hold some word twice in a row ("who is is ?"); 0 for none."""
    lists = [token_list(q, f"question {i}") for i, q in enumerate(questions)]
    return sum(any(a == b for a, b in zip(q, q[1:])) for q in lists) / max(len(lists), 1)
