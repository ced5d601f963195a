"""Hostile JSON Lines (issue 17): one bad line never stops a stream, and one input line is one answer.

Through ``parsers.jsonl`` (the one reader), ``qgen tokenize`` (stdin), ``qgen generate --file`` and
``qgen synthesize --from-file``: every kind of bad line becomes one error line / one reject that
names its line number and the problem, and the lines around it still go through.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from parsers.jsonl import MAX_LINE_BYTES, read_json_lines
from qgen.cli import app
from qgen.samplers.files import read_logical_forms

runner = CliRunner()
LF = "SELECT ?x WHERE { ns:m.0a ns:location.country.capital ?x }"
LF_BYTES = LF.encode()


def good(ident: str) -> bytes:
    return json.dumps({"id": ident, "lf": LF, "lf_type": "sparql", "names": {"m.0a": "Oslo"}}).encode()


def hostile(ident: str, tail: bytes) -> bytes:
    """A record with a good id and logical form, then ``tail`` (the rest of the object, bad somewhere)."""
    return b'{"id": "' + ident.encode() + b'", "lf_type": "sparql", "lf": "' + LF_BYTES + b'"' + tail + b"}"


# kind -> (one input line, what its error says after "line N: ")
HOSTILE: dict[str, tuple[bytes, str]] = {
    "a name that is not a string": (hostile("h-name", b', "names": {"m.0a": 5}'), "field 'names' must be"),
    "a lone surrogate in lf": (b'{"id": "h-lf", "lf": "SELECT ?x WHERE { ?x ?p \\ud800 }"}',
                                "field 'lf' holds a lone surrogate"),
    "a lone surrogate in id": (b'{"id": "\\ud800", "lf": "' + LF_BYTES + b'"}', "field 'id' holds a lone surrogate"),
    "a lone surrogate in names": (hostile("h-names", b', "names": {"m.0a": "Os\\udc00lo"}'),
                                   "field 'names' holds a lone surrogate"),
    "a lone surrogate in question": (hostile("h-question", b', "question": "where\\udbff?"'),
                                      "field 'question' holds a lone surrogate"),
    "a lone surrogate in a field name": (hostile("h-key", b', "\\ud800": 1'), "a field name holds a lone surrogate"),
    "JSON nested 100,000 deep": (hostile("h-deep", b', "x": ' + b"[" * 100_000 + b"]" * 100_000),
                                 "nested 100001 deep (at most 100)"),
    "bytes that are not UTF-8": (b'{"id": "h-utf8", "lf": "SELECT \xff\xfe ?x WHERE { ?x ?p ?o }"}', "not UTF-8"),
    "answers that are not a list": (hostile("h-answers", b', "answers": 5'), "field 'answers' must be a list"),
    "a raw carriage return in a string": (b'{"id": "h-cr", "lf": "SELECT ?x\r WHERE { ?x ?p ?o }"}', "not JSON"),
    "a line longer than MAX_LINE_BYTES": (hostile("h-long", b', "question": "' + b"q" * MAX_LINE_BYTES + b'"'),
                                          f"longer than {MAX_LINE_BYTES} bytes"),
    "an integer of 5,000 digits": (hostile("h-int", b', "answers": [' + b"9" * 5000 + b"]"), "not JSON"),
    "an id that is an object": (b'{"id": {"a": 1}, "lf": "' + LF_BYTES + b'"}', "field 'id' must be"),
    "a question that is a number": (hostile("h-qnum", b', "question": 7'), "field 'question' must be a string"),
    "a JSON list": (b"[1, 2, 3]", "a JSON list, expected an object"),
    "not JSON": (b"{not json", "not JSON"),
    "no lf": (b'{"id": "h-nolf"}', "no 'lf' string"),
}
KINDS = list(HOSTILE)


def around(bad: bytes) -> bytes:
    """A good line, the bad one (line 2), a good line."""
    return good("before") + b"\n" + bad + b"\n" + good("after") + b"\n"


def tokenize_stdin(data: bytes) -> list[dict]:
    result = runner.invoke(app, ["tokenize", "--lf-type", "sparql"], input=data)
    out = [json.loads(line) for line in result.stdout.split("\n") if line]  # not splitlines: U+2028
    assert result.exit_code == (1 if any("error" in o for o in out) else 0), result.output
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_tokenize_answers_a_hostile_line_with_one_error_line(kind: str) -> None:
    bad, says = HOSTILE[kind]
    out = tokenize_stdin(around(bad))
    assert len(out) == 3, out
    assert out[1]["error"].startswith("line 2: ") and says in out[1]["error"], out[1]
    assert [(o["id"], "oslo" in o["tokens"]) for o in (out[0], out[2])] == [("before", True), ("after", True)]


@pytest.mark.parametrize("kind", KINDS)
def test_file_reader_makes_one_reject_of_a_hostile_line(kind: str, tmp_path: Path) -> None:
    bad, says = HOSTILE[kind]
    path = tmp_path / "forms.jsonl"
    path.write_bytes(around(bad))
    records = list(read_logical_forms(path))
    assert len(records) == 3
    assert records[1].load_error.startswith("line 2: ") and says in records[1].load_error, records[1].load_error
    assert records[1].raw.encode("utf-8")  # a reject row's input column must be writable text
    assert [records[0].id, records[2].id] == ["before", "after"]
    assert records[0].load_error is None and records[2].load_error is None


class _Endless(io.RawIOBase):
    """``size`` bytes of one line (then ``\\n`` and ``tail``) made on demand: nothing holds them all."""

    def __init__(self, size: int, tail: bytes) -> None:
        self.left, self.tail = size, b"\n" + tail

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        if self.left > 0:
            n = min(len(buffer), self.left)
            buffer[:n] = b"x" * n
            self.left -= n
            return n
        n = min(len(buffer), len(self.tail))
        buffer[:n], self.tail = self.tail[:n], self.tail[n:]
        return n


class _Watched(io.BufferedReader):
    """Records the longest piece ``readline`` ever handed out."""

    longest = 0

    def readline(self, size: int | None = -1) -> bytes:
        piece = super().readline(size)
        self.longest = max(self.longest, len(piece))
        return piece


def test_a_100_mb_line_is_refused_without_being_held() -> None:
    stream = _Watched(_Endless(100 * 2**20, good("after") + b"\n"))
    lines = list(read_json_lines(stream))
    assert [line.number for line in lines] == [1, 2]
    assert str(lines[0].error) == f"line 1: longer than {MAX_LINE_BYTES} bytes" and len(lines[0].text) < 300
    assert lines[1].record is not None and lines[1].id == "after"
    assert stream.longest <= MAX_LINE_BYTES + 1


def test_lines_end_at_newline_only() -> None:
    data = b"\n".join([
        '{"id": "ls", "lf": "SELECT ?x WHERE { ?x ?p ?o }", "question": "one\u2028two\u0085three"}'.encode(),
        b'{"id": "cr-between",\r "lf": "SELECT ?x WHERE { ?x ?p ?o }"}',  # \r outside a string: JSON whitespace
        b'{"id": "crlf", "lf": "SELECT ?x WHERE { ?x ?p ?o }"}\r',
        b'{"id": "cr-inside", "lf": "SELECT ?x\r WHERE { ?x ?p ?o }"}',
        b"",
    ])
    lines = list(read_json_lines(io.BytesIO(data)))
    assert [(line.number, line.id, line.error is None) for line in lines] == [
        (1, "ls", True), (2, "cr-between", True), (3, "crlf", True), (4, "line-4", False)]  # not JSON: no id
    assert lines[0].record["question"] == "one\u2028two\u0085three"
    assert len(tokenize_stdin(data)) == 4


def test_missing_and_null_ids_get_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "forms.jsonl"
    path.write_bytes(b"\n".join([
        b'{"id": null, "lf": "SELECT 1", "lf_type": "sql"}',
        b"",
        b'{"id": null, "lf": "SELECT 2", "lf_type": "sql"}',
        b'{"lf": "SELECT 3", "lf_type": "sql"}',
        b'{"id": "", "lf": "SELECT 4", "lf_type": "sql"}',
    ]))
    assert [r.id for r in read_logical_forms(path)] == ["line-1", "line-3", "line-4", "line-5"]


def test_generate_file_answers_each_line_once(tiny_checkpoint: Path, tmp_path: Path) -> None:
    path = tmp_path / "lfs.txt"
    path.write_bytes(b"\n".join([
        LF_BYTES, "SELECT ?x WHERE {\u2028?x ?p ?o }".encode(), b"SELECT \xff ?x WHERE { ?x ?p ?o }", b"", LF_BYTES]))
    result = runner.invoke(app, ["generate", "--checkpoint", str(tiny_checkpoint), "--name", "m.0a=Oslo",
                                 "--beam", "2", "--json", "--file", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    out = [json.loads(line) for line in result.stdout.split("\n") if line]
    assert len(out) == 4, out  # four non-blank lines; the U+2028 stays inside line 2
    assert "\u2028" in out[1]["lf"]
    assert out[2]["error"].startswith("line 3: not UTF-8")
    assert "question" in out[0] and "question" in out[3] and out[3]["id"] == "line-5"


def mixed_file() -> tuple[bytes, dict[str, int], dict[int, str]]:
    """Every hostile kind between good lines, plus blank lines and null ids: (bytes, good id -> line
    number, hostile line number -> what its error says)."""
    lines: list[bytes] = []
    goods: dict[str, int] = {}
    bads: dict[int, str] = {}
    for index, kind in enumerate(KINDS):
        lines.append(good(f"good-{index}"))
        goods[f"good-{index}"] = len(lines)
        bad, says = HOSTILE[kind]
        lines.append(bad)
        bads[len(lines)] = says
        lines.append(b"   ")  # blank: no input
    for _ in range(2):  # two null ids: two inputs, not a duplicate
        lines.append(good("null").replace(b'"null"', b"null"))
        goods[f"line-{len(lines)}"] = len(lines)
    return b"\n".join(lines) + b"\n", goods, bads


def test_mixed_file_through_tokenize_in_a_process() -> None:
    data, goods, bads = mixed_file()
    proc = subprocess.run([sys.executable, "-c", "from qgen.cli import run; run()", "tokenize"], input=data,
                          capture_output=True, timeout=120)
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")  # some lines failed: said by the exit code
    out = [json.loads(line) for line in proc.stdout.decode("utf-8").split("\n") if line]
    assert len(out) == len(goods) + len(bads)  # every non-blank input line answered exactly once
    errors = [o["error"] for o in out if "error" in o]
    assert len(errors) == len(bads)
    for (number, says), error in zip(sorted(bads.items()), errors):
        assert error.startswith(f"line {number}: ") and says in error, (number, error)
    tokenized = [o for o in out if "tokens" in o]
    assert len(tokenized) == len(goods) and all("oslo" in o["tokens"] for o in tokenized)


def test_mixed_file_through_synthesize(tiny_checkpoint: Path, tmp_path: Path) -> None:
    data, goods, bads = mixed_file()
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(data)
    out = tmp_path / "corpus"
    for _ in range(2):  # a rerun resumes over the same input instead of crashing at it
        result = runner.invoke(app, ["synthesize", "--checkpoint", str(tiny_checkpoint), "--out", str(out),
                                     "--from-file", str(path), "--count", "0", "--beam", "2", "--shard-size", "7"])
        assert result.exit_code == 0, result.output
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts["inputs"] == counts["pairs"] + counts["rejects"] == len(goods) + len(bads)
    pairs, rejects = pd.read_parquet(out / "pairs"), pd.read_parquet(out / "rejects")
    loaded = rejects[rejects["stage"] == "load"]
    assert sorted(int(e.split(":")[0].removeprefix("line ")) for e in loaded["reason"]) == sorted(bads)
    for error in loaded["reason"]:
        assert bads[int(error.split(":")[0].removeprefix("line "))] in error
    early = set(rejects[rejects["stage"].isin(["input", "load", "tokenize"])]["id"])
    assert not early & set(goods), early & set(goods)  # every good line was read and tokenized
    assert set(goods) <= set(pairs["id"]) | set(rejects["id"])
