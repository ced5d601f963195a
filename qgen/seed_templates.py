"""Template augmentation for adapting to a new domain: a user's few seed pairs lend their questions'
wording to the domain's many logical forms that have no question yet.

A seed pair becomes a template when the parts of its logical form that its question says word for word
(column names, values) can be cut out of the question:

    select nationality from table where player = ' terrence ross '
    what is terrence ross ' nationality              ->   what is <3> ' <0>

A logical form of the same shape (the same syntax, and the same words wherever the seed's question
does not say them: here ``table`` and ``player``) fills the template with its own words:

    select position from table where player = ' bob smith '   ->   what is bob smith ' position

Why a part the question leaves unsaid must match exactly: "where was assen held ?" asks for a round
(``select round ... where circuit = 'assen'``) without saying either column; the template carries that
reading, so it only fits a form that asks the same columns. A part the question says in part
("which club ..." for the column ``school / club team``) makes no template: the rest of its words would
stay behind, wrong, in every filled question.
"""
from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from qgen.data import Pair

# The tokens that make an SQL logical form's shape (qgen.parse's lower-cased SQL tokens); every other run
# of tokens (a column name, a table name) is a part a question may say, and so is all that stands between
# quotes (a value, whatever words it holds). Few words count as syntax, since column names hold words like
# "in", "by" or "count" ("years in toronto"): an aggregate only before "(", and words such as "order by"
# simply join a run, which a question seldom says, so a form must then match it word for word.
SQL_SYNTAX = frozenset({"select", "from", "where", "and", "(", ")", "=", ">", "<", ">=", "<=", "!=", "<>", "*"})
AGGREGATES = frozenset({"count", "max", "min", "sum", "avg"})
QUOTES = frozenset({"'", '"'})
# Words that say nothing of a part, so a question may share them with a part it does not say.
FUNCTION_WORDS = frozenset({"/", "-", ".", ",", "of", "the", "in", "a", "an", "for", "to", "and", "&"})


@dataclass(frozen=True)
class Template:
    shape: tuple[str, ...]  # the syntax, with every part a placeholder
    fixed: tuple[tuple[str, ...] | None, ...]  # per part: its words where the question leaves it unsaid
    pieces: tuple[tuple[str, ...] | int, ...]  # the question: word runs and part numbers
    seed_id: str


def parts(lf_tokens: Sequence[str], syntax: frozenset[str] = SQL_SYNTAX) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The logical form's shape (syntax tokens, ``<part>`` for each part) and its parts."""
    shape: list[str] = []
    found: list[tuple[str, ...]] = []
    run: list[str] = []

    def close_run() -> None:
        if run:
            found.append(tuple(run))
            shape.append("<part>")
            run.clear()

    tokens, at = list(lf_tokens), 0
    while at < len(tokens):
        token = tokens[at]
        closing = tokens.index(token, at + 1) if token in QUOTES and token in tokens[at + 1:] else None
        if closing is not None:  # a quoted value: one part, keywords and all
            close_run()
            shape.append(token)
            if closing > at + 1:
                found.append(tuple(tokens[at + 1:closing]))
                shape.append("<part>")
            shape.append(token)
            at = closing + 1
            continue
        if token in syntax or (token in AGGREGATES and tokens[at + 1:at + 2] == ["("]):
            close_run()
            shape.append(token)
        else:
            run.append(token)
        at += 1
    close_run()
    return tuple(shape), found


def _occurrences(words: Sequence[str], run: Sequence[str]) -> list[int]:
    n = len(run)
    return [i for i in range(len(words) - n + 1) if tuple(words[i:i + n]) == tuple(run)]


def template(pair: Pair, syntax: frozenset[str] = SQL_SYNTAX) -> Template | None:
    """The seed pair as a template, or None when no part is said once and whole, a part is said twice or
    in part, or two said parts overlap in the question."""
    shape, found = parts(pair.src, syntax)
    question = list(pair.tgt)
    spans, fixed = [], []
    for number, run in enumerate(found):
        where = _occurrences(question, run)
        if len(where) > 1:
            return None
        if where:
            spans.append((where[0], where[0] + len(run), number))
            fixed.append(None)
        elif set(run) & set(question) - FUNCTION_WORDS:
            return None
        else:
            fixed.append(run)
    if not spans:
        return None
    spans.sort()
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None
    pieces, at = [], 0
    for start, end, number in spans:
        if start > at:
            pieces.append(tuple(question[at:start]))
        pieces.append(number)
        at = end
    if at < len(question):
        pieces.append(tuple(question[at:]))
    return Template(shape, tuple(fixed), tuple(pieces), pair.id)


def fits(template_: Template, shape: tuple[str, ...], found: Sequence[tuple[str, ...]]) -> bool:
    return template_.shape == shape and all(f is None or f == run for f, run in zip(template_.fixed, found))


def fill(template_: Template, found: Sequence[tuple[str, ...]]) -> list[str]:
    words: list[str] = []
    for piece in template_.pieces:
        words.extend(found[piece] if isinstance(piece, int) else piece)
    return words


def augment(seeds: Iterable[Pair], logical_forms: Iterable[Pair], seed: int = 1, per_form: int = 1,
            syntax: frozenset[str] = SQL_SYNTAX) -> list[Pair]:
    """Up to ``per_form`` pairs per logical form that some seed's template fits (templates drawn at random,
    without repeats, among those that fit), each question a filled template; ``logical_forms``' own ``tgt``
    is ignored. The new pairs' ids are the forms' ids; their groups are the forms' groups."""
    by_shape: dict[tuple[str, ...], list[Template]] = defaultdict(list)
    for pair in seeds:
        made = template(pair, syntax)
        if made is not None:
            by_shape[made.shape].append(made)
    rng, out = random.Random(seed), []
    for form in logical_forms:
        shape, found = parts(form.src, syntax)
        fitting = [t for t in by_shape.get(shape, ()) if fits(t, shape, found)]
        for chosen in rng.sample(fitting, min(per_form, len(fitting))):
            out.append(Pair(form.id, list(form.src), fill(chosen, found), form.group))
    return out
