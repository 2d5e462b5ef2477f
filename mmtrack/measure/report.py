"""Terminal rendering of benchmark statistics with rich."""

from __future__ import annotations

import math
from typing import Iterable

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..textsafe import term
from .benchmark_stats import BenchmarkStats
from .diagnose import cpu_diagnostics, stability_warnings
from .metrics import MetricFormat, MetricSummary
from .roles import EventCounterSummary, RoleStats
from .stats import OUTLIER_RULE, CounterSummary
from .units import format_duration, format_number, format_si, format_value


def _kv_table(stats: BenchmarkStats, *, chunks: bool = True) -> Table:
    t = Table(box=box.SIMPLE_HEAD, show_header=False, pad_edge=False)
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    lat, rate = stats.latency, stats.rate
    t.add_row("Measurement", Text(term(stats.measurement_label)))
    for note in stats.notes:
        t.add_row("", Text(term(note), style="dim"))
    t.add_row("Domain", stats.domain.value)
    chunk = f"{stats.chunk_size:,d} ops/chunk" + (" (calibrated)" if stats.calibrated else " (fixed)")
    if chunks:  # a concurrent benchmark has no chunks: its sample is a time window
        t.add_row("Samples", f"{stats.samples} × {chunk}")
    t.add_row(
        "Throughput",
        f"{format_si(rate.median, stats.throughput.rate_unit)}  (p5 {format_si(rate.p5, stats.throughput.rate_unit)})",
    )
    t.add_row("Latency", f"{format_duration(lat.median)}/op  (p95 {format_duration(lat.p95)}/op)")
    t.add_row("MAD / CV", f"{format_duration(lat.mad)}/op / {lat.cv:.2%}")
    t.add_row("Outliers", f"{lat.outliers} of {lat.count} ({OUTLIER_RULE})")
    if stats.conditions is not None:
        t.add_row("Measured", Text(stats.conditions.describe()))
    if stats.process_spread is not None:
        t.add_row("Processes", Text(stats.process_spread.describe()))
    return t


