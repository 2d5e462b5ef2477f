"""Reading the store: plain records (``mmtrack.results``), never ORM objects.

These are the calls compare, detect, publish and ``mmtrack run`` build on.
Runs on a dirty tree are left out unless asked for (``include_dirty=True``):
they never silently pose as their commit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence, TypeVar

from sqlalchemy import (
    LargeBinary,
    Select,
    String,
    and_,
    bindparam,
    delete,
    func,
    literal_column,
    null,
    or_,
    select,
    type_coerce,
)

from ..errors import UserError
from ..measure.metrics import Direction, MetricFormat
from ..results import ChangePoint, CommitInfo, Measurement, MetricKey, RunVerdict, SeriesKey, SeriesPoint
from . import models as m
from .db import Store

T = TypeVar("T")

# -- records the store adds (what results.py has no record for) ----------------------------------


@dataclass(frozen=True, slots=True)
class MachineInfo:
    name: str
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EnvironmentInfo:
    name: str
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BenchmarkInfo:
    """One benchmark case (name + params) with every code version and unit seen."""

    name: str
    params: Mapping[str, str]
    params_key: str
    type: str
    unit: str
    versions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RunInfo:
    id: int
    started_at: datetime
    machine: str
    environment: str
    commit: CommitInfo
    kind: str
    suite: str
    host: str
    tool_versions: Mapping[str, Any]
    results: int  # result rows (benchmark cases) in the run


# -- dimensions ----------------------------------------------------------------------------------


def list_machines(store: Store) -> list[MachineInfo]:
    with store.read() as conn:
        rows = conn.execute(select(m.Machine.name, m.Machine.info).order_by(m.Machine.name)).all()
    return [MachineInfo(r.name, r.info or {}) for r in rows]


def list_environments(store: Store, machine: str | None = None) -> list[EnvironmentInfo]:
    q = select(m.Environment.name, m.Environment.info).order_by(m.Environment.name)
    if machine is not None:
        q = q.where(
            m.Environment.id.in_(
                select(m.Run.environment_id).join(m.Machine, m.Machine.id == m.Run.machine_id).where(m.Machine.name == machine)
            )
        )
    with store.read() as conn:
        rows = conn.execute(q).all()
    return [EnvironmentInfo(r.name, r.info or {}) for r in rows]


def ab_environments(store: Store) -> set[str]:
    """Environments that hold same-machine A/B runs only (``continuous``, ``run --confirm``, ``bisect``), when
    others hold per-commit history: the series that commands read unless an environment is named."""
    per_env = (
        select(m.Environment.name, func.min(m.Run.kind).label("lo"), func.max(m.Run.kind).label("hi"))
        .join(m.Run, m.Run.environment_id == m.Environment.id)
        .group_by(m.Environment.name)
    )
    with store.read() as conn:
        rows = conn.execute(per_env).all()
    ab_only = {r.name for r in rows if r.lo == r.hi == m.AB_RUN_KIND}
    return ab_only if len(ab_only) < len(rows) else set()


def prefer_history(items: Sequence[T], ab: set[str], env_of: Callable[[T], str]) -> list[T]:
    """``items`` (runs) outside the A/B environments ``ab``, or all of them when every one is inside."""
    history = [x for x in items if env_of(x) not in ab]
    return history or list(items)


def list_benchmarks(store: Store, pattern: str | None = None) -> list[BenchmarkInfo]:
    """Every benchmark case; ``pattern`` is a regular expression searched in the name."""
    with store.read() as conn:
        rows = conn.execute(
            select(m.Benchmark.name, m.Benchmark.params, m.Benchmark.version, m.Benchmark.unit, m.Benchmark.type).order_by(
                m.Benchmark.name, m.Benchmark.params, m.Benchmark.id
            )
        ).all()
    import re

    rx = re.compile(pattern) if pattern else None
    grouped: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        if rx is None or rx.search(r.name):
            grouped.setdefault((r.name, r.params), []).append(r)
    return [
        BenchmarkInfo(
            name=name,
            params=json.loads(params),
            params_key=params,
            type=rs[-1].type,
            unit=rs[-1].unit,
            versions=tuple(dict.fromkeys(r.version for r in rs if r.version)),
        )
        for (name, params), rs in grouped.items()
    ]


def list_metrics(store: Store, benchmark: str | None = None, params: str | None = None) -> list[MetricKey]:
    """Metric keys in the store, or those recorded for one benchmark (and params key)."""
    q = select(m.Metric.section, m.Metric.name, m.Metric.unit).order_by(m.Metric.section, m.Metric.name, m.Metric.unit)
    if benchmark is not None:
        sub = (
            select(m.Series.metric_id)
            .join(m.Benchmark, m.Benchmark.id == m.Series.benchmark_id)
            .where(m.Benchmark.name == benchmark)
        )
        if params is not None:
            sub = sub.where(m.Benchmark.params == params)
        q = q.where(m.Metric.id.in_(sub))
    with store.read() as conn:
        return [MetricKey(*r) for r in conn.execute(q).all()]


def _named_series(*columns: Any) -> Select[Any]:
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


def list_series(
    store: Store, *, machine: str | None = None, environment: str | None = None, benchmark: str | None = None
) -> list[SeriesKey]:
    """Every series recorded, each key once (whatever its code versions), ordered by benchmark,
    params, metric, machine and environment; ``benchmark`` is a regular expression searched
    in the name. Only combinations that were measured: no machine x benchmark cross product.
    Without ``environment``, the A/B environments (:func:`ab_environments`) are left out."""
    import re

    q = _named_series(
        m.Benchmark.name, m.Benchmark.params, m.Metric.section, m.Metric.name.label("metric_name"), m.Metric.unit,
        m.Machine.name.label("machine"), m.Environment.name.label("env"),
    ).distinct()  # fmt: skip
    if machine is not None:
        q = q.where(m.Machine.name == machine)
    if environment is not None:
        q = q.where(m.Environment.name == environment)
    else:
        q = q.where(m.Environment.name.not_in(ab_environments(store)))
    rx = re.compile(benchmark) if benchmark else None
    with store.read() as conn:
        rows = sorted(conn.execute(q).all())
    return [
        SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit))
        for r in rows
        if rx is None or rx.search(r.name)
    ]


class SeriesRevision(NamedTuple):
    """What a series key stands at in the store: its rows (one per code version and declaration),
    the sums of their change and append counters (models.Series.changes, .appends), their ids."""

    rows: int
    changes: int
    appends: int
    ids: tuple[int, ...]


def series_revisions(store: Store) -> dict[SeriesKey, SeriesRevision]:
    """Per series key, its :class:`SeriesRevision`. The counters only grow, so a key whose rows and
    changes are unchanged has the same points: publish rereads only the others; and one whose changes
    moved by as many as its appends only gained newer points."""
    s = m.Series
    q = _named_series(
        s.id, s.changes, s.appends, m.Benchmark.name, m.Benchmark.params, m.Metric.section,
        m.Metric.name.label("metric_name"), m.Metric.unit, m.Machine.name.label("machine"),
        m.Environment.name.label("env"),
    )  # fmt: skip
    out: dict[SeriesKey, SeriesRevision] = {}
    with store.read() as conn:
        for r in conn.execute(q):
            key = SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit))
            n, changes, appends, ids = out.get(key, (0, 0, 0, ()))
            out[key] = SeriesRevision(n + 1, changes + r.changes, appends + r.appends, (*ids, r.id))
    return out


def series_keys_of(store: Store, ids: Iterable[int]) -> list[SeriesKey]:
    """The keys of these store series ids (e.g. the ones an import touched), each once, sorted."""
    s = m.Series
    wanted = sorted(set(ids))
    keys: set[SeriesKey] = set()
    with store.read() as conn:
        for i in range(0, len(wanted), 500):
            q = _named_series(
                m.Benchmark.name, m.Benchmark.params, m.Metric.section, m.Metric.name.label("metric_name"),
                m.Metric.unit, m.Machine.name.label("machine"), m.Environment.name.label("env"),
            ).where(s.id.in_(wanted[i : i + 500]))  # fmt: skip
            for r in conn.execute(q):
                keys.add(SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit)))
    return sorted(keys, key=lambda k: (k.benchmark, k.params, str(k.metric), k.machine, k.environment))


# -- commits -------------------------------------------------------------------------------------


def _commit(sha: str, date: datetime | None, message: str | None, branches: Any, dirty: bool = False) -> CommitInfo:
    return CommitInfo(sha=sha, date=m.as_utc(date), message=message, dirty=bool(dirty), branches=tuple(branches or ()))


def resolve_commit(store: Store, prefix: str) -> CommitInfo:
    """The stored commit whose sha starts with ``prefix``; a UserError if none or several."""
    p = prefix.strip().lower()
    if not p or any(ch not in "0123456789abcdef" for ch in p):
        raise UserError(f"{prefix!r} is not a commit sha (give a hex prefix of a commit in the store)")
    with store.read() as conn:
        rows = conn.execute(
            select(m.Commit.sha, m.Commit.date, m.Commit.message, m.Commit.branches)
            .where(m.Commit.sha.like(p + "%"))
            .limit(6)
        ).all()
    if not rows:
        raise UserError(f"commit {prefix!r} is not in the store; check the sha, or measure or import it first")
    if len(rows) > 1:
        shown = ", ".join(r.sha for r in rows[:3])
        raise UserError(f"commit prefix {prefix!r} is ambiguous ({shown}{', ...' if len(rows) > 3 else ''}); give more characters")
    return _commit(*rows[0])


# -- measurements --------------------------------------------------------------------------------

_MEASURE_COLS = (
    m.Benchmark.name,
    m.Benchmark.params,
    m.Benchmark.version,
    m.Metric.section,
    m.Metric.name.label("metric_name"),
    m.Metric.unit,
    m.Series.direction,
    m.Result.status,
    m.Measurement.median,
    m.Measurement.mean,
    m.Measurement.p95,
    m.Measurement.min,
    m.Measurement.max,
    m.Measurement.q1,
    m.Measurement.q3,
    m.Measurement.ci_low,
    m.Measurement.ci_high,
    m.Measurement.count,
    m.Measurement.values,
    m.Series.format,
    m.Series.display_name,
)

_DIRECTIONS = {d.value: d for d in Direction}
_FORMATS = {f.value: f for f in MetricFormat}


class _Builder:
    """Builds Measurements from rows, parsing each params key and metric once."""

    def __init__(self) -> None:
        self.params: dict[str, Mapping[str, str]] = {}
        self.metrics: dict[tuple[str, str, str], MetricKey] = {}

    def __call__(self, r: Any) -> Measurement:
        params = self.params.get(r.params)
        if params is None:
            params = self.params[r.params] = json.loads(r.params)
        mk = (r.section, r.metric_name, r.unit)
        metric = self.metrics.get(mk)
        if metric is None:
            metric = self.metrics[mk] = MetricKey(*mk)
        values = r.values
        return Measurement(
            benchmark=r.name,
            params=params,
            metric=metric,
            direction=_DIRECTIONS[r.direction],
            status=r.status,
            median=r.median,
            mean=r.mean,
            p95=r.p95,
            min=r.min,
            max=r.max,
            q1=r.q1,
            q3=r.q3,
            ci_low=r.ci_low,
            ci_high=r.ci_high,
            count=r.count,
            samples=tuple(v for v in values if v is not None) if values else (),
            version=r.version or None,
            format=_FORMATS[r.format],
            display_name=r.display_name or None,
        )


def _measure_query() -> Select[Any]:
    return (
        select(*_MEASURE_COLS)
        .select_from(m.Measurement)
        .join(m.Result, m.Result.id == m.Measurement.result_id)
        .join(m.Benchmark, m.Benchmark.id == m.Result.benchmark_id)
        .join(m.Series, m.Series.id == m.Measurement.series_id)
        .join(m.Metric, m.Metric.id == m.Series.metric_id)
    )


def measurements_for_run(store: Store, run_id: int) -> list[Measurement]:
    """Every metric of every case of one run, ordered by benchmark, params, metric."""
    q = (
        _measure_query()
        .where(m.Result.run_id == run_id)
        .order_by(m.Benchmark.name, m.Benchmark.params, m.Measurement.position)
    )
    build = _Builder()
    with store.read() as conn:
        return [build(r) for r in conn.execute(q)]


def measurements_for_commit(
    store: Store,
    sha: str,
    machine: str | None = None,
    env: str | None = None,
    *,
    include_dirty: bool = False,
) -> list[Measurement]:
    """Every metric of every case measured on a commit (a full sha or a unique prefix).

    When several runs measured the same case, the latest run's value is kept.
    Without ``machine``/``env`` the commit must have been measured on one
    machine and environment only (a UserError says which to choose otherwise);
    without ``env``, a commit's per-commit history is read before its A/B runs (:func:`prefer_history`).
    """
    commit = resolve_commit(store, sha) if len(sha) < 40 else None
    full = commit.sha if commit else sha.lower()
    runs_q = (
        select(m.Run.id, m.Machine.name.label("machine"), m.Environment.name.label("env"))
        .join(m.Commit, m.Commit.id == m.Run.commit_id)
        .join(m.Machine, m.Machine.id == m.Run.machine_id)
        .join(m.Environment, m.Environment.id == m.Run.environment_id)
        .where(m.Commit.sha == full)
        .order_by(m.Run.started_at.desc(), m.Run.id.desc())
    )
    if machine is not None:
        runs_q = runs_q.where(m.Machine.name == machine)
    if env is not None:
        runs_q = runs_q.where(m.Environment.name == env)
    if not include_dirty:
        runs_q = runs_q.where(m.Run.dirty.is_(False))
    ab = ab_environments(store) if env is None else set()
    build = _Builder()
    with store.read() as conn:
        runs = prefer_history(conn.execute(runs_q).all(), ab, lambda r: r.env)
        for what, attr, given in (("machines", "machine", machine), ("environments", "env", env)):
            names = sorted({getattr(r, attr) for r in runs})
            if given is None and len(names) > 1:
                flag = "--machine" if attr == "machine" else "--env"
                raise UserError(
                    f"commit {full[:12]} was measured on several {what} ({', '.join(names)}); choose one with {flag}"
                )
        order = {r.id: i for i, r in enumerate(runs)}  # latest first
        if not order:
            return []
        rows = conn.execute(
            _measure_query().add_columns(m.Result.run_id).where(m.Result.run_id.in_(list(order)))
        ).all()
    best: dict[tuple[str, str, str, str, str], Any] = {}
    for r in rows:
        k = (r.name, r.params, r.section, r.metric_name, r.unit)
        if k not in best or order[r.run_id] < order[best[k].run_id]:
            best[k] = r
    return [build(best[k]) for k in sorted(best)]


@dataclass(frozen=True, slots=True)
class _SeriesRow:
    """What the points of one series row share (see models.Series)."""

    version: str | None
    direction: Direction
    format: MetricFormat
    display_name: str | None


def _series_rows(conn: Any, key: SeriesKey) -> dict[int, _SeriesRow]:
    """The series rows of a key: one per benchmark code version (and metric declaration)."""
    s, b, x = m.Series, m.Benchmark, m.Metric
    q = _named_series(s.id, b.version, s.direction, s.format, s.display_name).where(
        m.Machine.name == key.machine,
        m.Environment.name == key.environment,
        b.name == key.benchmark,
        b.params == key.params,
        x.section == key.metric.section,
        x.name == key.metric.name,
        x.unit == key.metric.unit,
    )
    return {
        r.id: _SeriesRow(r.version or None, _DIRECTIONS[r.direction], _FORMATS[r.format], r.display_name or None)
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


# Positional construction order of Measurement; a test pins it to dataclasses.fields(Measurement).
MEASUREMENT_FIELDS = (
    "benchmark", "params", "metric", "direction", "status", "median", "mean", "p95", "min", "max",
    "q1", "q3", "ci_low", "ci_high", "count", "samples", "version", "format", "display_name",
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
    named = _named_series(
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
                r.version or None, _DIRECTIONS[r.direction], _FORMATS[r.format], r.display_name or None
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


# The newest runs read first per machine and environment, beyond ``last``: a series skipped by a few runs still
# finds its points there. A history with two runs of many commits (asv and mmtrack) reads ``2 * last`` next.
NEWEST_SLACK = 8


def series_newest_many(store: Store, keys: Sequence[SeriesKey], last: int) -> dict[SeriesKey, list[SeriesPoint]]:
    """The ``last`` newest points of many series, each exactly as ``series(store, key, last=last)`` gives
    it (samples included): what publish reads for the benchmarks it carries on from their newest points.

    Read from the newest runs only, in the order of ``series``: they end every series of theirs, so a
    series with ``last`` commits among them has its newest points there. The newest ``last + NEWEST_SLACK``
    runs per machine and environment first, then ``2 * last`` for the series that had fewer commits
    there; one statement for all series each time (results by run, then their measurements), where
    ``series`` sorts each series' whole history. A series measured less often still is read by ``series``."""
    out: dict[SeriesKey, list[SeriesPoint]] = {}
    with gc_paused():
        with store.read() as conn:
            rows_of, where = _series_rows_of(conn, keys)
            newest: dict[tuple[int, int], list[Any]] = {}
            for r in _clean_runs(conn):
                newest.setdefault((r[7], r[8]), []).append(r)
            wanted = [k for k in dict.fromkeys(keys) if k in rows_of]
            for depth in (last + NEWEST_SLACK, 2 * last):
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
    by_series: dict[int, list[Any]] = {}
    ids = sorted(run_of)
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
            (), sr.version, sr.format, sr.display_name,
        )  # fmt: skip
        out.append(new_point(commit, run_id, measurement))
    return out


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while records are built in bulk: tens of thousands of
    new objects would trigger collections that traverse the whole (growing) heap for nothing,
    since rows and records cannot form cycles. Nests; restores the previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
        if values:  # packed float64 (models.PackedFloats); NaN marks a sample without a value
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
            samples, sr.version, sr.format, sr.display_name,
        )  # fmt: skip
        dirty = bool(row[-1]) if include_dirty else False
        out.append(new_point(new_commit(sha, date, message, dirty, b), run_id, measurement))


