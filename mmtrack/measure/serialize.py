"""BenchmarkStats to and from plain JSON-able dicts (one format for every file we write).

Used by the versioned bench report (MMTRACK_OUTPUT) and the asv spool files, so a
run's statistics look the same wherever they are read back.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .backend import MeasurementDomain
from .benchmark_stats import BenchmarkStats
from .conditions import SamplingConditions
from .metrics import Direction, MetricFormat, MetricSummary
from .roles import EventCounterSummary, RoleStats, ScenarioInfo
from .spread import ProcessSpread
from .stats import CounterSummary, Distribution
from .throughput import Throughput


def _num(x: float) -> float | None:
    """JSON has no NaN/inf: store them as null."""
    return float(x) if math.isfinite(x) else None


def _unnum(x: float | None) -> float:
    return math.nan if x is None else float(x)


def summary_to_dict(m: MetricSummary) -> dict[str, Any]:
    return {
        "section": m.section,
        "name": m.name,
        "unit": m.unit,
        "display_name": m.display_name,
        "format": m.format.value,
        "direction": m.direction.value,
        "mean": _num(m.mean),
        "median": _num(m.median),
        "p95": _num(m.p95),
        "min": _num(m.min),
        "max": _num(m.max),
        "count": m.count,
        "values": [_num(v) for v in m.values],
    }


def summary_from_dict(d: dict[str, Any]) -> MetricSummary:
    return MetricSummary(
        section=d["section"],
        name=d["name"],
        unit=d["unit"],
        display_name=d.get("display_name") or d["name"],
        format=MetricFormat(d.get("format", "number")),
        direction=Direction(d["direction"]),
        mean=_unnum(d["mean"]),
        median=_unnum(d["median"]),
        p95=_unnum(d["p95"]),
        min=_unnum(d["min"]),
        max=_unnum(d["max"]),
        count=int(d["count"]),
        values=tuple(_unnum(v) for v in d["values"]),
    )


def _distribution_to_dict(d: Distribution) -> dict[str, Any]:
    return {f.name: (_num(getattr(d, f.name)) if f.name not in ("outliers", "count") else getattr(d, f.name))
            for f in dataclasses.fields(Distribution)}


def _distribution_from_dict(d: dict[str, Any]) -> Distribution:
    return Distribution(**{
        f.name: (int(d[f.name]) if f.name in ("outliers", "count") else _unnum(d[f.name]))
        for f in dataclasses.fields(Distribution)
    })


def _counter_to_dict(c: CounterSummary) -> dict[str, Any]:
    return {
        "name": c.name,
        "total": _num(c.total),
        "per_op": _num(c.per_op),
        "per_sample_per_op": [_num(v) for v in c.per_sample_per_op],
        "coverage_pct": _num(c.coverage_pct),
    }


def _counter_from_dict(c: dict[str, Any]) -> CounterSummary:
    return CounterSummary(
        c["name"],
        _unnum(c["total"]),
        _unnum(c["per_op"]),
        tuple(_unnum(v) for v in c["per_sample_per_op"]),
        _unnum(c["coverage_pct"]),
    )


def _role_to_dict(r: RoleStats) -> dict[str, Any]:
    return {
        "name": r.name,
        "threads": r.threads,
        "operations": list(r.operations),
        "thread_operations": [list(row) for row in r.thread_operations],
        "durations": [_num(x) for x in r.durations],
        "latency": _distribution_to_dict(r.latency),
        "rate": _distribution_to_dict(r.rate),
        "events": [
            {"name": e.name, "total": e.total, "per_op": _num(e.per_op), "per_second": _num(e.per_second),
             "per_sample": list(e.per_sample)}
            for e in r.events
        ],
        "counters": [_counter_to_dict(c) for c in r.counters],
    }


def _role_from_dict(d: dict[str, Any]) -> RoleStats:
    return RoleStats(
        name=d["name"],
        threads=int(d["threads"]),
        operations=tuple(int(x) for x in d["operations"]),
        thread_operations=tuple(tuple(int(x) for x in row) for row in d["thread_operations"]),
        durations=tuple(_unnum(x) for x in d["durations"]),
        latency=_distribution_from_dict(d["latency"]),
        rate=_distribution_from_dict(d["rate"]),
        events=[
            EventCounterSummary(e["name"], int(e["total"]), _unnum(e["per_op"]), _unnum(e["per_second"]),
                                tuple(int(x) for x in e["per_sample"]))
            for e in d["events"]
        ],
        counters=[_counter_from_dict(c) for c in d.get("counters") or []],
    )


def stats_to_dict(s: BenchmarkStats) -> dict[str, Any]:
    concurrent = {"roles": [_role_to_dict(r) for r in s.roles], "scenario": s.scenario.to_dict()} if s.scenario else {}
    return {
        **concurrent,
        "name": s.name,
        "params": dict(s.params),
        "throughput": {"amount": s.throughput.amount, "unit": s.throughput.unit},
        "domain": s.domain.value,
        "measurement_label": s.measurement_label,
        "emits_cpu_diagnostics": s.emits_cpu_diagnostics,
        "chunk_size": s.chunk_size,
        "calibrated": s.calibrated,
        "durations": [_num(x) for x in s.durations],
        "host_durations": [_num(x) for x in s.host_durations],
        "operations": list(s.operations),
        "latency": _distribution_to_dict(s.latency),
        "rate": _distribution_to_dict(s.rate),
        "counters": [_counter_to_dict(c) for c in s.counters],
        "metrics": [summary_to_dict(m) for m in s.metrics],
        "diagnostics": [summary_to_dict(m) for m in s.diagnostics],
        "diagnostic_errors": list(s.diagnostic_errors),
        "warnings": list(s.warnings),
        "notes": list(s.notes),
        "conditions": s.conditions.to_dict() if s.conditions is not None else None,
        "process_spread": s.process_spread.to_dict() if s.process_spread is not None else None,
    }


def stats_from_dict(d: dict[str, Any]) -> BenchmarkStats:
    return BenchmarkStats(
        name=d["name"],
        params=dict(d["params"]),
        throughput=Throughput(d["throughput"]["amount"], d["throughput"]["unit"]),
        domain=MeasurementDomain(d["domain"]),
        measurement_label=d["measurement_label"],
        emits_cpu_diagnostics=bool(d["emits_cpu_diagnostics"]),
        chunk_size=int(d["chunk_size"]),
        calibrated=bool(d["calibrated"]),
        durations=tuple(_unnum(x) for x in d["durations"]),
        host_durations=tuple(_unnum(x) for x in d["host_durations"]),
        operations=tuple(int(x) for x in d["operations"]),
        latency=_distribution_from_dict(d["latency"]),
        rate=_distribution_from_dict(d["rate"]),
        counters=[_counter_from_dict(c) for c in d["counters"]],
        metrics=[summary_from_dict(m) for m in d["metrics"]],
        diagnostics=[summary_from_dict(m) for m in d["diagnostics"]],
        diagnostic_errors=list(d["diagnostic_errors"]),
        warnings=list(d["warnings"]),
        notes=list(d["notes"]),
        roles=[_role_from_dict(r) for r in d.get("roles") or []],
        scenario=ScenarioInfo.from_dict(d["scenario"]) if d.get("scenario") else None,
        conditions=SamplingConditions.from_dict(d["conditions"]) if d.get("conditions") else None,
        process_spread=ProcessSpread.from_dict(d["process_spread"]) if d.get("process_spread") else None,
    )
