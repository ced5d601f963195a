"""A rich progress bar (counts and rate) for long commands, fed by a ``(done, total)`` callback."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def progress_bar(description: str, quiet: bool = False) -> Iterator[Callable[[int, int | None], None]]:
    """Yields ``update(done, total)``; draws on stderr, so stdout keeps only the command's results.
    With ``quiet``, or when stderr is no terminal (a log file, a pipe: a bar there is an empty line), nothing
    is drawn."""
    import sys

    if quiet or not sys.stderr.isatty():
        yield lambda done, total=None: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    class Rate(TextColumn):
        def __init__(self) -> None:
            super().__init__("")

        def render(self, task):  # type: ignore[no-untyped-def]
            speed = task.finished_speed or task.speed
            from rich.text import Text

            return Text(f"{speed:,.0f}/s" if speed else "")

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), Rate(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int | None = None) -> None:
            bar.update(task, completed=done, total=total)

        yield update
