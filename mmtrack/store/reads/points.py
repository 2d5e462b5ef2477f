"""Series as points (``SeriesPoint``), in commit order: one series (``series``, the hot query of detect and
the pages), many at once without samples (``series_many``) and the newest points of many
(``series_newest_many``). The row handling is hand-tuned (docs/design/store.md gives its cost)."""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from sqlalchemy import LargeBinary, String, bindparam, func, literal_column, null, select, type_coerce

from ...results import CommitInfo, Measurement, MetricKey, SeriesKey, SeriesPoint
from ...vocabulary import Direction, MetricFormat
from .. import schema as m
from ..bulk import fetch_sql, gc_paused
from ..db import Store
from ..series_names import DIRECTIONS, FORMATS, named_series


@dataclass(frozen=True, slots=True)
class _SeriesRow:
    """What the points of one series row share (see schema.Series)."""

    version: str | None
    direction: Direction
    format: MetricFormat
    display_name: str | None


def _series_rows(conn: Any, key: SeriesKey) -> dict[int, _SeriesRow]:
    """The series rows of a key: one per benchmark code version (and metric declaration)."""
    s, b, x = m.Series, m.Benchmark, m.Metric
    q = named_series(s.id, b.version, s.direction, s.format, s.display_name).where(
        m.Machine.name == key.machine,
        m.Environment.name == key.environment,
        b.name == key.benchmark,
        b.params == key.params,
        x.section == key.metric.section,
        x.name == key.metric.name,
        x.unit == key.metric.unit,
    )
    return {
        r.id: _SeriesRow(r.version or None, DIRECTIONS[r.direction], FORMATS[r.format], r.display_name or None)
        for r in conn.execute(q)
    }


def _last_of_each_commit(rows: list[Any]) -> list[Any]:
    """Series rows (commit sha first) with the runs of one commit adjacent: the last row of each commit
    (in commit order, its latest run)."""
    return [r for r, nxt in zip(rows, rows[1:] + [None]) if nxt is None or nxt[0] != r[0]]


def _newest_rows(
    conn: Any, series: int, include_dirty: bool, with_samples: bool, per_commit: bool, last: int | None,
    params: dict[str, Any],
) -> list[Any] | None:
    """The rows of ``series(last=...)`` read newest first with a LIMIT, back in commit order, when they
    hold the ``last`` newest points for sure (the whole series came, or that many commits did: the first
    row of a commit newest first is its latest run, the one kept); else None, to read them all. A few
    newest points of a long series then cost a few rows, not the whole series' samples."""
    if last is None or last <= 0:
        return None
    limit = 2 * last + 1  # one run per commit is the common case; a rerun commit takes two rows
    sql = _series_sql(conn.dialect, series, include_dirty, with_samples, newest=True)
    rows = _fetch(conn, sql, {**params, "limit": limit, "offset": 0})  # SQLite's LIMIT comes with an OFFSET
    commits = len(_last_of_each_commit(rows)) if per_commit else len(rows)
    if len(rows) < limit or commits >= last:
        return rows[::-1]
    return None


@functools.lru_cache(maxsize=64)
def _series_sql(dialect: Any, series: int, include_dirty: bool, with_samples: bool, newest: bool = False) -> Any:
    """The series statement, compiled once per dialect and shape: one range of the
    measurement table per series row, then primary-key lookups of result, run and commit.

    Every column of 10,000 rows costs about a millisecond to hand to Python, so the two
    that are constant in the common case come only when they can vary: the series id
    (one series row) and the dirty flag (dirty runs left out).
    """
    x = m.Measurement
    q = (
        select(
            m.Commit.sha,
            _raw(m.Commit.date),
            m.Commit.message,
            _raw(m.Commit.branches),
            m.Run.id,
            func.nullif(m.Result.status, literal_column("'ok'")),  # None for ok: one string less per row
            x.median, x.mean, x.p95, x.min, x.max, x.q1, x.q3, x.ci_low, x.ci_high, x.count,
            type_coerce(x.values, LargeBinary) if with_samples else null(),
            *([x.series_id] if series > 1 else []),
            *([m.Run.dirty] if include_dirty else []),
        )  # fmt: skip
        .select_from(x)
        .join(m.Result, m.Result.id == x.result_id)
        .join(m.Run, m.Run.id == m.Result.run_id)
        .join(m.Commit, m.Commit.id == m.Run.commit_id)
        .where(x.series_id.in_([bindparam(f"s{i}") for i in range(series)]))
    )
    order = (func.coalesce(m.Commit.date, m.Run.started_at), m.Run.started_at, m.Run.id)
    if newest:  # newest first, ``limit`` rows (_newest_rows)
        q = q.order_by(*(c.desc() for c in order)).limit(bindparam("limit")).offset(bindparam("offset"))
    else:
        q = q.order_by(*order)
    if not include_dirty:
        q = q.where(m.Run.dirty.is_(False))
    return q.compile(dialect=dialect)


