"""Reading the store: plain records (``mmtrack.results``), never ORM objects, and nothing written (the series
cache blobs a read finds due are written by ``store.writes.series_columns_keeping_cache``).

The calls compare, detect, publish and ``mmtrack run`` build on, one module per concern:
``catalog`` (names and series keys), ``run_history`` (runs, commits and their measurements),
``points`` (series as points), ``columns`` (many series as medians), ``run_points`` (every run
of many series, dated) and ``verdicts`` (what analysis stored). Writes live in ``store.writes``
and ``store.ingest``.
"""

from __future__ import annotations

from ..bulk import fetch_sql, gc_paused
from .catalog import (
    BenchmarkInfo,
    EnvironmentInfo,
    MachineInfo,
    SeriesRevision,
    ab_environments,
    list_benchmarks,
    list_environments,
    list_machines,
    hosts_by_machine,
    list_metrics,
    list_series,
    prefer_history,
    series_keys_of,
    series_revisions,
)
from .columns import ColumnsRead, SeriesColumns, read_series_columns, series_columns
from .points import series, series_many, series_newest_many
from .run_history import (
    CaseSetup,
    RunInfo,
    case_setups,
    commits,
    measurements_for_commit,
    measurements_for_run,
    resolve_commit,
    runs,
)
from .run_points import RunColumns, series_run_points
from .verdicts import load_ab_verdicts, load_change_points, load_run_verdicts

__all__ = [
    "BenchmarkInfo", "CaseSetup", "ColumnsRead", "EnvironmentInfo", "MachineInfo", "RunColumns",
    "RunInfo", "SeriesColumns", "SeriesRevision", "ab_environments", "case_setups", "commits", "fetch_sql",
    "gc_paused", "hosts_by_machine", "list_benchmarks", "list_environments", "list_machines", "list_metrics", "list_series",
    "load_ab_verdicts", "load_change_points", "load_run_verdicts", "measurements_for_commit",
    "measurements_for_run", "prefer_history", "read_series_columns", "resolve_commit", "runs", "series",
    "series_columns",
    "series_keys_of", "series_many", "series_newest_many", "series_revisions", "series_run_points",
]  # fmt: skip
