"""Each verb's result on the terminal, once the verb returns: tables, summaries, JSON and markdown text.

The verbs (mmtrack/commands/) return results; each function here renders one of them to a
:class:`~mmtrack.terminal.SafeConsole` (or returns the text to print), as the command line shows it. What a verb
says while it runs is rendered by :mod:`mmtrack.cli_events`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .tables import FitTable, Name, plural, unwrapped
from .textsafe import markup as escape  # markup escaped, control characters too
from .textsafe import term

# -- import-asv, publish, update -------------------------------------------------------------------------


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
            f"{plural(len(s.benchmarks), 'benchmark')}, {plural(len(s.commits), 'commit')}, "
            f"{len(s.machines)} machine(s)"
            + (f" ({len(s.hosts)} hosts)" if len(s.hosts) > len(s.machines) else "")
            + f", {len(s.environments)} environment(s)"
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
        f"published {plural(result.benchmarks, 'benchmark')}, {result.series} series ({result.read} read), "
        f"{plural(result.change_points, 'change point')} to {escape(str(result.out))} in {result.seconds:.1f} s: "
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
    for line in (outcome.budget, outcome.alerts, outcome.drift):
        if line:
            console.print(escape(line), highlight=False, soft_wrap=unwrapped(console))
    if outcome.open_regressions:
        console.print(f"{outcome.open_regressions} regression(s) persist to the latest commit", highlight=False)


# -- continuous ------------------------------------------------------------------------------------------


def ab_run_line(outcome: Any) -> str:
    """One line: what ran where, how often, and what the builds and the rounds cost."""
    r = outcome.result

    def built(side: Any) -> str:
        return "cached env" if side.env.cached else f"built in {side.env.build_seconds:.1f} s"

    return (
        f"A/B on {r.machine}: A {r.base.commit.sha[:8]} ({built(r.base)}), B {r.head.commit.sha[:8]} "
        f"({built(r.head)}); {r.rounds} rounds interleaved {''.join(r.order)}, measuring {r.seconds:.1f} s"
    )


def continuous_result(outcome: Any, fmt: str) -> Any:
    """``mmtrack continuous``'s output (a :class:`~mmtrack.commands.continuous.ContinuousOutcome`): a rich table, or
    markdown / JSON text."""
    from .analysis.render import render_json, render_markdown, render_table, side_json

    if fmt == "markdown":
        return render_markdown(outcome.comparison) + f"\n<sub>{ab_run_line(outcome)}</sub>\n"
    if fmt == "json":  # compare's shape (schema_version, sides with full shas and machine), plus the A/B run
        r = outcome.result
        sides = {
            key: side_json(spec, label, side.commit, r.machine, side.environment or None)
            for key, spec, label, side in (
                ("before", outcome.specs[0], outcome.comparison.before_label, r.base),
                ("after", outcome.specs[1], outcome.comparison.after_label, r.head),
            )
        }
        ab = {
            "machine": r.machine,
            "rounds": r.rounds,
            "order": "".join(r.order),
            "measuring_seconds": r.seconds,
            "pair_id": outcome.pair_id,
            "sides": {
                s.label: {"commit": s.commit.sha, "build_seconds": s.env.build_seconds, "env_cached": s.env.cached,
                          "run_seconds": s.run_seconds}
                for s in (r.base, r.head)
            },
            "warnings": r.warnings,
            # The evidence of each verdict: every round's best sample per side, in the order they ran.
            "round_bests": [
                {"benchmark": bench, "params": params, "metric": str(metric), "A": case.round_bests[metric],
                 "B": r.head.cases[(bench, params)].round_bests.get(metric, [])}
                for (bench, params), case in sorted(r.base.cases.items()) if (bench, params) in r.head.cases
                for metric in sorted(case.round_bests)
            ],
        }
        return render_json(outcome.comparison, sides, {"ab": ab})
    table = render_table(outcome.comparison)
    table.caption = ab_run_line(outcome)
    return table


# -- bisect ----------------------------------------------------------------------------------------------


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
    said = f": {outcome.note}" if outcome.note else p  # the row's words, as continuous prints them
    console.print(
        f"culprit: {outcome.culprit[:12]} {outcome.culprit_subject!r}: {size} against its parent "
        f"({outcome.verdict}{said}); {len(outcome.built)} commits built or reused ({outcome.new_builds} new builds), "
        f"{outcome.seconds:.0f} s",
        highlight=False,
        soft_wrap=unwrapped(console),
    )
    if outcome.pair_ids:
        console.print(f"stored {len(outcome.pair_ids)} A/B measurements (pairs #{outcome.pair_ids[0]} to "
                      f"#{outcome.pair_ids[-1]}, runs of kind ab; `mmtrack list runs` lists them)", highlight=False)


def bisect_json(outcome: Any) -> str:
    """``mmtrack bisect --format json``: the culprit, its verdict and every step of the search."""
    return json.dumps(
        {
            "benchmark": outcome.case[0],
            "params": json.loads(outcome.case[1]),
            "metric": str(outcome.metric),
            "good_to_bad_ratio": outcome.total_ratio,
            "culprit": outcome.culprit,
            "subject": outcome.culprit_subject,
            "ratio": outcome.ratio,
            "p_value": outcome.p_value,
            "verdict": outcome.verdict,
            "note": outcome.note,
            "threshold": outcome.threshold,
            "round_alpha": outcome.round_alpha,
            "builds": len(outcome.built),
            "new_builds": outcome.new_builds,
            "seconds": outcome.seconds,
            "stored_pairs": outcome.pair_ids,
            "path": [
                {"good": s.good, "bad": s.bad, "tested": s.tested, "log_ratio": s.log_ratio, "z": s.z,
                 "rounds": s.rounds, "decided": s.decided, "guess": s.guess}
                for s in outcome.path
            ],
        },
        indent=2,
        default=lambda v: None,
    )


# -- --instrument callgrind: why the counts moved (run and bench say it as they go) ----------------------


def explanations(found: list[Any], console: Console) -> None:
    """Each regressed count's top functions (:class:`~mmtrack.analysis.why_counts.WhyChanged`)."""
    for why in found:
        name = term(why.row.name)
        if why.error:
            console.print(f"why {name} changed: {term(why.error)}", highlight=False)
            continue
        console.print(f"why {name} changed (instructions per op, callgrind_annotate of {why.before} and {why.after}):",
                      highlight=False, soft_wrap=True)
        for d in why.deltas:
            console.print(f"  {d.change:+12,.1f}  {d.before:12,.1f} -> {d.after:12,.1f}  {term(d.function)}",
                          highlight=False)