def _fetch(conn: Any, compiled: Any, params: dict[str, Any]) -> list[Any]:
    """All rows as plain tuples; on SQLite straight from the driver's cursor (SQLAlchemy's
    Row objects cost more than the query itself for 10,000 wide rows)."""
    if conn.dialect.name != "sqlite":
        return conn.execute(compiled.statement, params).all()
    cursor = conn.connection.driver_connection.cursor()
    try:
        cursor.execute(str(compiled), [params[k] for k in compiled.positiontup])
        return cursor.fetchall()
    finally:
        cursor.close()


def _raw(col: Any) -> Any:
    """A column fetched as the driver returns it (no SQLAlchemy result processing)."""
    return type_coerce(col, String)


# Positional construction order of Measurement; a test pins it to dataclasses.fields(Measurement). A series' points
# leave ``method`` unread (None, unknown): only compare's two sides need it (run_history.py reads it).
MEASUREMENT_FIELDS = (
    "benchmark", "params", "metric", "direction", "status", "median", "mean", "p95", "min", "max",
    "q1", "q3", "ci_low", "ci_high", "count", "samples", "version", "format", "display_name", "method",
)  # fmt: skip


def _fast_constructor(cls: type) -> Any:
    """A positional constructor for a frozen slotted dataclass without its generated ``__init__``.

    A frozen ``__init__`` stores each field through ``object.__setattr__``, which for the
    some 30,000 records of a long series costs more than the query. This one fills a plain
    slotted twin with ordinary attribute stores and then relabels it as ``cls``. CPython
    allows that ``__class__`` assignment only between classes of the same slot layout, so
    the twin (made from ``cls.__slots__``) can never yield a half-built record: a drift
    raises TypeError. Only for dataclasses with no ``__post_init__`` or field conversion,
    every field given.
    """
    names = tuple(f.name for f in dataclasses.fields(cls))
    if names != tuple(getattr(cls, "__slots__", ())) or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: not a plain slotted dataclass")
    twin = type(f"_{cls.__name__}Twin", (), {"__slots__": cls.__slots__})
    body = "".join(f"    self.{n} = {n}\n" for n in names)
    src = f"def make({', '.join(names)}):\n    self = _new(_twin)\n{body}    self.__class__ = _cls\n    return self\n"
    ns: dict[str, Any] = {}
    exec(src, {"_new": object.__new__, "_twin": twin, "_cls": cls}, ns)  # noqa: S102 (as dataclasses does)
    make = ns["make"]
    make.__qualname__ = f"_fast_constructor.<{cls.__name__}>"
    return make


_new_measurement = _fast_constructor(Measurement)
_new_commit = _fast_constructor(CommitInfo)
_new_point = _fast_constructor(SeriesPoint)


def series(
    store: Store,
    key: SeriesKey,
    *,
    include_dirty: bool = False,
    with_samples: bool = True,
    per_commit: bool = True,
    last: int | None = None,
) -> list[SeriesPoint]:
    """One series, in commit-date order (then run start): by default one point per commit,
    its latest run (``mmtrack run`` records an asv run and an engine run of the same commit,
    and detection must count commits, not runs); ``per_commit=False`` gives every run.

    ``last`` keeps only the newest points (records are built for those alone).
    Points of every benchmark code version are returned; ``Measurement.version``
    tells where comparability breaks. This is the hot query of detect and the
    pages, hence the hand-tuned row handling (see docs/design/store.md for its cost).
    """
    # No collections while the rows and records are made. The young collection that then
    # examines the new records (~5 ms for 10,000 points) is paid once, when the collector is
    # back on: usually still inside this call (docs/design/store.md counts it in the fetch time).
    with gc_paused():
        with store.read() as conn:
            series_rows = _series_rows(conn, key)
            if not series_rows:
                return []
            params = {f"s{i}": series_id for i, series_id in enumerate(series_rows)}
            rows = _newest_rows(conn, len(series_rows), include_dirty, with_samples, per_commit, last, params)
            if rows is None:
                sql = _series_sql(conn.dialect, len(series_rows), include_dirty, with_samples)
                rows = _fetch(conn, sql, params)
        if per_commit:
            rows = _last_of_each_commit(rows)
        if last is not None:
            rows = rows[-last:] if last > 0 else []
        out: list[SeriesPoint] = []
        _build_points(rows, key, series_rows, include_dirty, out)
        del rows  # freed now, so that the collection after the pause does not examine them
    return out