# -- runs ----------------------------------------------------------------------------------------


def runs(
    store: Store,
    *,
    machine: str | None = None,
    environment: str | None = None,
    commit: str | None = None,
    kind: str | None = None,
    run_id: int | None = None,
    limit: int | None = None,
) -> list[RunInfo]:
    """Runs, latest first; ``commit`` is a sha prefix, ``run_id`` picks one run."""
    counts = select(m.Result.run_id, func.count().label("n")).group_by(m.Result.run_id).subquery()
    q = (
        select(
            m.Run.id,
            m.Run.started_at,
            m.Machine.name.label("machine"),
            m.Environment.name.label("env"),
            m.Commit.sha,
            m.Commit.date,
            m.Commit.message,
            m.Commit.branches,
            m.Run.dirty,
            m.Run.kind,
            m.Run.suite,
            m.Run.host,
            m.Run.tool_versions,
            func.coalesce(counts.c.n, 0).label("n"),
        )
        .join(m.Machine, m.Machine.id == m.Run.machine_id)
        .join(m.Environment, m.Environment.id == m.Run.environment_id)
        .join(m.Commit, m.Commit.id == m.Run.commit_id)
        .outerjoin(counts, counts.c.run_id == m.Run.id)
        .order_by(m.Run.started_at.desc(), m.Run.id.desc())
    )
    if machine is not None:
        q = q.where(m.Machine.name == machine)
    if environment is not None:
        q = q.where(m.Environment.name == environment)
    if commit is not None:
        q = q.where(m.Commit.sha.like(commit.strip().lower() + "%"))
    if kind is not None:
        q = q.where(m.Run.kind == kind)
    if run_id is not None:
        q = q.where(m.Run.id == run_id)
    if limit is not None:
        q = q.limit(limit)
    with store.read() as conn:
        rows = conn.execute(q).all()
    return [
        RunInfo(
            id=r.id,
            started_at=m.as_utc(r.started_at),  # type: ignore[arg-type]
            machine=r.machine,
            environment=r.env,
            commit=_commit(r.sha, r.date, r.message, r.branches, r.dirty),
            kind=r.kind,
            suite=r.suite,
            host=r.host,
            tool_versions=r.tool_versions or {},
            results=r.n,
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True)
class CaseSetup:
    """How one benchmark case of a run was measured (engine runs; None setup for asv)."""

    benchmark: str
    params: str  # canonical
    status: str
    version: str
    setup: Mapping[str, Any] | None


def case_setups(store: Store, run_id: int) -> list[CaseSetup]:
    """Every case of one run with its code version and measurement setup."""
    q = (
        select(m.Benchmark.name, m.Benchmark.params, m.Result.status, m.Benchmark.version, m.Result.setup)
        .join(m.Benchmark, m.Benchmark.id == m.Result.benchmark_id)
        .where(m.Result.run_id == run_id)
        .order_by(m.Benchmark.name, m.Benchmark.params)
    )
    with store.read() as conn:
        return [CaseSetup(r.name, r.params, r.status, r.version, r.setup) for r in conn.execute(q)]


def commits(store: Store, machine: str | None = None, environment: str | None = None) -> list[CommitInfo]:
    """Commits with at least one clean run, in commit-date order."""
    q = (
        select(m.Commit.sha, m.Commit.date, m.Commit.message, m.Commit.branches)
        .where(
            m.Commit.id.in_(
                select(m.Run.commit_id)
                .join(m.Machine, m.Machine.id == m.Run.machine_id)
                .join(m.Environment, m.Environment.id == m.Run.environment_id)
                .where(
                    m.Run.dirty.is_(False),
                    *([m.Machine.name == machine] if machine else []),
                    *([m.Environment.name == environment] if environment else []),
                )
            )
        )
        .order_by(m.Commit.date, m.Commit.sha)
    )
    with store.read() as conn:
        return [_commit(*r) for r in conn.execute(q).all()]


# -- change points -------------------------------------------------------------------------------


def _series_where(keys: Iterable[SeriesKey]) -> Any:
    t = m.ChangePointRow
    return or_(
        *(
            and_(
                t.machine == k.machine,
                t.environment == k.environment,
                t.benchmark == k.benchmark,
                t.params == k.params,
                t.section == k.metric.section,
                t.metric == k.metric.name,
                t.unit == k.metric.unit,
            )
            for k in keys
        )
    )


def _series_columns(key: SeriesKey) -> dict[str, str]:
    """The seven columns that name a series in the change point and verdict tables."""
    return {"machine": key.machine, "environment": key.environment, "benchmark": key.benchmark, "params": key.params,
            "section": key.metric.section, "metric": key.metric.name, "unit": key.metric.unit}


def _stored_series(r: Any) -> SeriesKey:
    """The series a change point or verdict row names (the inverse of :func:`_series_columns`)."""
    return SeriesKey(r.machine, r.environment, r.benchmark, r.params, MetricKey(r.section, r.metric, r.unit))


def save_change_points(
    store: Store, points: Sequence[ChangePoint], *, replace: Iterable[SeriesKey] | None = None
) -> int:
    """Store change points, first deleting those stored for the series in ``replace``
    (default: the series of ``points``), so that re-running detect does not pile up
    duplicates. Returns the number stored."""
    scope = list(dict.fromkeys(replace if replace is not None else (p.series for p in points)))
    now = datetime.now(timezone.utc)
    rows = [
        {
            **_series_columns(p.series),
            "direction": Direction(p.direction).value,
            "kind": p.kind,
            "before_sha": p.before_sha,
            "after_sha": p.after_sha,
            "before_value": p.before_value,
            "after_value": p.after_value,
            "ratio": p.ratio,
            "p_value": p.p_value,
            "persists": p.persists,
            "method": p.method,
            "extra": dict(p.extra),
            "detected_at": now,
        }
        for p in points
    ]
    t = m.ChangePointRow
    with store.write() as conn:
        if scope:
            # The rows of the scope's series by id: an OR of one seven-column match per series costs more to
            # build and to plan than reading the names of every change point on the scope's machines.
            named = {tuple(_series_columns(k).values()) for k in scope}
            cols = (t.machine, t.environment, t.benchmark, t.params, t.section, t.metric, t.unit)
            found = conn.execute(select(t.id, *cols).where(t.machine.in_(sorted({k.machine for k in scope}))))
            ids = [r[0] for r in found if tuple(r[1:]) in named]
            for i in range(0, len(ids), 500):
                conn.execute(delete(t).where(t.id.in_(ids[i : i + 500])))
        if rows:
            conn.execute(m.ChangePointRow.__table__.insert(), rows)
    return len(rows)


def load_change_points(
    store: Store,
    *,
    machine: str | None = None,
    environment: str | None = None,
    benchmark: str | None = None,
    series: SeriesKey | None = None,
) -> list[ChangePoint]:
    t = m.ChangePointRow
    q = select(t).order_by(t.machine, t.environment, t.benchmark, t.params, t.section, t.metric, t.unit, t.id)
    if machine is not None:
        q = q.where(t.machine == machine)
    if environment is not None:
        q = q.where(t.environment == environment)
    if benchmark is not None:
        q = q.where(t.benchmark == benchmark)
    if series is not None:
        q = q.where(_series_where([series]))
    with store.read() as conn:
        rows = conn.execute(q).all()
    return [
        ChangePoint(
            series=_stored_series(r),
            direction=_DIRECTIONS[r.direction],
            kind=r.kind,
            before_sha=r.before_sha,
            after_sha=r.after_sha,
            before_value=r.before_value,
            after_value=r.after_value,
            ratio=r.ratio,
            p_value=r.p_value,
            persists=r.persists,
            method=r.method,
            extra=r.extra or {},
        )
        for r in rows
    ]


# -- many series as plain columns (detect's bulk read) --------------------------------------------


@dataclass(frozen=True, slots=True)
class SeriesColumns:
    """One series as plain columns of its usable points (ok, finite median), one per commit (its
    latest run), in commit order: what change-point detection reads, without a record per point."""

    key: SeriesKey
    direction: Direction
    shas: list[str]
    values: list[float]  # with ``usable_only=False``, None where the point failed or has no median
    versions: list[str | None]

    def usable(self) -> SeriesColumns:
        """Without the points that have no usable median (None): what ``usable_only=True`` reads."""
        if None not in self.values:
            return self
        keep = [i for i, v in enumerate(self.values) if v is not None]
        return dataclasses.replace(self, shas=[self.shas[i] for i in keep], values=[self.values[i] for i in keep],
                                   versions=[self.versions[i] for i in keep])


def series_columns(
    store: Store, keys: Sequence[SeriesKey], *, keep_cache: bool = False, usable_only: bool = True
) -> list[SeriesColumns]:
    """The medians of many series, in the order of ``keys`` (those with no usable point come back
    empty). Per key the same points as ``series(..., with_samples=False)`` keeps with an ``ok``
    status: dirty runs left out, the latest run of each commit. ``usable_only=False``: every point
    ``series`` gives, with None for the median of one that failed or has none (the pages' verdicts
    count them in the history window, as ``compare`` does).

    Detect's bulk read (500 series x 1,000 commits = 500,000 points), so it reads only what
    detection needs and joins in numpy, not in SQL. Each series row comes from the first source
    that holds it:

    * its ``series_cache`` blob, when the series' counters still match the blob's;
    * that blob plus the rows of the runs after it, when the series only gained newer points
      since (the new commits of ``mmtrack update``; the blob is rewritten once ``CACHE_TAIL`` of
      them have piled up);
    * the measurement table: for a few series, ranges of its clustered key joined in SQL; for
      many, one scan in stored order as two numbers a row (series and result id packed in one
      integer, the median), with which run each result belongs to read as id ranges (an import
      writes a run's results with consecutive ids; one range per result where they are not).
      Handing a column to Python costs more than SQLite's scan, so no column comes that numpy
      can derive.

    With ``keep_cache`` (the caller holds a writable store) the series rows not read from a
    current blob get one, labelled with the counters read before their rows (a write that lands in
    between moves the counters past the label, so the blob is never taken for newer than it is).
    """
    wanted = {k: i for i, k in enumerate(keys)}
    with gc_paused(), store.read() as conn:
        info, counters, direction_of = _wanted_series(conn, wanted)
        if not info:
            return [SeriesColumns(k, Direction.LOWER, [], [], []) for k in keys]
        runs = _clean_runs_by_date(conn)
        cached, since, read = _stored_columns(conn, info, counters)
    if keep_cache and read and getattr(store, "writable", True):
        _refresh_cache(store, read, counters, since)
    read.update(cached)
    series_id, run_id, median = _concatenated(read)
    rank, commit_of_rank, sha_of_rank = _commit_ranks(runs, run_id)
    kidx, rank, median, series_id = _latest_of_each_commit(info, series_id, rank, median, commit_of_rank, usable_only)
    return _split_by_key(keys, info, direction_of, kidx, rank, median, series_id, sha_of_rank, usable_only)


def _wanted_series(
    conn: Any, wanted: Mapping[SeriesKey, int]
) -> tuple[dict[int, tuple[int, str | None]], dict[int, tuple[int, int]], dict[int, Direction]]:
    """The series rows of the ``wanted`` keys (key -> index): per series row id, (index in keys, code version) and
    (changes, appends) as read first; per key index, its direction."""
    s, b, x = m.Series, m.Benchmark, m.Metric
    named = _named_series(
        s.id, s.changes, s.appends, b.version, s.direction, b.name, b.params, x.section,
        x.name.label("metric_name"), x.unit, m.Machine.name.label("machine"), m.Environment.name.label("env"),
    )  # fmt: skip
    info: dict[int, tuple[int, str | None]] = {}  # series row id -> (index in keys, code version)
    counters: dict[int, tuple[int, int]] = {}  # series row id -> (changes, appends) as read first
    direction_of: dict[int, Direction] = {}
    for r in conn.execute(named):
        i = wanted.get(SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit)))
        if i is not None:
            info[r.id] = (i, r.version or None)
            counters[r.id] = (r.changes, r.appends)
            direction_of[i] = _DIRECTIONS[r.direction]
    return info, counters, direction_of