# -- run -------------------------------------------------------------------------------------------------


def run_gate(result: Any, console: Console) -> None:
    """The rows that fail ``mmtrack run --fail-on``, in one line (a :class:`~mmtrack.commands.run.RunResult`)."""
    if not result.failing:
        return
    from .analysis.render import verdict_text

    names = ", ".join(f"{r.name} {r.metric_label} {verdict_text(r)}" for r in result.failing)
    line = f"--fail-on {','.join(result.fail_on)}: {len(result.failing)} row(s) fail this commit: {names}"
    console.print(Text(term(line), style="bold red"), highlight=False, soft_wrap=True)


# -- list ------------------------------------------------------------------------------------------------


def list_json(records: list[dict[str, Any]]) -> str:
    """A JSON array of the records, names unchanged (JSON escapes what it must)."""
    return json.dumps(records, indent=2, ensure_ascii=False, default=str)


_LIST_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("id", "started (UTC)", "commit", "machine / environment", "kind", "results"),
    "commits": ("commit", "date (UTC)", "runs", "branches / message"),
    "machines": ("machine", "hosts", "runs", "environments", "cpu / os"),
    "benchmarks": ("benchmark", "type", "unit", "versions", "can see: 1 commit / confirmed"),
}


def _limit_text(limits: list[dict[str, Any]]) -> str:
    """One line per metric: the largest limits over its machines and environments (at 80% power), and whether a
    10% change is beyond what it confirms."""
    by_metric: dict[str, list[dict[str, Any]]] = {}
    for r in limits:
        by_metric.setdefault(r["metric"].split(" [")[0].rsplit("/", 1)[-1], []).append(r)
    lines = []
    for metric, rs in by_metric.items():
        if all(r["too_noisy"] is None for r in rs):
            lines.append(f"{metric}: history too short")
            continue
        worst = lambda k: max((r[k] if r[k] is not None else math.inf) for r in rs if r["too_noisy"] is not None)  # noqa: E731
        pct = lambda x: "none" if math.isinf(x) else f"{x:.1%}"  # noqa: E731
        noisy = " (too noisy for 10%)" if any(r["too_noisy"] for r in rs) else ""
        lines.append(f"{metric}: {pct(worst('one_commit'))} / {pct(worst('confirmed'))}{noisy}")
    return "\n".join(lines)


