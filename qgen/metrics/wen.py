"""The RNNLG evaluation protocol (Wen et al. 2015) for the SF Hotel and SF Restaurant test sets.

Scores system outputs, one per test record, with corpus BLEU-4 and METEOR 1.5 the way RNNLG's
scorer (shawnwun/RNNLG: ``loader/DataReader.py``, ``DataLexicaliser.py``, ``FeatParser.py``,
``GentScorer.py``, ``utils/nlp.py``) does it. Written here from that protocol:

- **text normalisation** (:func:`normalise`, references and outputs alike): a final `` .``,
  `` ?`` or `` !`` removed, lower case, phone numbers joined (``(415) 555-1234`` -> ``4155551234``),
  ``;`` -> ``,``, ``/`` -> `` and ``, ``"`` ``:`` ``<`` ``>`` ``@`` and `` - `` dropped, spaces around
  ``? . , !`` (not inside numbers), quotes and contractions undone (``it's`` -> ``it is``), plurals
  and adverbs split (``hotels`` -> ``hotel -s``, ``cheaply`` -> ``cheap -ly``, :data:`REWRITES`),
  ``'s`` split off, spaces collapsed, adjacent digit tokens joined.
- **dialogue acts** (:func:`parse_act`): ``act(slot=value;...)``; slot names lose ``_`` and blanks,
  values lose surrounding quotes; ``none``, ``yes``/``true``, ``no``/``false``, ``dontcare``/
  ``dont_care`` are *special values* (kept in the act's delexicalised form, never replaced in text),
  a slot without a value is a question (value ``?``), ``act()`` has no slot.
- **delexicalised act** (:func:`delexicalised_act`): the act type and the sorted slot features, each
  ordinary value replaced by a placeholder numbered per slot (``name=_1``, ``area=_1``, ``area=_2``),
  special values and ``?`` kept. Two acts with the same delexicalised form share references.
- **delexicalising a text** (:func:`delexicalise`): every ordinary value of the act, longest first,
  is replaced once by ``SLOT_<SLOT>`` where it occurs as whole words (a value ``a and b`` / ``a or b``
  also matches its parts in any order joined by ``and`` or ``or``; the first of these found as a
  substring is the only one tried, so a value seen only inside a longer word is left as it is).
  Every slot is delexicalised,
  ``type`` included (RNNLG's ``special_slots`` list is never consulted).
- **relexicalising** (:func:`lexicalise`): slots in order of decreasing name length (the act's order
  between equal lengths) fill the first ``SLOT_<SLOT>`` left with their value; a ``SLOT_TYPE`` left
  over becomes the domain name (``hotel`` / ``restaurant``).
- **references** of test record *i*: the human utterance of *every* test record whose
  delexicalised act equals record *i*'s (record *i* included, duplicates kept, file order), each
  normalised, delexicalised with its own act and relexicalised with record *i*'s act.
- **outputs**: normalised as above; not delexicalised (RNNLG's own outputs are relexicalised
  generations, already in this form).
- **BLEU** (RNNLG ``BLEUScorer.score``): corpus BLEU-4 over all test records; n-gram counts of each
  output clipped to the largest count in any one reference; reference length per output = the
  length of the reference closest in length (the first such in reference order on ties); brevity
  penalty ``exp(1 - r/c)`` when ``c <= r``; precisions ``clipped/(count + 1e-7) + 1e-7``, geometric
  mean with weights 1/4. Reported on 0-100.
- **METEOR**: METEOR 1.5 through :class:`qgen.metrics.meteor.Meteor` (pycocoevalcap's jar and flags,
  the jar's corpus aggregate) on the same normalised tokens and reference sets, 0-100. RNNLG has
  no METEOR; Wen et al. do not say how theirs was run. Needs Java.
- **outputs file** (:func:`read_outputs`): one output per line, line *i* for test record *i* of
  ``<datasets>/wen2015_sf/<domain>/test.json``, so 1,075 (hotel) / 1,039 (restaurant) lines; or
  ``act<TAB>output`` lines, the act checked against the record's.

Check (HDC, the template baseline shipped as each record's third element; Wen et al. report BLEU
55.52 / 44.39 and METEOR 48.10 / 43.42, hotel / restaurant):

- as RNNLG scores it (:func:`rnnlg_baseline_outputs`: one baseline per delexicalised act,
  relexicalised per record): BLEU 54.06 / 42.60, METEOR 47.43 / 42.88;
- each record's own baseline as an ordinary output: BLEU 53.98 / 42.52, METEOR 47.27 / 43.42;
- references grouped by the *exact* act instead: BLEU 37.23 / 27.11.
"""
from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qgen.metrics.meteor import Meteor

