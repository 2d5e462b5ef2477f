"""The alert queue page (``alerts.html``): every alert detect keeps, untriaged first, with its state.

Static HTML, no script: the queue reads the same offline and in a browser without JavaScript. The alerts come
from the store (``SiteModel.alerts``); their states are given with ``mmtrack alerts ack|invalid|...``.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from ..analysis.alerts import queue_order, series_label

_COLUMNS = ("alert", "state", "kind", "commits", "series", "worst", "machines", "cause", "note")


def _commit(sha: str, commit_url: str) -> str:
    short = html.escape(sha[:8])
    return f'<a href="{html.escape(commit_url + sha)}">{short}</a>' if commit_url else f"<code>{short}</code>"


def _change(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def _cause(alert: Any) -> str:
    if alert.explained:
        return "environment event " + html.escape(", ".join(alert.events))
    return "code" if not alert.events else "code; event " + html.escape(", ".join(alert.events)) + " for some"


def _culprit(c: Any) -> str:
    """What ``bisect --alert`` named: the commit, its move and the series it was judged on."""
    if c is None:
        return ""
    size = f" {_change(c.ratio)}" if c.ratio else ""
    return f"{c.sha[:12]}{size} {c.benchmark} ({c.instrument} on {c.machine})"


def _row(alert: Any, commit_url: str) -> str:
    members = "".join(f"<li>{html.escape(_change(s.ratio))} {html.escape(s.kind)} "
                      f"{html.escape(series_label(s.series))}</li>"
                      for s in sorted(alert.series, key=lambda s: -abs(s.ratio - 1.0)))
    t = alert.triage
    note = html.escape(t.note) + (f" <span class=\"who\">({html.escape(t.who)})</span>" if t.who else "")
    lineage = "".join(f"<br><small>{label} {html.escape(v)}</small>" for label, v in
                      (("merged", ", ".join(alert.merged)), ("split from", alert.split_from or ""),
                       ("culprit", _culprit(alert.culprit))) if v)
    cells = [
        f"<code>{html.escape(alert.id)}</code>{lineage}",
        f'<span class="state state-{html.escape(alert.state)}">{html.escape(alert.state)}</span>',
        html.escape(alert.kind),
        f"{_commit(alert.before_sha, commit_url)}..{_commit(alert.after_sha, commit_url)}",
        f"<details><summary>{len(alert.series)}</summary><ul>{members}</ul></details>",
        html.escape(_change(alert.worst_ratio)),
        html.escape(", ".join(alert.agreeing_machines) or "-"),
        _cause(alert),
        note,
    ]
    return (f'<tr class="alert" data-alert="{html.escape(alert.id)}" data-state="{html.escape(alert.state)}">'
            + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")


def alert_queue_body(alerts: Sequence[Any], commit_url: str = "") -> str:
    """The page's body: the active alerts, untriaged first, then regressions, then the largest move."""
    shown = [a for a in queue_order(alerts) if a.active]
    untriaged = sum(a.state == "untriaged" for a in shown)
    if not shown:
        return ("<h1>Alerts</h1>\n<p class=\"summary\" id=\"alerts-summary\">No alerts: run <code>mmtrack detect"
                "</code> or <code>mmtrack update</code> to group change points into alerts.</p>")
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    rows = "\n".join(_row(a, commit_url) for a in shown)
    return (f"<h1>Alerts</h1>\n<p class=\"summary\" id=\"alerts-summary\">{len(shown)} alert(s), {untriaged} "
            "untriaged. Triage with <code>mmtrack alerts ack|invalid|wontfix|fixed|backed-out ID</code>.</p>\n"
            f'<table class="grid" id="alerts"><thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody></table>')
