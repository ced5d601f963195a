"""Tokenize a stream of JSON Lines, one result line per input line, whatever the input holds.

Input lines: ``{"id": ..., "lf": ..., "lf_type": ..., "names": {id: name}}`` (``lf_type`` and ``names``
optional: a line without its own type has the caller's, ``auto`` telling it from the text), read as bytes
by ``parsers.jsonl`` (split at ``\\n`` only, size, UTF-8, nesting, field types and lone surrogates
checked). Output: ``{"id": ..., "tokens": [...]}`` or ``{"id": ..., "error": "line N: ..."}``. A bad
line never stops the stream: it gets an error line naming its line number and what is wrong.
"""
from __future__ import annotations

from typing import BinaryIO, Iterator, Mapping

from parsers import LF_TYPES, tokenize_lf
from parsers.errors import LogicalFormError
from parsers.jsonl import JsonLine, read_json_lines
from parsers.lf_type import AUTO, LfTypeError, infer_lf_type


def tokenize_json_lines(stream: BinaryIO, lf_type: str, names: Mapping[str, str] | None = None,
                        validate: bool = True, dialect: str = "sqlite") -> Iterator[dict]:
    """Yield one result dict per non-blank line of the binary ``stream`` (``names`` apply to every line)."""
    for line in read_json_lines(stream):
        yield tokenize_json_line(line, lf_type, names or {}, validate, dialect)


def tokenize_json_line(line: JsonLine, lf_type: str, names: Mapping[str, str],
                       validate: bool = True, dialect: str = "sqlite") -> dict:
    """The result for one line; the id is echoed as given (``line-N`` when the line has no usable one, as
    ``--file`` names such lines)."""
    ident = line.given_id if line.given_id is not None else f"line-{line.number}"
    if line.record is None:
        return {"id": ident, "error": str(line.error)}
    record = line.record
    kind = record.get("lf_type") or lf_type  # the line's own type comes first
    if kind not in LF_TYPES and kind != AUTO:
        return {"id": ident, "error": f"line {line.number}: unknown lf_type {kind!r} (sparql, sql, mr or da)"}
    return tokenize_one(ident, record["lf"], kind, {**names, **(record.get("names") or {})}, f"line {line.number}: ",
                        validate, dialect)


def tokenize_one(ident: object, lf: str, lf_type: str, names: Mapping[str, str], where: str = "",
                 validate: bool = True, dialect: str = "sqlite") -> dict:
    """``{"id", "tokens"}`` for one logical form (``lf_type`` ``auto``: told from its text), or ``{"id",
    "error"}`` with ``where`` (e.g. ``"line 3: "``) before the reason; never raises."""
    try:
        kind = infer_lf_type(lf) if lf_type == AUTO else lf_type
        parsed = tokenize_lf(lf, kind, names=names, validate=validate, dialect=dialect)
    except (LogicalFormError, LfTypeError) as err:
        return {"id": ident, "error": f"{where}{err}"}
    except Exception as err:  # noqa: BLE001 - a parser failure (RecursionError, ...) costs this input only
        return {"id": ident, "error": " ".join(f"{where}{type(err).__name__}: {err}".split())}
    return {"id": ident, "tokens": parsed.tokens}
