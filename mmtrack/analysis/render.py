"""Renderers of a :class:`~mmtrack.analysis.compare.Comparison`: rich table, markdown, JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from ..measure.metrics import MetricFormat
from ..measure.report import format_duration, format_value
from ..results import Measurement
from .compare import MARKS, Comparison, Row, failing_rows

FORMATS = ("table", "markdown", "json")

_STYLE = {
    "regressed": "red",
    "failed": "red",
    "improved": "green",
    "fixed": "green",
    "ambiguous": "yellow",
    "not comparable": "dim",
    "new": "cyan",
    "removed": "cyan",
    "unchanged": "",
}

# Order of the sections in markdown and of the rows in the table: what needs attention first.
_ORDER = ("failed", "regressed", "ambiguous", "improved", "fixed", "not comparable", "new", "removed", "unchanged")


def format_measurement(m: Measurement | None, with_unit: bool = False) -> str:
    """The median; durations in s/ms/µs/ns, other units in the metric column unless ``with_unit``."""
    if m is None:
        return ""
    if m.status != "ok" or m.median is None or not math.isfinite(m.median):
        return m.status if m.status != "ok" else "n/a"
    if m.metric.unit == "s":
        return format_duration(m.median)
    value = format_value(m.median, m.format if isinstance(m.format, MetricFormat) else MetricFormat.NUMBER)
    return f"{value} {m.metric.unit}" if with_unit else value


def format_ratio(row: Row) -> str:
    if row.ratio is None:
        return ""
    r = "inf" if math.isinf(row.ratio) else f"{row.ratio:.2f}"
    return f"~{r}" if row.verdict == "ambiguous" else r


def _sorted(comparison: Comparison) -> list[Row]:
    """Attention first; rows that were already failing before go after the real changes."""
    rank = {v: i for i, v in enumerate(_ORDER)}
    return sorted(
        comparison.rows,
        key=lambda r: rank["removed"] + 0.5 if r.verdict == "failed" and r.note == "still failing" else rank[r.verdict],
    )


def verdict_text(row: Row) -> str:
    """The verdict, its evidence state where the history judged it, and the note."""
    state = f" ({row.state})" if row.state and row.verdict in ("regressed", "improved") else ""
    return row.verdict + state + (f": {row.note}" if row.note else "")


def summary_line(comparison: Comparison) -> str:
    counts = comparison.counts()
    parts = [f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: _ORDER.index(kv[0]))]
    line = f"{comparison.before_label} → {comparison.after_label}: {len(comparison.rows)} metrics; " + ", ".join(parts)
    states = comparison.states()
    if states:
        line += " (" + ", ".join(f"{n} {s}" for s, n in states.items()) + ")"
    edge = comparison.near_threshold()
    if edge:
        line += f"; {edge} within ±1% of the threshold"
    if comparison.decided:
        line += f"; {len(comparison.decided)} earlier suspected change(s) settled"
    return line


def render_table(comparison: Comparison, only_changed: bool = False) -> Table:
    """A rich table in asv's shape: mark, before, after, ratio, benchmark, metric, verdict."""
    t = Table(box=box.SIMPLE_HEAD, title=Text(summary_line(comparison)), title_justify="left", expand=True)
    for col, justify in (
        ("", "left"),
        (comparison.before_label, "right"),
        (comparison.after_label, "right"),
        ("ratio", "right"),
        ("benchmark", "left"),
        ("metric", "left"),
        ("verdict", "left"),
    ):
        t.add_column(
            Text(col),
            justify=justify,
            no_wrap=col not in ("benchmark", "verdict"),
            overflow="fold" if col in ("benchmark", "verdict") else "ellipsis",
            ratio=1 if col == "benchmark" else None,
        )
    for row in [*_sorted(comparison), *comparison.decided]:
        if only_changed and row.verdict == "unchanged":
            continue
        style = _STYLE[row.verdict]
        verdict = verdict_text(row)
        t.add_row(
            Text(row.mark, style=style),
            Text(format_measurement(row.before)),
            Text(format_measurement(row.after)),
            Text(format_ratio(row), style=style),
            Text(row.name),  # plain Text: names like "x[s]" are not rich markup
            Text(row.metric_label),
            Text(verdict, style=style),
        )
    return t


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def _md_rows(rows: list[Row]) -> list[str]:
    out = ["| | before | after | ratio | benchmark | metric | verdict |", "|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        mark = f"`{r.mark}`" if r.mark.strip() else ""
        verdict = verdict_text(r)
        cells = [mark, format_measurement(r.before), format_measurement(r.after), format_ratio(r), r.name, r.metric_label, verdict]
        out.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return out


def render_markdown(comparison: Comparison) -> str:
    """Markdown for a PR comment: what changed in a table, the unchanged rows folded away."""
    rows = _sorted(comparison)
    changed = [r for r in rows if r.verdict != "unchanged"]
    same = [r for r in rows if r.verdict == "unchanged"]
    head = "### Performance comparison"
    if failing_rows(comparison, ("regression",)):
        head = "### :red_circle: Performance regressed"
    elif failing_rows(comparison, ("suspected",)):
        head = "### :warning: Performance regression suspected"
    lines = [head, "", _md_escape(summary_line(comparison)), ""]
    if changed:
        lines += _md_rows(changed) + [""]
    else:
        lines += ["No metric changed beyond its threshold.", ""]
    if comparison.decided:
        settled = _md_rows(list(comparison.decided))
        lines += ["Earlier commits' suspected changes that this commit settles:", "", *settled, ""]
    if same:
        lines += [f"<details><summary>{len(same)} unchanged</summary>", "", *_md_rows(same), "", "</details>", ""]
    lines.append(
        "Marks as in `asv compare`: `+` worse, `-` better, `!` failed, `*` fixed, `x` not comparable, "
        "`~` beyond the threshold but not significant, `n` new, `r` removed. With history a change is "
        "suspected until later commits confirm or refute it."
    )
    return "\n".join(lines) + "\n"


def _measurement_json(m: Measurement | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "status": m.status,
        "median": m.median,
        "ci_low": m.ci_low,
        "ci_high": m.ci_high,
        "count": m.count,
        "version": m.version,
    }


def _clean(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def to_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "before": comparison.before_label,
        "after": comparison.after_label,
        "counts": comparison.counts(),
        "policy": {
            "threshold": comparison.policy.threshold,
            "counter_threshold": comparison.policy.counter_threshold,
            "thresholds": dict(comparison.policy.thresholds),
            "alpha": comparison.policy.alpha,
            "history_z": comparison.policy.history_z,
            "history_gap": comparison.policy.history_gap,
            "history_alpha": comparison.policy.history_alpha,
            "confirm_window": comparison.policy.confirm_window,
            "confirm_agree": comparison.policy.confirm_agree,
        },
        "states": comparison.states(),
        "near_threshold": comparison.near_threshold(),
        "decided": [_row_json(r) for r in comparison.decided],
        "rows": [_row_json(r) for r in comparison.rows],
    }


def _row_json(r: Row) -> dict[str, Any]:
    return {
        "benchmark": r.benchmark,
        "params": json.loads(r.params),
        "metric": {"section": r.metric.section, "name": r.metric.name, "unit": r.metric.unit},
        "direction": r.direction.value,
        "verdict": r.verdict,
        "mark": r.mark,
        "ratio": _clean(r.ratio),
        "p_value": r.p_value,
        "test": r.test,
        "threshold": r.threshold,
        "history_z": _clean(r.history_z),
        "note": r.note,
        "state": r.state,
        "near_threshold": r.near_threshold,
        "before": _measurement_json(r.before),
        "after": _measurement_json(r.after),
    }


def render_json(comparison: Comparison) -> str:
    return json.dumps(to_json(comparison), indent=2, allow_nan=False, default=_clean)


__all__ = ["FORMATS", "MARKS", "render_table", "render_markdown", "render_json", "to_json", "summary_line"]