def _clean_runs_by_date(conn: Any) -> list[Any]:
    """Every clean run as (id, commit id, sha, commit date else run start, run start), unordered."""
    return fetch_sql(conn, (
        'SELECT run.id, run.commit_id, "commit".sha, coalesce("commit".date, run.started_at), run.started_at'
        ' FROM run JOIN "commit" ON "commit".id = run.commit_id WHERE NOT run.dirty'
    ))  # fmt: skip


def _stored_columns(
    conn: Any, info: Mapping[int, Any], counters: dict[int, tuple[int, int]]
) -> tuple[dict[int, Columns], dict[int, tuple[int, Columns]], dict[int, Columns]]:
    """Each series row's columns from the first source that holds it (see :func:`series_columns`): (current blobs,
    blobs a few runs behind, the rows read from the measurement table, with those blobs' newer runs added)."""
    # A few series (`mmtrack update` after a commit that touched one benchmark): read by their ids, not by
    # scanning whole tables
    total = conn.execute(select(func.count()).select_from(m.Series)).scalar_one()
    cached, since = _cached_columns(conn, counters, few=len(counters) * 4 < total)
    whole = [sid for sid in info if sid not in cached and sid not in since]
    read = _measurement_columns(conn, whole, few=len(whole) * 4 < total) if whole else {}
    if since:
        read.update(_columns_after(conn, since))
    return cached, since, read


