"""What a long verb says while it runs, on the terminal as it happens: a handler per event.

``mmtrack run`` and ``mmtrack bench`` announce events (mmtrack/commands/reporting.py) through the ``report``
callback their caller passes; :func:`run_events` and :func:`bench_events` build the callbacks the CLI passes,
which print each event to a :class:`~mmtrack.terminal.SafeConsole` as the command line shows it. A verb's result,
once it returns, is rendered by :mod:`mmtrack.cli_results`.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.console import Console
from rich.text import Text

from .cli_results import explanations
from .textsafe import markup as escape  # markup escaped, control characters too
from .textsafe import term

# -- run -------------------------------------------------------------------------------------------------


def run_events(console: Console) -> Callable[[Any], None]:
    """The report ``mmtrack run`` passes its verb: each event on ``console`` as it happens."""
    from .commands import run as verb

    handlers: dict[type, Callable[[Any], None]] = {
        verb.PrepareNote: lambda e: console.print(Text.assemble(("note:", "yellow"), " ", term(e.text)),
                                                  highlight=False, soft_wrap=True),
        verb.SuiteImportFailed: lambda e: console.print(
            Text.assemble(("error:", "bold red"), f" could not import {term(e.path)}: {term(e.message)}"),
            highlight=False, soft_wrap=True),
        verb.AsvStarting: lambda e: console.print(
            f"mmtrack run: commit {e.prepared.commit.sha[:12]} on machine {e.prepared.machine!r}, "
            f"spool {e.prepared.spool_dir}", highlight=False, soft_wrap=True),
        verb.RunOutcome: lambda e: run_outcome(e, console),
        verb.CountsExplained: lambda e: explanations(e.explanations, console),
        verb.NothingToConfirm: lambda e: console.print(f"--confirm: no {e.what} change to re-measure", highlight=False),
        verb.ConfirmCapped: lambda e: console.print(
            Text(term(f"--confirm-max {e.confirm_max}: {e.left} not re-measured (the suspected and the larger moves "
                      "go first)")), highlight=False, soft_wrap=True),
        verb.Confirming: lambda e: console.print(
            f"--confirm: re-measuring {e.what} row(s) A/B: {e.before[:8]} against {e.after[:8]}", highlight=False),
        verb.ConfirmProgress: lambda e: console.print(e.line, highlight=False, style="dim"),
        verb.ConfirmWarning: lambda e: warning(e.text, console),
        verb.Confirmed: lambda e: confirmed(e.confirmation, console),
    }
    return lambda event: handlers[type(event)](event)


def warning(text: str, console: Console) -> None:
    console.print(Text.assemble(("warning:", "yellow"), " ", term(text)), highlight=False, soft_wrap=True)


def confirmed(confirmation: Any, console: Console) -> None:
    from .ab.confirm import describe

    console.print(Text(term(describe(confirmation))), highlight=False, soft_wrap=True)  # Text: "[s]" is no markup


def run_outcome(outcome: Any, console: Console) -> None:
    """The run's table, its summary and comparison with the previous commit (a :class:`~mmtrack.commands.run.RunOutcome`)."""
    from rich.table import Table

    from .measure.units import format_quantity
    from .tables import Name

    c = outcome.collected
    for w in c.warnings + outcome.reports:
        warning(w, console)
    for n in outcome.notes:
        console.print(Text(f"note: {term(n)}"), highlight=False, soft_wrap=True)
    table = Table(title=Text(term(f"{outcome.prepared.commit.short} on {outcome.prepared.machine}")))
    table.add_column("benchmark", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("value", justify="right", overflow="fold")
    table.add_column("metrics", justify="right", no_wrap=True)
    styles = {"ok": "", "failed": "red", "skipped": "yellow"}
    for case in c.cases:
        value = format_quantity(case.value, case.unit) if case.value is not None else ""
        status = Text(term(case.status), style=styles.get(case.status, ""))
        table.add_row(Name(case.label), status, value, str(len(case.metrics)) if case.metrics else "")
    console.print(table)
    for line in outcome.summary:
        console.print(Text(term(line)), highlight=False)
    if outcome.comparison is not None:
        run_comparison(outcome.comparison, console)
    for case in c.failed:
        console.print(Text.assemble(("failed", "bold red"), f" {term(case.label)}: {term(case.message)}"),
                      highlight=False, soft_wrap=True)
    counts = {s: sum(1 for x in c.cases if x.status == s) for s in ("ok", "failed", "skipped")}
    console.print(
        f"{len(c.cases)} benchmark cases: {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped"
    )


def run_comparison(outcome: Any, console: Console) -> None:
    """The comparison as `mmtrack compare` renders it, limited to the rows that say something."""
    import dataclasses

    from .analysis.render import render_table, summary_line
    from .commands.run import SUMMARY_VERDICTS

    full = outcome.comparison
    console.print(
        Text(term(f"compared with the previous commit on {outcome.before.machine} "
                  f"(mmtrack compare {outcome.before.label} {outcome.after.label}): {summary_line(full)}")),
        highlight=False,
        soft_wrap=True,
    )
    shown = dataclasses.replace(
        full,
        rows=tuple(r for r in full.rows if r.verdict in SUMMARY_VERDICTS),
        decided=tuple(r for r in full.decided if r.state == "confirmed"),  # earlier commits' regressions confirmed now
    )
    if shown.rows or shown.decided:
        table = render_table(shown)
        table.title = None
        console.print(table)


# -- bench -----------------------------------------------------------------------------------------------


def bench_events(console: Console) -> Callable[[Any], None]:
    """The report ``mmtrack bench`` passes its verb: each event on ``console`` as it happens."""
    from .commands import bench as verb  # nothing more: scipy and SQLAlchemy wait until the cases have run
    from .commands import bench_events as events

    handlers: dict[type, Callable[[Any], None]] = {
        events.JournalUnreadable: lambda e: console.print(f"[yellow]warning:[/] {escape(e.problem)}; move it away",
                                                        highlight=False),
        events.JournalCasesUnreadable: lambda e: console.print(
            f"[yellow]warning:[/] {e.cases} case file(s) of the journal {escape(str(e.folder))} cannot be read "
            f"({escape(e.problem)}); its other cases are saved, and the unreadable ones kept in "
            f"{escape(str(e.kept))}", highlight=False),
        events.JournalOfAnotherStore: lambda e: console.print(
            f"note: the journal {escape(str(e.folder))} holds a run for {escape(e.store)}; "
            "run mmtrack bench with that --db to save it", highlight=False),
        events.JournalStillNotSaved: lambda e: console.print(
            f"[yellow]warning:[/] the journal {escape(str(e.folder))} is still not saved: {escape(e.why)}",
            highlight=False),
        events.JournalSaved: lambda e: console.print(
            f"saved {e.cases} finished cases of an earlier, unfinished run "
            f"({e.started_at:%Y-%m-%d %H:%M:%S} UTC) from its journal as run #{e.run_id}", highlight=False),
        verb.BenchRun: lambda e: bench_run(e, console),
        events.NothingToSave: lambda e: console.print("not saved: no benchmark case ran", highlight=False),
        events.WaitingForLock: lambda e: console.print(
            f"waiting for the write lock of {escape(e.store)} (another writer holds it); giving up "
            f"after {e.timeout:g} s", highlight=False),
        events.Saved: lambda e: console.print(f"saved as run #{e.run_id} ({e.commit}) in {escape(e.store)}",
                                            highlight=False),
        events.SaveFailed: lambda e: console.print(
            f"[bold red]error:[/] run not saved in {escape(e.store)}: {escape(e.why)}; its "
            f"{e.cases} finished cases are kept in {escape(str(e.journal))}, and the "
            "next mmtrack bench on this store saves them", highlight=False),
        events.ComparisonFailed: lambda e: console.print(
            f"[yellow]warning:[/] no comparison: {escape(e.error)}: {escape(e.message)}"),
        events.Compared: lambda e: bench_comparison(e.baseline, console),
        events.CountsExplained: lambda e: explanations(e.explanations, console),
        events.ReportWritten: lambda e: console.print(f"report written to {escape(str(e.path))}", highlight=False),
    }
    return lambda event: handlers[type(event)](event)


def bench_run(run: Any, console: Console) -> None:
    """Each case's report, or why it has none, and the counts (a :class:`~mmtrack.commands.bench.BenchRun`)."""
    from .asvbridge.session import Status
    from .measure.report import render_stats

    for failure in run.suite.failures:
        console.print(f"[bold red]error:[/] could not import {escape(str(failure.path))}: {escape(failure.message)}",
                      highlight=False, soft_wrap=True)
    for o in run.outcomes:
        if o.status is Status.OK and o.stats is not None:
            console.print(render_stats(o.stats))
        elif o.status is Status.SKIPPED:
            console.print(f"[yellow]skipped[/] {escape(o.full_name)}: {escape(o.message)}", highlight=False,
                          soft_wrap=True)
        else:  # one line, however long: the terminal wraps it, rich does not break it
            console.print(f"[bold red]failed[/] {escape(o.full_name)}: {escape(o.message)}", highlight=False,
                          soft_wrap=True)
    counts = {s: sum(1 for o in run.outcomes if o.status is s) for s in Status}
    if run.interrupted:
        console.print(f"[bold red]interrupted[/] by {run.interrupted}: {len(run.outcomes)} of {run.total} "
                      "benchmark cases finished", highlight=False)
    console.print(
        f"{len(run.outcomes)} benchmark cases: {counts[Status.OK]} ok, "
        f"{counts[Status.FAILED]} failed, {counts[Status.SKIPPED]} skipped"
        + (f"; {len(run.suite.failures)} files failed to import" if run.suite.failures else "")
    )


def bench_comparison(result: Any, console: Console) -> None:
    """The run against its baseline (a :class:`~mmtrack.benchruns.history.BaselineResult`), changed rows only."""
    from .analysis.render import render_table
    from .benchruns.history import benchmark_verdicts

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
