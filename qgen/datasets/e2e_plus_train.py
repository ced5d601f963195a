"""E2E+ (train rebuilt): E2E's training split with the values of ``name``, ``near`` and ``food``
replaced in the MR and in every reference, the way Roberti et al. describe E2E+ (their train file is
not published; ``shared/datasets/e2e_plus/SOURCE.md``). Labelled "E2E+ (train rebuilt)" wherever used.

- One replacement per distinct MR and slot, drawn with a seed from the MR (every reference of an MR
  gets the same values); exact string replacement, as in the published dev/test files (a
  reference that paraphrases a value, "British" for English, keeps its paraphrase).
- ``food``: adjectival forms of countries (Wikipedia's "List of adjectival and demonymic forms for
  countries and nations", the list the authors name), minus every food value of E2E and of the
  published E2E+ dev/test files.
- ``name`` and ``near``: the authors drew New York restaurant names from the Entree data, which we do
  not have. Ours are made from seeded patterns over the word lists below (an apostrophe-s name, a
  "Cafe"/"Trattoria"/... name, an all-capitals name, two-word names), checked to be disjoint from every
  name and near value of E2E and of E2E+ dev/test; the names of ``name`` are never used as ``near``.
"""
from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Sequence

from qgen.datasets.char_d2t import CharSplit

# Adjectival forms of countries (Wikipedia's list); values of E2E and E2E+ dev/test are removed below.
DEMONYMS = (
    "Albanian Algerian Andorran Angolan Armenian Australian Austrian Azerbaijani Bahamian Bahraini Bangladeshi "
    "Barbadian Belarusian Belgian Belizean Beninese Bhutanese Bolivian Bosnian Brazilian Bruneian Bulgarian "
    "Burkinabe Burundian Cameroonian Chadian Colombian Comoran Congolese Croatian Czech Danish Djiboutian "
    "Dominican Dutch Ecuadorian Egyptian Eritrean Estonian Ethiopian Finnish Gabonese Gambian Georgian German "
    "Ghanaian Greek Guatemalan Haitian Honduran Hungarian Icelandic Indonesian Iranian Irish Ivorian Kazakh "
    "Kenyan Korean Kuwaiti Laotian Latvian Lebanese Liberian Libyan Lithuanian Malawian Maldivian Maltese "
    "Mauritanian Mauritian Moroccan Namibian Nicaraguan Nigerien Norwegian Omani Pakistani Paraguayan Peruvian "
    "Filipino Portuguese Romanian Russian Rwandan Salvadoran Saudi Scottish Serbian Singaporean Slovak Slovenian "
    "Somali Spanish Syrian Taiwanese Tajik Thai Togolese Tongan Turkish Turkmen Ugandan Ukrainian Uruguayan "
    "Uzbek Venezuelan Welsh Yemeni Zambian Zimbabwean"
).split()
_STEMS = ("Alba Bellini Caruso Dante Elio Fiore Gallo Luca Marco Nico Orso Paolo Rocco Sergio Tino Vito "
          "Amber Birch Cedar Copper Ember Fern Hazel Indigo Juniper Maple Olive Pepper Sage Saffron Thyme Willow").split()
_NOUNS = "Table Kitchen Lantern Harbor Garden Oven Corner Spoon Tavern Grill Terrace Cellar Bistro Anchor Larder".split()
_PREFIXES = ("Cafe", "Trattoria", "Chez", "Osteria", "Casa", "Bar")
MR_SLOT = re.compile(r"(name|near|food)\[([^\]]*)\]")


def _candidates() -> list[str]:
    """Every name the patterns make, in a fixed order."""
    names = [f"{s}'s" for s in _STEMS] + [f"{p} {s}" for p in _PREFIXES for s in _STEMS]
    names += [f"{s.upper()} {n.upper()}" for s in _STEMS[:8] for n in _NOUNS[:4]]
    names += [f"The {s} {n}" for s in _STEMS[16:] for n in _NOUNS]
    return names


def slot_values(mrs: Iterable[str]) -> dict[str, set[str]]:
    """The values of name, near and food in these MRs."""
    found: dict[str, set[str]] = {"name": set(), "near": set(), "food": set()}
    for mr in mrs:
        for slot, value in MR_SLOT.findall(mr):
            found[slot].add(value)
    return found


def value_lists(taken: dict[str, set[str]], seed: int = 1) -> dict[str, list[str]]:
    """Replacement lists disjoint from ``taken`` (the values of E2E and E2E+ dev/test, every slot):
    food from DEMONYMS, and the pattern names split in two disjoint halves for name and near."""
    every = set().union(*taken.values())
    foods = [d for d in DEMONYMS if d not in every]
    names = [n for n in _candidates() if n not in every]
    random.Random(seed).shuffle(names)
    half = len(names) // 2
    return {"food": foods, "name": sorted(names[:half]), "near": sorted(names[half:])}


def rebuild(train: CharSplit, lists: dict[str, Sequence[str]], seed: int = 1) -> CharSplit:
    """E2E train rows with name/near/food replaced per MR (references by exact string replacement)."""
    replaced: dict[str, tuple[str, dict[str, str]]] = {}
    for mr in train.mrs:
        digest = hashlib.sha256(f"{seed}:{mr}".encode()).digest()
        rng = random.Random(digest)
        mapping = {value: rng.choice(lists[slot]) for slot, value in MR_SLOT.findall(mr)}
        new_mr = MR_SLOT.sub(lambda m: f"{m.group(1)}[{mapping[m.group(2)]}]", mr)
        replaced[mr] = (new_mr, mapping)
    rows = []
    for mr, ref in train.rows:
        new_mr, mapping = replaced[mr]
        for old in sorted(mapping, key=len, reverse=True):  # "The Rice Boat" before a shorter value inside it
            ref = ref.replace(old, mapping[old])
        rows.append((new_mr, ref))
    return CharSplit.from_rows(rows)