def _refresh_cache(store: Store, read: Mapping[int, Columns], counters: Mapping[int, tuple[int, int]],
                   since: Mapping[int, tuple[int, Columns]]) -> None:
    """Rewrite the blobs of the series read from the table, and of those whose blob is ``CACHE_TAIL`` runs behind."""
    # A blob a few runs behind is still read in one step with the runs after it: rewriting all of them after
    # every commit wrote 16 bytes a point of every series (8 MB at 500 x 1,000) for one point each.
    stale = {sid: (counters[sid], cols) for sid, cols in read.items()
             if sid not in since or cols[0].size - since[sid][1][0].size >= CACHE_TAIL}  # fmt: skip
    if stale:
        _keep_cached_columns(store, stale)


def _concatenated(read: Mapping[int, Columns]) -> tuple[Any, Any, Any]:
    """The columns of every series row as three flat arrays: series row id, run id, median."""
    import numpy as np

    parts = [(np.full(run.size, sid, dtype=np.int64), run, med) for sid, (run, med) in read.items()]
    series_id = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    run_id = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    median = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, dtype=np.float64)
    return series_id, run_id, median


def _commit_ranks(runs: list[Any], run_id: Any) -> tuple[Any, Any, list[str]]:
    """Each value's rank in commit order (-1: a dirty or unknown run), the commit id and sha of each rank. The order
    is `series`': commit date (else run start), run start, run id."""
    import numpy as np

    runs.sort(key=lambda r: (r[3], r[4], r[0]))
    rank_of_run = np.full(max([r[0] for r in runs] + [int(run_id.max(initial=0))]) + 2, -1, dtype=np.int64)
    rank_of_run[[r[0] for r in runs]] = np.arange(len(runs))
    rank = np.where(run_id >= 0, rank_of_run[run_id], -1)
    commit_of_rank = np.array([r[1] for r in runs] + [-1], dtype=np.int64)
    return rank, commit_of_rank, [r[2] for r in runs]


