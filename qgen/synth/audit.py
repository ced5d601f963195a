"""The faithfulness audit: rule checks of a (logical form, question) pair that need no model.

A metric, not a filter: the dataset card and the downstream table report the share of kept pairs
that pass. A pair passes when its question
- holds every condition value and entity name of the logical form (as tokens, in order; the last word
  may be plural, and a number is one however it is written: "4,327,642", "126" for 126.0);
- states each comparison with a word of the right direction (``COMPARISON_WORDS``: "more", "over",
  "after", ... for ``>``; "less", "under", "before", ... for ``<``; ``KIND_COMPARATIVES`` through the
  compared attribute's kind: "older" is ``>`` for an age, ``<`` for a date), and none of the other
  direction only; "at least" / "at most" compare and state no superlative; at the compared value, strict or
  inclusive as the query is ("more than 5" is not ``>= 5``, "5 or more" not ``> 5``, "no more than 5" is ``<= 5``);
- states each aggregate (``AGGREGATE_WORDS``: "how many" / "number of" for COUNT, "total" for SUM,
  "average" for AVG, a superlative for MAX / MIN and for SPARQL's ``ORDER BY ... LIMIT 1``);
- says how many an ordered query asks for when it asks for more than one (``ORDER BY ... LIMIT 5``: "the 5
  tallest", "the top five");
- says a superlative that fits what is ordered and which way (``SUPERLATIVES``): the largest birth
  date is the youngest person, not the tallest; where the ordered attribute's words name no kind
  there, only the plain words' direction is checked ("lowest" is not MAX), and rank-like attributes
  (smaller is better) are not checked;
- says nothing the query lacks: no direction at a value it tests with ``=`` ("over 142" for ``"Area" =
  142``), no superlative when it orders nothing (no MAX, MIN or ORDER BY; a column's own word aside: "the
  most points" for "High points"), no "average" / "sum" without AVG / SUM, no "how many" for a SPARQL query
  that lists its answers (no COUNT, no quantity relation: ``QUANTITY_WORDS``), no sibling of an attribute the
  query names instead of it ("home" for "Away team"); and a negation for SQL's ``!=`` and SPARQL's ``NOT
  EXISTS`` / ``MINUS`` (not a validity test's: "NOT EXISTS {?y ns:marriage.to []}" is said by tense).
  An entity whose name is unknown (``<e0>``) is not asked for; a SPARQL date's year is (``_dated_years``).

SQL is read with sqlglot (the statement's conditions and aggregate); SPARQL from its tokens: entity
names follow ``ent:`` up to the next punctuation or prefix token, plain string literals that a triple or
an equality FILTER asks for are values too (``_condition_literals``), comparisons are ``<`` / ``>``
inside a FILTER but outside ``EXISTS { ... }`` (a validity condition, said by tense), ``COUNT`` and
``ORDER BY ... LIMIT 1`` are the aggregates. The lexicons are small
and English; a question can pass them and still be wrong, so the audit bounds errors from below.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from parsers.errors import LogicalFormError
from parsers.sparql.escapes import expand_codepoint_escapes
from parsers.sparql.lexer import Token, code_tokens, lex, string_content
from parsers.sparql.prefixes import WELL_KNOWN_PREFIXES
from parsers.tokens import nl_tokens

COMPARISON_WORDS = {
    ">": {"more", "greater", "over", "above", "after", "larger", "higher", "bigger", "exceeding", "exceeds",
          "later", "longer", "since", "beyond", "least"},  # "at least" (>=)
    "<": {"less", "fewer", "under", "below", "before", "smaller", "lower", "earlier", "shorter", "prior",
          "most", "within", "beneath"},  # "at most" (<=)
}
# Words that state a comparison wherever they stand; a question holding one for a query without a
# comparison says something else ("built after 2011" for "Year built" = 2011). Words of the query
# itself (a column named "Higher", a value "Before Sunset") are not counted.
SPURIOUS_COMPARISON_WORDS = {"more", "greater", "fewer", "less", "after", "before", "above", "below", "larger",
                             "smaller", "exceeding", "exceeds"}
_AT_WORDS = {">": "least", "<": "most"}  # "at least" / "at most": direction only after "at"
# Comparatives whose direction depends on the compared attribute (its kind, read as for superlatives):
# kind -> (words for ">", words for "<"). "older than 30" is ``age > 30`` but ``birth date < 1990``; for an
# attribute of no kind here these words count for neither direction.
KIND_COMPARATIVES = {
    "age": ({"older", "elder"}, {"younger"}),
    "time": ({"younger", "newer"}, {"older"}),
    "height": ({"taller"}, {"shorter"}),
}
AGGREGATE_WORDS = {
    "count": ({"many", "number", "count", "numbers"}, ()),
    "sum": ({"total", "sum", "combined", "altogether", "overall"}, ()),
    "avg": ({"average", "mean", "avg"}, ()),
    "max": ({"most", "maximum", "max", "top", "highest", "largest", "biggest", "greatest", "latest", "last",
             "best", "longest", "oldest", "youngest", "newest", "first", "earliest", "least", "lowest",
             "smallest", "minimum"}, ("est",)),
    "min": ({"least", "minimum", "min", "lowest", "smallest", "fewest", "earliest", "first", "last",
             "shortest", "youngest", "oldest", "newest", "latest", "most", "highest", "largest"}, ("est",)),
    "superlative": ({"most", "least", "first", "last", "top", "maximum", "minimum"}, ("est",)),
}
_SQL_AGGREGATES = {"Count": "count", "Sum": "sum", "Avg": "avg", "Max": "max", "Min": "min"}
# Superlatives by the kind of attribute they order: kind -> (words for its largest value, for its
# smallest). "plain" words fit any attribute; a kind's own words fit only it (a question saying
# "tallest" for the latest birth date states another attribute). A kind is recognised by the
# attribute's words (``KIND_WORDS``); "first" and "last" count for time only ("first name" not at all).
SUPERLATIVES = {
    "plain": ({"highest", "largest", "biggest", "greatest", "most", "maximum", "max", "maximal", "top"},
              {"lowest", "smallest", "fewest", "least", "minimum", "min", "minimal"}),
    "height": ({"tallest", "highest"}, {"shortest", "lowest"}),
    "time": ({"latest", "newest", "youngest", "last", "recent"}, {"earliest", "oldest", "first"}),
    "age": ({"oldest", "eldest"}, {"youngest"}),
    "length": ({"longest"}, {"shortest"}),
    "weight": ({"heaviest"}, {"lightest"}),
}
KIND_WORDS = {
    "height": {"height", "elevation", "tall"},
    "time": {"date", "datetime", "year", "born", "birth", "birthdate", "founded", "released", "published", "from", "to",
             "start", "end", "opened", "established", "died", "death"},
    "age": {"age"},
    "length": {"length", "duration"},
    "weight": {"weight", "mass"},
}
_COMMON_WORDS = {"first", "last"}  # superlatives of time, but too common to fail a question ("first name")
# Superlatives that a query without MAX, MIN or ORDER BY does not ask ("the highest score" for a plain SELECT);
# "first" / "last" are too common, and "recent" is a superlative only after "most", which counts itself.
UNASKED_SUPERLATIVES = frozenset(w for pair in SUPERLATIVES.values() for side in pair for w in side) - _COMMON_WORDS - {
    "recent"}
# A query's word that a superlative may say: a column "High points" is asked "who had the most points", "Max.
# aperture" "the maximum aperture", "Top-25" "the top 25".
SUPERLATIVES_OF_QUERY_WORDS = {
    "high": {"highest", "most", "top", "max", "maximum"}, "low": {"lowest", "least", "fewest", "min", "minimum"},
    "max": {"maximum", "most", "highest", "largest", "biggest", "greatest"},
    "min": {"minimum", "least", "lowest", "smallest", "fewest"},
    "top": {"top", "highest"}, "long": {"longest"}, "big": {"biggest"}, "large": {"largest"},
    "small": {"smallest"}, "tall": {"tallest"}, "old": {"oldest"}, "young": {"youngest"}, "short": {"shortest"},
    "heavy": {"heaviest"}, "light": {"lightest"},
}
# Words that state an aggregate the query may lack: aggregate -> (its words, the query's words that let them be
# said otherwise: a column "Avg. finish" is asked "the average finish"). Not "how many" or "number": they ask a
# numeric column as well ("how many points did ... score" is ``SELECT "Points"``); nor "total": WikiSQL's people
# say "a total of 53.74" or "21 total laps" of one row's value.
UNASKED_AGGREGATES = {"avg": ({"average"}, {"avg", "average", "averages", "mean"}), "sum": ({"sum"}, {"sum"})}
# A SPARQL query without COUNT lists its answers, so "how many" asks something else, unless the query's relation
# holds a quantity ("how many pages" is ``book.written_work.number_of_pages``, "how many people" a population).
# Not for SQL: "how many points did ... score" is ``SELECT "Points"``.
QUANTITY_WORDS = {"number", "count", "population", "amount", "quantity", "total", "frequency", "size", "capacity",
                  "pages", "height", "weight", "length", "area", "age", "duration", "runtime", "episodes", "seasons",
                  "elevation", "budget", "revenue", "depth", "width", "distance", "mass", "price", "cost", "salary",
                  "temperature", "speed", "volume", "gross", "income", "employees", "attendance", "enrollment",
                  "goals", "points", "votes", "seats", "passengers", "students"}
# Wikidata's numbered properties (wdt:P1082, the population) name nothing: the rule cannot tell a quantity.
_NUMBERED_PROPERTY = re.compile(r"(?:\b(?:wdt|p|ps|pq):P\d+\b|wikidata\.org/prop/)", re.IGNORECASE)
# Attributes that come in sets of siblings (a table's "Home team" and "Away team"): a question that says one of a
# set where the query names another, and not it, asks about the other attribute ("home" for "Away team").
SIBLING_WORDS = [{"home", "away"}, {"gold", "silver", "bronze"}, {"win", "loss", "draw"},
                 {"winner", "loser", "runner-up"}, {"men", "women"}, {"mens", "womens"}, {"male", "female"},
                 {"minimum", "maximum"}, {"min", "max"},
                 {"first", "second", "third"}, {"actor", "director", "writer", "producer"},
                 {"actor", "director", "producer", "composer"},  # a composer "wrote" the song: no writer's sibling
                 {"father", "mother"}, {"son", "daughter"}, {"husband", "wife"}, {"brother", "sister"},
                 {"birth", "death"}, {"for", "against"}]  # "for": only said right after a tally ("points for")
TALLY_WORDS = {"points", "goals", "tries", "runs"}
TALLY_SIDES = {"for", "against"}
# One attribute, said in other forms (plurals, verbs: "directed by" is the director, "died" the death)
_SIBLING_SPELLINGS = {
    "golds": "gold", "silvers": "silver", "bronzes": "bronze", "wins": "win", "won": "win", "winning": "win",
    "losses": "loss", "loses": "loss", "lost": "loss", "lose": "loss", "losing": "loss", "winners": "winner",
    "draws": "draw", "drawn": "draw", "drew": "draw", "runners-up": "runner-up", "1st": "first", "2nd": "second",
    "3rd": "third",
    "losers": "loser", "woman": "women", "man": "men", "actors": "actor", "acted": "actor", "starred": "actor",
    "directors": "director", "directed": "director", "writers": "writer", "written": "writer", "wrote": "writer",
    "producers": "producer", "produced": "producer", "composers": "composer", "composed": "composer",
    "fathers": "father", "mothers": "mother", "sons": "son", "daughters": "daughter", "husbands": "husband",
    "wives": "wife", "brothers": "brother", "sisters": "sister", "born": "birth", "birthplace": "birth",
    "died": "death", "die": "death", "dies": "death", "dead": "death", "lyricist": "writer", "screenplay": "writer",
    "starring": "actor"}
# ... and in a query's relations only (a question's "the new york production" or "the music writer" is no role):
# ``film.film.production_companies`` names the producer, ``film_art_direction_by`` a director
_RELATION_SPELLINGS = {"production": "producer", "direction": "director", "music": "composer", "performance": "actor",
                       "lyrics": "writer", "cast": "actor"}
# Words that say a negation ("other than", "not", "except"): a query's "!=" needs one.
NEGATION_WORDS = {"not", "no", "other", "except", "excluding", "besides", "apart", "aside", "without", "never",
                  "non", "different", "neither", "nor", "isnt", "wasnt", "doesnt", "didnt", "arent", "werent"}
_PLACEHOLDER = re.compile(r"<e\d+>")  # an entity whose name is unknown: nothing a question could say
# Attributes where the smallest value is the best or the first ("rank 1"): "top", "best", "highest
# ranked" may state MIN, so their superlatives are not checked (unless a kind's word names them too:
# Freebase's "government_position_held ... from" is a date).
# Said of a rank ("ranked below 2", "a position higher than 15"), these words give no numeric direction.
RANK_POSITION_WORDS = {"higher", "lower", "above", "below", "over", "under", "before", "after", "better", "worse"}
RANK_WORDS = {"rank", "ranking", "ranked", "position", "place", "pick", "seed", "seeding", "order"}


@dataclass(frozen=True)
class AuditResult:
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


def audit_pair(lf_type: str, logical_form: str, lf_tokens: Sequence[str], question: str) -> AuditResult:
    """Audit one pair (``question``: the generated question as text or space-joined tokens)."""
    return _check(_facts(lf_type, logical_form, lf_tokens), question)


def first_passing(lf_type: str, logical_form: str, lf_tokens: Sequence[str], questions: Sequence[str]) -> int | None:
    """The index of the first of ``questions`` (candidates for one logical form, best first) that
    passes the audit, or None."""
    return next(passing(lf_type, logical_form, lf_tokens, questions), None)


def passing(lf_type: str, logical_form: str, lf_tokens: Sequence[str], questions: Sequence[str]) -> Iterator[int]:
    """The indices of ``questions`` (candidates for one logical form) that pass the audit, in order,
    lazily; the logical form is read once for all of them."""
    facts = _facts(lf_type, logical_form, lf_tokens)
    return (i for i, q in enumerate(questions) if _check(facts, q).passed)


# An ordering: the ordered attribute's words and whether its largest value is asked (MAX, DESC).
_Ordering = tuple[frozenset[str], bool]
# A comparison: its operator (">", "<", ">=", "<="; SPARQL's read ">" or "<"), the compared attribute's words (empty where unknown) and the value
# it is compared with (its words; empty where the query gives none that a question would repeat).
_Comparison = tuple[str, frozenset[str], tuple[str, ...]]
EITHER = "<>"  # a comparison whose direction a question may say either way (two of the query's values compared)
# An equality with a value: the attribute's words and the value's (``"Year" = 2011``).
_Equality = tuple[frozenset[str], tuple[str, ...]]


class _Facts(NamedTuple):
    """What the audit checks of a logical form."""
    values: list[list[str]]  # condition values and entity names, each to be said
    comparisons: list[_Comparison]
    aggregates: list[str]  # "count", "sum", "avg", "max", "min", "superlative" (ORDER BY ... LIMIT 1)
    orderings: list[_Ordering]  # MAX / MIN / ORDER BY ... LIMIT 1
    equalities: Sequence[_Equality] = ()  # a direction said at one of their values states a comparison the query lacks
    negations: int = 0  # conditions the query negates (SQL "!=", SPARQL "NOT EXISTS", "MINUS"): said by a negation
    ordered: bool = False  # whether the query asks a largest or smallest value (MAX, MIN, ORDER BY)
    years: Sequence[tuple[str, bool]] = ()  # years the question must say, each a period's or not (``_dated_years``)
    value_words: frozenset[str] = frozenset()  # the words of the values
    lf_words: frozenset[str] = frozenset()  # the query's words: its tokens, its text's and its values'
    limit: int = 0  # k of an ordered query's LIMIT k > 1 ("the 5 largest"): the question must say how many
    # SPARQL whose answers are listed (no numbered property) and whose relations hold no quantity
    # (``QUANTITY_WORDS``): "how many" asks a COUNT it lacks
    lists: bool = False


def _facts(lf_type: str, logical_form: str, lf_tokens: Sequence[str]) -> _Facts | None:
    """What the audit checks of a logical form; None for a type it does not audit (MR, dialogue act)."""
    return _read_facts(lf_type, logical_form, tuple(lf_tokens))


# Reading a query's facts (a sqlglot parse, SPARQL lexed for literals, dates and negations) is most of an
# audit's time; a logical form is audited once per candidate question and again when its pair is written.
# The facts are shared between callers: read them, never change them.
@lru_cache(maxsize=4096)
def _read_facts(lf_type: str, logical_form: str, lf_tokens: tuple[str, ...]) -> _Facts | None:
    if lf_type == "sql":
        facts = _sql_facts(logical_form)
    elif lf_type == "sparql":
        facts = _sparql_facts([t.lower() for t in lf_tokens], logical_form)
    else:
        return None
    value_words = frozenset(w for v in facts.values for w in v)
    lf_words = frozenset(lf_tokens) | value_words | frozenset(nl_tokens(logical_form.lower()))
    lists = (lf_type == "sparql" and not _NUMBERED_PROPERTY.search(logical_form)
             and not QUANTITY_WORDS & {w for t in lf_words for w in t.split("_")})
    return facts._replace(value_words=value_words, lists=lists, lf_words=lf_words)


def _check(facts: _Facts | None, question: str) -> AuditResult:
    if facts is None:
        return AuditResult(())
    words = nl_tokens(question.lower())
    plain = _plain(words)
    failures = [f"value {' '.join(w for w in v if w != BACKSLASH)!r} not in the question"
                for v in facts.values if v and not _PLACEHOLDER.fullmatch(" ".join(v)) and not _holds(plain, _plain(v))]
    failures.extend(f"year {year} not in the question" for year, period in facts.years
                    if not _says_year(words, year, period))
    for op, attribute, value in facts.comparisons:
        failures.extend(_comparison_failure(words, op, attribute, value))
    lf_words = facts.lf_words
    if not facts.comparisons:
        stated = sorted({w for w in words if w in SPURIOUS_COMPARISON_WORDS and w not in lf_words})
        if stated:
            failures.append(f"comparison stated ({', '.join(stated)}) but the query has none")
    if not (failures and failures[-1].startswith("comparison stated")):  # said once
        failures.extend(_equality_failures(words, facts.equalities, lf_words, facts.values))
    if facts.limit and not _says_count(words, facts.limit):
        failures.append(f"limit {facts.limit} not stated (the query asks for the first {facts.limit} in its order)")
    if facts.negations and not _says_negation(words, lf_words):
        failures.append("negation not stated (the query has != or NOT EXISTS)")
    stated_all = True
    for aggregate in facts.aggregates:
        if not _states_aggregate(words, aggregate):
            failures.append(f"aggregate {aggregate.upper()} not stated")
            stated_all = False
    if stated_all:  # a superlative left unsaid fails above, once
        failures.extend(f for ordering in facts.orderings for f in _superlative_failure(words, *ordering))
    failures.extend(_sibling_failures(words, lf_words))
    if not facts.ordered:
        failures.extend(_unasked_superlative(words, lf_words, facts.value_words))
    if facts.lists and "count" not in facts.aggregates and _says_how_many(words):
        failures.append("count stated (how many) but the query lists its answers (no COUNT)")
    for aggregate, (said, query_words) in UNASKED_AGGREGATES.items():
        stated = sorted({w for w in words if w in said})
        if stated and aggregate not in facts.aggregates and not query_words & lf_words:
            failures.append(f"aggregate stated ({', '.join(stated)}) but the query has no {aggregate.upper()}")
    return AuditResult(tuple(failures))


def _equality_failures(words: list[str], equalities: Sequence[_Equality], lf_words: frozenset[str],
                       values: Sequence[Sequence[str]]) -> list[str]:
    """A direction said at a value the query tests for equality ("over 142" for ``"Area" = 142``, "since 1990"
    for ``Year = 1990``) states a comparison the query does not make; words of the query itself do not count
    (a column named "Higher")."""
    failures = []
    for attribute, value in equalities:
        if len(value) != 1 or _number(value[0]) is None:
            continue  # a name is not compared ("won under Gary Simms")
        reader = _direction_reader(words, attribute)
        others = frozenset(w for other in values if list(other) != list(value) for w in other)
        directions = [d for d, _ in _direction_by_value(
            words, value, lambda i: None if words[i] in lf_words else reader(i), others)]
        said = sorted(set(filter(None, directions)))
        if said and all(directions):  # every place says a direction: none says the value plainly
            # (a value said twice, "more than 1 gold and 1 silver", is the comparison's once and the equality's once)
            failures.append(f"comparison {', '.join(said)} stated for {' '.join(value)!r}, which the query tests with =")
    return failures


def _says_negation(words: list[str], lf_words: frozenset[str]) -> bool:
    """Whether the question says a negation: not with a word of the query's own (a column "No."; the keyword "not"
    aside), nor with the "no" of "no more than 5" (a comparison)."""
    return any((w in NEGATION_WORDS or w.endswith("n't")) and (w == "not" or w not in lf_words)
               and not _negated_comparative(words, i + 1) for i, w in enumerate(words))


def _sibling_failures(words: list[str], lf_words: frozenset[str]) -> list[str]:
    """The question says an attribute's sibling instead of it (``SIBLING_WORDS``: "home" for "Away team")."""
    # "for" and "against" say a tally's side only right after the tally ("points for"); elsewhere they are
    # prepositions ("wins for port fairy", "the points for against the bears")
    said = {_SIBLING_SPELLINGS.get(w, w) for i, w in enumerate(words)
            if w not in TALLY_SIDES or (i > 0 and words[i - 1] in TALLY_WORDS)}
    named = {_RELATION_SPELLINGS.get(w, _SIBLING_SPELLINGS.get(w, w)) for w in lf_words}
    failures = [f"attribute {word} said but the query names {', '.join(sorted(siblings & named))}"
                for siblings in SIBLING_WORDS for word in sorted(siblings & said - named) if siblings & named]
    return list(dict.fromkeys(failures))  # a word in two sets of siblings (an actor's) is reported once