def _list_row(what: str, r: dict[str, Any]) -> list[Any]:
    if what == "runs":
        return [str(r["id"]), (r["started_at"] or "")[:16].replace("T", " "),
                r["sha"][:8] + ("+dirty" if r["dirty"] else ""),
                Text(term(f"{r['machine']} / {r['environment']}"), overflow="fold"), Text(term(r["kind"])),
                str(r["results"])]
    if what == "commits":
        detail = ", ".join(r["branches"]) + (" · " if r["branches"] and r["message"] else "") + r["message"]
        return [r["sha"][:8], (r["date"] or "")[:16].replace("T", " "), str(r["runs"]),
                Text(term(detail), overflow="ellipsis", no_wrap=True)]
    if what == "machines":
        info = r["info"]
        hosts = r.get("hosts") or []
        shown = hosts[0] if len(hosts) == 1 and hosts[0] != r["name"] else str(len(hosts))
        return [Name(r["name"]), Text(term(shown), overflow="fold"), str(r["runs"]), Text(term(", ".join(r["environments"])), overflow="fold"),
                Text(term(" / ".join(str(info[k]) for k in ("cpu", "os") if info.get(k))), overflow="fold")]
    params = ", ".join(r["params"].values())
    return [Name(r["name"] + (f"({params})" if params else "")), Text(term(r["type"])), Text(term(r["unit"])),
            str(len(r["versions"])), Text(term(_limit_text(r.get("detection_limits") or [])), overflow="fold")]


def _too_noisy_caption(records: list[dict[str, Any]]) -> str:
    """How many series cannot confirm a 10% step, and how many are too short to say."""
    limits = [r for b in records for r in b.get("detection_limits") or []]
    noisy, short = sum(bool(r["too_noisy"]) for r in limits), sum(r["too_noisy"] is None for r in limits)
    if not limits:
        return ""
    return (f"{noisy} of {plural(len(limits), 'series', 'series')} too noisy to confirm a 10% change, "
            f"{short} too short to say; limits: the smallest step seen 80% of the time.")


def list_table(what: str, records: list[dict[str, Any]]) -> Table:
    """``mmtrack list``'s table of runs, commits, machines or benchmarks."""
    caption = _too_noisy_caption(records) if what == "benchmarks" else ""
    t = FitTable(box=box.SIMPLE_HEAD, title=plural(len(records), what.removesuffix("s"), what), title_justify="left",
                 caption=caption or None, caption_justify="left")
    for col in _LIST_COLUMNS[what]:
        t.add_column(col, justify="right" if col in ("id", "runs", "results", "versions") else "left",
                     no_wrap=col in ("id", "commit", "runs", "results", "versions", "started (UTC)", "date (UTC)"))
    for r in records:
        t.add_row(*_list_row(what, r))
    return t