def _latest_of_each_commit(info: Mapping[int, tuple[int, str | None]], series_id: Any, rank: Any, median: Any,
                           commit_of_rank: Any, usable_only: bool) -> tuple[Any, Any, Any, Any]:
    """The values of the wanted keys in (key, commit order), the latest run of each commit only (and only finite
    medians with ``usable_only``): (key index, rank, median, series row id). The rows of several code versions of
    one key merge here."""
    import numpy as np

    key_of_row = np.full(max(max(info), int(series_id.max(initial=0))) + 1, -1, dtype=np.int64)
    key_of_row[list(info)] = [v[0] for v in info.values()]
    kidx = key_of_row[series_id]
    keep = (kidx >= 0) & (rank >= 0)
    kidx, rank, median, series_id = kidx[keep], rank[keep], median[keep], series_id[keep]
    order = np.lexsort((rank, kidx))
    kidx, rank, median, series_id = kidx[order], rank[order], median[order], series_id[order]
    commit = commit_of_rank[rank]
    # the latest run of each commit: runs of one commit are adjacent in commit order
    last = np.ones(kidx.size, dtype=bool)
    last[:-1] = (kidx[1:] != kidx[:-1]) | (commit[1:] != commit[:-1])
    usable = last & np.isfinite(median) if usable_only else last
    return kidx[usable], rank[usable], median[usable], series_id[usable]