def _unasked_superlative(words: list[str], lf_words: frozenset[str], value_words: frozenset[str]) -> list[str]:
    """A superlative ("the highest", "the earliest") for a query that asks no largest or smallest value (no MAX,
    MIN or ORDER BY) states a condition the query lacks. A column's or relation's word may say it ("Highest
    point", "High points": "the most points"), a value's may not ("lincoln high", "old dominion", "long beach");
    nor do "at least" / "at most" (comparisons), "more recent", or "first" / "last" (too common: "first name")."""
    licensed = {w for word in lf_words - value_words for part in word.split("-")
                for w in SUPERLATIVES_OF_QUERY_WORDS.get(part, ())} | lf_words  # a value's own words are said as it
    stated = sorted({w for i, w in enumerate(words) if w in UNASKED_SUPERLATIVES and w not in licensed
                     and not (i and words[i - 1] in ("at", "more", "less"))})
    return [f"superlative stated ({', '.join(stated)}) but the query orders nothing"] if stated else []


def _attribute_kind(attribute: frozenset[str]) -> str | None:
    """The kind of an ordered attribute ("plain" where its words name none); None for rank-like ones."""
    kind = next((kind for kind, names in KIND_WORDS.items() if attribute & names), None)
    if kind is None and attribute & RANK_WORDS:
        return None
    return kind or "plain"


