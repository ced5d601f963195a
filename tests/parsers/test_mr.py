"""E2E MRs and Wen et al. dialogue acts: parsing, tokens, canonical rendering, errors, real data, fuzz."""
from __future__ import annotations

import csv
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsers.errors import (
    BinaryInputError,
    EmptyInputError,
    InputTooLongError,
    LogicalFormError,
    StructuredLogicalFormError,
)
from parsers.mr import DialogueAct, parse_da, parse_mr, render_da, render_mr, tokenize_da, tokenize_mr
from parsers.result import ParsedLF
from qgen.datasets.paths import datasets_dir

# ---------------------------------------------------------------- E2E MRs


def test_e2e_mr_with_pound_sign_and_camel_case():
    mr = ("name[The Vaults], eatType[pub], priceRange[more than £30], "
          "customer rating[5 out of 5], near[Café Adriatic]")
    assert parse_mr(mr) == [("name", "The Vaults"), ("eatType", "pub"), ("priceRange", "more than £30"),
                            ("customer rating", "5 out of 5"), ("near", "Café Adriatic")]
    parsed = tokenize_mr(mr)
    assert isinstance(parsed, ParsedLF) and parsed.lf_type == "mr" and parsed.logical_form == mr
    assert parsed.normalized == mr and parsed.entities == []
    assert " ".join(parsed.tokens) == (
        "name [ the vaults ] , eat type [ pub ] , price range [ more than £ 30 ] , "
        "customer rating [ 5 out of 5 ] , near [ café adriatic ]"
    )


def test_e2e_mr_values_are_copyable_nl_tokens():
    parsed = tokenize_mr("name[Nicola's], near[Cent' Anni], priceRange[£20-25], familyFriendly[no]")
    assert parsed.tokens[:5] == ["name", "[", "nicola", "'s", "]"]
    assert parsed.tokens[6:12] == ["near", "[", "cent", "'", "anni", "]"]
    assert parsed.tokens[13:19] == ["price", "range", "[", "£", "20-25", "]"]
    assert parsed.tokens[-5:] == ["family", "friendly", "[", "no", "]"]


def test_e2e_mr_normalized_is_canonical():
    messy = "  name[ The Mill ] ,eatType[coffee shop],food [French]  "
    parsed = tokenize_mr(messy)
    assert parsed.normalized == "name[The Mill], eatType[coffee shop], food[French]"
    assert tokenize_mr(parsed.normalized).tokens == parsed.tokens
    assert render_mr(parse_mr(messy)) == parsed.normalized
    assert parse_mr("name[]") == [("name", "")]  # an empty value is kept, not invented


@pytest.mark.parametrize(
    "mr,problem,position",
    [
        ("name[The Vaults", "unbalanced '['", 4),
        ("name]The Vaults[", "unbalanced ']'", 4),
        ("name[a[b]]", "'[' inside an MR value", 6),
        ("name[a] eatType[pub]", "expects ','", 8),
        ("name[a],", "expects an attribute[value] item", 8),
        ("name[a],, food[b]", "expects an attribute[value] item", 8),
        ("just some words", "attribute has no [value]", 0),
        ("[pub]", "empty attribute name", 0),
        ("9lives[x]", "bad attribute name", 0),
        ("name(x)", "attribute has no [value]", 0),
    ],
)
def test_malformed_mr_names_the_problem(mr, problem, position):
    with pytest.raises(StructuredLogicalFormError) as info:
        tokenize_mr(mr)
    assert problem in str(info.value) and info.value.position == position
    assert "\n" not in str(info.value) and info.value.lf == mr


# ---------------------------------------------------------------- dialogue acts


def test_da_quoted_and_bare_values():
    da = "inform(name='trattoria contadina';pricerange=moderate)"
    assert parse_da(da) == DialogueAct("inform", [("name", "trattoria contadina"), ("pricerange", "moderate")])
    parsed = tokenize_da(da)
    assert parsed.lf_type == "da" and parsed.logical_form == da
    assert parsed.tokens == ["inform", "(", "name", "=", "trattoria", "contadina", ";",
                             "pricerange", "=", "moderate", ")"]
    assert parsed.normalized == "inform(name='trattoria contadina';pricerange='moderate')"
    assert tokenize_da("inform(name=trattoria contadina;pricerange='moderate')").tokens == parsed.tokens


@pytest.mark.parametrize(
    "da,act,slots,tokens",
    [
        ("?request(near)", "?request", [("near", None)], "? request ( near )"),
        ("goodbye()", "goodbye", [], "goodbye ( )"),
        ("inform_no_match(area=tenderloin)", "inform_no_match", [("area", "tenderloin")],
         "inform _ no _ match ( area = tenderloin )"),
        ("?confirm(pricerange='pricey')", "?confirm", [("pricerange", "pricey")], "? confirm ( pricerange = pricey )"),
        ("inform(type=hotel;count='12';dogsallowed=dont_care)", "inform",
         [("type", "hotel"), ("count", "12"), ("dogsallowed", "dont_care")],
         "inform ( type = hotel ; count = 12 ; dogsallowed = dont _ care )"),
        ("inform(address='501 post street . san francisco')", "inform",
         [("address", "501 post street . san francisco")], "inform ( address = 501 post street . san francisco )"),
        ("?select(goodformeal=dont_care;goodformeal=dinner')", "?select",
         [("goodformeal", "dont_care"), ("goodformeal", "dinner")],
         "? select ( goodformeal = dont _ care ; goodformeal = dinner )"),
        (' inform ( name = "nicola\'s" ; phone = ) ', "inform", [("name", "nicola's"), ("phone", "")],
         "inform ( name = nicola 's ; phone = )"),
    ],
)
def test_da_forms(da, act, slots, tokens):
    assert parse_da(da) == DialogueAct(act, slots)
    parsed = tokenize_da(da)
    assert " ".join(parsed.tokens) == tokens
    assert parse_da(parsed.normalized) == parse_da(da)