# -- detect ----------------------------------------------------------------------------------------------


def _longest_short(outcome: Any) -> str:
    """How many commits the longest series too short for detect has, when none is long enough: the wait, in numbers."""
    if not outcome.too_short or len(outcome.too_short) != len(outcome.reports):
        return ""
    have = max(r.points for r in outcome.too_short)
    return f", the longest has {plural(have, 'commit')}: measure {outcome.policy.min_points - have} more"


def detect_table(outcome: Any, show_all: bool = False) -> Table:
    """``mmtrack detect``'s table (a :class:`~mmtrack.commands.detect.DetectOutcome`): the regressions, or with
    ``show_all`` every change point, of the code; environment events and small moves in its caption."""
    from .analysis.ranking import attention, is_small
    from .tables import NAME_MIN_WIDTH

    code = outcome.code_changes
    listed = [c for c in code if show_all or c.kind == "regression"]
    rows = [c for c in listed if show_all or not is_small(c)]
    places = sorted({f"{c.series.machine}/{c.series.environment}" for c in rows})
    title = term(_detect_title(outcome)) + (f"\non {term(places[0])}" if len(places) == 1 else "")
    # No change point to show: the title alone, not an empty table under it.
    t = FitTable(box=box.SIMPLE_HEAD if rows else None, title=Text(title), title_justify="left", show_header=bool(rows),
                 caption=Text("\n".join(map(term, detect_summary_lines(outcome, len(listed) - len(rows))))),
                 caption_justify="left")
    # Fits 80 columns: the benchmark wraps at its dots over its metric; values and shas fold, nothing is dropped.
    many = len(places) > 1  # then each row names its machine/env under its metric
    name_header = "benchmark / metric" + (" / machine/env" if many else "")
    cols = ["", name_header, "before → after / began", "ratio", "persists"]
    for col in cols:
        t.add_column(
            col,
            justify="right" if col == "ratio" else "left",
            overflow="fold",
            no_wrap=col in ("", "ratio", "persists"),
            min_width=NAME_MIN_WIDTH if col.startswith("benchmark") else None,
        )
    for c in sorted(rows, key=attention):
        t.add_row(*_detect_row(c, many))
    return t


def _detect_title(outcome: Any) -> str:
    """How many series were analysed, what was found in the code, and whether it was stored."""
    code = outcome.code_changes
    n_ok = sum(r.status == "ok" for r in outcome.reports)
    return (
        f"{plural(len(outcome.reports), 'series', 'series')} ({n_ok} analysed, {len(outcome.too_short)} too short for "
        f"{outcome.policy.name}: fewer than {outcome.policy.min_points} commits{_longest_short(outcome)}); "
        f"{sum(c.kind == 'regression' for c in code)} regressions, "
        f"{sum(c.kind == 'improvement' for c in code)} improvements, "
        f"{len(outcome.open_regressions)} still open"
        + (f", {n} suspected in the newest commits" if (n := len(outcome.suspected_regressions)) else "")
        + (f"; {outcome.stored} change points stored" if outcome.stored is not None
           else "; not stored (read-only store)" if outcome.read_only else "; not stored")
    )


def _detect_row(c: Any, many: bool) -> list[Any]:
    """One change point's cells: mark, name (and machine/env when several), values and shas, ratio, persistence."""
    from .analysis.gate import state_of
    from .measure.units import format_quantity
    from .tables import stacked

    style = {"regression": "red", "improvement": "green"}.get(c.kind, "")
    mark = {"regression": "+", "improvement": "-"}.get(c.kind, "~")
    params = json.loads(c.series.params) if c.series.params else {}
    return [
        Text(mark, style=style),
        stacked(c.series.benchmark + (f"({', '.join(params.values())})" if params else ""),
                f"{c.series.metric.name} [{c.series.metric.unit}]",
                *([f"{c.series.machine}/{c.series.environment}"] if many else [])),
        Text.assemble(
            term(f"{format_quantity(c.before_value, c.series.metric.unit)} → "
                 f"{format_quantity(c.after_value, c.series.metric.unit)}") + "\n",
            (f"{c.before_sha[:8]}..{c.after_sha[:8]}", "dim"),
        ),
        Text(f"{c.ratio:.2f}", style=style),
        ("yes" if c.persists else "no") + ("\nsuspected" if state_of(c) == "suspected" else "")
        + (f"\n+{n} elsewhere" if (n := c.extra.get("elsewhere")) else ""),
    ]


