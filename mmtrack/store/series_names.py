"""How reads and writes name a series in SQL: the join from series rows to their names, the seven
columns that name one in the change point and verdict tables, and the stored spellings of its
direction and format."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select

from ..results import MetricKey, SeriesKey
from ..vocabulary import Direction, MetricFormat
from . import schema as m

DIRECTIONS = {d.value: d for d in Direction}
FORMATS = {f.value: f for f in MetricFormat}


def named_series(*columns: Any) -> Select[Any]:
    """``columns`` of the series rows joined to their benchmark, metric, machine and environment."""
    s = m.Series
    return (
        select(*columns)
        .select_from(s)
        .join(m.Benchmark, m.Benchmark.id == s.benchmark_id)
        .join(m.Metric, m.Metric.id == s.metric_id)
        .join(m.Machine, m.Machine.id == s.machine_id)
        .join(m.Environment, m.Environment.id == s.environment_id)
    )


def series_name_columns(key: SeriesKey) -> dict[str, str]:
    """The seven columns that name a series in the change point and verdict tables."""
    return {"machine": key.machine, "environment": key.environment, "benchmark": key.benchmark, "params": key.params,
            "section": key.metric.section, "metric": key.metric.name, "unit": key.metric.unit}


def stored_series(r: Any) -> SeriesKey:
    """The series a change point or verdict row names (the inverse of :func:`series_name_columns`)."""
    return SeriesKey(r.machine, r.environment, r.benchmark, r.params, MetricKey(r.section, r.metric, r.unit))
