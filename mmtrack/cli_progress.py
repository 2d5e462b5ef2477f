"""The progress bar of a long command: drawn on a terminal's stderr, left out anywhere else."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .textsafe import markup as escape  # markup escaped, control characters too

#: ``tick(done, total)``, or ``tick(done, total, detail)`` for a bar that shows what it is on
Tick = Callable[..., None]


@contextlib.contextmanager
def progress_bar(console: Console | None, label: str, *, detail: bool = False) -> Iterator[Tick | None]:
    """A transient bar labelled ``label`` on ``console``, and the ``tick`` that moves it; None where
    ``console`` is None (``--no-progress``) or not a terminal, so that CI logs and pipes stay clean."""
    if console is None or not console.is_terminal:
        yield None
        return
    columns = [TextColumn(escape(label)), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    if detail:
        columns.append(TextColumn("{task.description}"))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def tick(done: int, total: int, what: str | None = None) -> None:
            if what is None:
                bar.update(task, completed=done, total=total)
            else:
                bar.update(task, completed=done, total=total, description=escape(what))

        yield tick