def detect_summary_lines(outcome: Any, small_hidden: int) -> list[str]:
    """One line per environment event, one for the small moves left out of the table, and the commit order used."""
    from .analysis.ranking import SMALL_MOVE

    lines = [f"environment event (not a regression of the code): {e.describe()}" for e in outcome.events]
    if small_hidden:
        lines.append(f"{small_hidden} smaller regressions under {SMALL_MOVE:.0%} not listed (--all lists them)")
    lines.append(f"commit order: {outcome.commit_order}")
    if outcome.budget is not None:
        lines.append(outcome.budget.describe())
    if outcome.alerts:
        lines.append(outcome.alerts_line)
    return lines


def detect_json(outcome: Any) -> str:
    """``mmtrack detect --format json``: every series, its change points and the environment events."""
    from .analysis.gate import state_of

    def cp(c: Any) -> dict[str, Any]:
        return {
            "kind": c.kind,
            "direction": c.direction.value,
            "before_sha": c.before_sha,
            "after_sha": c.after_sha,
            "before_value": c.before_value,
            "after_value": c.after_value,
            "ratio": c.ratio,
            "p_value": c.p_value,
            "persists": c.persists,
            "state": state_of(c),
            "method": c.method,
            "cause": c.extra.get("cause", "code"),
            "event": c.extra.get("event"),
            "run_part": c.extra.get("run_part"),  # the run's part an event holds; the ratio is the code's beyond it
            "elsewhere": c.extra.get("elsewhere"),
        }

    def event(e: Any) -> dict[str, Any]:
        return {
            "id": e.id, "machine": e.machine, "environments": list(e.environments), "first_run_date": e.date,
            "series": e.series, "slower": e.slower, "faster": e.faster, "old_commits_at_new_level": e.old_commits,
            "evidence": e.evidence, "before_sha": e.before_sha, "after_sha": e.after_sha,
            "median_ratio": e.median_ratio, "summary": e.describe(),
        }

    return json.dumps(
        {
            "method": outcome.policy.name,
            "stored": outcome.stored,
            "commit_order": outcome.commit_order,
            "budget": None if outcome.budget is None else {
                "fdr": outcome.budget.fdr, "held_back": len(outcome.budget.held_back),
                "summary": outcome.budget.describe()},
            "alerts": [a.id for a in outcome.alerts if a.active],
            "events": [event(e) for e in outcome.events],
            "drift": None if outcome.drift is None else drift_json(outcome.drift),
            "series": [
                {
                    "machine": r.series.machine,
                    "environment": r.series.environment,
                    "benchmark": r.series.benchmark,
                    "params": json.loads(r.series.params),
                    "metric": {"section": r.series.metric.section, "name": r.series.metric.name, "unit": r.series.metric.unit},
                    "status": r.status,
                    "points": r.points,
                    "notes": list(r.notes),
                    "changes": [cp(c) for c in r.changes],
                }
                for r in outcome.reports
            ],
        },
        indent=2,
    )