def counter_table(counters: list[CounterSummary]) -> Table:
    t = Table(title="counters:", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("counter", "per op", "total", "coverage"):
        t.add_column(col, justify="left" if col == "counter" else "right")
    by_name = {c.name: c for c in counters}
    for c in counters:
        t.add_row(Text(term(f"{c.name}/op")), format_value(c.per_op), format_value(c.total, MetricFormat.INTEGER),
                  f"{c.coverage_pct:.1f}%")
    ipc = _ipc(by_name.get("instructions"), by_name.get("cycles"))
    if ipc is not None:
        t.add_row("IPC", f"{ipc:.3f}", "", "")
    return t


def _ipc(instructions: CounterSummary | None, cycles: CounterSummary | None) -> float | None:
    """instructions / cycles, per op: both then describe the same work even when the two
    counters sat in different perf groups and were read in different samples."""
    if instructions is None or cycles is None or not cycles.per_op or math.isnan(cycles.per_op):
        return None
    return instructions.per_op / cycles.per_op


def metric_table(title: str, metrics: Iterable[MetricSummary]) -> Table:
    """One row per metric: ``section/name [unit]`` (wrapped at its dots when narrow), then whole numbers."""
    from ..tables import NAME_MIN_WIDTH, Name

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("metric", min_width=min(NAME_MIN_WIDTH, 16))
    for col in ("mean", "median", "p95", "min", "max", "n"):
        t.add_column(col, justify="right", no_wrap=True)
    for m in metrics:
        f = m.format
        label = (f"{m.section}/" if m.section else "") + f"{m.display_name} [{m.unit}]"
        t.add_row(
            Name(label),
            *(format_number(v, f) for v in (m.mean, m.median, m.p95, m.min, m.max)),
            str(m.count),
        )
    return t


def render_stats(stats: BenchmarkStats) -> Group:
    if stats.scenario is not None:
        return render_concurrent(stats)
    parts: list = [Text(term(stats.full_name), style="bold"), _kv_table(stats)]
    if stats.counters:
        parts.append(counter_table(stats.counters))
    custom = list(stats.metrics) + list(stats.diagnostics)
    if custom:
        parts.append(metric_table("custom metrics:", custom))
    for err in stats.diagnostic_errors:
        parts.append(Text(f"diagnostic: {term(err)}", style="yellow"))
    lines = cpu_diagnostics(stats)
    if lines:
        parts.append(Text("possible bottlenecks:", style="bold magenta"))
        parts.extend(Text(f"  - {term(line)}") for line in lines)
    for w in list(stats.warnings) + stability_warnings(stats):
        parts.append(Text(f"warning: {term(w)}", style="yellow"))
    return Group(*parts)


# -- concurrent benchmarks (measure/concurrent.py) ---------------------------------------------
def _scenario_table(stats: BenchmarkStats) -> Table:
    sc = stats.scenario
    assert sc is not None
    t = Table(box=box.SIMPLE_HEAD, show_header=False, pad_edge=False)
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    t.add_row("Roles", ", ".join(f"{name} × {threads}" for name, threads in sc.roles))
    t.add_row("Samples", f"{stats.samples} × {sc.sample_duration * 1e3:g} ms (fixed window, warm-up discarded)")
    t.add_row("Python", Text(f"{sc.python_build}, GIL {'enabled' if sc.gil_enabled else 'disabled'}"))
    t.add_row("Pinning", Text(sc.pinning))
    for key, value in sc.metadata.items():
        t.add_row("Metadata", Text(f"{key} = {value}"))
    return t


def _ops_rate(value: float) -> str:
    """A role's rate: a thread that got no turn in a window (the GIL, a busy machine) shows 0, not n/a."""
    return "0 ops/s" if value == 0 else format_si(value, "ops/s")


def _role_table(role: RoleStats) -> Table:
    t = Table(box=box.SIMPLE_HEAD, show_header=False, pad_edge=False)
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    lat, rate = role.latency, role.rate
    total = sum(role.operations) / sum(role.durations) if sum(role.durations) > 0 else math.nan
    t.add_row("Throughput", f"{_ops_rate(total)} role total, {_ops_rate(rate.median)} per thread "
                            f"(p5 {_ops_rate(rate.p5)})")
    t.add_row("Latency", f"{format_duration(lat.median)}/op per thread  (p95 {format_duration(lat.p95)}/op)")
    t.add_row("MAD / CV", f"{format_duration(lat.mad)}/op / {lat.cv:.2%}")
    t.add_row("Outliers", f"{lat.outliers} of {lat.count} thread-samples ({OUTLIER_RULE})")
    t.add_row("Operations", f"{role.total_operations:,d} over {len(role.operations)} samples")
    return t


def event_counter_table(events: list[EventCounterSummary]) -> Table:
    t = Table(title="bench event counters:", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("counter", "total", "per op", "per second"):
        t.add_column(col, justify="left" if col == "counter" else "right")
    for e in events:
        t.add_row(Text(e.name), format_value(e.total, MetricFormat.INTEGER), format_value(e.per_op),
                  format_value(e.per_second))
    return t


def render_concurrent(stats: BenchmarkStats) -> Group:
    """Per-role tables first, each with its event counters; then scenario metrics; then workers combined."""
    parts: list = [Text(term(stats.full_name), style="bold"), _scenario_table(stats)]
    for role in stats.roles:
        parts.append(Text(f"role {role.name} ({role.threads} thread{'s' if role.threads != 1 else ''})",
                          style="bold"))
        parts.append(_role_table(role))
        if role.counters:
            parts.append(counter_table(role.counters))
        if role.events:
            parts.append(event_counter_table(role.events))
    scenario = [m for m in stats.metrics if m.section == "scenario"]
    if scenario:
        parts.append(metric_table("scenario metrics:", scenario))
    parts.append(Text("workers combined", style="bold"))
    parts.append(_kv_table(stats, chunks=False))
    if stats.counters:
        parts.append(Text("these perf counters count every worker thread; per op is per operation of all roles",
                          style="dim"))
        parts.append(counter_table(stats.counters))
    other = [m for m in stats.metrics if m.section != "scenario"] + list(stats.diagnostics)
    if other:
        parts.append(metric_table("custom metrics:", other))
    for w in list(stats.warnings):
        parts.append(Text(f"warning: {w}", style="yellow"))
    return Group(*parts)