@lru_cache(maxsize=None)  # asked once per candidate question: the lexicon is resolved once per kind
def _superlative_words(kind: str, largest: bool) -> tuple[frozenset[str], frozenset[str]]:
    """The words that state ``kind``'s largest (or smallest) value, and those that state something else."""
    side = 0 if largest else 1
    right = SUPERLATIVES["plain"][side] | SUPERLATIVES[kind][side]
    wrong = SUPERLATIVES["plain"][1 - side] | SUPERLATIVES[kind][1 - side]
    if kind != "plain":  # another kind's own superlatives ("tallest" for a date)
        wrong |= {w for other, pair in SUPERLATIVES.items() if other not in ("plain", kind)
                  for w in pair[0] | pair[1] if w.endswith("est")}
    common = set() if kind == "time" else _COMMON_WORDS  # of a date, "first" is the earliest and "last" the latest
    return frozenset(right), frozenset(wrong - right - common)


def _superlative_failure(words: list[str], attribute: frozenset[str], largest: bool) -> list[str]:
    kind = _attribute_kind(attribute)
    if kind is None:
        return []
    right, wrong = _superlative_words(kind, largest)
    said = {w for i, w in enumerate(words) if not (i and words[i - 1] == "at")  # "at least" compares
            and not (w in _COMMON_WORDS and words[i + 1 : i + 2] == ["name"])}  # "first name"
    if said & right:
        return []
    stated = sorted(said & wrong)
    if stated:
        order = "largest" if largest else "smallest"
        return [f"superlative {', '.join(stated)} does not state the {order} {' '.join(sorted(attribute))}"]
    return []  # a superlative outside the lexicon: stated, as the aggregate check found


