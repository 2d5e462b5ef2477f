"""Renderers of a :class:`~mmtrack.analysis.compare.Comparison`: rich table, markdown, JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from ..measure.units import format_spread
from ..results import Measurement
from ..tables import NAME_MIN_WIDTH, FitTable, stacked
from ..textsafe import md_code, md_text, term
from ..vocabulary import Direction, MetricFormat
from .compare import MARKS, Comparison, Row
from .gate import failing_rows
from .policy import VERDICT_ORDER

SCHEMA_VERSION = 2  # of ``compare --format json``: 2 added machine, environment, full shas, summary
SORTS = ("verdict", "ratio", "name")

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



def format_measurement(m: Measurement | None, with_unit: bool = True) -> str:
    """The median ± half its interquartile range (else of its confidence interval), scaled: ``1.24±0.07 ms``."""
    if m is None:
        return ""
    if m.status != "ok" or m.median is None or not math.isfinite(m.median):
        return m.status if m.status != "ok" else "n/a"
    fmt = m.format if isinstance(m.format, MetricFormat) else MetricFormat.NUMBER
    low, high = (m.q1, m.q3) if m.q1 is not None and m.q3 is not None else (m.ci_low, m.ci_high)
    text = format_spread(m.median, low, high, m.metric.unit, fmt)
    if not with_unit and text.endswith(" " + m.metric.unit):
        return text[: -len(m.metric.unit) - 1]
    return text


def format_ratio(row: Row) -> str:
    if row.ratio is None:
        return ""
    r = "inf" if math.isinf(row.ratio) else f"{row.ratio:.2f}"
    return f"~{r}" if row.verdict == "ambiguous" else r


def _sorted(comparison: Comparison, sort: str = "verdict") -> list[Row]:
    """Attention first (rows already failing before go after the real changes); or by ratio or name."""
    if sort == "name":
        return sorted(comparison.rows, key=lambda r: (r.name, str(r.metric)))
    if sort == "ratio":  # the worst change first, whatever the metric's direction
        return sorted(comparison.rows, key=lambda r: (-(worse_factor(r) or 0.0), r.name))
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return sorted(
        comparison.rows,
        key=lambda r: rank["removed"] + 0.5 if r.verdict == "failed" and r.note == "still failing" else rank[r.verdict],
    )


def worse_factor(row: Row) -> float | None:
    """after/before oriented so that above 1 is worse (inverted for higher-is-better); None when not comparable."""
    if row.ratio is None or not math.isfinite(row.ratio) or row.ratio <= 0 or row.direction is Direction.NEUTRAL:
        return None
    if row.verdict not in ("unchanged", "improved", "regressed", "ambiguous"):
        return None
    return 1.0 / row.ratio if row.direction is Direction.HIGHER else row.ratio


def geometric_mean(comparison: Comparison) -> tuple[float | None, int]:
    """pyperf's summary: the geometric mean of the comparable rows' worse factors, and how many there were."""
    factors = [f for f in (worse_factor(r) for r in comparison.rows) if f is not None]
    if not factors:
        return None, 0
    return math.exp(sum(math.log(f) for f in factors) / len(factors)), len(factors)


def verdict_text(row: Row) -> str:
    """The verdict, its evidence state where the history judged it, and the note."""
    state = f" ({row.state})" if row.state else ""  # unchanged (refuted): history or A/B took a suspicion back
    return row.verdict + state + (f": {row.note}" if row.note else "")


def _with_states(comparison: Comparison, verdict: str, n: int) -> str:
    """``18 regressed (17 confirmed, 1 suspected), 40 unchanged (2 refuted)``: each verdict's evidence states beside
    it, so that a suspicion is not read as a regression confirmed, and a refuted one shows where it went."""
    shown = ", ".join(f"{n_rows} {state}" for state, n_rows in comparison.states(verdict).items())
    return f"{n} {verdict}" + (f" ({shown})" if shown else "")


def summary_line(comparison: Comparison) -> str:
    counts = comparison.counts()
    parts = [_with_states(comparison, v, n)
             for v, n in sorted(counts.items(), key=lambda kv: VERDICT_ORDER.index(kv[0]))]
    line = f"{comparison.before_label} → {comparison.after_label}: {len(comparison.rows)} metrics; " + ", ".join(parts)
    edge = comparison.near_threshold()
    if edge:
        line += f"; {edge} within ±1% of the threshold"
    if comparison.decided:
        line += f"; {len(comparison.decided)} earlier suspected change(s) settled"
    return line


def overall_line(comparison: Comparison, where: str = "") -> str:
    """``on m/env: 1.043x slower (geometric mean of 12 comparable metrics); 1 regressed, 11 unchanged``."""
    gm, n = geometric_mean(comparison)
    counts = sorted(comparison.counts().items(), key=lambda kv: VERDICT_ORDER.index(kv[0]))
    parts = ", ".join(f"{n_rows} {verdict}" for verdict, n_rows in counts)
    if gm is None:
        mean = "no comparable metrics"
    elif abs(gm - 1) < 0.0005:
        mean = f"same speed (geometric mean of {n} comparable metrics)"
    else:
        mean = f"{gm:.3f}x {'worse' if gm > 1 else 'better'} (geometric mean of {n} comparable metrics)"
    return (f"{where}: " if where else "") + mean + (f"; {parts}" if parts else "")


def render_table(comparison: Comparison, only_changed: bool = False, sort: str = "verdict", where: str = "") -> Table:
    """A rich table in asv's shape: mark, before, after, ratio, benchmark over its metric, verdict.

    It fits 80 columns: the benchmark wraps at its dots and keeps its tail; the metric sits under it.
    """
    title = term(summary_line(comparison)) + "\n" + term(overall_line(comparison, where))
    t = FitTable(box=box.SIMPLE_HEAD, title=Text(title), title_justify="left")
    t.add_column("", no_wrap=True)
    t.add_column(Text(term(comparison.before_label)), justify="right", overflow="fold")
    t.add_column(Text(term(comparison.after_label)), justify="right", overflow="fold")
    t.add_column("ratio", justify="right", no_wrap=True)
    t.add_column("benchmark / metric", overflow="fold", min_width=NAME_MIN_WIDTH)
    t.add_column("verdict", overflow="fold", min_width=9, max_width=24)  # the name gets the room
    for row in [*_sorted(comparison, sort), *comparison.decided]:
        if only_changed and row.verdict == "unchanged":
            continue
        style = _STYLE[row.verdict]
        verdict = verdict_text(row)
        t.add_row(
            Text(row.mark, style=style),
            Text(term(format_measurement(row.before))),  # the unit is the benchmark's: controls escaped
            Text(term(format_measurement(row.after))),
            Text(format_ratio(row), style=style),
            stacked(row.name, row.metric_label),
            Text(term(verdict), style=style),
        )
    return t


def _md_rows(rows: list[Row]) -> list[str]:
    out = ["| | before | after | ratio | benchmark | metric | verdict |", "|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        mark = f"`{r.mark}`" if r.mark.strip() else ""
        verdict = verdict_text(r)
        # The unit is the benchmark's: in a code span, so that "http://..." is no link and "*" no emphasis.
        cells = [mark, md_code(format_measurement(r.before)), md_code(format_measurement(r.after)),
                 md_text(format_ratio(r)), md_code(r.name), md_code(r.metric_label), md_text(verdict)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def render_markdown(comparison: Comparison, sort: str = "verdict", where: str = "") -> str:
    """Markdown for a PR comment: what changed in a table, the unchanged rows folded away.

    Every name is a code span and every other text escaped (:mod:`mmtrack.textsafe`): names come
    from the pull request under test and must not close the table or open an HTML comment.
    """
    rows = _sorted(comparison, sort)
    changed = [r for r in rows if r.verdict != "unchanged"]
    same = [r for r in rows if r.verdict == "unchanged"]
    head = "### Performance comparison"
    if failing_rows(comparison, ("regression",)):
        head = "### :red_circle: Performance regressed"
    elif failing_rows(comparison, ("suspected",)):
        head = "### :warning: Performance regression suspected"
    lines = [head, "", md_text(summary_line(comparison)), "", md_text(overall_line(comparison, where)), ""]
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


def to_json(comparison: Comparison, sides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Raw SI values plus unit; ``sides`` adds each side's full sha, machine, environment and run id."""
    gm, n = geometric_mean(comparison)
    return {
        "schema_version": SCHEMA_VERSION,
        "before": comparison.before_label,
        "after": comparison.after_label,
        **({"sides": sides} if sides else {}),
        "counts": comparison.counts(),
        "summary": {"geometric_mean_worse_factor": gm, "comparable": n},
        "policy": {
            "threshold": comparison.policy.threshold,
            "counter_threshold": comparison.policy.counter_threshold,
            "thresholds": dict(comparison.policy.thresholds),
            "alpha": comparison.policy.alpha,
            "history_z": comparison.policy.history_z,
            "history_points": comparison.policy.history_points,
            "history_gap": comparison.policy.history_gap,
            "history_alpha": comparison.policy.history_alpha,
            "confirm_window": comparison.policy.confirm_window,
            "confirm_agree": comparison.policy.confirm_agree,
            **({"round_alpha": comparison.policy.round_alpha} if comparison.policy.round_alpha is not None else {}),
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
        "display": {"before": format_measurement(r.before), "after": format_measurement(r.after)},
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


def side_json(spec: str, label: str, commit: Any, machine: str | None, environment: str | None,
              run_id: int | None = None) -> dict[str, Any]:
    """One side of a comparison in the JSON: what was asked for, the full sha, where it ran."""
    return {
        "spec": spec,
        "label": label,
        "sha": commit.sha if commit else None,
        "dirty": commit.dirty if commit else None,
        "machine": machine,
        "environment": environment,
        "run_id": run_id,
    }


def render_json(comparison: Comparison, sides: dict[str, dict[str, Any]] | None = None,
                extra: dict[str, Any] | None = None) -> str:
    """``compare --format json``; ``continuous`` adds its ``ab`` block through ``extra``."""
    return json.dumps({**to_json(comparison, sides), **(extra or {})}, indent=2, allow_nan=False, default=_clean)


__all__ = ["FORMATS", "SORTS", "MARKS", "overall_line", "geometric_mean",
           "render_table", "render_markdown", "render_json", "side_json", "to_json", "summary_line"]