def _split_by_key(keys: Sequence[SeriesKey], info: Mapping[int, tuple[int, str | None]],
                  direction_of: Mapping[int, Direction], kidx: Any, rank: Any, median: Any, series_id: Any,
                  sha_of_rank: list[str], usable_only: bool) -> list[SeriesColumns]:
    """One :class:`SeriesColumns` per key from the sorted flat arrays, each value with its row's code version."""
    import numpy as np

    bounds = np.searchsorted(kidx, np.arange(len(keys) + 1))
    version_of_row = {sid: v for sid, (_, v) in info.items()}
    versions_per_key: dict[int, set[str | None]] = {}
    for i, v in info.values():
        versions_per_key.setdefault(i, set()).add(v)
    out = []
    for i, key in enumerate(keys):
        a, z = int(bounds[i]), int(bounds[i + 1])
        vs = versions_per_key.get(i, {None})
        versions = ([next(iter(vs))] * (z - a) if len(vs) == 1
                    else [version_of_row[sid] for sid in series_id[a:z].tolist()])  # fmt: skip
        values = median[a:z].tolist()
        if not usable_only:
            values = [v if v != math.inf else None for v in values]
        out.append(SeriesColumns(
            key, direction_of.get(i, Direction.LOWER), [sha_of_rank[r] for r in rank[a:z].tolist()], values, versions,
        ))  # fmt: skip
    return out


Columns = tuple[Any, Any]  # (run ids: int64 array, medians: float64 array; +inf where failed or none)


def _inf(conn: Any) -> str:
    """+inf in SQL: the median of a point that failed or has none (unusable)."""
    return "9e999" if conn.dialect.name == "sqlite" else "CAST('Infinity' AS DOUBLE PRECISION)"


