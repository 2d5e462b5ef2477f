"""``mmtrack bench``: discover engine benchmarks, run them in-process, print the report."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from datetime import datetime, timezone

from ..analysis.render import render_table, to_json
from ..asvbridge.discover import Suite, discover
from ..bench_history import BaselineResult, BenchContext, benchmark_verdicts, compare_with_baseline, save_run
from ..bench_report import build_report, write_report
from ..host import host_info
from ..textsafe import markup as escape  # rich markup escaped, terminal controls shown escaped
from ..store.db import open_store, redact
from ..vcs import GitError, commit_info, project_root
from ..asvbridge.session import Case, Outcome, Status, SuiteSession, expand, order_cases
from ..errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, StoreError, UserError
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
    save: bool = True
    compare: str = "latest"  # none | latest | <run id> | <commit>
    db: str | None = None  # resolved store URL
    output: Path | None = None  # MMTRACK_OUTPUT: the versioned JSON report
    fail_on: tuple[str, ...] = ()  # "regression": exit 1 when the end-of-run comparison finds one

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
    code_versions: dict[str, str] = field(default_factory=dict)

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
    try:
        cases = order_cases(expand(selected), request.order, request.seed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
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
    return BenchRun(suite, outcomes, _code_versions(selected))


def _code_versions(benchmarks) -> dict[str, str]:
    versions = {}
    for b in benchmarks:
        try:
            versions[b.name] = b.code_version()
        except (OSError, TypeError):  # no source to hash (e.g. defined in a REPL)
            pass
    return versions


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


def _context(request: BenchRequest, run: BenchRun, started_at: datetime, console: Console) -> BenchContext:
    root = project_root(Path(request.path).resolve().parent)
    try:
        suite = Path(request.path).resolve().relative_to(root).as_posix()
    except ValueError:
        suite = Path(request.path).resolve().as_posix()
    try:
        commit = commit_info(root)
    except GitError as exc:
        commit = None
        if request.save:
            console.print(f"[yellow]warning:[/] not saved: no git commit to key the run by ({escape(str(exc))})")
    return BenchContext(suite, host_info(), commit, started_at, run.code_versions)


def _render_comparison(result: BaselineResult, console: Console) -> None:
    if result.note:
        console.print(escape(result.note), highlight=False)
    if result.comparison is None:
        return
    verdicts = benchmark_verdicts(result.comparison)
    console.print(
        f"[bold]regression analysis[/] against {escape(result.baseline_label or '')}: "
        f"[red]{len(verdicts['regressed'])} regressed[/], [green]{len(verdicts['improved'])} improved[/], "
        f"{len(verdicts['unchanged'])} unchanged benchmarks",
        highlight=False,
    )
    if result.comparison.changed():
        console.print(render_table(result.comparison, only_changed=True))


def run_bench(request: BenchRequest, console: Console) -> int:
    started_at = datetime.now(timezone.utc)
    run = execute(request, console)
    render(run, console)
    ctx = _context(request, run, started_at, console)
    run_id = None
    result = BaselineResult(None, None, None)
    if ctx.commit is not None and (request.save or request.compare != "none"):
        try:
            with open_store(request.db) as store:
                if request.save:
                    run_id = save_run(store, ctx, run.outcomes)
                    label = f"{ctx.commit.short}"
                    console.print(f"saved as run #{run_id} ({label}) in {escape(redact(store.url))}", highlight=False)
                if request.compare != "none":
                    result = compare_with_baseline(store, run_id or -1, ctx, run.outcomes, request.compare, Path.cwd())
        except StoreError as exc:  # the measurements above are still worth having: a warning
            console.print(f"[yellow]warning:[/] history not updated: {escape(str(exc))}", highlight=False)
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001  (a default save must not lose the measurements)
            console.print(f"[yellow]warning:[/] history not updated: {escape(type(exc).__name__)}: {escape(str(exc))}")
    _render_comparison(result, console)
    if request.output is not None:
        report = build_report(
            outcomes=run.outcomes,
            suite=ctx.suite,
            host=ctx.host,
            commit=ctx.commit,
            started_at=started_at,
            code_versions=run.code_versions,
            run_id=run_id,
            comparison=to_json(result.comparison) if result.comparison is not None else None,
            import_failures=[(str(f.path), f.message) for f in run.suite.failures],
        )
        try:
            write_report(request.output, report)
        except OSError as exc:
            raise UserError(f"MMTRACK_OUTPUT={request.output}: cannot write the report ({exc.strerror or exc}); "
                            "point it at a writable path") from None
        console.print(f"report written to {escape(str(request.output))}", highlight=False)
    if run.exit_code == EXIT_OK and request.fail_on and result.comparison is not None:
        from ..analysis.compare import failing_rows

        if failing_rows(result.comparison, request.fail_on):
            return EXIT_FAILURES
    return run.exit_code
