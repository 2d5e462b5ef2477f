"""The regressions page's section "Drift since REF" (``mmtrack publish --baseline REF``): the series that moved
beyond the threshold since a release, the worst first, though no single step of theirs did.

Static HTML, no script, as the alert queue (publish/alerts_page.py); the report is
:class:`mmtrack.analysis.drift.DriftReport`, worked out by publish/site.py.
"""

from __future__ import annotations

import html
from typing import Any

from ..analysis.alerts import series_label

_COLUMNS = ("series", "verdict", "change", "noise interval", "baseline → now")


def _percent(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def _row(d: Any) -> str:
    cells = [html.escape(series_label(d.series)), html.escape(d.verdict + (" (dismissed)" if d.dismissed else "")),
             _percent(d.ratio), f"{_percent(d.low)} .. {_percent(d.high)}",
             f"{d.baseline_level:.4g} → {d.current_level:.4g}"]
    return (f'<tr class="drift" data-verdict="{html.escape(d.verdict)}">'
            + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")


def drift_section(report: Any | None) -> str:
    """The section, or "" without a baseline: the drifted series, then the improved and moved ones."""
    if report is None:
        return ""
    shown = report.drifted + [d for d in report.series if d.verdict in ("improved", "moved")]
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    rows = "\n".join(_row(d) for d in shown)
    table = (f'<table class="grid" id="drift"><thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody></table>'
             if shown else "")
    return (f'\n<section id="drift-section"><h2>Drift since {html.escape(report.ref)}</h2>\n'
            f'<p class="summary" id="drift-summary">{html.escape(report.summary())}</p>\n{table}</section>')