def _unusable(conn: Any) -> str:
    """The SQL expression of a measurement's median, +inf where its result failed or it has none."""
    return f"CASE WHEN r.status = 'ok' THEN coalesce(m.median, {_inf(conn)}) ELSE {_inf(conn)} END"


def _split_columns(series_id: Any, run_id: Any, median: Any, ids: Iterable[int]) -> dict[int, Columns]:
    """Rows of many series as columns per series row id (every id in ``ids`` gets an entry)."""
    import numpy as np

    order = np.argsort(series_id, kind="stable")
    series_id, run_id, median = series_id[order], run_id[order], median[order]
    ids = sorted(set(ids))
    wanted = np.array(ids, dtype=np.int64)
    lo, hi = np.searchsorted(series_id, wanted, side="left"), np.searchsorted(series_id, wanted, side="right")
    return {sid: (run_id[lo[j] : hi[j]], median[lo[j] : hi[j]]) for j, sid in enumerate(ids)}


def _packed_rows(rows: list[Any]) -> tuple[Any, Any, Any]:
    """(series ids, low 32 bits, medians) of rows of (series id * 2**32 + low, median)."""
    import numpy as np

    packed = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    median = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
    return packed >> 32, packed & 0xFFFFFFFF, median


def _measurement_columns(conn: Any, ids: Sequence[int], few: bool) -> dict[int, Columns]:
    """These series rows' columns from the measurement table (rows of unknown runs left out): for ``few``
    of them, ranges of its clustered key joined in SQL; else one scan of the whole table."""
    import numpy as np

    if few:
        rows = fetch_sql(conn, (
            f"SELECT m.series_id * 4294967296 + r.run_id, {_unusable(conn)} FROM measurement m"
            f" JOIN result r ON r.id = m.result_id WHERE m.series_id IN ({', '.join(str(int(i)) for i in sorted(ids))})"
        ))  # fmt: skip
        series_id, run_id, median = _packed_rows(rows)
        return _split_columns(series_id, run_id, median, ids)
    ranges = sorted(fetch_sql(conn, "SELECT min(id), max(id), run_id, count(*) FROM result GROUP BY run_id"))
    if any(r[1] - r[0] + 1 != r[3] or (i and r[0] <= ranges[i - 1][1]) for i, r in enumerate(ranges)):
        ranges = fetch_sql(conn, "SELECT id, id, run_id, 1 FROM result ORDER BY id")  # interleaved runs
    failed = [r[0] for r in fetch_sql(conn, "SELECT id FROM result WHERE status <> 'ok'")]
    rows = fetch_sql(conn, f"SELECT series_id * 4294967296 + result_id, coalesce(median, {_inf(conn)}) FROM measurement")
    series_id, result_id, median = _packed_rows(rows)
    del rows
    # result id -> run id, through the sorted ranges
    lo = np.array([r[0] for r in ranges], dtype=np.int64)
    hi = np.array([r[1] for r in ranges], dtype=np.int64)
    at = np.maximum(np.searchsorted(lo, result_id, side="right") - 1, 0)
    inside = (lo[at] <= result_id) & (result_id <= hi[at]) if ranges else np.zeros(result_id.size, dtype=bool)
    run_id = np.where(inside, np.array([r[2] for r in ranges] or [0], dtype=np.int64)[at], -1)
    median[np.isin(result_id, np.array(failed, dtype=np.int64))] = np.inf
    keep = (run_id >= 0) & np.isin(series_id, np.array(ids, dtype=np.int64))
    return _split_columns(series_id[keep], run_id[keep], median[keep], ids)


def _columns_after(conn: Any, since: Mapping[int, tuple[int, Columns]]) -> dict[int, Columns]:
    """Cached columns of series rows that only gained newer points, with the rows of the runs
    after each one's ``max_run_id`` added (``since``: series row id -> (max run id, cached columns))."""
    import numpy as np

    after = min(max_run for max_run, _ in since.values())
    join = "CROSS JOIN" if conn.dialect.name == "sqlite" else "JOIN"  # SQLite: runs first, through their index
    series_id, run_id, median = _packed_rows(fetch_sql(conn, (
        f"SELECT m.series_id * 4294967296 + r.run_id, {_unusable(conn)} FROM result r {join} measurement m"
        f" ON m.result_id = r.id WHERE r.run_id > {int(after)}"
    )))  # fmt: skip
    ids = np.array(sorted(since), dtype=np.int64)
    at = np.minimum(np.searchsorted(ids, series_id), ids.size - 1)
    max_run = np.array([since[int(sid)][0] for sid in ids], dtype=np.int64)[at]
    fresh = (ids[at] == series_id) & (run_id > max_run)  # rows of other series, or already cached, left out
    new = _split_columns(series_id[fresh], run_id[fresh], median[fresh], since)
    return {sid: (np.concatenate((old[0], new[sid][0])), np.concatenate((old[1], new[sid][1])))
            for sid, (_, old) in since.items()}  # fmt: skip


_CACHE_ROW = "<i8"  # run ids; medians are "<f8": the blob is all run ids, then all medians
#: Points a series may have gained since its blob before the blob is rewritten (series_columns' keep_cache).
CACHE_TAIL = 16


def _cached_columns(
    conn: Any, counters: Mapping[int, tuple[int, int]], few: bool
) -> tuple[dict[int, Columns], dict[int, Any]]:
    """From ``series_cache``: the columns of series rows whose counters still match their blob's, and
    (max run id, columns) of those that only gained newer points since (as many appends as changes).
    ``few``: read only these series' rows, by id, rather than the whole table."""
    import numpy as np

    where = f" WHERE series_id IN ({', '.join(str(int(i)) for i in sorted(counters))})" if few else ""
    current: dict[int, Columns] = {}
    since: dict[int, Any] = {}
    for sid, changes, appends, max_run, data in fetch_sql(
        conn, f"SELECT series_id, changes, appends, max_run_id, data FROM series_cache{where}"
    ):
        now = counters.get(sid)
        if now is None:
            continue
        n = len(data) // 16
        cols = (np.frombuffer(data, dtype=_CACHE_ROW, count=n), np.frombuffer(data, dtype="<f8", offset=8 * n))
        if now == (changes, appends):
            current[sid] = cols
        elif now[0] - changes == now[1] - appends > 0:
            since[sid] = (max_run, cols)
    return current, since


