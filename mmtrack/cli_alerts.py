"""How ``mmtrack alerts`` renders the queue and one alert: a table for people, JSON for CI and scripts."""

from __future__ import annotations

import json
from typing import Any, Sequence

from rich import box
from rich.text import Text

from .analysis.alerts import series_json, series_label
from .tables import FitTable
from .textsafe import term


def _when(at: Any) -> str | None:
    return at.isoformat() if at is not None else None


def alert_json(a: Any) -> dict[str, Any]:
    """One alert (``analysis.alerts.Alert``) as the JSON output spells it."""
    return {
        "id": a.id, "active": a.active, "state": a.state, "note": a.triage.note, "who": a.triage.who,
        "triaged_at": _when(a.triage.at), "kind": a.kind, "before_sha": a.before_sha, "after_sha": a.after_sha,
        "series_count": len(a.series), "worst_ratio": a.worst_ratio, "machines": list(a.machines),
        "agreeing_machines": list(a.agreeing_machines), "explained_by_event": a.explained,
        "events": list(a.events), "merged": list(a.merged), "merged_into": a.merged_into,
        "split_from": a.split_from, "culprit": culprit_json(a.culprit), "series": [series_json(s) for s in a.series],
    }


def culprit_json(c: Any) -> dict[str, Any] | None:
    """What ``bisect --alert`` wrote on an alert (``analysis.alerts.Culprit``), or None."""
    if c is None:
        return None
    return {"sha": c.sha, "benchmark": c.benchmark, "params": c.params, "metric": c.metric, "machine": c.machine,
            "ratio": c.ratio, "verdict": c.verdict, "commits_measured": c.measured, "commits_in_range": c.commits,
            "instrument": c.instrument, "at": _when(c.at)}


def culprit_words(c: Any) -> str:
    """One line: the commit, what it did to which series, and how it was found."""
    size = f"{_change(c.ratio)} " if c.ratio else ""
    return (f"{c.sha[:12]} ({size}{c.verdict} {c.benchmark} {c.metric}; bisect on {c.machine}, {c.instrument}, "
            f"{c.measured} of {c.commits} commits measured, {_when(c.at)})")


def one_alert_json(a: Any) -> str:
    return json.dumps(alert_json(a), indent=2)


def alerts_json(alerts: Sequence[Any]) -> str:
    return json.dumps({"alerts": [alert_json(a) for a in alerts]}, indent=2)


def _range(a: Any) -> str:
    return f"{a.before_sha[:8]}..{a.after_sha[:8]}"


def _change(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def alerts_table(alerts: Sequence[Any]) -> FitTable:
    """The queue: one row per alert, untriaged first."""
    title = (f"{len(alerts)} alert(s), {sum(a.state == 'untriaged' for a in alerts)} untriaged"
             if alerts else "no alerts: run `mmtrack detect` or `mmtrack update` first, or widen the filter")
    t = FitTable(box=box.SIMPLE_HEAD if alerts else None, title=Text(title), title_justify="left",
                 show_header=bool(alerts))
    # Fits 80 columns: machines and events are in `alerts show` and the JSON; an alert every series of which
    # follows an environment event reads "event" as its kind, as detect's table leaves those out of the code's.
    for name in ("id", "state", "kind", "commits", "series", "worst"):
        t.add_column(name, no_wrap=name in ("id", "commits"), overflow="fold")
    for a in alerts:
        t.add_row(a.id, a.state + ("" if a.active else " (gone)"), "event" if a.explained else a.kind, _range(a),
                  str(len(a.series)), _change(a.worst_ratio))
    return t


def alert_lines(detail: Any) -> str:
    """``mmtrack alerts show``: the alert, each series with its ratio, and every state it was given."""
    a = detail.alert
    lines = [f"alert {a.id}: {a.kind}, {a.state}{'' if a.active else ' (no longer detected)'}",
             f"  commits {a.before_sha[:12]}..{a.after_sha[:12]} (the culprit lies in this range)",
             f"  machines: {', '.join(a.machines)}; moving this way: {', '.join(a.agreeing_machines) or 'none'}"]
    if a.events:
        lines.append(f"  environment event(s): {', '.join(a.events)}"
                     + (" explain every series" if a.explained else " explain some series"))
    if a.merged:
        lines.append(f"  merged from: {', '.join(a.merged)}")
    if a.merged_into:
        lines.append(f"  merged into: {a.merged_into}")
    if a.split_from:
        lines.append(f"  split from: {a.split_from}")
    if a.culprit:
        lines.append(f"  culprit: {culprit_words(a.culprit)}")
    places = {(s.series.machine, s.series.environment) for s in a.series}
    lines.append(f"  {len(a.series)} series" + (f" on {'/'.join(next(iter(places)))}:" if len(places) == 1 else ":"))
    for s in sorted(a.series, key=lambda s: -abs(s.ratio - 1.0)):
        k = s.series
        name = (series_label(k).rsplit(" @ ", 1)[0] if len(places) == 1 else series_label(k))
        lines.append(f"    {_change(s.ratio):>8}  {s.kind:<11} {name}" + (f"  [{s.event}]" if s.event else ""))
    if detail.history:
        lines.append("  triage:")
        for h in detail.history:
            note = f": {h['note']}" if h["note"] else ""
            lines.append(f"    {_when(h['at'])} {h['who']} -> {h['state']}{note}")
    return "\n".join(term(line) for line in lines)


def alert_detail_json(detail: Any) -> str:
    history = [{**h, "at": _when(h["at"])} for h in detail.history]
    return json.dumps({**alert_json(detail.alert), "history": history}, indent=2)


# -- bisect --alert ----------------------------------------------------------------------------------------


def alert_bisected(found: Any, console: Any) -> None:
    """``bisect --alert``'s table: the search's path and culprit, then what was written on the alert."""
    from .cli_results import bisected

    a = found.alert
    if found.bisect is None:
        console.print(term(f"alert {a.id}: {found.note}"), highlight=False)
        return
    bisected(found.bisect, console)
    if found.culprit is not None:
        console.print(term(f"alert {a.id}: culprit {culprit_words(found.culprit)} written; "
                           f"`mmtrack alerts show {a.id}` shows it"), highlight=False)
    else:
        console.print(term(f"alert {a.id}: {found.note}"), highlight=False)


def alert_bisect_json(found: Any) -> str:
    """``bisect --alert --format json``: the alert as stored after, the series judged, and the search."""
    from .cli_results import bisect_json

    return json.dumps({
        "alert": alert_json(found.alert), "good": found.good, "bad": found.bad, "commits_in_range": found.commits,
        "series": series_json(found.series), "machine_class": found.machine_class,
        "written": found.culprit is not None, "note": found.note,
        "one_commit_culprit": found.bad if found.bisect is None else None,  # the range names it: nothing measured
        "bisect": json.loads(bisect_json(found.bisect)) if found.bisect is not None else None,
    }, indent=2)
