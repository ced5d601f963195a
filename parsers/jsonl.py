"""Read JSON Lines from a binary stream: one answer per input line, whatever the line holds.

Every reader of logical-form lines uses this module (``qgen tokenize`` on stdin, ``qgen generate
--file``, ``qgen synthesize --from-file`` / ``qgen preprocess`` on a ``.jsonl`` file). Lines end at
``\\n`` only (a ``\\r``, U+2028 or U+0085 inside a line stays inside it); each is checked before it
is parsed and a bad one becomes a ``LineError`` naming its line number and the problem:

* longer than ``MAX_LINE_BYTES``: refused unread (the stream never holds more than that of it);
* not UTF-8;
* nested deeper than ``MAX_DEPTH`` (checked on the text, before ``json.loads``);
* not a JSON object, a field of the wrong type (``FIELD_TYPES``), or a string with a lone
  surrogate (``"\\ud800"``: valid JSON, but no UTF-8 text can hold it).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, BinaryIO, Iterator

MAX_LINE_BYTES = 1 << 20  # 1 MiB: a logical form with its names is a few kB
MAX_DEPTH = 100  # objects and arrays inside each other; a record needs 3
RAW_KEPT = 200  # characters of a refused line kept for the rejects table
_SKIP_CHUNK = 1 << 16  # bytes read at a time while skipping the rest of an oversized line
# A JSON string literal, or an unterminated one up to the end: every match attempt that starts at a
# quote succeeds, so stripping strings stays linear however the quotes and backslashes are laid out.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?$)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]")

# Field -> what it may hold (None is always allowed: the field is then absent).
FIELD_TYPES = {
    "id": "a string or a finite number",
    "lf": "a string",
    "lf_type": "a string",
    "question": "a string",
    "split": "a string",
    "names": "an object of id -> name strings",
    "answers": "a list of strings or finite numbers",
}


class LineError(ValueError):
    """A line that cannot be a record; ``str()`` is one line, ``line N: <problem>``
    (``line 7: not UTF-8 (...)``, ``line 9: field 'lf' holds a lone surrogate``)."""

    def __init__(self, number: int, problem: str, unit: str = "line") -> None:
        self.number = number
        self.problem = problem
        super().__init__(f"{unit} {number}: {problem}")


@dataclass(frozen=True)
class TextLine:
    """One non-blank input line: its 1-based number, its text (or a shortened, printable copy of
    it when it is refused) and the reason it is refused, if it is."""

    number: int
    text: str
    error: LineError | None = None


@dataclass(frozen=True)
class JsonLine:
    """One non-blank input line as a record: ``record`` is the checked JSON object, or None and
    ``error`` says why. ``given_id``: the line's ``id`` where it is a usable one (a string or a
    number, even on a refused line), else None."""

    number: int
    text: str
    record: dict[str, Any] | None
    error: LineError | None = None
    given_id: str | int | float | None = None

    @property
    def id(self) -> str:
        """The id as text; ``line-N`` (the line number) when the line has none, or null, or ""."""
        return f"line-{self.number}" if self.given_id is None or self.given_id == "" else str(self.given_id)


def read_text_lines(stream: BinaryIO, max_bytes: int = MAX_LINE_BYTES) -> Iterator[TextLine]:
    """The non-blank lines of ``stream``, split at ``\\n`` only and decoded as UTF-8 one by one
    (a trailing ``\\r`` and a byte-order mark on line 1 are dropped)."""
    number = 0
    while True:
        raw = stream.readline(max_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            _skip_rest_of_line(stream)
            yield TextLine(number, _printable(raw[:RAW_KEPT]) + " ...",
                           LineError(number, f"longer than {max_bytes} bytes"))
            continue
        raw = raw.rstrip(b"\n")
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            yield TextLine(number, _printable(raw), LineError(
                number, f"not UTF-8 (byte 0x{raw[err.start]:02x} at byte {err.start + 1}: {err.reason})"))
            continue
        yield TextLine(number, text)


def read_json_lines(stream: BinaryIO, max_bytes: int = MAX_LINE_BYTES) -> Iterator[JsonLine]:
    """One ``JsonLine`` per non-blank line of ``stream``: a checked record or the reason there is none."""
    for line in read_text_lines(stream, max_bytes):
        if line.error is not None:
            yield JsonLine(line.number, line.text, None, line.error)
        else:
            yield parse_json_line(line.text, line.number)


def parse_json_line(text: str, number: int, unit: str = "line") -> JsonLine:
    """The JSON object in ``text`` (line ``number``), with an ``lf`` string and its other fields
    checked (``FIELD_TYPES``), or the reason it is refused; never raises. ``unit`` names what
    ``number`` counts (line, row)."""
    try:
        record = _load_object(text, number, unit)
    except LineError as err:
        return JsonLine(number, text, None, err)
    ident = record.get("id")
    given_id = ident if _holds("id", ident) and _encodes(ident) else None
    try:
        _check_fields(record, number, unit)
    except LineError as err:
        return JsonLine(number, text, None, err, given_id)
    return JsonLine(number, text, record, None, given_id)


def _load_object(text: str, number: int, unit: str) -> dict[str, Any]:
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise LineError(number, f"nested {depth} deep (at most {MAX_DEPTH})", unit)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise LineError(number, f"not JSON ({err.msg} at column {err.colno})", unit) from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise LineError(number, f"not JSON ({err})", unit) from None
    except RecursionError:  # unreachable after the depth check; a backstop, never a crash
        raise LineError(number, f"nested deeper than {MAX_DEPTH}", unit) from None
    if not isinstance(record, dict):
        raise LineError(number, f"a JSON {type(record).__name__}, expected an object", unit)
    return record


def _check_fields(record: dict[str, Any], number: int, unit: str) -> None:
    for key, value in record.items():  # "\ud800" is valid JSON, but no UTF-8 text can hold it
        if not _encodes(key):
            raise LineError(number, "a field name holds a lone surrogate", unit)
        if not _encodes(value):
            raise LineError(number, f"field {key!r} holds a lone surrogate", unit)
    if not isinstance(record.get("lf"), str):
        raise LineError(number, "no 'lf' string", unit)
    for field, expected in FIELD_TYPES.items():
        value = record.get(field)
        if value is not None and not _holds(field, value):
            raise LineError(number, f"field {field!r} must be {expected}, got {_describe(field, value)}", unit)


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """How deep objects and arrays nest in the JSON ``text`` (brackets inside strings not counted);
    0 without scanning when the text has no more than ``limit`` brackets in all."""
    if text.count("[") + text.count("{") <= limit:
        return 0
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(1 if char in "[{" else -1 for char in brackets), default=0)


def _holds(field: str, value: Any) -> bool:
    if field == "id":
        return isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                          and math.isfinite(value))
    if field == "names":
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if field == "answers":
        return isinstance(value, list) and all(_holds("id", a) for a in value)
    return isinstance(value, str)


def _encodes(value: Any) -> bool:
    """Whether every string in ``value`` (keys included) can be written as UTF-8; depth is bounded."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodes(k) and _encodes(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_encodes(v) for v in value)
    return True


def _describe(field: str, value: Any) -> str:
    """What a field holds, down to the first bad entry of a names object or an answers list."""
    if field == "names" and isinstance(value, dict):
        key, bad = next((k, v) for k, v in value.items() if not isinstance(v, str))
        return f"{key[:40]!r} -> {_kind(bad)}"
    if field == "answers" and isinstance(value, list):
        return f"{_kind(next(a for a in value if not _holds('id', a)))} in the list"
    return _kind(value)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _printable(raw: bytes) -> str:
    """Bytes as text that any UTF-8 writer accepts (undecodable bytes as ``\\xNN``)."""
    return raw.decode("utf-8", errors="backslashreplace")


def _skip_rest_of_line(stream: BinaryIO) -> None:
    while True:
        chunk = stream.readline(_SKIP_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return