def _keep_cached_columns(store: Store, entries: Mapping[int, tuple[tuple[int, int], Columns]]) -> None:
    """Write these series rows' blobs (series row id -> ((changes, appends) read before the rows, columns))."""
    import numpy as np

    t = m.SeriesCache.__table__
    rows = [
        {"series_id": sid, "changes": changes, "appends": appends, "max_run_id": int(run.max(initial=-1)),
         "data": np.ascontiguousarray(run, dtype=_CACHE_ROW).tobytes() + np.ascontiguousarray(med, dtype="<f8").tobytes()}
        for sid, ((changes, appends), (run, med)) in sorted(entries.items())
    ]  # fmt: skip
    with store.write() as conn:
        if conn.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as upsert
        else:
            from sqlalchemy.dialects.sqlite import insert as upsert
        stmt = upsert(t)
        stmt = stmt.on_conflict_do_update(
            index_elements=[t.c.series_id],
            set_={c: stmt.excluded[c] for c in ("changes", "appends", "max_run_id", "data")},
        )
        for i in range(0, len(rows), 500):
            conn.execute(stmt, rows[i : i + 500])


def fetch_sql(conn: Any, sql: str) -> list[Any]:
    """Rows of a literal statement as plain tuples, from the driver's cursor on SQLite (see _fetch)."""
    if conn.dialect.name != "sqlite":
        return [tuple(r) for r in conn.exec_driver_sql(sql).all()]
    cursor = conn.connection.driver_connection.cursor()
    try:
        return cursor.execute(sql).fetchall()
    finally:
        cursor.close()


def load_ab_verdicts(store: Store, *, machine: str | None = None) -> dict[tuple[SeriesKey, str], dict[str, Any]]:
    """The latest A/B verdict (``mmtrack run --confirm``) per (series, after sha)."""
    return {
        (_stored_series(r), r.after_sha): {"state": r.state, "ratio": r.ratio, "p_value": r.p_value,
                                           "rounds": r.rounds, "before_sha": r.before_sha}
        for r in _rows_in_order(store, m.ABVerdict, machine)
    }


def _rows_in_order(store: Store, table: Any, machine: str | None) -> Sequence[Any]:
    """Every row of a verdict table (optionally of one machine), in the order stored."""
    q = select(table).order_by(table.id)
    if machine is not None:
        q = q.where(table.machine == machine)
    with store.read() as conn:
        return conn.execute(q).all()


# -- mmtrack run's comparison with the previous commit ---------------------------------------------


def save_run_verdicts(
    store: Store, machine: str, environment: str, after_sha: str, verdicts: Sequence[RunVerdict]
) -> int:
    """Store the rows ``mmtrack run`` reported for a commit, replacing what an earlier run of the
    same commit on this machine and environment stored. Returns the number stored."""
    now = datetime.now(timezone.utc)
    t = m.RunVerdict
    rows = [
        {
            **_series_columns(v.series), "machine": machine, "environment": environment,
            "before_sha": v.before_sha, "after_sha": after_sha,
            "verdict": v.verdict, "state": v.state, "ratio": v.ratio, "before_value": v.before_value,
            "after_value": v.after_value, "p_value": v.p_value, "note": v.note, "created_at": now,
        }  # fmt: skip
        for v in verdicts
    ]
    with store.write() as conn:
        conn.execute(delete(t).where(t.machine == machine, t.environment == environment, t.after_sha == after_sha))
        if rows:
            conn.execute(t.__table__.insert(), rows)
    return len(rows)


def load_run_verdicts(store: Store, *, machine: str | None = None) -> list[RunVerdict]:
    """Every stored ``mmtrack run`` verdict (optionally of one machine), in the order stored."""
    return [
        RunVerdict(_stored_series(r), r.before_sha, r.after_sha, r.verdict, r.state, r.ratio, r.before_value,
                   r.after_value, r.p_value, r.note)
        for r in _rows_in_order(store, m.RunVerdict, machine)
    ]


# -- every run of many series, with its run date (detect's environment events) ---------------------


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


def series_run_points(store: Store, keys: Sequence[SeriesKey]) -> tuple[dict[SeriesKey, RunColumns], dict[str, int]]:
    """Every clean run of each of ``keys`` (:class:`RunColumns`), and each commit's position in commit order: by
    commit date, else by its first run (the order ``series`` reads; git history is not consulted)."""
    import numpy as np

    wanted = set(keys)
    s, b, x = m.Series, m.Benchmark, m.Metric
    named = _named_series(s.id, b.name, b.params, x.section, x.name.label("metric_name"), x.unit,
                          m.Machine.name.label("machine"), m.Environment.name.label("env"))
    out: dict[SeriesKey, RunColumns] = {}
    with store.read() as conn:
        key_of: dict[int, SeriesKey] = {}
        for r in conn.execute(named):
            k = SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit))
            if k in wanted:
                key_of[r.id] = k
        committed, started = _day_sql(conn, 'coalesce("commit".date, run.started_at)'), _day_sql(conn, "run.started_at")
        commits = fetch_sql(conn, (
            f'SELECT "commit".sha, min({committed}), min({started})'
            ' FROM run JOIN "commit" ON "commit".id = run.commit_id WHERE NOT run.dirty GROUP BY "commit".sha'
        ))  # fmt: skip
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
    grouped: dict[SeriesKey, list[Any]] = {}
    for sid, sha, day, median in rows:
        if median is not None and math.isfinite(median) and day is not None:
            grouped.setdefault(key_of[sid], []).append((sha, float(day), float(median)))
    for k, pts in grouped.items():
        out[k] = RunColumns([p[0] for p in pts], np.array([p[1] for p in pts]), np.array([p[2] for p in pts]))
    commits.sort(key=lambda r: (r[1] if r[1] is not None else math.inf, r[2] if r[2] is not None else math.inf, r[0]))
    return out, {r[0]: i for i, r in enumerate(commits)}
