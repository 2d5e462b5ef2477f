"""The schema's limits, checked before the write: why the store cannot keep a case as it is, the same answer on
SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from ..results import canonical_params
from . import schema as m
from .ingest import EngineCaseRecord, engine_case

# PostgreSQL refuses a value over a column's length, a SMALLINT past 32767 or a NUL character, and
# with it the whole run; SQLite would keep them. Both refuse the case alone, before the write.
MAX_METRICS_PER_CASE = 2**15  # Measurement.position is a SMALLINT


def _text_problem(what: str, value: str, limit: int | None) -> str | None:
    if limit is not None and len(value) > limit:
        return f"{what} is {len(value):,} characters long; the store keeps at most {limit}"
    if "\x00" in value:
        return f"{what} holds a NUL character, which the store cannot keep"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} is not valid Unicode text (a lone surrogate)"
    return None


def _length(column: Any) -> int | None:
    """The most characters the store keeps in ``column`` (a text name in a key: its ``info["limit"]``)."""
    return getattr(column.type, "length", None) or column.info.get("limit")


def identity_problem(case: EngineCaseRecord) -> str | None:
    """Why the store cannot keep even a failed row of this case (its name, params or version), or None."""
    b = m.Benchmark.__table__.c
    checks = [("benchmark name", case.benchmark, _length(b.name)),
              ("code version", case.version or "", _length(b.version)),
              ("parameters", canonical_params(case.params), None)]
    return next(filter(None, (_text_problem(*check) for check in checks)), None)


def case_problem(case: EngineCaseRecord) -> str | None:
    """Why the store cannot keep this case as it is, the same on SQLite and PostgreSQL, or None."""
    problem = identity_problem(case)
    if problem is not None:
        return problem
    measures = engine_case(case).measures
    if len(measures) > MAX_METRICS_PER_CASE:
        return f"it has {len(measures):,} metrics; the store keeps at most {MAX_METRICS_PER_CASE:,} per case"
    metric, series = m.Metric.__table__.c, m.Series.__table__.c
    for x in measures:
        section, name, unit = x.metric
        checks = [("section", section, _length(metric.section)), ("name", name, _length(metric.name)),
                  ("unit", unit, _length(metric.unit)),
                  ("display name", x.display_name or "", _length(series.display_name))]
        problem = next(filter(None, (_text_problem(*check) for check in checks)), None)
        if problem is not None:
            shown = name if len(name) <= 60 else name[:60] + "..."
            return f"metric {shown!r}: {problem}"
    return None