def _plain(words: Sequence[str]) -> list[str]:
    """Words compared as values: split at apostrophes, with quotes and backslashes dropped, the same on both
    sides. The question's tokens keep "o'brien" whole while the query's literal 'O\\'Brien' comes as
    ``o \\ ' brien``, and an entity "Children's Hospital" as ``children 's hospital``. Other punctuation
    stays: "-6" is not "6"."""
    return [part for word in words for part in word.split("'") if part.strip('\\"')]


def _holds(words: list[str], value: Sequence[str]) -> bool:
    """Whether the question says ``value``'s words in order, its last word maybe in the plural (a literal
    "State" is asked as "which states ...", "Country" as "what countries ...")."""
    n = len(value)
    if not n:
        return True
    if n == 1 and _number(value[0]) is not None:  # 4327642 is said "4,327,642", 126.0 "126"
        return any(_number(w) == _number(value[0]) for w in words)
    head, last = list(value[:-1]), value[-1]
    forms = {last, last + "s", last + "es"} | ({last[:-1] + "ies"} if last.endswith("y") else set())
    return any(words[i : i + n - 1] == head and words[i + n - 1] in forms for i in range(len(words) - n + 1))


_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")


def _says_count(words: list[str], count: int) -> bool:
    """Whether the question says ``count`` (an ordered query's LIMIT): "the 5 largest", "the top five"."""
    parts = [part for word in words for part in word.split("-")]  # "the top-5"
    return any(_number(w) == count for w in parts) or (count < len(NUMBER_WORDS) and NUMBER_WORDS[count] in parts)


