"""``mmtrack bench``: discover engine benchmarks, run them in-process, print the report."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..asvbridge.discover import Suite, discover
from ..asvbridge.session import Case, Outcome, Status, SuiteSession, expand, order_cases
from ..errors import EXIT_OK, EXIT_USAGE, UserError
from ..measure.report import render_stats
from ..measure.runner import RunOptions


@dataclass(slots=True)
class BenchRequest:
    path: Path
    pattern: str | None = None
    quick: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    order: str = "declared"
    seed: int | None = None
    cooldown: float = 0.0

    def options(self) -> RunOptions:
        base = RunOptions.quick() if self.quick else RunOptions()
        given = {k: v for k, v in self.overrides.items() if v is not None}
        try:
            return dataclasses.replace(base, **given)
        except ValueError as exc:
            raise UserError(f"bad run option: {exc}") from None


@dataclass(slots=True)
class BenchRun:
    suite: Suite
    outcomes: list[Outcome]

    @property
    def exit_code(self) -> int:
        failed = self.suite.failures or any(o.status is Status.FAILED for o in self.outcomes)
        return EXIT_USAGE if failed else EXIT_OK


def execute(request: BenchRequest, console: Console | None = None) -> BenchRun:
    """Discover, select, run; no printing of results (the caller renders)."""
    options = request.options()
    try:
        suite = discover(request.path)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    selected = suite.select(request.pattern)
    if not selected and not suite.failures:
        raise UserError(
            f"{request.path}: no engine benchmark matches {request.pattern!r}; "
            "decorate asv methods with @mmtrack.bench or loosen -k"
            if request.pattern
            else f"{request.path}: no engine benchmarks found; decorate asv methods with @mmtrack.bench"
        )
    cases = order_cases(expand(selected), request.order, request.seed)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=console is None,
    ) as bar:
        overall = bar.add_task("benchmarks", total=len(cases))
        current = bar.add_task("", total=1)

        def progress(case: Case, phase: str, done: int, total: int) -> None:
            label = case.benchmark.name + (f"({', '.join(case.param_labels.values())})" if case.params else "")
            bar.update(current, description=f"{label} [{phase}]", completed=done, total=total)

        session = SuiteSession(options, progress=progress, cooldown=request.cooldown)
        outcomes = session.run(cases, on_done=lambda _outcome: bar.advance(overall))
    return BenchRun(suite, outcomes)


def render(run: BenchRun, console: Console) -> None:
    for failure in run.suite.failures:
        console.print(f"[bold red]error:[/] could not import {escape(str(failure.path))}: {escape(failure.message)}", highlight=False)
    for o in run.outcomes:
        if o.status is Status.OK and o.stats is not None:
            console.print(render_stats(o.stats))
        elif o.status is Status.SKIPPED:
            console.print(f"[yellow]skipped[/] {escape(o.full_name)}: {escape(o.message)}", highlight=False)
        else:
            console.print(f"[bold red]failed[/] {escape(o.full_name)}: {escape(o.message)}", highlight=False)
    counts = {s: sum(1 for o in run.outcomes if o.status is s) for s in Status}
    console.print(
        f"{len(run.outcomes)} benchmark cases: {counts[Status.OK]} ok, "
        f"{counts[Status.FAILED]} failed, {counts[Status.SKIPPED]} skipped"
        + (f"; {len(run.suite.failures)} files failed to import" if run.suite.failures else "")
    )


def run_bench(request: BenchRequest, console: Console) -> int:
    run = execute(request, console)
    render(run, console)
    return run.exit_code