DOMAINS = ("hotel", "restaurant")
TEST_DIR = Path("wen2015_sf")  # under the datasets directory: <domain>/test.json
HEADER_LINES = 5  # each RNNLG file opens with a 5-line '#' banner
BLEU_ORDER = 4
_TINY = 1e-7  # RNNLG's guard against log(0) and 0/0

# Special values: each spelling in the act -> its unified form. Kept in the delexicalised act,
# never replaced in text.
SPECIAL_VALUES = {"none": "none", "yes": "yes", "true": "yes", "no": "no", "false": "no",
                  "dontcare": "dontcare", "dont_care": "dontcare"}
QUESTION = "?"  # the value of a slot named without one: ?request(area)
_KEPT_VALUES = frozenset(SPECIAL_VALUES.values()) | {QUESTION}

# Whole-word rewrites of the normalisation, in this order (RNNLG's utils/nlp/mapping.pair).
REWRITES: tuple[tuple[str, str], ...] = (
    ("it's", "it is"), ("don't", "do not"), ("doesn't", "does not"), ("didn't", "did not"),
    ("you'd", "you would"), ("you're", "you are"), ("you'll", "you will"), ("i'm", "i am"),
    ("they're", "they are"), ("that's", "that is"), ("what's", "what is"), ("couldn't", "could not"),
    ("i've", "i have"), ("we've", "we have"), ("can't", "cannot"), ("i'd", "i would"),
    ("aren't", "are not"), ("isn't", "is not"), ("wasn't", "was not"), ("weren't", "were not"),
    ("won't", "will not"), ("there's", "there is"), ("there're", "there are"), (". .", "."),
    ("restaurants", "restaurant -s"), ("hotels", "hotel -s"), ("laptops", "laptop -s"),
    ("cheaper", "cheap -er"), ("dinners", "dinner -s"), ("lunches", "lunch -s"),
    ("breakfasts", "breakfast -s"), ("expensively", "expensive -ly"), ("moderately", "moderate -ly"),
    ("cheaply", "cheap -ly"), ("prices", "price -s"), ("places", "place -s"), ("venues", "venue -s"),
    ("ranges", "range -s"), ("meals", "meal -s"), ("locations", "location -s"), ("areas", "area -s"),
    ("policies", "policy -s"), ("children", "child -s"), ("kids", "kid -s"),
    ("kidfriendly", "kid friendly"), ("cards", "card -s"), ("st", "street"), ("ave", "avenue"),
    ("upmarket", "expensive"), ("inpricey", "cheap"), ("inches", "inch -s"), ("uses", "use -s"),
    ("dimensions", "dimension -s"), ("driverange", "drive range"), ("includes", "include -s"),
    ("computers", "computer -s"), ("machines", "machine -s"), ("ecorating", "eco rating"),
    ("families", "family -s"), ("ratings", "rating -s"), ("constraints", "constraint -s"),
    ("pricerange", "price range"), ("batteryrating", "battery rating"),
    ("requirements", "requirement -s"), ("drives", "drive -s"), ("specifications", "specification -s"),
    ("weightrange", "weight range"), ("harddrive", "hard drive"), ("batterylife", "battery life"),
    ("businesses", "business -s"), ("hours", "hour -s"), ("accessories", "accessory -s"),
    ("ports", "port -s"), ("televisions", "television -s"), ("restrictions", "restriction -s"),
    ("extremely", "extreme -ly"), ("actually", "actual -ly"), ("typically", "typical -ly"),
    ("drivers", "driver -s"), ("teh", "the"), ("definitely", "definite -ly"), ("factors", "factor -s"),
    ("truly", "true -ly"), ("mostly", "most -ly"), ("nicely", "nice -ly"), ("surely", "sure -ly"),
    ("certainly", "certain -ly"), ("totally", "total -ly"), ("#", "number"), ("&", "and"),
)