def _number(word: str) -> Decimal | None:
    """A plain number's value (thousands commas allowed), None for anything else; a leading zero keeps it a
    string ("007" is a code, and SQL tells '01' from '1')."""
    if not _NUMBER.fullmatch(word) or (len(word.lstrip("+-").split(".")[0]) > 1 and word.lstrip("+-")[0] == "0"):
        return None
    return Decimal(word.replace(",", ""))


@lru_cache(maxsize=None)
def _comparison_words(kind: str | None) -> dict[str, frozenset[str]]:
    """The words that state ">" and "<" for an attribute of ``kind`` (None: rank-like, or no attribute)."""
    extra = KIND_COMPARATIVES.get(kind or "", (set(), set()))
    return {">": frozenset(COMPARISON_WORDS[">"] | extra[0]), "<": frozenset(COMPARISON_WORDS["<"] | extra[1])}


def _comparison_failure(words: list[str], op: str, attribute: frozenset[str] = frozenset(),
                        value: Sequence[str] = ()) -> list[str]:
    """What is wrong with how the question states ``op`` (">", "<", ">=" or "<="): the direction said next to the
    compared value decides where one is ("larger than 1977"; a query with two comparisons must not pass with both
    inverted), else any direction word in the question. Where the value's direction is right, so must be whether
    the value itself counts: "more than 5" is not ``>= 5``, nor "at least 5" / "5 or more" ``> 5``."""
    direction = op[0]
    direction_at = _direction_reader(words, attribute, None if op == EITHER else direction)
    found = _direction_by_value(words, value, direction_at) if value else []
    said = {d for d, _ in found if d}
    if not said:
        said = set(filter(None, map(direction_at, range(len(words)))))
    if op == EITHER:
        return [] if said else ["comparison not stated"]
    if direction in said:
        inclusive = [inc for d, inc in found if d == direction]
        if inclusive and all(inc != op.endswith("=") for inc in inclusive):
            return [f"comparison {op} stated as {'inclusive' if inclusive[0] else 'strict'}"]
        return []
    if said:
        return [f"comparison {direction} stated in the other direction"]
    return [f"comparison {direction} not stated"]


def _direction_reader(words: list[str], attribute: frozenset[str], op: str | None = None):
    """``direction_at(i)``: the direction (">" or "<") that ``words[i]`` states of ``attribute``, or None. Said
    of a rank-like attribute, a position word reads as ``op`` ("ranked below 2" is rank > 2 to some, rank < 2 to
    others: either is right); without ``op`` (an equality) it reads as a direction all the same."""
    kind = _attribute_kind(attribute) if attribute else None
    lexicon = _comparison_words(kind)
    rank_like = bool(attribute) and kind is None

    def direction_at(i: int) -> str | None:
        if rank_like and op is not None and words[i] in RANK_POSITION_WORDS:
            return op
        for direction in (">", "<"):
            if words[i] == _AT_WORDS[direction]:
                if i and words[i - 1] == "at":
                    return direction
            elif words[i] in lexicon[direction]:
                if _negated_comparative(words, i):  # "no more than 5" is <= 5
                    return "<" if direction == ">" else ">"
                return direction
        return None

    return direction_at


def _negated_comparative(words: list[str], i: int) -> bool:
    """Whether ``words[i]`` is negated, "no more than" / "not less than" / "not before": the other direction,
    inclusive."""
    return i >= 1 and words[i - 1] in ("no", "not") and (
        words[i + 1 : i + 2] == ["than"] or words[i] in _NEGATABLE_PREPOSITIONS)


_NEGATABLE_PREPOSITIONS = {"before", "after", "over", "under", "above", "below"}  # "not before 1990" is >= 1990


# Direction words that count the compared value in ("since 1990" is ``>= 1990``, "within 5" ``<= 5``)
INCLUSIVE_WORDS = {"since", "within", "least"}  # "least" after "at": "at least" ("at most" is "most")


_NEAR = 4  # words before a compared value where its direction is looked for ("has at least 3", "larger than 1977")