def series_many(store: Store, keys: Sequence[SeriesKey], *, batch: int = 200) -> dict[SeriesKey, list[SeriesPoint]]:
    """Many series at once, each exactly as ``series(store, key, with_samples=False)`` gives it (one
    point per commit, its latest clean run): what publish reads for the benchmarks it rebuilds.

    The commits come once per run, not once per point (a 1,000-commit history repeats each
    commit's date, message and branches 500 times over 500 series; the points share one
    CommitInfo per run); the measurement rows come without a join to run and commit, ``batch``
    keys per statement, and are put in commit order here.
    """
    out: dict[SeriesKey, list[SeriesPoint]] = {}
    with gc_paused():
        with store.read() as conn:
            rows_of, _ = _series_rows_of(conn, keys)
            runs = _clean_runs(conn)
            rank = {r[0]: i for i, r in enumerate(runs)}
            commit_of = [_commit_of_row(r[1], r[2], r[3], r[4]) for r in runs]
            ordered = [k for k in dict.fromkeys(keys) if k in rows_of]
            for i in range(0, len(ordered), batch):
                part = ordered[i : i + batch]
                ids = sorted(sid for k in part for sid in rows_of[k])
                rows = fetch_sql(conn, (
                    "SELECT x.series_id, r.run_id, CASE WHEN r.status = 'ok' THEN NULL ELSE r.status END,"
                    " x.median, x.mean, x.p95, x.min, x.max, x.q1, x.q3, x.ci_low, x.ci_high, x.count"
                    " FROM measurement x JOIN result r ON r.id = x.result_id"
                    f" WHERE x.series_id IN ({', '.join(str(int(sid)) for sid in ids)})"
                ))  # fmt: skip
                by_row: dict[int, list[Any]] = {}
                for row in rows:
                    if row[1] in rank:  # a clean run
                        by_row.setdefault(row[0], []).append(row)
                del rows
                for key in part:
                    series_rows = rows_of[key]
                    kr = [row for sid in series_rows for row in by_row.get(sid, ())]
                    kr.sort(key=lambda row: rank[row[1]])
                    out[key] = _points_of_rows(kr, key, series_rows, rank, commit_of)
    return out


def _series_rows_of(
    conn: Any, keys: Sequence[SeriesKey]
) -> tuple[dict[SeriesKey, dict[int, _SeriesRow]], dict[SeriesKey, tuple[int, int]]]:
    """The series rows of each of ``keys`` (one per benchmark code version), and its machine and environment ids."""
    s, b = m.Series, m.Benchmark
    named = named_series(
        s.id, s.machine_id, s.environment_id, b.version, s.direction, s.format, s.display_name, b.name, b.params,
        m.Metric.section, m.Metric.name.label("metric_name"), m.Metric.unit, m.Machine.name.label("machine"),
        m.Environment.name.label("env"),
    )  # fmt: skip
    wanted = set(keys)
    rows_of: dict[SeriesKey, dict[int, _SeriesRow]] = {}
    where: dict[SeriesKey, tuple[int, int]] = {}
    for r in conn.execute(named):
        key = SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit))
        if key in wanted:
            rows_of.setdefault(key, {})[r.id] = _SeriesRow(
                r.version or None, DIRECTIONS[r.direction], FORMATS[r.format], r.display_name or None
            )
            where[key] = (r.machine_id, r.environment_id)
    return rows_of, where


