"""Structured meaning representations: E2E MRs and Wen et al. (2015) dialogue acts.

- E2E MR (Novikova et al. 2017): ``name[The Vaults], eatType[pub], priceRange[more than £30]``
  -> ``[(attribute, value), ...]``, order kept.
- Dialogue act (RNNLG): ``inform(name='trattoria contadina';pricerange=moderate)``,
  ``?request(near)``, ``goodbye()`` -> act + ``[(slot, value | None), ...]``. Quoting is
  inconsistent in the data, so quotes carry no meaning: a bare value is whitespace-stripped and
  loses stray quotes at its ends (RNNLG's own reader does ``strip('\\'"')``; one restaurant train DA
  has ``goodformeal=dinner'``).

Tokens follow ``parsers.token_rules``: attribute, act and slot names through ``split_identifier``
(``priceRange`` -> ``price range``, ``?request`` -> ``? request``), brackets, parens, ``=``, ``,``
and ``;`` as tokens, values through ``nl_tokens`` so that they can be copied into the text. Quotes
are not tokens. ``normalized`` is the canonical rendering (:func:`render_mr`, :func:`render_da`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from parsers.errors import StructuredLogicalFormError
from parsers.guards import check_text
from parsers.result import ParsedLF
from parsers.tokens import nl_tokens, split_identifier

# E2E: one ``attribute[value]`` item; attribute names are words, spaces and hyphens.
_MR_ITEM = re.compile(r"([^\[\],]*)\[([^\[\]]*)\]\s*")  # one greedy class: linear on junk
_MR_ATTRIBUTE = re.compile(r"[^\W\d][\w \-]*")
# Dialogue acts: ``?``-prefixed or plain act names; slot names are identifiers.
_DA_ACT = re.compile(r"\s*(\??[^\W\d]\w*)\s*\(")
_DA_SLOT = re.compile(r"\s*([^\W\d]\w*)\s*")
_DA_BARE = re.compile(r"[^;()]*")
_QUOTES = "'\""


@dataclass(frozen=True)
class DialogueAct:
    """One dialogue act: ``act`` (``inform``, ``?request``, ...) and its slots in order."""

    act: str
    slots: list[tuple[str, str | None]]


def parse_mr(text: str) -> list[tuple[str, str]]:
    """``name[X], food[Y]`` -> ``[("name", "X"), ("food", "Y")]``; raises StructuredLogicalFormError."""
    text = check_text(text)
    pairs: list[tuple[str, str]] = []
    pos = 0
    while True:
        match = _MR_ITEM.match(text, pos)
        if match is None:
            raise _mr_error(text, pos)
        attribute, value = match.group(1).strip(), match.group(2).strip()
        if not _MR_ATTRIBUTE.fullmatch(attribute):
            what = "an empty attribute name" if not attribute else f"a bad attribute name {attribute!r}"
            raise StructuredLogicalFormError(f"MR has {what}", text, _skip_space(text, match.start(1)))
        pairs.append((attribute, value))
        pos = match.end()
        if pos == len(text):
            return pairs
        if text[pos] != ",":
            raise StructuredLogicalFormError("MR expects ',' between attribute[value] items", text, pos)
        pos += 1


def render_mr(pairs: list[tuple[str, str]]) -> str:
    """The canonical MR text: ``attribute[value]`` items joined by ``, ``."""
    return ", ".join(f"{attribute}[{value}]" for attribute, value in pairs)


def tokenize_mr(text: str) -> ParsedLF:
    """Parse and tokenize an E2E MR (``lf_type`` "mr")."""
    text = check_text(text)
    pairs = parse_mr(text)
    tokens: list[str] = []
    for index, (attribute, value) in enumerate(pairs):
        if index:
            tokens.append(",")
        tokens += [*split_identifier(attribute), "[", *nl_tokens(value), "]"]
    return ParsedLF(lf_type="mr", logical_form=text, normalized=render_mr(pairs), tokens=tokens)


def parse_da(text: str) -> DialogueAct:
    """``inform(name='x';area=y)`` -> DialogueAct("inform", [("name", "x"), ("area", "y")])."""
    text = check_text(text)
    match = _DA_ACT.match(text)
    if match is None:
        raise StructuredLogicalFormError("dialogue act must start with act_name(", text, _skip_space(text, 0))
    act, pos, slots = match.group(1), match.end(), []
    if text[_skip_space(text, pos) :].startswith(")"):
        pos = _skip_space(text, pos) + 1
    else:
        while True:
            slot, value, pos = _da_slot(text, pos)
            slots.append((slot, value))
            if text[pos] == ")":
                pos += 1
                break
            pos += 1  # ';'
    end = _skip_space(text, pos)
    if end != len(text):
        raise StructuredLogicalFormError("unexpected text after the dialogue act's ')'", text, end)
    return DialogueAct(act, slots)


def render_da(act: DialogueAct) -> str:
    """The canonical DA text: ``act(slot='value';slot)``, values single-quoted where possible."""
    return f"{act.act}({';'.join(_render_slot(slot, value) for slot, value in act.slots)})"


def tokenize_da(text: str) -> ParsedLF:
    """Parse and tokenize a dialogue act (``lf_type`` "da")."""
    text = check_text(text)
    act = parse_da(text)
    tokens = [*split_identifier(act.act), "("]
    for index, (slot, value) in enumerate(act.slots):
        if index:
            tokens.append(";")
        tokens += split_identifier(slot)
        if value is not None:
            tokens += ["=", *nl_tokens(value)]
    tokens.append(")")
    return ParsedLF(lf_type="da", logical_form=text, normalized=render_da(act), tokens=tokens)


def _da_slot(text: str, pos: int) -> tuple[str, str | None, int]:
    """One ``slot[=value]`` from ``pos``; returns it and the position of the ';' or ')' after it."""
    match = _DA_SLOT.match(text, pos)
    if match is None and _skip_space(text, pos) >= len(text):
        raise StructuredLogicalFormError("unbalanced '(': the dialogue act has no closing ')'", text, len(text))
    if match is None:
        raise StructuredLogicalFormError("expected a slot name", text, _skip_space(text, pos))
    slot, pos = match.group(1), match.end()
    value: str | None = None
    if pos < len(text) and text[pos] == "=":
        pos = _skip_space(text, pos + 1)
        if pos < len(text) and text[pos] in _QUOTES:
            close = text.find(text[pos], pos + 1)
            if close < 0:
                raise StructuredLogicalFormError(f"unterminated quoted value of slot {slot!r}", text, pos)
            value, pos = text[pos + 1 : close], _skip_space(text, close + 1)
        else:
            bare = _DA_BARE.match(text, pos)
            value, pos = _trim_bare(bare.group()), bare.end()  # type: ignore[union-attr]
    if pos >= len(text):
        raise StructuredLogicalFormError("unbalanced '(': the dialogue act has no closing ')'", text, len(text))
    if text[pos] not in ";)":
        raise StructuredLogicalFormError(f"expected ';' or ')' after slot {slot!r}", text, pos)
    return slot, value, pos


def _trim_bare(value: str) -> str:
    """Drop whitespace and stray quotes at both ends of a bare value (linear, unlike a regex)."""
    start, end = 0, len(value)
    while start < end and (value[start].isspace() or value[start] in _QUOTES):
        start += 1
    while end > start and (value[end - 1].isspace() or value[end - 1] in _QUOTES):
        end -= 1
    return value[start:end]


def _render_slot(slot: str, value: str | None) -> str:
    if value is None:
        return slot
    for quote in _QUOTES:
        if quote not in value:
            return f"{slot}={quote}{value}{quote}"
    return f"{slot}={value}"  # holds both quote kinds: it was bare, so it has no ';', '(' or ')'


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _mr_error(text: str, pos: int) -> StructuredLogicalFormError:
    """Say why no ``attribute[value]`` item starts at ``pos``."""
    brackets = re.compile(r"[\[\],]")
    first = brackets.search(text, pos)
    if first is not None and first.group() == "]":
        return StructuredLogicalFormError("unbalanced ']' in MR", text, first.start())
    if first is None or first.group() == ",":
        where = _skip_space(text, pos)
        if where >= len(text) or text[where] == ",":
            return StructuredLogicalFormError("MR expects an attribute[value] item", text, where)
        return StructuredLogicalFormError("MR attribute has no [value]", text, where)
    inner = re.compile(r"[\[\]]").search(text, first.end())
    if inner is None:
        return StructuredLogicalFormError("unbalanced '[' in MR: no closing ']'", text, first.start())
    return StructuredLogicalFormError("'[' inside an MR value", text, inner.start())