_PHONE = re.compile(r"\(?(\d{3})\)?[-.\s]?(\d{3})[-.\s]?(\d{4})")
_DIGITS = re.compile(r"\d+$")


class WenInputError(ValueError):
    """A test file, outputs file or domain that cannot be scored; the message names it and the problem."""


@dataclass(frozen=True)
class DialogueAct:
    """A parsed act: its type and ``(slot, value)`` pairs in the act's order (value ``?`` for a question)."""

    act: str
    slots: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class WenRecord:
    """One test record: the act as written, the human utterance and the HDC baseline utterance."""

    act: str
    utterance: str
    baseline: str


@dataclass(frozen=True)
class WenTestSet:
    """A domain's test records and, per record, its RNNLG reference set (normalised, relexicalised)."""

    domain: str
    path: Path
    records: tuple[WenRecord, ...]
    references: tuple[tuple[str, ...], ...]


# ---------------------------------------------------------------------------------------------
# Text normalisation


def _space_around(token: str, text: str) -> str:
    """Spaces put before and after each ``token`` (not a one-character token between two digits)."""
    start = 0
    while True:
        start = text.find(token, start)
        if start == -1:
            return text
        # text[start - 1] at start 0 is the last character, as in the original protocol.
        if start + 1 < len(text) and text[start - 1].isdigit() and text[start + 1].isdigit():
            start += 1
            continue
        if text[start - 1] != " ":
            text = text[:start] + " " + text[start:]
            start += 1
        if start + len(token) < len(text) and text[start + len(token)] != " ":
            text = text[: start + 1] + " " + text[start + 1 :]
        start += 1


def _join_phone_numbers(text: str) -> str:
    start = 0
    for groups in _PHONE.findall(text):
        start = text.find(groups[0], start)
        if text[start - 1] == "(":
            start -= 1
        end = text.find(groups[-1], start) + len(groups[-1])
        text = text.replace(text[start:end], "".join(groups))
    return text


def normalise(text: str) -> str:
    """RNNLG's text normalisation of an utterance (final punctuation dropped first); see the module doc."""
    text = re.sub(r" [.?!]$", "", text)
    text = text.lower().strip()
    text = _join_phone_numbers(text)
    text = text.replace(";", ",").replace("/", " and ")
    text = re.sub(r'[":<>@]', "", text).replace(" - ", "")
    for token in ("?", ".", ",", "!"):
        text = _space_around(token, text)
    text = re.sub(r"^'", "", text)
    text = re.sub(r"'$", "", text)
    text = re.sub(r"'\s", " ", text)
    text = re.sub(r"\s'", " ", text)
    for old, new in REWRITES:
        text = (" " + text + " ").replace(" " + old + " ", " " + new + " ")[1:-1]
    text = _space_around("'s", text)
    tokens = re.sub(" +", " ", text).split()
    joined: list[str] = []
    for token in tokens:  # adjacent all-digit tokens become one number
        if joined and _DIGITS.match(token) and _DIGITS.match(joined[-1]):
            joined[-1] += token
        else:
            joined.append(token)
    return " ".join(joined)


# ---------------------------------------------------------------------------------------------
# Dialogue acts


def parse_act(text: str) -> DialogueAct:
    """``act(slot=value;slot='value';slot)`` parsed; ValueError for text that is not of this form."""
    match = re.fullmatch(r"\s*([^()]+)\((.*)\)\s*", text)
    if match is None or "(" in match.group(2):
        raise ValueError(f"not a dialogue act of the form act(slot=value;...): {text!r}")
    slots: list[tuple[str, str]] = []
    for item in match.group(2).replace(")", "").split(";"):
        if item == "":
            continue  # act() or an empty item
        if "=" not in item:
            slots.append((item.replace("_", "").replace(" ", "").strip("'\""), QUESTION))
            continue
        parts = item.split("=")
        if len(parts) != 2:
            raise ValueError(f"slot item {item!r} has more than one '=' in {text!r}")
        slot, value = (part.strip("'\"") for part in parts)
        slot = slot.replace("_", "").replace(" ", "")
        slots.append((slot, SPECIAL_VALUES.get(value, value)))
    return DialogueAct(match.group(1), tuple(slots))


