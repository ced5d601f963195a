"""METEOR 1.5 (Denkowski & Lavie 2014) through the jar shipped in pycocoevalcap, 0-100 scale.

The jar runs as pycocoevalcap's ``Meteor`` class runs it (``-stdio -l en -norm``, paraphrase table
``data/paraphrase-en.gz`` next to the jar), but driven here directly: one JVM per :class:`Meteor`,
all ``SCORE`` lines of a corpus written in chunks (pycocoevalcap waits for each line's answer), stderr
to a file (pycocoevalcap leaves it in an unread pipe) and the process closed by a context manager.

- sentence scores: the jar's per-segment METEOR; ``sentence_mean`` is their mean;
- corpus: the jar's aggregate over all segments (statistics summed before the score, what
  pycocoevalcap's ``compute_score`` returns first), not the mean of sentence scores.

Empty segments: the jar rejects a ``SCORE`` line whose hypothesis is empty (``Error: specify
hypothesis ...``), which leaves pycocoevalcap waiting for an answer that never comes. An empty
hypothesis is sent as the placeholder :data:`EMPTY_HYPOTHESIS`, an empty reference as
:data:`EMPTY_REFERENCE`: neither matches any word, so such a sentence scores 0 (as in BLEU and
ROUGE-L). ``|||`` (the protocol's separator) is removed from tokens before sending.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

from qgen.metrics.corpus import References, Tokens, align, mean

EMPTY_HYPOTHESIS = "emptyhypothesisplaceholder"
EMPTY_REFERENCE = "emptyreferenceplaceholder"
_CHUNK = 256  # SCORE lines written before reading their answers: ~30 KB of answers fits a pipe buffer
_SEPARATOR = "|||"


class MetricUnavailableError(RuntimeError):
    """A metric cannot run on this machine: an external requirement (Java, a jar, a data file) is missing."""


class MeteorError(RuntimeError):
    """The METEOR jar answered something unexpected, exited or timed out."""


@dataclass(frozen=True)
class MeteorResult:
    """METEOR (0-100): the jar's corpus aggregate, the mean of sentence scores and each sentence's score."""

    corpus: float
    sentence_mean: float
    sentence_scores: tuple[float, ...]


def meteor_files() -> tuple[Path, Path]:
    """``(jar, paraphrase table)`` inside the installed pycocoevalcap package (not checked for existence)."""
    import pycocoevalcap

    package = Path(next(iter(pycocoevalcap.__path__)))  # a namespace package: no __file__
    return package / "meteor" / "meteor-1.5.jar", package / "meteor" / "data" / "paraphrase-en.gz"


def find_java(java: str | None = None) -> str:
    """The ``java`` executable: the argument, else ``java`` on PATH, else ``$JAVA_HOME/bin/java``."""
    candidates = [java] if java else [shutil.which("java"), os.path.join(os.environ.get("JAVA_HOME", ""), "bin", "java")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise MetricUnavailableError(
        "METEOR needs Java 8 or newer: no `java` executable "
        + (f"at {java!r}" if java else "on PATH or in $JAVA_HOME/bin")
        + " (install a JRE, e.g. apt-get install default-jre-headless)"
    )


def check_meteor_available(java: str | None = None) -> str:
    """Return the java executable, or raise :class:`MetricUnavailableError` naming what is missing."""
    executable = find_java(java)
    for path, what in zip(meteor_files(), ("METEOR jar", "METEOR paraphrase table")):
        if not path.is_file():
            raise MetricUnavailableError(f"{what} not found at {path} (reinstall pycocoevalcap==1.2)")
    return executable


def segment(tokens: Sequence[str], placeholder: str) -> str:
    """One segment for the jar: tokens without ``|||``, space-joined; the placeholder when empty."""
    words = " ".join(t.replace(_SEPARATOR, " ") for t in tokens).split()
    return " ".join(words) if words else placeholder


class Meteor:
    """One METEOR jar process; use as a context manager so the JVM is always closed.

    ``timeout_s`` bounds one :meth:`score` call (JVM start and paraphrase loading included, ~7 s);
    past it the process is killed and :class:`MeteorError` raised.
    """

    def __init__(self, java: str | None = None, max_heap: str = "2G", timeout_s: float = 600.0) -> None:
        executable = check_meteor_available(java)
        jar, _ = meteor_files()
        self.timeout_s = timeout_s
        self._timed_out = False
        self._lock = threading.Lock()
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        command = [executable, f"-Xmx{max_heap}", "-Dfile.encoding=UTF-8", "-jar", str(jar)]
        command += ["-", "-", "-stdio", "-l", "en", "-norm"]
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            command, cwd=jar.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )

    def __enter__(self) -> Meteor:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the JVM (idempotent)."""
        process, self._process = self._process, None
        if process is not None:
            # Every answer has been read by now, so nothing is lost by killing (as pycocoevalcap
            # does): a graceful EOF would first wait for the paraphrase table to finish loading.
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:  # e.g. a broken pipe when flushing stdin
                        pass
            process.kill()
            process.wait()
        self._stderr.close()

    def __del__(self) -> None:  # a safety net only: use ``with``
        if getattr(self, "_process", None) is not None:
            self.close()

    def score(self, hypotheses: Sequence[Tokens], references: References) -> MeteorResult:
        """METEOR of a corpus (0-100): corpus aggregate, sentence mean and each sentence's score."""
        hyps, refs = align(hypotheses, references)
        lines = [
            " ||| ".join(["SCORE", *(segment(r, EMPTY_REFERENCE) for r in group), segment(h, EMPTY_HYPOTHESIS)])
            for h, group in zip(hyps, refs)
        ]
        with self._lock:
            watchdog = threading.Timer(self.timeout_s, self._kill)
            watchdog.daemon = True
            watchdog.start()
            try:
                stats: list[str] = []
                for start in range(0, len(lines), _CHUNK):
                    chunk = lines[start : start + _CHUNK]
                    self._write(chunk)
                    stats += [self._read_numbers(line) for line in chunk]
                self._write([" ||| ".join(["EVAL", *stats])])
                sentence = [float(self._read_numbers("EVAL")) for _ in stats]
                corpus = float(self._read_numbers("EVAL"))
            finally:
                watchdog.cancel()
        per_sentence = tuple(100.0 * s for s in sentence)
        return MeteorResult(100.0 * corpus, mean(per_sentence), per_sentence)

    def _kill(self) -> None:
        self._timed_out = True
        if self._process is not None:
            self._process.kill()

    def _write(self, lines: list[str]) -> None:
        process = self._require()
        assert process.stdin is not None
        try:
            process.stdin.write(("\n".join(lines) + "\n").encode("utf-8"))
            process.stdin.flush()
        except BrokenPipeError as error:
            raise MeteorError(f"METEOR jar exited: {self._stderr_text()}") from error

    def _read_numbers(self, request: str) -> str:
        """One answer line, checked to be whitespace-separated numbers."""
        process = self._require()
        assert process.stdout is not None
        answer = process.stdout.readline().decode("utf-8", "replace").strip()
        if not answer:
            state = f"timed out after {self.timeout_s:g} s" if self._timed_out else "exited"
            raise MeteorError(f"METEOR jar {state} without answering {request[:80]!r}: {self._stderr_text()}")
        try:
            [float(x) for x in answer.split()]
        except ValueError:
            raise MeteorError(f"METEOR jar answered {answer!r} to {request[:200]!r}") from None
        return answer

    def _require(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise MeteorError("METEOR process already closed")
        return self._process

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-2000:].decode("utf-8", "replace").strip() or "(no stderr)"


def meteor(hypotheses: Sequence[Tokens], references: References, java: str | None = None) -> MeteorResult:
    """METEOR of one corpus with a JVM started and closed for it (reuse :class:`Meteor` for several)."""
    with Meteor(java=java) as scorer:
        return scorer.score(hypotheses, references)