def _clean_runs(conn: Any) -> list[Any]:
    """Every clean run in the order of ``series``: (id, sha, commit date, message, branches, the date it
    sorts by, started_at, machine id, environment id)."""
    runs = fetch_sql(conn, (
        'SELECT run.id, "commit".sha, "commit".date, "commit".message, "commit".branches,'
        ' coalesce("commit".date, run.started_at), run.started_at, run.machine_id, run.environment_id'
        ' FROM run JOIN "commit" ON "commit".id = run.commit_id WHERE NOT run.dirty'
    ))  # fmt: skip
    runs.sort(key=lambda r: (r[5], r[6], r[0]))
    return runs


# The newest runs read next per machine and environment, beyond ``last``, for the series that had fewer commits among
# the newest ``last`` (a series skipped by a few runs). A history with two runs of many commits (asv and mmtrack)
# reads ``2 * last`` after that.
NEWEST_SLACK = 8


def series_newest_many(store: Store, keys: Sequence[SeriesKey], last: int) -> dict[SeriesKey, list[SeriesPoint]]:
    """The ``last`` newest points of many series, each exactly as ``series(store, key, last=last)`` gives
    it (samples included): what publish reads for the benchmarks it carries on from their newest points.

    Read from the newest runs only, in the order of ``series``: they end every series of theirs, so a
    series with ``last`` commits among them has its newest points there. The newest ``last`` runs per
    machine and environment first (the nightly case: every series in every run), then ``last + NEWEST_SLACK`` and
    ``2 * last`` for the series that had fewer commits there; one statement for all series each time (results by run, then their measurements), where
    ``series`` sorts each series' whole history. A series measured less often still is read by ``series``."""
    out: dict[SeriesKey, list[SeriesPoint]] = {}
    with gc_paused():
        with store.read() as conn:
            rows_of, where = _series_rows_of(conn, keys)
            newest: dict[tuple[int, int], list[Any]] = {}
            for r in _clean_runs(conn):
                newest.setdefault((r[7], r[8]), []).append(r)
            wanted = [k for k in dict.fromkeys(keys) if k in rows_of]
            for depth in dict.fromkeys((last, last + NEWEST_SLACK, 2 * last)):
                wanted = _newest_in_runs(conn, wanted, rows_of, where, newest, depth, last, out)
                if not wanted:
                    break
    for key in wanted:
        out[key] = series(store, key, last=last)
    return out


def _newest_in_runs(
    conn: Any, keys: list[SeriesKey], rows_of: dict[SeriesKey, dict[int, _SeriesRow]],
    where: dict[SeriesKey, tuple[int, int]], newest: dict[tuple[int, int], list[Any]], depth: int, last: int,
    out: dict[SeriesKey, list[SeriesPoint]],
) -> list[SeriesKey]:
    """Put in ``out`` the ``last`` newest points of each of ``keys`` found among the newest ``depth`` runs of
    its machine and environment (``newest``: their clean runs in the order of ``series``); return the keys
    with fewer commits there, whose newest points may lie further back."""
    complete = {place for place, rs in newest.items() if len(rs) <= depth}
    picked = [r for place in {where[k] for k in keys} for r in newest.get(place, [])[-depth:]]
    run_of = {r[0]: r for r in picked}
    rank = {r[0]: i for i, r in enumerate(sorted(picked, key=lambda r: (r[5], r[6], r[0])))}
    sids = {sid for key in keys for sid in rows_of[key]}
    by_series = _measurements_in_runs(conn, sorted(run_of), sids)
    missing = []
    for key in keys:
        series_rows = rows_of[key]
        kr = sorted((row for sid in series_rows for row in by_series.get(sid, ())), key=lambda row: rank[row[1]])
        # In the shape of _series_sql's rows: the commit, the run, the measurement, then the series id.
        rows = _last_of_each_commit([(*run_of[row[1]][1:5], row[1], *row[2:], row[0]) for row in kr])
        if len(rows) < last and where[key] not in complete:
            missing.append(key)  # fewer commits among the newest runs: older ones may hold its newest points
            continue
        points: list[SeriesPoint] = []
        _build_points(rows[-last:] if last > 0 else [], key, series_rows, False, points)
        out[key] = points
    return missing