def delexicalised_act(act: DialogueAct) -> tuple[tuple[str, str], ...]:
    """The act type and its sorted slot features, ordinary values numbered per slot (``_1``, ``_2``)."""
    seen: Counter[str] = Counter()
    features = []
    for slot, value in act.slots:
        if value in _KEPT_VALUES:
            features.append((slot, value))
        else:
            seen[slot] += 1
            features.append((slot, f"_{seen[slot]}"))
    return (("a", act.act), *sorted(features))


def _placeholder(slot: str) -> str:
    return "SLOT_" + slot.upper()


def delexicalise(text: str, act: DialogueAct) -> str:
    """Each ordinary value of ``act`` (longest first) replaced once by ``SLOT_<SLOT>`` in ``text``."""
    for slot, value in sorted(act.slots, key=lambda item: len(item[1]), reverse=True):
        if value in _KEPT_VALUES:
            continue
        parts = value.replace(" or ", " and ").split(" and ")
        orders = list(itertools.permutations(parts))
        for candidate in [" and ".join(p) for p in orders] + [" or ".join(p) for p in orders]:
            if candidate in text:  # a substring match ends the search even when not whole words
                text = (" " + text + " ").replace(" " + candidate + " ", " " + _placeholder(slot) + " ", 1)[1:-1]
                break
    return text


def lexicalise(text: str, act: DialogueAct, domain: str) -> str:
    """``SLOT_<SLOT>`` placeholders filled with ``act``'s values; a left-over ``SLOT_TYPE`` -> ``domain``."""
    if not act.slots:
        return text
    for slot, value in sorted(act.slots, key=lambda item: len(item[0]), reverse=True):
        if value in _KEPT_VALUES or _placeholder(slot) not in text:
            continue
        text = (" " + text + " ").replace(" " + _placeholder(slot) + " ", " " + value + " ", 1)[1:-1]
    return (" " + text + " ").replace(" SLOT_TYPE ", " " + domain + " ")[1:-1]


# ---------------------------------------------------------------------------------------------
# Files


def default_test_file(domain: str, datasets: str | Path | None = None) -> Path:
    """``<datasets>/wen2015_sf/<domain>/test.json``.

    datasets: the argument, else ``$QGEN_DATASETS``, else ../shared/datasets.
    """
    from qgen.datasets.paths import ENV_VAR, datasets_dir

    check_domain(domain)
    root = datasets_dir(datasets)
    if root is None:
        raise WenInputError(
            f"no datasets directory: pass --datasets, or point ${ENV_VAR} at the folder holding {TEST_DIR}/"
        )
    return root / TEST_DIR / domain / "test.json"


def check_domain(domain: str) -> str:
    """``domain`` if it is hotel or restaurant, else a :class:`WenInputError` naming the domains."""
    if domain not in DOMAINS:
        raise WenInputError(f"unknown domain {domain!r}: the Wen et al. 2015 domains are {', '.join(DOMAINS)}")
    return domain