def test_da_rendering_quotes():
    assert render_da(DialogueAct("inform", [("name", "nicola's")])) == "inform(name=\"nicola's\")"
    assert render_da(DialogueAct("?request", [("area", None)])) == "?request(area)"


@pytest.mark.parametrize(
    "da,problem,position",
    [
        ("inform(name='x'", "no closing ')'", 15),
        ("inform(name=x", "no closing ')'", 13),
        ("inform(", "no closing ')'", 7),
        ("inform(name='x)", "unterminated quoted value", 12),
        ("inform(name='x' y)", "expected ';' or ')'", 16),
        ("inform(a=b) extra", "unexpected text after", 12),
        ("inform(a=b(c))", "expected ';' or ')'", 10),
        ("inform(;)", "expected a slot name", 7),
        ("inform(a;)", "expected a slot name", 9),
        ("(name=x)", "must start with act_name(", 0),
        ("just words", "must start with act_name(", 0),
    ],
)
def test_malformed_da_names_the_problem(da, problem, position):
    with pytest.raises(StructuredLogicalFormError) as info:
        tokenize_da(da)
    assert problem in str(info.value) and info.value.position == position


@pytest.mark.parametrize("tokenize", [tokenize_mr, tokenize_da])
def test_guards_come_first(tokenize):
    with pytest.raises(EmptyInputError):
        tokenize("   ")
    with pytest.raises(BinaryInputError):
        tokenize("name[a\x00b]")
    with pytest.raises(InputTooLongError):
        tokenize("name[" + "x" * 30_000 + "]")
    with pytest.raises(BinaryInputError):
        tokenize(b"\xff\xfe")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the real data

_DATA = datasets_dir()
real_data = pytest.mark.skipif(
    _DATA is None or not _DATA.is_dir(), reason="no real datasets: set $QGEN_DATASETS or use ../shared/datasets"
)
E2E_ATTRIBUTES = {"name", "eatType", "food", "priceRange", "customer rating", "area", "familyFriendly", "near"}


@real_data
@pytest.mark.parametrize("path", ["e2e/devset.csv", "e2e_plus/devset_plus.csv", "e2e_plus/testset_plus.csv"])
def test_every_e2e_dev_mr_parses(path):
    with open(_DATA / path, encoding="utf-8", newline="") as handle:
        mrs = {row["mr"] for row in csv.DictReader(handle)}
    assert len(mrs) in (547, 630)
    for mr in mrs:
        pairs = parse_mr(mr)
        assert {a for a, _ in pairs} <= E2E_ATTRIBUTES
        assert tokenize_mr(mr).normalized == mr  # the data is already canonical


@real_data
@pytest.mark.parametrize("domain", ["hotel", "restaurant"])
def test_every_wen_train_da_parses(domain):
    with open(_DATA / "wen2015_sf" / domain / "train.json", encoding="utf-8") as handle:
        for _ in range(5):
            handle.readline()
        records = json.load(handle)
    acts = set()
    for da, _text, _baseline in records:
        act = parse_da(da)
        acts.add(act.act)
        assert parse_da(tokenize_da(da).normalized) == act
    assert {"inform", "?request", "goodbye", "inform_no_match", "?confirm"} <= acts


# ---------------------------------------------------------------- properties and fuzz

_words = st.text(st.sampled_from("abcdeé£' -0123456789"), min_size=0, max_size=12)
_attribute = st.from_regex(r"[a-zA-Z][a-zA-Z _-]{0,10}", fullmatch=True).map(str.strip).filter(bool)
_slot = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


@given(st.lists(st.tuples(_attribute, _words.map(str.strip)), min_size=1, max_size=5))
def test_mr_render_parse_round_trip(pairs):
    assert parse_mr(render_mr(pairs)) == pairs


@given(st.from_regex(r"\??[a-z][a-z_]{0,8}", fullmatch=True),
       st.lists(st.tuples(_slot, st.none() | st.text(st.sampled_from("ab c;()'\"=_."), max_size=8)), max_size=4))
def test_da_render_parse_round_trip(act, slots):
    # A value holding both quote kinds can only come from a bare value (no ';', '(', ')').
    slots = [(s, v) for s, v in slots if v is None or not ("'" in v and '"' in v)]
    da = DialogueAct(act, slots)
    assert parse_da(render_da(da)) == da


_structural = st.text(st.sampled_from("name[]()=,;'\"? _£\t\n.x?inform"), max_size=40)


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=60), _structural, st.binary(max_size=20)))
def test_fuzz_only_parsed_or_logical_form_errors(text):
    for tokenize in (tokenize_mr, tokenize_da):
        try:
            result = tokenize(text)
        except LogicalFormError as exc:
            assert "\n" not in str(exc)
        else:
            assert isinstance(result, ParsedLF) and result.tokens and isinstance(result.logical_form, str)
            assert tokenize(result.normalized).tokens == result.tokens


@pytest.mark.parametrize(
    "text",
    [" " * 19_990 + "x", "a" + " " * 19_990 + "[x]", "i(a=x" + " " * 19_980 + "y)",
     "i(a=x" + "'" * 19_980 + "y)", "a[b]," * 3_999, "i(" + "a=b;" * 4_990 + ")"],
)
def test_long_adversarial_inputs_stay_linear(text):
    start = time.perf_counter()
    for tokenize in (tokenize_mr, tokenize_da):
        try:
            tokenize(text)
        except LogicalFormError:
            pass
    assert time.perf_counter() - start < 1.0  # a quadratic regex took > 1 s on these
