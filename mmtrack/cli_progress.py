"""The progress bars of long commands: drawn on a terminal, left out anywhere else."""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

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


class CaseBar:
    """``mmtrack bench``'s bar (a :class:`~mmtrack.commands.bench.CaseProgress`): the cases done, and the phase of
    the one running. Redrawn between samples, at most ``per_second`` times a second, never from a thread of its own:
    a benchmark sees no extra thread while it is timed."""

    def __init__(self, console: Console | None, per_second: float = 10.0) -> None:
        self.console = console
        self.interval = 1.0 / per_second
        self.last = 0.0

    @contextlib.contextmanager
    def running(self, total: int) -> Iterator[None]:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            disable=self.console is None,
            auto_refresh=False,
        ) as bar:
            self.bar = bar
            self.overall = bar.add_task("benchmark cases", total=total)
            self.current = bar.add_task("", total=1)
            yield

    def phase(self, label: str, phase: str, done: int, total: int) -> None:
        self.bar.update(self.current, description=f"{label} [{phase}]", completed=done, total=total)
        self._redraw()

    def case_done(self) -> None:
        self.bar.advance(self.overall)
        self._redraw(force=True)

    def _redraw(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.interval:
            self.last = now
            self.bar.refresh()