def read_test_records(path: str | Path) -> tuple[WenRecord, ...]:
    """The records of an RNNLG data file: a 5-line ``#`` banner, then a JSON list of [act, utterance, HDC]."""
    path = Path(path)
    if not path.is_file():
        from qgen.metrics.e2e_official import not_a_file

        raise WenInputError(not_a_file(path, "test file"))
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise WenInputError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    if len(lines) <= HEADER_LINES or not all(line.startswith("#") for line in lines[:HEADER_LINES]):
        raise WenInputError(f"{path}: expected {HEADER_LINES} '#' comment lines before the JSON list")
    try:
        data = json.loads("\n".join(lines[HEADER_LINES:]))
    except json.JSONDecodeError as error:
        where = f"{error.msg}, line {error.lineno + HEADER_LINES}"
        raise WenInputError(f"{path}: invalid JSON after the comment lines ({where})") from None
    if not isinstance(data, list) or not data:
        raise WenInputError(f"{path}: expected a non-empty JSON list of [act, utterance, baseline] records")
    records = []
    for index, item in enumerate(data):
        if not (isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item)):
            raise WenInputError(f"{path}: record {index} is not a list of 3 strings [act, utterance, baseline]")
        try:
            parse_act(item[0])
        except ValueError as error:
            raise WenInputError(f"{path}: record {index}: {error}") from None
        records.append(WenRecord(*item))
    return tuple(records)


def build_references(records: Sequence[WenRecord], domain: str) -> tuple[tuple[str, ...], ...]:
    """Each record's reference set: the utterances of every record sharing its delexicalised act,
    normalised, delexicalised with their own act and relexicalised with this record's act."""
    acts = [parse_act(r.act) for r in records]
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    keys = []
    for record, act in zip(records, acts):
        key = delexicalised_act(act)
        keys.append(key)
        groups.setdefault(key, []).append(delexicalise(normalise(record.utterance), act))
    return tuple(tuple(lexicalise(ref, act, domain) for ref in groups[key]) for act, key in zip(acts, keys))


def rnnlg_baseline_outputs(test: WenTestSet) -> list[str]:
    """The HDC baseline as RNNLG scores it: one per record, the *first* baseline of the record's
    delexicalised-act group (normalised, delexicalised with that record's act), relexicalised with
    this record's act.

    RNNLG treats the template baseline, like its own generators, as a function of the delexicalised
    act; records of one group whose slots come in another order get the first record's slot order.
    This is what gives the published-protocol figures (BLEU 54.06 hotel, 42.60 restaurant); each
    record's own baseline, scored as an ordinary output, gives 53.98 / 42.52.
    """
    acts = [parse_act(r.act) for r in test.records]
    first: dict[tuple[tuple[str, str], ...], str] = {}
    for record, act in zip(test.records, acts):
        first.setdefault(delexicalised_act(act), delexicalise(normalise(record.baseline), act))
    return [lexicalise(first[delexicalised_act(act)], act, test.domain) for act in acts]


def load_test_set(domain: str, path: str | Path | None = None, datasets: str | Path | None = None) -> WenTestSet:
    """A domain's test set with its reference sets (default file: :func:`default_test_file`)."""
    check_domain(domain)
    path = Path(path) if path is not None else default_test_file(domain, datasets)
    records = read_test_records(path)
    return WenTestSet(domain, path, records, build_references(records, domain))


