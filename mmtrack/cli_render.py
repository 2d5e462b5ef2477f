"""The verbs' results and events on the terminal: what ``mmtrack`` prints, and the only place that prints it.

The verbs (mmtrack/commands/) return results and announce events (mmtrack/commands/reporting.py); each
function here renders one of them to a :class:`~mmtrack.terminal.SafeConsole`, as the command line shows it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console

from .tables import FitTable, unwrapped
from .textsafe import markup as escape  # markup escaped, control characters too
from .textsafe import term

# -- import-asv, publish, update ----------------------------------------------------------------------


def import_summary(result: Any) -> str:
    """What ``mmtrack import-asv`` brought in (an :class:`~mmtrack.commands.import_asv.ImportResult`)."""
    s, r = result.summary, result.summary.results
    lines = [
        f"imported {s.imported} new run(s), replaced {s.replaced}, skipped {s.unchanged} already imported, "
        f"{len(s.failed)} file(s) failed, "
        + (f"{len(s.left_out)} benchmark(s) left out, " if s.left_out else "")
        + f"of {s.files} results file(s)",
    ]
    if s.imported or s.replaced:
        lines.append(
            f"  {s.result_count} results ({r['ok']} ok, {r['failed']} failed, {r['skipped']} skipped), "
            f"{len(s.benchmarks)} benchmarks, {len(s.commits)} commits, "
            f"{len(s.machines)} machine(s), {len(s.environments)} environment(s)"
        )
    lines.append(f"  into {result.url}")
    return "\n".join(lines)


def import_problems(problems: list[str], err_console: Console) -> None:
    for problem in problems:
        err_console.print(f"[red]error:[/] {escape(problem)}", highlight=False, soft_wrap=True)


def imported(result: Any, console: Console, err_console: Console) -> None:
    import_problems(result.problems, err_console)
    console.print(import_summary(result), highlight=False, soft_wrap=unwrapped(console))


def published(result: Any, console: Console) -> None:
    """``mmtrack publish``'s two lines (a :class:`~mmtrack.commands.publish.PublishResult`)."""
    report = result.report
    console.print(
        f"published {result.benchmarks} benchmarks, {result.series} series ({result.read} read), "
        f"{result.change_points} change points to {escape(str(result.out))} in {result.seconds:.1f} s: "
        f"{len(report.written)} files written ({report.bytes_written / 1e6:.1f} MB), {report.unchanged} unchanged, "
        f"{len(report.removed)} removed",
        highlight=False,
        soft_wrap=unwrapped(console),
    )
    console.print(f"open {escape(str(Path(result.out).resolve() / 'index.html'))}", highlight=False,
                  soft_wrap=unwrapped(console))


def updated(outcome: Any, console: Console, err_console: Console) -> None:
    """What each step of ``mmtrack update`` did (an :class:`~mmtrack.commands.update.UpdateOutcome`)."""
    import_problems(outcome.imported.problems, err_console)
    s = outcome.seconds
    console.print("\n".join(map(escape, import_summary(outcome.imported).split("\n"))), highlight=False,
                  soft_wrap=unwrapped(console))
    detected = "detection off" if outcome.detected is None else f"{outcome.detected} change points"
    console.print(
        f"detect on {outcome.touched} touched series: {detected} ({s['detect']:.2f} s); "
        f"publish: {outcome.written} files written, {outcome.unchanged} unchanged, {outcome.removed} removed "
        f"({s['publish']:.2f} s) to {escape(str(outcome.out))}; import {s['import']:.2f} s",
        highlight=False,
        soft_wrap=unwrapped(console),
    )
    if outcome.open_regressions:
        console.print(f"{outcome.open_regressions} regression(s) persist to the latest commit", highlight=False)


# -- bisect ---------------------------------------------------------------------------------------------


def bisected(outcome: Any, console: Console) -> None:
    """``mmtrack bisect``'s path, culprit and stored measurements (an :class:`~mmtrack.ab.bisect` outcome)."""
    table = FitTable(title=f"bisect {outcome.case[0]} {outcome.metric} (GOOD→BAD ×{outcome.total_ratio:.3f})")
    for col in ("step", "good", "bad", "tested", "tested/good", "z", "rounds", "decided"):
        table.add_column(col, justify="right" if col in ("step", "tested/good", "z", "rounds") else "left")
    for i, s in enumerate(outcome.path, 1):
        table.add_row(str(i), s.good[:8], s.bad[:8], s.tested[:8], f"{math.exp(s.log_ratio):.3f}", f"{s.z:.1f}",
                      str(s.rounds), s.decided + (" (guess)" if s.guess else ""))
    console.print(table)
    size = f"×{outcome.ratio:.3f}" if outcome.ratio else "size unknown"
    p = f", p={outcome.p_value:.2g}" if outcome.p_value is not None else ""
    console.print(
        f"culprit: {outcome.culprit[:12]} {outcome.culprit_subject!r}: {size} against its parent "
        f"({outcome.verdict}{p}); {len(outcome.built)} commits built or reused ({outcome.new_builds} new builds), "
        f"{outcome.seconds:.0f} s",
        highlight=False,
        soft_wrap=unwrapped(console),
    )
    if outcome.pair_ids:
        console.print(f"stored {len(outcome.pair_ids)} A/B measurements (pairs #{outcome.pair_ids[0]} to "
                      f"#{outcome.pair_ids[-1]}, runs of kind ab; `mmtrack list runs` lists them)", highlight=False)


# -- run --instrument callgrind: why the counts moved ---------------------------------------------------


def explanations(found: list[Any], console: Console) -> None:
    """Each regressed count's top functions (:class:`~mmtrack.commands.why_counts.Explanation`)."""
    for e in found:
        if e.failure is not None:
            console.print(f"why {term(e.name)} changed: callgrind_annotate failed ({term(e.failure)})", highlight=False)
            continue
        console.print(f"why {term(e.name)} changed (instructions per op, callgrind_annotate of {e.old} and {e.new}):",
                      highlight=False, soft_wrap=True)
        for d in e.deltas:
            console.print(f"  {d.change:+12,.1f}  {d.before:12,.1f} -> {d.after:12,.1f}  {term(d.function)}",
                          highlight=False)