def _direction_by_value(words: list[str], value: Sequence[str], direction_at,
                        others: frozenset[str] = frozenset()) -> list[tuple[str | None, bool]]:
    """At each place the question says ``value``, the direction it says of it (None where none) and whether that
    counts the value in: a direction right after it ("6400 or more", "6400 and above": inclusive), else the
    nearest direction word within ``_NEAR`` words before it that belongs to it ("more than 6400"; "greater than
    or equal to 6400", "at least 3", "no more than 5": inclusive; not the "earlier" of "1977 or earlier has
    6400 ...", nor past a word of another of the query's values: "under gary simms in 1990")."""
    n, found = len(value), []
    number = _number(value[0]) if n == 1 else None
    for start in range(len(words) - n + 1):
        here = words[start : start + n]
        if not (here == list(value) or (number is not None and _number(here[0]) == number)):
            continue
        direction = direction_at(start + n + 1) if _said_after_a_value(words, start + n) else None
        inclusive = direction is not None
        i, looked = start - 1, 0
        while not direction and i >= 0 and looked < _NEAR:
            said = next((k for k in (3, 2) if i >= k - 1 and words[i - k + 1 : i + 1] == OR_EQUAL[:k]), 0)
            if said:
                i -= said  # "greater than or equal to": the "than" before it is next
                inclusive = True
                continue
            if words[i] in _CLAUSE_ENDS or words[i] in others or _number(words[i]) is not None or (
                    i >= 2 and _number(words[i - 2]) is not None and _said_after_a_value(words, i - 1)):
                break  # another condition's words ("before 1977 and had 6400", "1977 or earlier has 6400")
            direction = direction_at(i)
            if direction:
                inclusive = inclusive or words[i] in INCLUSIVE_WORDS or words[i] == _AT_WORDS["<"] or \
                    _negated_comparative(words, i) or words[i - 2 : i] in (["on", "or"], ["to", "or"])  # "on or after"
            i, looked = i - 1, looked + 1
        found.append((direction, inclusive))
    return found


_CLAUSE_ENDS = {"and", ",", "with", "where", "whose", "that", "which", "or"}
OR_EQUAL = ["or", "equal", "to"]  # "greater than or equal to": part of the comparison before it
BACKSLASH = "\\"  # an escape in a literal's tokens ('O\\'Brien'), left out of a failure's text
# Words that give a direction after a value and "or" / "and" ("6400 or more", "1977 or earlier", "5 and above")
AFTER_VALUE_WORDS = {"more", "less", "fewer", "greater", "above", "below", "over", "under", "later", "earlier",
                     "higher", "lower", "larger", "smaller"}


def _said_after_a_value(words: list[str], joint: int) -> bool:
    """Whether ``words[joint:]`` starts "or more" / "and above" ...: a direction for the value before it, not
    the start of the next comparison ("5 or fewer than 3", "6 and before october 28")."""
    after = words[joint + 2 : joint + 3]  # not "than", nor the next value ("1976 and over 67 assists")
    return (words[joint : joint + 1] in (["or"], ["and"]) and joint + 1 < len(words)
            and words[joint + 1] in AFTER_VALUE_WORDS and after != ["than"] and not (after and _number(after[0]) is not None))


def _says_how_many(words: list[str]) -> bool:
    return any(w == "how" and words[i + 1 : i + 2] == ["many"] for i, w in enumerate(words))


def _states_aggregate(words: list[str], aggregate: str) -> bool:
    lexicon, suffixes = AGGREGATE_WORDS[aggregate]
    if aggregate == "count" and "many" in words and "how" in words:
        return True
    return any((w in lexicon or (len(w) > 4 and w.endswith(suffixes)))  # endswith(()) is False
               and not (w in _AT_WORDS.values() and i and words[i - 1] == "at")  # "at least 3" compares
               for i, w in enumerate(words))


def _sql_facts(sql: str) -> _Facts:
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - an unreadable statement has no facts to audit
        return _Facts([], [], [], [])
    values: list[list[str]] = []
    comparisons: list[_Comparison] = []
    equalities: list[_Equality] = []
    negations = 0
    where = tree.args.get("where")
    if where is not None:
        for node in where.find_all(exp.EQ, exp.NEQ, exp.GT, exp.LT, exp.GTE, exp.LTE):
            literal = node.expression if isinstance(node.expression, exp.Literal) else None
            value = nl_tokens(str(literal.this).lower()) if literal is not None else []
            if literal is not None:
                values.append(value)
            attribute = _column_words(node.this)
            if isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE)):
                op = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}[type(node)]
                comparisons.append((op, attribute, tuple(value)))
            elif isinstance(node, exp.EQ) and value:
                equalities.append((attribute, tuple(value)))
            elif isinstance(node, exp.NEQ):
                negations += 1
        negations += sum(1 for _ in where.find_all(exp.Not))  # NOT x = 'v', NOT IN, NOT LIKE
    aggregates, orderings = [], []
    for node in tree.find_all(exp.Count, exp.Sum, exp.Avg, exp.Max, exp.Min):
        aggregates.append(_SQL_AGGREGATES[type(node).__name__])
        if isinstance(node, (exp.Max, exp.Min)):
            orderings.append((_column_words(node), isinstance(node, exp.Max)))
    ordered = bool(orderings) or tree.args.get("order") is not None
    limit = tree.args.get("limit")  # the statement's own: with its ORDER BY, the query asks for its first k rows
    k = limit.expression if limit is not None else None
    count = _number(str(k.this)) if isinstance(k, exp.Literal) and tree.args.get("order") is not None else None
    return _Facts(values, comparisons, aggregates, orderings, equalities, negations, ordered,
                  limit=int(count) if count is not None and count > 1 else 0)


def _column_words(node: Any) -> frozenset[str]:
    """The words of the columns in a SQL expression ("Year built" -> year, built)."""
    from sqlglot import exp

    return frozenset(w for c in node.find_all(exp.Column) for w in nl_tokens(c.name.lower()) if w.isalnum())


class _Lexed(NamedTuple):
    """A SPARQL query's lexemes, read once for its literals, dates and negations."""
    code: list[Token]
    texts: list[str]  # each lexeme's text, lower case
    alternatives: list[tuple[int, int]]  # ``_alternative_spans``


def _lexed(logical_form: str) -> _Lexed:
    """The query's lexemes as the tokenizer reads it ("D\\u00fcsseldorf" is "Düsseldorf"); none if it cannot."""
    try:
        code = code_tokens(lex(expand_codepoint_escapes(logical_form)))
    except LogicalFormError:
        code = []
    texts = [t.text.lower() for t in code]
    return _Lexed(code, texts, _alternative_spans(texts))