def read_outputs(path: str | Path, test: WenTestSet) -> list[str]:
    """System outputs: a UTF-8 text file with one output per line, line *i* for test record *i*.

    A line may instead be ``act<TAB>output``; then every line must be, and each act must equal the
    test record's act at that position (surrounding blanks ignored). A final newline ends the last
    line; any other empty line is an empty output. The number of lines must equal the number of
    test records (1,075 hotel, 1,039 restaurant).
    """
    from qgen.metrics.e2e_official import read_outputs_text

    path = Path(path)
    lines = read_outputs_text(path, WenInputError).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    expected = len(test.records)
    if len(lines) != expected:
        raise WenInputError(
            f"{path}: {len(lines)} lines but the {test.domain} test set ({test.path.name}) has {expected} records: "
            "one output per line, in the test file's record order"
        )
    tabbed = ["\t" in line for line in lines]
    if not any(tabbed):
        return lines
    outputs = []
    for number, (line, record) in enumerate(zip(lines, test.records), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise WenInputError(
                f"{path}: line {number} has {len(fields)} tab-separated columns; with a tab anywhere every line "
                "must be 'act<TAB>output'"
            )
        if fields[0].strip() != record.act.strip():
            raise WenInputError(
                f"{path}: line {number} is for the act {fields[0][:80]!r} but test record {number} is "
                f"{record.act[:80]!r}: outputs must follow the test file's record order"
            )
        outputs.append(fields[1])
    return outputs


# ---------------------------------------------------------------------------------------------
# Scores


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def bleu_tokens(outputs: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]]) -> float:
    """RNNLG's corpus BLEU-4 (0-1) of token lists against reference sets; see the module doc."""
    _check_corpus(outputs, references)
    matched = [0] * BLEU_ORDER
    total = [0] * BLEU_ORDER
    ref_length = hyp_length = 0
    largest: dict[tuple[tuple[str, ...], ...], list[Counter[tuple[str, ...]]]] = {}  # records share sets
    for output, group in zip(outputs, references):
        key = tuple(tuple(ref) for ref in group)
        if key not in largest:  # per n: each n-gram's largest count in one reference of the set
            largest[key] = [Counter() for _ in range(BLEU_ORDER)]
            for ref in key:
                for n in range(1, BLEU_ORDER + 1):
                    most = largest[key][n - 1]
                    for ngram, count in _ngrams(ref, n).items():
                        if count > most[ngram]:
                            most[ngram] = count
        for n in range(1, BLEU_ORDER + 1):
            counts = _ngrams(output, n)
            total[n - 1] += sum(counts.values())
            most = largest[key][n - 1]
            matched[n - 1] += sum(min(count, most.get(ngram, 0)) for ngram, count in counts.items())
        closest = min(group, key=lambda ref: abs(len(ref) - len(output)))  # the first on ties
        ref_length += len(closest)
        hyp_length += len(output)
    if hyp_length == 0:
        return 0.0
    brevity = 1.0 if hyp_length > ref_length else math.exp(1.0 - ref_length / hyp_length)
    precisions = [m / (t + _TINY) + _TINY for m, t in zip(matched, total)]
    return brevity * math.exp(math.fsum(math.log(p) / BLEU_ORDER for p in precisions))


def bleu(outputs: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """RNNLG's corpus BLEU-4 (0-100) of normalised outputs against reference sets (split on blanks)."""
    _check_corpus(outputs, references)
    return 100.0 * bleu_tokens([normalise(o).split() for o in outputs],
                               [[r.split() for r in group] for group in references])


def meteor(
    outputs: Sequence[str], references: Sequence[Sequence[str]], java: str | None = None, *,
    scorer: Meteor | None = None,
) -> float:
    """METEOR 1.5 (0-100, the jar's corpus aggregate) of normalised outputs against reference sets.

    ``scorer``: an open :class:`~qgen.metrics.meteor.Meteor` to reuse; else one is started and closed here.
    """
    from qgen.metrics.meteor import Meteor

    _check_corpus(outputs, references)
    hypotheses = [normalise(o).split() for o in outputs]
    refs = [[r.split() for r in group] for group in references]
    if scorer is not None:
        return scorer.score(hypotheses, refs).corpus
    with Meteor(java=java) as opened:
        return opened.score(hypotheses, refs).corpus


def _check_corpus(outputs: Sequence[object], references: Sequence[Sequence[object]]) -> None:
    from qgen.metrics.e2e_official import check_corpus

    check_corpus(outputs, references, unit="record")


def score(
    outputs: Sequence[str], test: WenTestSet, *, java_metrics: bool = True, java: str | None = None,
) -> dict[str, float | None]:
    """``{"BLEU": ..., "METEOR": ...}`` (0-100) of one output per test record; METEOR None without Java metrics."""
    figures: dict[str, float | None] = {"BLEU": bleu(outputs, test.references)}
    figures["METEOR"] = meteor(outputs, test.references, java) if java_metrics else None
    return figures


def score_files(
    outputs_path: str | Path, domain: str, *, test_file: str | Path | None = None, java_metrics: bool = True,
    java: str | None = None, datasets: str | Path | None = None,
) -> dict[str, float | None]:
    """Score an outputs file against a domain's test set (default ``<datasets>/wen2015_sf/<domain>/test.json``)."""
    test = load_test_set(domain, test_file, datasets)
    return score(read_outputs(outputs_path, test), test, java_metrics=java_metrics, java=java)