def _measurements_in_runs(conn: Any, ids: list[int], sids: set[int]) -> dict[int, list[Any]]:
    """The measurement rows of the series ``sids`` in the runs ``ids``, by series id."""
    by_series: dict[int, list[Any]] = {}
    for i in range(0, len(ids), 500):
        # Results by their run (an index), then each one's measurements by result id (an index): the
        # newest runs' points without touching the older ones.
        for row in fetch_sql(conn, (
            "SELECT x.series_id, r.run_id, CASE WHEN r.status = 'ok' THEN NULL ELSE r.status END,"
            ' x.median, x.mean, x.p95, x.min, x.max, x.q1, x.q3, x.ci_low, x.ci_high, x.count, x."values"'
            " FROM result r JOIN measurement x ON x.result_id = r.id"
            f" WHERE r.run_id IN ({', '.join(str(int(j)) for j in ids[i : i + 500])})"
        )):
            if row[0] in sids:
                by_series.setdefault(row[0], []).append(row)
    return by_series


def _commit_of_row(sha: str, date: Any, message: str | None, branches: Any) -> CommitInfo:
    """A clean commit's record from its row as the driver returns it (see _build_points)."""
    if type(date) is str:  # SQLite: UTC wall time as text
        date = datetime.fromisoformat(date + "+00:00")
    elif date is not None:
        date = m.as_utc(date)
    if type(branches) is str:
        branches = json.loads(branches)
    return _new_commit(sha, date, message, False, tuple(branches or ()))


def _points_of_rows(
    rows: list[Any], key: SeriesKey, series_rows: dict[int, _SeriesRow], rank: dict[int, int],
    commit_of: list[CommitInfo],
) -> list[SeriesPoint]:
    """Points of one key from its measurement rows in commit order, the latest run of each commit."""
    params = json.loads(key.params)
    metric = key.metric
    new_measurement, new_point = _new_measurement, _new_point
    out: list[SeriesPoint] = []
    for j, row in enumerate(rows):
        commit = commit_of[rank[row[1]]]
        if j + 1 < len(rows) and commit_of[rank[rows[j + 1][1]]].sha == commit.sha:
            continue  # a later run of the same commit follows
        sid, run_id, status, median, mean, p95, min_, max_, q1, q3, ci_low, ci_high, count = row
        sr = series_rows[sid]
        measurement = new_measurement(
            key.benchmark, params, metric, sr.direction, status or "ok",
            median, mean, p95, min_, max_, q1, q3, ci_low, ci_high, count,
            (), sr.version, sr.format, sr.display_name, None,
        )  # fmt: skip
        out.append(new_point(commit, run_id, measurement))
    return out


def _build_points(
    rows: list[Any], key: SeriesKey, series_rows: dict[int, _SeriesRow], include_dirty: bool, out: list[SeriesPoint]
) -> None:
    params = json.loads(key.params)
    branch_cache: dict[Any, tuple[str, ...]] = {}
    metric = key.metric
    only = next(iter(series_rows.values())) if len(series_rows) == 1 else None
    width = 17  # the columns every row has; then the series id (several series rows), then dirty
    new_measurement, new_commit, new_point = _new_measurement, _new_commit, _new_point
    unpackers: dict[int, Any] = {}  # one compiled struct per sample count
    for row in rows:
        (
            sha, date, message, branches, run_id, status,
            median, mean, p95, min_, max_, q1, q3, ci_low, ci_high, count, values,
        ) = row if len(row) == width else row[:width]  # fmt: skip
        sr = only or series_rows[row[width]]
        if type(date) is str:  # SQLite: UTC wall time as text
            date = datetime.fromisoformat(date + "+00:00")
        elif date is not None:
            date = m.as_utc(date)
        if type(branches) is str:  # SQLite: JSON text, mostly the same few values
            b = branch_cache.get(branches)
            if b is None:
                b = branch_cache[branches] = tuple(json.loads(branches) or ())
        else:
            b = tuple(branches or ())
        if values:  # packed float64 (schema.PackedFloats); NaN marks a sample without a value
            size = len(values)
            unpack = unpackers.get(size)
            if unpack is None:
                unpack = unpackers[size] = m.float_unpacker(size)
            samples = unpack(values)
            total = sum(samples)
            if total - total != 0:  # NaN (or inf) somewhere: only then look at each sample
                samples = tuple(v for v in samples if v == v)
        else:
            samples = ()
        measurement = new_measurement(
            key.benchmark, params, metric, sr.direction, status or "ok",
            median, mean, p95, min_, max_, q1, q3, ci_low, ci_high, count,
            samples, sr.version, sr.format, sr.display_name, None,
        )  # fmt: skip
        dirty = bool(row[-1]) if include_dirty else False
        out.append(new_point(new_commit(sha, date, message, dirty, b), run_id, measurement))