def _condition_literals(lexed: _Lexed) -> Iterator[list[str]]:
    """The words of each plain string literal that is a condition value: a triple's object (``?x dbo:party
    "Labour"``, ``'Oslo'@en``) or what a variable or ``str(?x)`` must equal in a FILTER. Not a typed literal
    (``"1950"^^xsd:date``: dates and numbers are said in other forms), nor one that is compared (``<``,
    ``>``: a comparison, checked as such), nor a language tag (``lang(?x) = "en"``, ``langMatches(..., "en")``),
    nor an alternative (a ``VALUES`` block, a FILTER with ``||``: a question may state any one of them).

    Read from the query's own lexemes, not the model's tokens: those write every quote kind alike, and an
    entity's name may hold an apostrophe (``ent: shays ' rebellion``) that would read as a quote."""
    code, texts, alternatives = lexed
    for i, token in enumerate(code):
        if token.kind != "string" or not i or any(start <= i < end for start, end in alternatives):
            continue
        if texts[i + 1 : i + 2] == ["^^"]:  # typed
            continue
        before = code[i - 1]
        if before.text == "=" and not _equals_a_value(code, i - 1):
            continue  # lang(?x) = "en"
        if before.text != "=" and before.kind not in ("pname", "iri", "var"):
            continue  # after "(", ",", "<", ">", "!=": an argument or a comparison, not a triple's object
        words = nl_tokens(string_content(token.text)[1])
        if words:
            yield words


_DATE_TYPES = ("date", "datetime", "gyear", "gyearmonth")
_YEAR = re.compile(r"(\d{4})(?:-\d\d)*(?:T[\d:.Z+-]*)?")


def _says_year(words: list[str], year: str, period: bool) -> bool:
    """Whether the question says ``year``: alone or in a date ("2009", "2004-03-17", "11-17-2008"), or, for a period
    in it, its decade ("the 1990s", "the 90s")."""
    alone = re.compile(rf"(?<!\d){year}(?!\d)")
    return any(alone.search(w) for w in words) or (period and bool({year[:3] + "0s", year[2] + "0s"} & set(words)))


def _dated_years(lexed: _Lexed) -> list[tuple[str, bool]]:
    """The years of the query's typed dates (``"2009-12-31"^^xsd:dateTime``) that a question says ("after
    2004-03-17", "in 2009"), each with whether it is a period's: each year of a date outside ``EXISTS { ... }``
    (not one of a FILTER's alternatives: "2009" || "2010" is said by either), and of a period within one year
    inside it ("2009-01-01" .. "2009-12-31": "in 2009"). Not a lone date inside (a validity test at a point in
    time: WebQSP's "now", ``2015-08-10``, which "who is the governor" says by its tense)."""
    code, texts, alternatives = lexed
    inside = _inside_exists(texts)
    outside: set[str] = set()
    within: dict[str, set[str]] = {}
    for i, token in enumerate(code[:-2]):
        datatype = code[i + 2].text.lower().rstrip(">").rsplit("#", 1)[-1].rsplit(":", 1)[-1]
        if token.kind == "string" and code[i + 1].text == "^^" and datatype in _DATE_TYPES:
            match = _YEAR.fullmatch(string_content(token.text)[1])
            if match and inside[i]:
                within.setdefault(match.group(1), set()).add(match.group(0))
            elif match and not any(start <= i < end for start, end in alternatives):
                outside.add(match.group(1))
    periods = {year for year, dates in within.items() if len(dates) > 1}
    return sorted((year, year in periods) for year in outside | periods)


def _alternative_spans(tokens: list[str]) -> list[tuple[int, int]]:
    """The token spans whose literals are alternatives: ``VALUES ... { ... }`` and a ``FILTER (...)`` holding ``||``."""
    spans = []
    for i, token in enumerate(tokens):
        if token not in ("values", "filter"):
            continue
        opener = "{" if token == "values" else "("
        start = next((j for j in range(i + 1, len(tokens)) if tokens[j] == opener), None)
        if start is None:
            continue
        end = _group_end(tokens, start)
        if token == "values" or "||" in tokens[start:end]:
            spans.append((i, end))
    return spans


def _group_end(tokens: list[str], start: int) -> int:
    """Just past the bracket that closes the one at ``start`` (the end where none does)."""
    depth = 0
    for j in range(start, len(tokens)):
        depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(tokens[j], 0)
        if depth == 0:
            return j + 1
    return len(tokens)


def _equals_a_value(code: list[Token], equals: int) -> bool:
    """Whether the ``=`` at ``equals`` tests a variable (``?x = "..."``) or ``str(?x)``, not ``lang(?x)``."""
    if equals >= 1 and code[equals - 1].kind == "var":
        return True
    if equals >= 1 and code[equals - 1].text == ")":
        depth, j = 0, equals - 1
        while j >= 0:  # back to the "(" that the ")" closes
            depth += {")": 1, "(": -1}.get(code[j].text, 0)
            if depth == 0:
                break
            j -= 1
        return j >= 1 and code[j - 1].text.lower() == "str"
    return False


def _sparql_facts(tokens: list[str], logical_form: str) -> _Facts:
    prefixes = set(WELL_KNOWN_PREFIXES)
    values: list[list[str]] = []
    for i, token in enumerate(tokens):
        if token == "ent:":
            name: list[str] = []
            for word in tokens[i + 1 :]:
                if word in prefixes or not any(c.isalnum() for c in word) or word == "ent:":
                    break
                name.append(word)
            if name not in values:
                values.append(name)
    lexed = _lexed(logical_form)
    for literal in _condition_literals(lexed):
        if literal not in values:
            values.append(literal)
    comparisons: list[_Comparison] = []
    depth = 0  # brackets open inside the current FILTER (...); 0 = outside any
    opened = 0  # where the current FILTER starts
    in_exists = _inside_exists(tokens)
    for i, token in enumerate(tokens):
        if in_exists[i]:
            continue
        if token == "filter" and not depth:
            depth, opened = -1, i  # its "(" comes next
        elif token == "(" and depth:
            depth = 1 if depth < 0 else depth + 1
        elif token == ")" and depth > 0:
            depth -= 1
        elif depth > 0 and token in (">", "<") and tokens[i - 1] not in ("!", "<", ">"):
            compared = next((t for t in tokens[i + 1 :] if t in ("?", '"', "'", ")") or _number(t) is not None), None)
            # the compared variable: the last one before the operator (``? a >``, ``xsd : integer ( ? a ) >``)
            variable = next((tokens[j + 1] for j in range(i - 2, opened, -1) if tokens[j] == "?"), None)
            bound = _binding_relation(tokens, variable, opened, prefixes) if variable else []
            # Two of the query's values compared ("?from < ?presidency", "?pFrom - ?from > 0") are said "before he was
            # president" or "after ...", whichever side the question starts from: a direction either way (EITHER).
            op = EITHER if compared == "?" or tokens[opened:i].count("?") > 1 else token
            comparisons.append((op, frozenset(w for w in bound if w.isalnum() and w not in prefixes), ()))
    aggregates = ["count"] if "count" in tokens else []
    orderings: list[_Ordering] = []
    order_by = any(tokens[i : i + 2] == ["order", "by"] for i in range(len(tokens) - 1))
    count = _ordered_limit(tokens)
    if count == 1:
        aggregates.append("superlative")
        orderings.append(_sparql_ordering(tokens, prefixes))
    ordered = order_by or any(tokens[i : i + 2] in (["max", "("], ["min", "("]) for i in range(len(tokens) - 1))
    return _Facts(values, comparisons, aggregates, orderings, negations=_sparql_negations(lexed), ordered=ordered,
                  years=_dated_years(lexed), limit=count if count is not None and count > 1 else 0)


