"""Pairs written as a user of another knowledge base writes a query: short relation names, no
boilerplate filters (from WebQSP), and one-hop entity queries (from WikiSQL).

WebQSP writes a relation as a Freebase path (``ns:people.person.place_of_birth``, tokens ``ns people .
person . place _ of _ birth``); DBpedia and schema.org write one short local name under a prefix
(``dbo:birthPlace``, tokens ``dbo birth place``). A model that has only seen the long paths reads a
short relation as noise ("who played berlin dbo leader ?" for ``dbr:Berlin dbo:leader ?x``). Showing
it each WebQSP pair once more with every relation reduced to its last path segment under a common
prefix (``dbo place of birth``), with the same question, teaches it that the relation's words, not
the path's shape, carry the meaning. Every WebQSP query also carries two filters that say nothing of
the question (``FILTER (?x != <topic>)`` and the isLiteral/lang filter), which hand-written queries
lack; the rewritten pair drops them, and ``DISTINCT`` half of the time. The tokens are those the
tokenizer gives the rewritten query (``tests/qgen/test_short_relations.py`` checks this against the
real parser).

WebQSP's questions rarely repeat their relation's words, so the model above learns to read a short
relation but seldom to say it ("what type of berlin did berlin offer ?" for ``dbo:leader``). WikiSQL's
questions name their selected column most of the time, and its simplest queries are one-hop entity
queries: ``SELECT nationality WHERE player = 'terrence ross'`` asks for the ``nationality`` of the
entity ``terrence ross``. Written as ``SELECT ?x WHERE { ent: terrence ross dbo nationality ?x }`` with
the same question, they teach the model to say a relation it reads. Only queries without an
aggregate and with one equality on a value with letters qualify; the condition's column is dropped
(it names the entity's type, which the question rarely says).
"""
from __future__ import annotations

import random
from typing import Sequence

from qgen.data import Pair

FREEBASE_PREFIX = "ns"
# Prefixes that public knowledge bases' short relation names are written under (DBpedia ontology and
# properties, schema.org, FOAF, and the usual example prefixes).
SHORT_PREFIXES = ("dbo", "dbp", "schema", "foaf", "ex", "prop", "onto", "kb")
SEPARATORS = (".", "_")
# What follows a relation in a triple (its object): a variable, an entity, a literal.
OBJECT_STARTS = ("?", "ent:", '"', "'", "<")


def _is_word(token: str) -> bool:
    return token not in SEPARATORS and token not in OBJECT_STARTS and token[:1].isalnum()


def _relation_end(tokens: Sequence[str], start: int) -> int:
    """Index just past the Freebase relation whose words begin at ``start`` (after ``ns``)."""
    end = start + 1
    while end + 1 < len(tokens) and tokens[end] in SEPARATORS and _is_word(tokens[end + 1]):
        end += 2
    return end


def shorten_relations(tokens: Sequence[str], rng: random.Random, prefixes: Sequence[str] = SHORT_PREFIXES) -> list[str]:
    """``ns people . person . place _ of _ birth`` -> ``dbo place of birth`` for every relation of a
    tokenized Freebase query (one prefix drawn per query); other tokens are kept as they are."""
    prefix = rng.choice(prefixes)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] == FREEBASE_PREFIX and i + 1 < len(tokens) and _is_word(tokens[i + 1]):
            end = _relation_end(tokens, i + 1)
            segment = list(tokens[i + 1:end])
            dots = [k for k, t in enumerate(segment) if t == "."]
            last = segment[dots[-1] + 1:] if dots else segment
            out += [prefix, *(t for t in last if t != "_")]
            i = end
        else:
            out.append(tokens[i])
            i += 1
    return out


# The opening tokens of WebQSP's two boilerplate filters: ``FILTER (?x != ns:m...)`` and
# ``FILTER (!isLiteral(?x) OR lang(?x) = '' OR langMatches(lang(?x), 'en'))``.
BOILERPLATE_FILTERS = (("filter", "(", "?", "x", "!", "="), ("filter", "(", "!", "is", "literal", "("))


def drop_boilerplate(tokens: Sequence[str], drop_distinct: bool) -> list[str]:
    """The tokens without WebQSP's two boilerplate filters (and without ``distinct`` if asked)."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if any(tuple(tokens[i:i + len(opening)]) == opening for opening in BOILERPLATE_FILTERS):
            depth, i = 0, i + 1
            while i < len(tokens):  # skip to the filter's closing parenthesis
                depth += {"(": 1, ")": -1}.get(tokens[i], 0)
                i += 1
                if depth == 0:
                    break
            continue
        if not (drop_distinct and tokens[i] == "distinct" and out[-1:] == ["select"]):
            out.append(tokens[i])
        i += 1
    return out


def short_relation_pairs(pairs: Sequence[Pair], seed: int = 1) -> list[Pair]:
    """Each pair again with its relations shortened and its boilerplate dropped (``<id>#short``; the same
    question and group), for the pairs that change; the others are left out."""
    rng = random.Random(seed)
    out = []
    for pair in pairs:
        short = drop_boilerplate(shorten_relations(pair.src, rng), drop_distinct=rng.random() < 0.5)
        if short != list(pair.src):
            out.append(Pair(f"{pair.id}#short", short, list(pair.tgt), pair.group))
    return out


def entity_query_tokens(sql: Sequence[str], prefix: str) -> list[str] | None:
    """``select nationality from table where player = ' terrence ross '`` -> ``select ? x where { ent:
    terrence ross dbo nationality ? x }``; None where the query is not a one-hop entity query (an
    aggregate, several conditions, another operator, a value without letters)."""
    tokens = list(sql)
    if tokens[:1] != ["select"] or "from" not in tokens or "where" not in tokens:
        return None
    column = tokens[1:tokens.index("from")]
    condition = tokens[tokens.index("where") + 1:]
    if "(" in column or "=" not in condition or condition[-1:] != ["'"]:
        return None
    value = condition[condition.index("=") + 1:]
    if value[:1] != ["'"] or "'" in value[1:-1]:  # another condition follows the first value
        return None
    words = [t for t in column if t.isalnum()]
    entity = value[1:-1]
    if not words or not any(ch.isalpha() for t in entity for ch in t):
        return None
    return ["select", "?", "x", "where", "{", "ent:", *entity, prefix, *words, "?", "x", "}"]


def entity_query_pairs(pairs: Sequence[Pair], seed: int = 1) -> list[Pair]:
    """The one-hop entity queries among WikiSQL pairs, written as SPARQL (``<id>#entity``; the same
    question and group); the other pairs are left out."""
    rng = random.Random(seed)
    out = []
    for pair in pairs:
        tokens = entity_query_tokens(pair.src, rng.choice(SHORT_PREFIXES))
        if tokens is not None:
            out.append(Pair(f"{pair.id}#entity", tokens, list(pair.tgt), pair.group))
    return out