def drift_json(report: Any) -> dict[str, Any]:
    """The drift since ``--baseline`` (an :class:`~mmtrack.analysis.drift.DriftReport`): every series' verdict."""
    def one(d: Any) -> dict[str, Any]:
        k = d.series
        return {"machine": k.machine, "environment": k.environment, "benchmark": k.benchmark,
                "params": json.loads(k.params) if k.params else {}, "metric": k.metric.name, "unit": k.metric.unit,
                "direction": d.direction.value, "verdict": d.verdict, "ratio": d.ratio, "low": d.low, "high": d.high,
                "baseline_level": d.baseline_level, "current_level": d.current_level,
                "commits": [d.baseline_commits, d.current_commits], "note": d.note, "dismissed": d.dismissed}

    return {"baseline": report.ref, "sha": report.sha, "threshold": report.threshold, "summary": report.summary(),
            "drifted": len(report.drifted), "series": [one(d) for d in report.series]}


def drift_table(report: Any, show_all: bool = False) -> Table:
    """The drifted series since ``--baseline``, the worst first (``show_all``: the improved and moved ones too)."""
    from .measure.units import format_quantity
    from .tables import stacked

    shown = report.drifted + ([d for d in report.series if d.verdict in ("improved", "moved")] if show_all else [])
    places = sorted({f"{d.series.machine}/{d.series.environment}" for d in shown})
    many = len(places) > 1  # then each row names its machine/env under its metric, as detect's table does
    title = term(report.summary()) + (f"\non {term(places[0])}" if len(places) == 1 else "")
    t = FitTable(box=box.SIMPLE_HEAD if shown else None, title=Text(title), title_justify="left",
                 show_header=bool(shown))
    name = "benchmark / metric" + (" / machine/env" if many else "")
    for col in ("", name, "baseline → now", "change", "noise interval"):
        t.add_column(col, justify="right" if col == "change" else "left", overflow="fold")
    for d in shown:
        k, unit = d.series, d.series.metric.unit
        params = json.loads(k.params) if k.params else {}
        style = "red" if d.verdict == "drifted" else "green" if d.verdict == "improved" else ""
        t.add_row(Text("+" if d.verdict == "drifted" else "-", style=style),
                  stacked(k.benchmark + (f"({', '.join(map(str, params.values()))})" if params else ""),
                          f"{k.metric.name} [{unit}]", *([f"{k.machine}/{k.environment}"] if many else [])),
                  term(f"{format_quantity(d.baseline_level, unit)} → {format_quantity(d.current_level, unit)}")
                  + (" (dismissed)" if d.dismissed else ""),
                  Text(f"{d.change * 100:+.1f}%", style=style),
                  f"{(d.low - 1) * 100:+.1f}% .. {(d.high - 1) * 100:+.1f}%")
    return t


# -- compare ---------------------------------------------------------------------------------------------


def _side_json(side: Any) -> dict[str, Any]:
    from .analysis.render import side_json

    return side_json(side.spec, side.label, side.commit, side.machine, side.environment, side.run_id)


def where(outcome: Any) -> str:
    """``machine/env`` of the comparison (``a/x → b/y`` when the sides differ)."""
    b, a = outcome.before, outcome.after
    before, after = f"{b.machine}/{b.environment}", f"{a.machine}/{a.environment}"
    return before if before == after else f"{before} → {after}"


def compared(outcome: Any, fmt: str, only_changed: bool = False, sort: str = "verdict") -> Any:
    """``mmtrack compare``'s output (a :class:`~mmtrack.commands.compare.CompareOutcome`): a rich table, or a
    string (markdown, json)."""
    from .analysis.render import SORTS, render_json, render_markdown, render_table
    from .errors import EXIT_USAGE, UserError

    if sort not in SORTS:
        raise UserError(f"unknown --sort {sort!r}; choose from {', '.join(SORTS)}", EXIT_USAGE)
    if fmt == "markdown":
        return render_markdown(outcome.comparison, sort, where(outcome))
    if fmt == "json":
        sides = {"before": _side_json(outcome.before), "after": _side_json(outcome.after)}
        return render_json(outcome.comparison, sides)
    return render_table(outcome.comparison, only_changed=only_changed, sort=sort, where=where(outcome))