def _ordered_limit(tokens: list[str]) -> int | None:
    """The k of the first ``ORDER BY ... LIMIT k``, a subquery's too (WebQSP's "the first movie" orders the films
    in one): an unordered LIMIT before it (a subquery's) or "limit" in an entity's name ("speed limit 3", in
    the triples before any ORDER BY) is no ranking."""
    start = next((i for i in range(len(tokens) - 1) if tokens[i : i + 2] == ["order", "by"]), None)
    if start is None:
        return None
    at = next((i for i in range(start, len(tokens) - 1) if tokens[i] == "limit"), None)
    count = _number(tokens[at + 1]) if at is not None else None
    return int(count) if count is not None else None


def _sparql_negations(lexed: _Lexed) -> int:
    """The query's ``NOT EXISTS`` and ``MINUS`` groups, less those in a FILTER with ``||``: WebQSP's validity test
    ``FILTER(NOT EXISTS {?y ns:from ?a} || EXISTS {...})`` negates nothing that a question says."""
    code, texts, alternatives = lexed
    negations = 0
    for i in range(len(texts) - 1):
        if texts[i : i + 2] not in (["not", "exists"], ["minus", "{"]) or any(a <= i < b for a, b in alternatives):
            continue
        opened = texts.index("{", i) if "{" in texts[i:] else len(texts)
        end = _group_end(texts, opened)
        # the words of the last segment of each relation there ("ns:people.marriage.to" -> to; not a variable's name)
        relations = {w for t in code[opened:end] if t.kind in ("pname", "iri")
                     for w in re.split(r"[^a-z]+", re.split(r"[.:/#]", t.text.lower().rstrip(">"))[-1]) if w}
        negations += not relations & _VALIDITY_WORDS
    return negations


# A negated group about these ("NOT EXISTS {?y ns:people.marriage.to []}": a marriage that has not ended) tests that
# something still holds, which a question says by its tense ("who is his wife"), not by a negation.
_VALIDITY_WORDS = {"to", "from", "end", "start", "until", "since", "ended"}


def _inside_exists(tokens: list[str]) -> list[bool]:
    """For each token, whether it stands inside an ``EXISTS { ... }`` group. A comparison there is a
    validity condition, not one a question states with a comparison word: WebQSP writes "who is the
    prime minister" (now) as ``FILTER(NOT EXISTS {?y ...from ?a} || EXISTS {?y ...from ?b . FILTER(?b <=
    "2015-08-10")})``, and the question says it by its tense or a year."""
    inside = [False] * len(tokens)
    depth, closes_at = 0, []  # brace depth; the depths at which open EXISTS groups close
    for i, token in enumerate(tokens):
        if token == "{":
            if i and tokens[i - 1] == "exists":
                closes_at.append(depth)
            depth += 1
        elif token == "}":
            depth -= 1
            if closes_at and closes_at[-1] == depth:
                closes_at.pop()
        inside[i] = bool(closes_at)
    return inside


def _sparql_ordering(tokens: list[str], prefixes: set[str]) -> _Ordering:
    """The first ORDER BY key: the words of its expression (``xsd : datetime ( ? sk0 )``) and of the
    relation that binds its variable (``_binding_relation``), and whether it is descending (SPARQL's
    default is ascending)."""
    start = max(i for i in range(len(tokens) - 1) if tokens[i : i + 2] == ["order", "by"])  # not an entity's "order"
    end = tokens.index("limit", start) if "limit" in tokens[start:] else len(tokens)
    key = tokens[start:end]
    variable = next((key[i + 1] for i in range(len(key) - 1) if key[i] == "?"), None)
    attribute = [w for w in key if w not in ("order", "by", "asc", "desc", variable)]
    attribute += _binding_relation(tokens, variable, start, prefixes) if variable else []
    return frozenset(w for w in attribute if w.isalnum() and w not in prefixes), "desc" in key


def _binding_relation(tokens: list[str], variable: str, before: int, prefixes: set[str]) -> list[str]:
    """The words of the relation whose object is ``? variable`` in a triple before ``before``, read
    backwards from the variable to the relation's prefix (``? x schema height ? sk0``; a Freebase
    path's dots are passed over); empty where no triple binds it."""
    where = tokens.index("{") if "{" in tokens else before
    binding = next((i for i in range(where + 1, before - 1)  # the variable as a triple's object
                    if tokens[i - 1] == "?" and tokens[i] == variable and tokens[i + 1] in (".", "}", ";", ",")), None)
    relation: list[str] = []
    if binding is not None:
        for word in reversed(tokens[: binding - 1]):
            if word in prefixes or word in ("{", "}", "ent:"):  # the relation's prefix, or no relation to read
                break
            if word == "?":  # the subject variable: its name is no word of the relation
                relation = relation[:-1]
                break
            relation.append(word)
    return relation


def audit_statistics(results: Iterable[AuditResult]) -> dict[str, Any]:
    """Counts for the manifest and the card: audited, passed, and per kind of failed check the pairs that
    fail it (a pair missing two values counts once under "value")."""
    stats: dict[str, Any] = {"audited": 0, "passed": 0, "failures": {}}
    for result in results:
        stats["audited"] += 1
        stats["passed"] += int(result.passed)
        for kind in {f.split(" ")[0] + (" direction" if "other direction" in f else "") for f in result.failures}:
            stats["failures"][kind] = stats["failures"].get(kind, 0) + 1
    return stats


def merge_audit_statistics(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sum per-shard audit statistics and add the pass rate."""
    from qgen.synth.round_trip import merge_counts

    total = merge_counts(parts, {"audited": 0, "passed": 0, "failures": {}})
    total["pass_rate"] = total["passed"] / total["audited"] if total["audited"] else None
    return total
