"""Output folders qgen may write into, and the lock of the run that writes one (issue 17).

qgen writes only into a folder that is absent, empty, or marked as its own by a marker file of the
same kind (a synthetic corpus's ``manifest.json``, the demo's ``qgen-demo.json``); anything else is
refused before a file is touched. A run holds an exclusive ``fcntl`` lock on ``<folder>/.qgen.lock``
(its PID inside) while it writes, so a second run on the folder stops with "... is already being
written by PID N", and a marker a killed run left behind (its lock free again) belongs to a dead run
that may be resumed or replaced. qgen never writes or deletes through a symbolic link it did not
create: the names it writes at the folder's top level must not be links, and files are written with
``O_NOFOLLOW | O_EXCL`` to a temporary name (``.<name>.tmp-<pid>``), then renamed over the old one.
Temporary files a dead run left (an ENOSPC mid-write) are ignored by the emptiness check and removed
once the lock is held.
"""
from __future__ import annotations

import fcntl
import functools
import inspect
import json
import os
import re
import shutil
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

LOCK_NAME = ".qgen.lock"
_LEFTOVER = re.compile(r"\..+\.tmp-\d+")  # what write_file leaves when killed or out of space
_held: dict[tuple[str, int], int] = {}  # (folder, thread) holding its lock -> nesting depth
F = TypeVar("F", bound=Callable[..., Any])


class OutputFolderError(RuntimeError):
    """qgen will not write into this folder: not its own, a link it did not create, or in use."""


@dataclass(frozen=True)
class FolderKind:
    """What qgen writes into one kind of output folder."""

    label: str  # for messages: "synthetic corpus"
    marker: str  # the file that marks the folder as qgen's, a JSON object ...
    format: str  # ... whose "format" is this
    names: tuple[str, ...]  # every name qgen writes or deletes at the folder's top level


def _leftover(entry: os.DirEntry) -> bool:
    return entry.name == LOCK_NAME or (_LEFTOVER.fullmatch(entry.name) is not None
                                       and entry.is_file(follow_symlinks=False))


def _check_owned(folder: Path, kind: FolderKind, error: type[Exception]) -> None:
    """Raise unless ``folder`` is absent, empty (but for qgen's leftovers) or marked as ``kind``."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise error(f"{folder} is not a folder")
    with os.scandir(folder) as entries:
        found = sorted(e.name for e in entries if not _leftover(e))
    if not found:
        return
    marker = folder / kind.marker
    refusal = (f"{folder} holds files but no manifest of a qgen {kind.label} ({kind.marker}; found "
               f"{', '.join(found[:5])}{', ...' if len(found) > 5 else ''}); qgen writes only into an empty folder "
               "or one it wrote: choose another folder")
    if marker.is_symlink() or not marker.is_file():
        raise error(refusal)
    try:
        content = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise error(refusal) from None
    if not isinstance(content, dict) or content.get("format") != kind.format:
        raise error(refusal)
    for name in kind.names:
        if (folder / name).is_symlink():
            raise error(f"{folder / name} is a symbolic link; qgen does not write through links it did not create")


def _lock(folder: Path, error: type[Exception]) -> int:
    """An exclusive lock on ``folder/.qgen.lock`` (this PID written in it); its file descriptor."""
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise error(f"{path} cannot be opened as qgen's lock file ({err.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise error(f"{folder} is already being written by PID {holder}") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


@contextmanager
def claimed_folder(path: str | Path, kind: FolderKind, error: type[Exception] = OutputFolderError) -> Iterator[Path]:
    """Hold ``path`` for this run: checked (see the module docstring), created, locked; a nested claim
    of the same folder by the same thread is free."""
    folder = Path(path)
    key = (os.path.realpath(folder), threading.get_ident())
    if key in _held:
        _held[key] += 1
        try:
            yield folder
        finally:
            _held[key] -= 1
        return
    _check_owned(folder, kind, error)
    folder.mkdir(parents=True, exist_ok=True)
    fd = _lock(folder, error)
    try:
        _check_owned(folder, kind, error)  # again under the lock: what another run did meanwhile
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name != LOCK_NAME and _leftover(entry):
                    os.unlink(entry.path)
        _held[key] = 1
        try:
            yield folder
        finally:
            del _held[key]
    finally:
        os.close(fd)  # releases the lock; the lock file stays (removing it would race a waiting run)


def writes_folder(argument: str, kind: FolderKind, error: type[Exception] = OutputFolderError) -> Callable[[F], F]:
    """Decorate a function so that it runs holding the folder named by its ``argument``."""
    def decorate(function: F) -> F:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with claimed_folder(signature.bind(*args, **kwargs).arguments[argument], kind, error):
                return function(*args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate


def write_file(path: str | Path, text: str) -> Path:
    """Write ``text`` through ``.<name>.tmp-<pid>`` (created with O_EXCL | O_NOFOLLOW) renamed over ``path``;
    a symbolic link at ``path`` is refused, and the temporary file is removed when the write fails."""
    path = Path(path)
    if path.is_symlink():
        raise OutputFolderError(f"{path} is a symbolic link; qgen does not write through links it did not create")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)  # a dead run's, with this PID (never followed: unlink removes a link itself)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def remove_tree(path: str | Path) -> None:
    """Delete a folder qgen wrote (absent is fine); a symbolic link there is refused, never followed."""
    path = Path(path)
    if path.is_symlink():
        raise OutputFolderError(f"{path} is a symbolic link; qgen does not delete through links it did not create")
    if path.exists():
        shutil.rmtree(path)
