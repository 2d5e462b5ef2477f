"""Every clean run of many series with its run's date (``series_run_points``): what detect's environment
events read, earlier runs of re-measured commits included."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from ...results import MetricKey, SeriesKey
from .. import schema as m
from ..bulk import fetch_sql
from ..db import Store
from ..series_names import named_series


@dataclass(frozen=True, slots=True)
class RunColumns:
    """Every clean run with a usable median of one series (earlier runs of re-measured commits included):
    its commit, its run's start in days since 1970 (UTC) and its median."""

    shas: list[str]
    days: Any  # float64 array
    values: Any  # float64 array


def _day_sql(conn: Any, column: str) -> str:
    """SQL for a timestamp column as days since 1970 (UTC)."""
    if conn.dialect.name == "sqlite":
        return f"julianday({column}) - 2440587.5"
    return f"EXTRACT(EPOCH FROM {column}) / 86400.0"


def series_run_points(store: Store, keys: Sequence[SeriesKey], columns: Sequence[Any] = ()
                      ) -> tuple[dict[SeriesKey, RunColumns], dict[str, int]]:
    """Every clean run of each of ``keys`` (:class:`RunColumns`), and each commit's position in commit order: by
    commit date, else by its first run (the order ``series`` reads; git history is not consulted).

    ``columns``: those series' usable columns read already (``series_columns``). Where no commit was measured twice
    on one machine and environment, they hold every clean run, and only the runs' dates are read (not the 170,000
    measurements of a nightly update's stepped series); each series' runs then come in commit order, not in the
    order they were stored."""
    wanted = set(keys)
    if columns:
        with store.read() as conn:
            # One code version a series: the runs read otherwise keep only the newest version's series row
            days = _run_days(conn) if all(len(set(c.versions)) <= 1 for c in columns if c.key in wanted) else None
            if days is not None:
                return _from_columns([c for c in columns if c.key in wanted], days), _positions(conn)
    return _read_run_points(store, wanted)


def _run_days(conn: Any) -> dict[tuple[str, str], dict[str, float | None]] | None:
    """Each clean run's day by machine and environment, then commit, or None where a commit has two clean runs on
    one machine and environment (the latest run's columns would miss the earlier one)."""
    rows = fetch_sql(conn, (
        f"SELECT machine.name, environment.name, c.sha, {_day_sql(conn, 'min(run.started_at)')}, count(*) FROM run"
        " JOIN machine ON machine.id = run.machine_id JOIN environment ON environment.id = run.environment_id"
        ' JOIN "commit" c ON c.id = run.commit_id WHERE NOT run.dirty'
        " GROUP BY machine.id, environment.id, c.id"  # the names depend on these keys (PostgreSQL asks)
    ))  # fmt: skip
    if any(r[4] > 1 for r in rows):
        return None
    out: dict[tuple[str, str], dict[str, float | None]] = {}
    for machine, env, sha, day, _ in rows:
        out.setdefault((machine, env), {})[sha] = day
    return out


def _from_columns(columns: Sequence[Any], days: dict[tuple[str, str], dict[str, float | None]]
                  ) -> dict[SeriesKey, RunColumns]:
    """Each series' runs from its usable columns (a result not 'ok' is unusable there too) and the runs' days,
    without a missing day (as read otherwise)."""
    import numpy as np

    out: dict[SeriesKey, RunColumns] = {}
    for c in columns:
        of_commit = days.get((c.key.machine, c.key.environment), {})
        day = np.array(list(map(of_commit.get, c.shas)), dtype=float)  # None: NaN
        median = np.array(c.values, dtype=float)
        keep = np.flatnonzero(np.isfinite(median) & ~np.isnan(day))
        if keep.size:
            out[c.key] = RunColumns([c.shas[i] for i in keep], day[keep], median[keep])
    return out


def _positions(conn: Any) -> dict[str, int]:
    """Each commit's position in commit order: by commit date, else by its first run."""
    committed, started = _day_sql(conn, 'coalesce("commit".date, run.started_at)'), _day_sql(conn, "run.started_at")
    commits = fetch_sql(conn, (
        f'SELECT "commit".sha, min({committed}), min({started})'
        ' FROM run JOIN "commit" ON "commit".id = run.commit_id WHERE NOT run.dirty GROUP BY "commit".sha'
    ))  # fmt: skip
    commits.sort(key=lambda r: (r[1] if r[1] is not None else math.inf, r[2] if r[2] is not None else math.inf, r[0]))
    return {r[0]: i for i, r in enumerate(commits)}


def _read_run_points(store: Store, wanted: set[SeriesKey]) -> tuple[dict[SeriesKey, RunColumns], dict[str, int]]:
    """:func:`series_run_points` from every clean measurement of the ``wanted`` series."""
    s, b, x = m.Series, m.Benchmark, m.Metric
    named = named_series(s.id, b.name, b.params, x.section, x.name.label("metric_name"), x.unit,
                          m.Machine.name.label("machine"), m.Environment.name.label("env"))
    out: dict[SeriesKey, RunColumns] = {}
    with store.read() as conn:
        key_of: dict[int, SeriesKey] = {}
        for r in conn.execute(named):
            k = SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit))
            if k in wanted:
                key_of[r.id] = k
        position = _positions(conn)
        rows: list[Any] = []
        ids = sorted(key_of)
        for i in range(0, len(ids), 500):
            rows += fetch_sql(conn, (
                f"SELECT m.series_id, c.sha, {_day_sql(conn, 'run.started_at')}, m.median FROM measurement m"
                " JOIN result r ON r.id = m.result_id JOIN run ON run.id = r.run_id"
                ' JOIN "commit" c ON c.id = run.commit_id'
                f" WHERE NOT run.dirty AND r.status = 'ok' AND m.median IS NOT NULL"
                f" AND m.series_id IN ({', '.join(str(int(j)) for j in ids[i:i + 500])})"
            ))  # fmt: skip
    for sid, group in _grouped(rows).items():
        out[key_of[sid]] = group
    return out, position


def _grouped(rows: Sequence[Any]) -> dict[int, RunColumns]:
    """``(series id, sha, day, median)`` rows as each series' :class:`RunColumns`, in the rows' order, without a
    missing day or median: columns in numpy, since a Python loop over the 170,000 rows of a nightly update cost
    half a second."""
    import numpy as np

    if not rows:
        return {}
    sids, shas, days, medians = zip(*rows)
    day, median = np.array(days, dtype=float), np.array(medians, dtype=float)  # None: NaN
    keep = np.flatnonzero(np.isfinite(median) & ~np.isnan(day))
    sid = np.array(sids, dtype=np.int64)[keep]
    order = keep[np.argsort(sid, kind="stable")]  # by series, each in the rows' order
    ids, first, counts = np.unique(sid, return_index=True, return_counts=True)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    sha = np.array(shas, dtype=object)
    out: dict[int, RunColumns] = {}
    for g in np.argsort(first, kind="stable"):  # series in the order their first row came
        at = order[bounds[g]:bounds[g + 1]]
        out[int(ids[g])] = RunColumns(sha[at].tolist(), day[at], median[at])
    return out
