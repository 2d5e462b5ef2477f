"""Writing to the store: asv results folders and engine runs.

Both paths turn their input into the same rows (``_Case``) and write one run per
transaction, so a run is either complete in the store or absent: an import
killed midway loses at most the file it was writing, and re-running it skips
what is already there (``Run.source`` + ``Run.source_digest``).

asv formats read: results files of ``"version": 2`` (``result_columns``, asv
>= 0.5) and ``"version": 1`` (asv 0.2 to 0.4: a scalar or a dict per
benchmark), converted with asv's own ``Results.update_to_2``. A result of
``null`` is a failed benchmark, ``NaN`` a skipped one.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy import JSON, Boolean, Connection, DateTime, Table, and_, bindparam, delete, func, select, update

from ..measure.metrics import Direction, MetricFormat, MetricSummary, default_direction
from ..measure.stats import BenchmarkStats, sample_stats
from ..results import PRIMARY, CommitInfo, MetricKey, Status, canonical_params
from . import models as m
from .db import Store

# -- what callers hand in ------------------------------------------------------------------------


@dataclass(slots=True)
class RunRecord:
    """One run's context, as ``mmtrack run`` / ``mmtrack bench --save`` know it."""

    machine: str
    environment: str
    commit: CommitInfo
    started_at: datetime
    kind: str = "bench"  # "bench" (engine, in-process) or "asv"
    suite: str = ""  # suite identity, e.g. the benchmark directory or project name
    host: str = field(default_factory=socket.gethostname)
    tool_versions: dict[str, str] = field(default_factory=dict)
    machine_info: dict[str, Any] = field(default_factory=dict)
    environment_info: dict[str, Any] = field(default_factory=dict)
    source: str | None = None  # optional idempotency key: a second run with it is not recorded


@dataclass(slots=True)
class EngineCaseRecord:
    """One engine benchmark case of a run."""

    benchmark: str
    params: dict[str, str]
    status: Status = "ok"
    message: str | None = None
    version: str | None = None  # benchmark code version (asv's hash)
    stats: BenchmarkStats | None = None  # None for a failed or skipped case
    # The metrics to store when they are not stats.tracked_metrics(): under asv with
    # ``rounds`` > 1 the spool pools every round's samples, while stats is the last round's.
    metrics: list[MetricSummary] | None = None


@dataclass(slots=True)
class FileProblem:
    path: str  # printable path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(slots=True)
class ImportSummary:
    files: int = 0
    imported: int = 0  # new runs
    replaced: int = 0  # files that changed since the last import (their run was replaced)
    unchanged: int = 0  # already imported, identical
    failed: list[FileProblem] = field(default_factory=list)
    results: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0, "skipped": 0})
    measurements: int = 0
    machines: set[str] = field(default_factory=set)
    environments: set[str] = field(default_factory=set)
    benchmarks: set[str] = field(default_factory=set)
    commits: set[str] = field(default_factory=set)

    @property
    def result_count(self) -> int:
        return sum(self.results.values())


class ResultsFileError(ValueError):
    """A results file mmtrack cannot read; the message says why."""


Progress = Callable[[int, int, str], None]  # (done, total, current file)

# -- the common write path -----------------------------------------------------------------------


@dataclass(slots=True)
class _Measure:
    metric: tuple[str, str, str]
    direction: str
    format: str = "number"
    display_name: str | None = None
    mean: float | None = None
    median: float | None = None
    p95: float | None = None
    min: float | None = None
    max: float | None = None
    q1: float | None = None
    q3: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    count: int = 0
    values: list[float] | None = None


@dataclass(slots=True)
class _Case:
    name: str
    params: str  # canonical
    version: str
    unit: str
    type: str
    status: str
    message: str | None = None
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    q1: float | None = None
    q3: float | None = None
    number: int | None = None
    repeat: int | None = None
    started_at: datetime | None = None
    duration: float | None = None
    setup: dict[str, Any] | None = None
    measures: list[_Measure] = field(default_factory=list)


def _insert(dialect: str, table: Table):  # noqa: ANN202 - dialect-specific Insert
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported
        raise NotImplementedError(dialect)
    return insert(table)


@dataclass(frozen=True, slots=True)
class _RunStatements:
    """The statements every run write executes, built once per dialect: constructing a
    statement and its cache key costs more than SQLite executing it, on every file."""

    run_by_source: Any
    new_run: Any
    new_commit: Any  # returns the new id, nothing when the sha exists
    commit_by_sha: Any
    max_result_id: Any


@functools.lru_cache(maxsize=4)
def _run_statements(dialect: str) -> _RunStatements:
    run, commit, result = m.Run.__table__, m.Commit.__table__, m.Result.__table__
    return _RunStatements(
        run_by_source=select(run.c.id, run.c.source_digest).where(run.c.source == bindparam("source")),
        new_run=run.insert().returning(run.c.id),
        new_commit=_insert(dialect, commit).on_conflict_do_nothing(index_elements=["sha"]).returning(commit.c.id),
        commit_by_sha=select(commit.c.id, commit.c.date, commit.c.message, commit.c.branches).where(
            commit.c.sha == bindparam("sha")
        ),
        max_result_id=select(func.max(result.c.id)),
    )


_BULK: dict[tuple[str, str, tuple[str, ...]], tuple[str, list[Any]]] = {}


def _bulk_insert(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """INSERT many rows; on SQLite straight through the driver's executemany.

    Values go through the columns' own bind processors (as SQLAlchemy would
    convert them) but skip its per-row statement machinery, the bulk of an
    import's cost.
    """
    if conn.dialect.name != "sqlite":
        conn.execute(table.insert(), rows)
        return
    names = tuple(rows[0])
    key = (conn.dialect.name, table.name, names)
    if key not in _BULK:
        cols = ", ".join(conn.dialect.identifier_preparer.quote(n) for n in names)
        sql = f"INSERT INTO {conn.dialect.identifier_preparer.quote(table.name)} ({cols}) VALUES ({', '.join('?' * len(names))})"
        # Only these types need converting for sqlite3; numbers and strings pass as they are.
        procs = [
            table.c[n].type._cached_bind_processor(conn.dialect)
            if isinstance(table.c[n].type, (DateTime, JSON, Boolean, m.PackedFloats))
            else None
            for n in names
        ]
        _BULK[key] = (sql, procs)
    sql, procs = _BULK[key]
    convert = [(i, p) for i, p in enumerate(procs) if p is not None]
    params = []
    for row in rows:
        values = list(row.values())
        for i, p in convert:
            if values[i] is not None:
                values[i] = p(values[i])
        params.append(tuple(values))
    conn.exec_driver_sql(sql, params)


# benchmark id, metric id, direction, format, display name ("" for none): with the machine and
# environment, what makes a series row (models.Series)
SeriesIdentity = tuple[int, int, str, str, str]
SERIES_KEY = ("machine_id", "environment_id", "benchmark_id", "metric_id", "direction", "format", "display_name")


class _Dims:
    """Get-or-create of dimension rows, cached on the store once committed."""

    def __init__(self, store: Store, conn: Connection) -> None:
        self.conn = conn
        self.shared: dict[tuple, int] = store.__dict__.setdefault("_dim_cache", {})
        self.new: dict[tuple, int] = {}

    def _get(self, table: Table, key: dict[str, Any], extra: dict[str, Any] | None = None) -> int:
        ck = (table.name, *key.values())
        found = self.shared.get(ck) or self.new.get(ck)
        if found:
            return found
        where = and_(*(table.c[k] == v for k, v in key.items()))
        ident = self.conn.execute(select(table.c.id).where(where)).scalar()
        if ident is None:
            stmt = _insert(self.conn.dialect.name, table).values(**key, **(extra or {}))
            self.conn.execute(stmt.on_conflict_do_nothing(index_elements=list(key)))
            ident = self.conn.execute(select(table.c.id).where(where)).scalar_one()
        self.new[ck] = ident
        return ident

    def _named(self, table: Table, name: str, info: Mapping[str, Any]) -> int:
        """A machine or environment; its info is refreshed once per process."""
        fresh = (table.name, name) not in self.shared
        ident = self._get(table, {"name": name}, {"info": dict(info)})
        if fresh and info:
            self.conn.execute(update(table).where(table.c.id == ident).values(info=dict(info)))
        return ident

    def machine(self, name: str, info: Mapping[str, Any]) -> int:
        return self._named(m.Machine.__table__, name, info)

    def environment(self, name: str, info: Mapping[str, Any]) -> int:
        return self._named(m.Environment.__table__, name, info)

    def benchmark(self, c: _Case) -> int:
        return self._get(
            m.Benchmark.__table__, {"name": c.name, "params": c.params, "version": c.version}, {"unit": c.unit, "type": c.type}
        )

    def prefetch_benchmarks(self, cases: Sequence[_Case]) -> None:
        """Resolve every benchmark of a run in a few statements, not three per new case."""
        t = m.Benchmark.__table__
        missing = {
            (c.name, c.params, c.version): c
            for c in cases
            if ("benchmark", c.name, c.params, c.version) not in self.shared
            and ("benchmark", c.name, c.params, c.version) not in self.new
        }
        if not missing:
            return
        names = sorted({k[0] for k in missing})

        def load() -> None:
            for i in range(0, len(names), 500):
                for row in self.conn.execute(
                    select(t.c.id, t.c.name, t.c.params, t.c.version).where(t.c.name.in_(names[i : i + 500]))
                ):
                    if (row.name, row.params, row.version) in missing:
                        self.new[("benchmark", row.name, row.params, row.version)] = row.id

        load()
        todo = [c for k, c in missing.items() if ("benchmark",) + k not in self.new]
        if todo:
            stmt = _insert(self.conn.dialect.name, t).on_conflict_do_nothing(index_elements=["name", "params", "version"])
            self.conn.execute(
                stmt, [{"name": c.name, "params": c.params, "version": c.version, "unit": c.unit, "type": c.type}
                       for c in todo]
            )
            load()

    def metric(self, key: tuple[str, str, str]) -> int:
        return self._get(m.Metric.__table__, {"section": key[0], "name": key[1], "unit": key[2]})

    def series(self, machine_id: int, environment_id: int, keys: Sequence[SeriesIdentity]) -> list[int]:
        """The series id of each (benchmark id, metric id, direction, format, display name) on a
        machine and environment, made where missing, in a few statements (a run holds hundreds)."""
        t = m.Series.__table__

        def ck(key: SeriesIdentity) -> tuple:
            return ("series", machine_id, environment_id, *key)

        missing = sorted({k for k in keys if ck(k) not in self.shared and ck(k) not in self.new})

        def load() -> None:
            benchmarks = sorted({k[0] for k in missing})
            for i in range(0, len(benchmarks), 500):
                for row in self.conn.execute(
                    select(t.c.id, t.c.benchmark_id, t.c.metric_id, t.c.direction, t.c.format, t.c.display_name).where(
                        t.c.machine_id == machine_id,
                        t.c.environment_id == environment_id,
                        t.c.benchmark_id.in_(benchmarks[i : i + 500]),
                    )
                ):
                    self.new[ck(tuple(row[1:]))] = row.id

        if missing:
            load()
            todo = [k for k in missing if ck(k) not in self.new]
            if todo:
                stmt = _insert(self.conn.dialect.name, t).on_conflict_do_nothing(index_elements=list(SERIES_KEY))
                self.conn.execute(stmt, [dict(zip(SERIES_KEY, (machine_id, environment_id, *k))) for k in todo])
                load()
        return [self.shared.get(ck(k)) or self.new[ck(k)] for k in keys]

    def commit(self, info: CommitInfo) -> int:
        t = m.Commit.__table__
        stmts = _run_statements(self.conn.dialect.name)
        # Insert first: a commit is usually new (one statement); an existing one is merged.
        new_id = self.conn.execute(stmts.new_commit, {
            "sha": info.sha, "date": m.as_utc(info.date), "message": info.message, "branches": sorted(set(info.branches)),
        }).scalar()
        if new_id is not None:
            return new_id
        row = self.conn.execute(stmts.commit_by_sha, {"sha": info.sha}).one()
        changes: dict[str, Any] = {}
        if row.date is None and info.date is not None:
            changes["date"] = m.as_utc(info.date)
        if not row.message and info.message:
            changes["message"] = info.message
        branches = sorted(set(row.branches or ()) | set(info.branches))
        if branches != sorted(row.branches or ()):
            changes["branches"] = branches
        if changes:
            self.conn.execute(update(t).where(t.c.id == row.id).values(**changes))
        return row.id

    def publish(self) -> None:
        """Call after the transaction committed."""
        self.shared.update(self.new)


def _write_run(
    store: Store,
    *,
    machine: str,
    machine_info: Mapping[str, Any],
    environment: str,
    environment_info: Mapping[str, Any],
    commit: CommitInfo,
    started_at: datetime,
    kind: str,
    suite: str,
    host: str,
    tool_versions: Mapping[str, Any],
    cases: Sequence[_Case],
    source: str | None = None,
    digest: str | None = None,
) -> tuple[int | None, str]:
    """Write one run atomically. Returns (run id, "new" | "replaced" | "unchanged")."""
    run_t = m.Run.__table__
    with store.write() as conn:
        dims = _Dims(store, conn)
        stmts = _run_statements(conn.dialect.name)
        outcome = "new"
        if source is not None:
            old = conn.execute(stmts.run_by_source, {"source": source}).first()
            if old is not None:
                if digest is None or old.source_digest == digest:
                    return old.id, "unchanged"
                conn.execute(delete(run_t).where(run_t.c.id == old.id))  # cascades to results
                outcome = "replaced"
        machine_id = dims.machine(machine, machine_info)
        environment_id = dims.environment(environment, environment_info)
        run_id = conn.execute(stmts.new_run, {
            "started_at": m.as_utc(started_at),
            "machine_id": machine_id,
            "environment_id": environment_id,
            "commit_id": dims.commit(commit),
            "dirty": commit.dirty,
            "tool_versions": dict(tool_versions),
            "kind": kind,
            "suite": suite,
            "host": host,
            "source": source,
            "source_digest": digest,
        }).scalar_one()
        if cases:
            dims.prefetch_benchmarks(cases)
            rows = [
                {
                    "run_id": run_id,
                    "benchmark_id": dims.benchmark(c),
                    "status": c.status,
                    "message": c.message,
                    "value": c.value,
                    "ci_low": c.ci_low,
                    "ci_high": c.ci_high,
                    "q1": c.q1,
                    "q3": c.q3,
                    "number": c.number,
                    "repeat": c.repeat,
                    "started_at": c.started_at,
                    "duration": c.duration,
                }
                for c in cases
            ]
            if any(c.setup is not None for c in cases):  # asv results have none to write
                for row, c in zip(rows, cases):
                    row["setup"] = c.setup
            res_t = m.Result.__table__
            if conn.dialect.name == "sqlite":
                # BEGIN IMMEDIATE holds the write lock: ids after max(id) are ours, and a
                # plain executemany is several times faster than INSERT ... RETURNING.
                first = (conn.execute(stmts.max_result_id).scalar() or 0) + 1
                ids = list(range(first, first + len(rows)))
                for rid, row in zip(ids, rows):
                    row["id"] = rid
                _bulk_insert(conn, res_t, rows)
            else:
                ids = conn.execute(
                    _insert(conn.dialect.name, res_t).returning(res_t.c.id, sort_by_parameter_order=True), rows
                ).scalars().all()
            points = [(rid, row["benchmark_id"], position, x)
                      for rid, row, c in zip(ids, rows, cases) for position, x in enumerate(c.measures)]
            series = dims.series(machine_id, environment_id, [
                (b, dims.metric(x.metric), x.direction, x.format, x.display_name or "") for _, b, _, x in points
            ])
            mrows = [
                {
                    "series_id": sid,
                    "result_id": rid,
                    "position": position,
                    "mean": x.mean,
                    "median": x.median,
                    "p95": x.p95,
                    "min": x.min,
                    "max": x.max,
                    "q1": x.q1,
                    "q3": x.q3,
                    "ci_low": x.ci_low,
                    "ci_high": x.ci_high,
                    "count": x.count,
                    "values": x.values,
                }
                for sid, (rid, _, position, x) in zip(series, points)
            ]
            if mrows:
                _bulk_insert(conn, m.Measurement.__table__, mrows)
    dims.publish()
    return run_id, outcome


# -- engine runs ---------------------------------------------------------------------------------


def _summary_measure(s: MetricSummary) -> _Measure:
    finite = [v for v in s.values if math.isfinite(v)]
    st = sample_stats(finite) if finite else {}

    def fin(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return _Measure(
        metric=s.key,
        direction=Direction(s.direction).value,
        format=MetricFormat(s.format).value,
        display_name=s.display_name,
        mean=fin(s.mean),
        median=fin(s.median),
        p95=fin(s.p95),
        min=fin(s.min),
        max=fin(s.max),
        q1=st.get("q1"),
        q3=st.get("q3"),
        count=s.count,
        values=[v if math.isfinite(v) else None for v in s.values],
    )


def measurement_setup(st: BenchmarkStats) -> dict[str, Any]:
    """How a case was measured; two runs are comparable only when these match."""
    return {
        "throughput": f"{st.throughput.amount:g} {st.throughput.unit}",
        "domain": st.domain.value,
        "backend": st.measurement_label,
        "chunk_size": st.chunk_size,
        "calibrated": st.calibrated,
    }


def engine_case(case: EngineCaseRecord) -> _Case:
    c = _Case(
        name=case.benchmark,
        params=canonical_params(case.params),
        version=case.version or "",
        unit="seconds",
        type="engine",
        status=case.status,
        message=case.message,
    )
    st = case.stats
    # Without engine statistics, given metrics still count (plain asv cases of an A/B run, rounds pooled).
    if case.status != "ok" or (st is None and not case.metrics):
        c.measures = [_Measure(metric=(PRIMARY.section, PRIMARY.name, PRIMARY.unit), direction=Direction.LOWER.value)]
        return c
    summaries = case.metrics if case.metrics is not None else st.tracked_metrics()  # type: ignore[union-attr]
    measures = [_summary_measure(s) for s in summaries]
    primary = next((x for x in measures if x.metric == (PRIMARY.section, PRIMARY.name, PRIMARY.unit)), measures[0])
    c.value = primary.median
    c.q1, c.q3 = primary.q1, primary.q3
    c.measures = measures
    if st is None:
        c.repeat = primary.count
        return c
    c.number = st.chunk_size
    c.repeat = primary.count  # samples, of every round
    c.setup = measurement_setup(st)
    c.duration = float(sum(st.host_durations)) if st.host_durations else None
    c.measures = measures
    return c


def record_engine_run(store: Store, run: RunRecord, cases: list[EngineCaseRecord]) -> int:
    """Store one engine run with every metric of every case; returns the run id.

    With ``run.source`` set, recording the same source twice keeps the first run.
    """
    run_id, _ = _write_run(
        store,
        machine=run.machine,
        machine_info=run.machine_info,
        environment=run.environment,
        environment_info=run.environment_info,
        commit=run.commit,
        started_at=run.started_at,
        kind=run.kind,
        suite=run.suite,
        host=run.host,
        tool_versions=run.tool_versions,
        cases=[engine_case(c) for c in cases],
        source=run.source,
        digest=None,
    )
    assert run_id is not None
    return run_id


# -- asv results folders -------------------------------------------------------------------------

_PREFIX_TYPES = (
    ("timeraw_", "time", "seconds"),
    ("time_", "time", "seconds"),
    ("peakmem_", "peakmemory", "bytes"),
    ("mem_", "memory", "bytes"),
    ("track_", "track", "unit"),
)


@dataclass(frozen=True, slots=True)
class AsvBenchmark:
    """What benchmarks.json says about one benchmark (or what its name implies)."""

    type: str
    unit: str
    param_names: tuple[str, ...] = ()
    version: str = ""


def asv_metric(btype: str, unit: str) -> tuple[MetricKey, Direction]:
    """The metric an asv benchmark's value is stored under.

    Durations (time benchmarks, and engine benchmarks that asv runs as track
    benchmarks in seconds) share mmtrack's primary metric, so an asv history and
    engine runs of the same benchmark form one series.
    """
    if btype == "time" or unit == "seconds":
        return PRIMARY, Direction.LOWER
    if btype == "memory":
        return MetricKey("memory", "mem", "bytes"), Direction.LOWER
    if btype == "peakmemory":
        return MetricKey("memory", "peakmem", "bytes"), Direction.LOWER
    return MetricKey("track", "value", unit), default_direction(unit)


def _from_name(name: str) -> AsvBenchmark:
    short = name.rsplit(".", 1)[-1]
    for prefix, btype, unit in _PREFIX_TYPES:
        if short.startswith(prefix):
            return AsvBenchmark(btype, unit)
    return AsvBenchmark("track", "unit")


def read_benchmarks_json(path: Path) -> dict[str, AsvBenchmark]:
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ResultsFileError("not a JSON object")
    out = {}
    for name, b in data.items():
        if name == "version" or not isinstance(b, dict):
            continue
        btype = b.get("type") if isinstance(b.get("type"), str) else _from_name(name).type
        unit = b.get("unit") if isinstance(b.get("unit"), str) else _from_name(name).unit
        names = b.get("param_names")
        names = tuple(str(x) for x in names) if isinstance(names, list) else ()
        version = b.get("version") if isinstance(b.get("version"), str) else ""
        out[name] = AsvBenchmark(btype, unit, names, version)
    return out


def _load_json(path: Path) -> Any:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ResultsFileError("JSON nested too deeply") from None
    except ValueError as exc:
        raise ResultsFileError(f"not valid JSON ({exc})") from None


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ResultsFileError(f"{what} is {type(value).__name__}, expected a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ResultsFileError(f"{what} {value!r} is not valid UTF-8") from None
    if "\x00" in value:
        raise ResultsFileError(f"{what} {value!r} contains a NUL character")
    return value


def _num(value: Any, where: str, field: str = "", *, nan: str = "error") -> float | None:
    """A finite float, or None for null. NaN: "error", "none" (missing) or "keep" (skipped)."""
    if type(value) is float and value - value == 0.0:  # the fast path: finite floats
        return value
    if value is None:
        return None
    what = f"{where} {field}".strip()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultsFileError(f"{what} is {type(value).__name__} {str(value)[:40]!r}, expected a number")
    try:
        f = float(value)
    except OverflowError:
        raise ResultsFileError(f"{what} has {len(str(value))} digits, too large for a float") from None
    if math.isnan(f):
        if nan == "error":
            raise ResultsFileError(f"{what} is NaN, expected a number")
        return f if nan == "keep" else None
    if math.isinf(f):
        if nan == "none":  # asv writes ±Infinity for the CI of a single sample: no interval
            return None
        raise ResultsFileError(f"{what} is infinite (or too large for a float)")
    return f


def _int(value: Any, where: str, field: str = "") -> int | None:
    if type(value) is int and 0 <= value < 2**62:
        return value
    what = f"{where} {field}".strip()
    f = _num(value, what)
    if f is None:
        return None
    if f != int(f) or not (0 <= f < 2**62):
        raise ResultsFileError(f"{what} {str(value)[:40]} is not a count")
    return int(f)


def _ms(value: Any, where: str, field: str = "") -> datetime | None:
    what = f"{where} {field}".strip()
    f = _num(value, what)
    if f is None:
        return None
    try:
        return datetime.fromtimestamp(f / 1000.0, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise ResultsFileError(f"{what} {str(value)[:40]} is not a time in milliseconds") from None


@dataclass(slots=True)
class AsvResultsFile:
    """One parsed results file."""

    machine: str
    environment: str
    environment_info: dict[str, Any]
    commit: CommitInfo
    started_at: datetime
    format_version: int
    cases: list[_Case]


def parse_results_file(
    path: Path, benchmarks: Mapping[str, AsvBenchmark], machine_dir: str | None = None
) -> AsvResultsFile:
    """Read one asv results file (format 1 or 2) into store rows; raises ResultsFileError."""
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ResultsFileError(f"top level is {type(data).__name__}, expected an object")
    version = data.get("version")
    if version not in (1, 2) or isinstance(version, bool):
        raise ResultsFileError(f"unknown results format version {version!r:.40} (mmtrack reads versions 1 and 2)")
    try:
        if version == 1:
            from asv.results import Results

            if not isinstance(data.get("results"), dict):
                raise ResultsFileError("'results' is missing or not an object")
            data = Results.update_to_2(data)
    except ResultsFileError:
        raise
    except Exception as exc:  # asv's converter on a damaged file
        raise ResultsFileError(f"cannot convert from format 1: {type(exc).__name__}: {exc}") from None

    for key in ("commit_hash", "results", "result_columns"):
        if key not in data:
            raise ResultsFileError(f"missing key {key!r}")
    sha = _text(data["commit_hash"], "commit_hash")
    if not sha or len(sha) > 64 or any(ch not in "0123456789abcdefABCDEF" for ch in sha):
        raise ResultsFileError(f"commit_hash {sha!r:.70} is not a git sha")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ResultsFileError("'params' is not an object")
    machine = _text(params.get("machine", machine_dir or ""), "params.machine") or (machine_dir or "")
    if not machine:
        raise ResultsFileError("no machine name (params.machine)")
    env_name = data.get("env_name")
    if env_name is None:
        env_name = f"py{data.get('python', '')}"
    env_name = _text(env_name, "env_name")
    env_info = {
        "python": data.get("python"),
        "requirements": data.get("requirements") or {},
        "env_vars": data.get("env_vars") or {},
    }
    date = _ms(data.get("date"), "date")
    columns = data["result_columns"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ResultsFileError("'result_columns' is not a list of names")
    results = data["results"]
    if not isinstance(results, dict):
        raise ResultsFileError("'results' is not an object")

    cases: list[_Case] = []
    starts: list[datetime] = []
    for name, values in results.items():
        name = _text(name, "benchmark name")
        if not name:
            raise ResultsFileError("empty benchmark name")
        what = f"benchmark {name!r}"
        if not isinstance(values, list):
            raise ResultsFileError(f"{what}: row is {type(values).__name__}, expected a list")
        row = dict(zip(columns, values))
        cases.extend(_asv_cases(name, row, benchmarks.get(name) or _from_name(name), what, starts))
    started = min(starts) if starts else (date or datetime.now(timezone.utc))
    return AsvResultsFile(
        machine=machine,
        environment=env_name,
        environment_info=env_info,
        commit=CommitInfo(sha=sha.lower(), date=date),
        started_at=started,
        format_version=int(version),
        cases=cases,
    )


def _asv_cases(
    name: str, row: Mapping[str, Any], meta: AsvBenchmark, what: str, starts: list[datetime]
) -> list[_Case]:
    grid = row.get("params") or []
    if not isinstance(grid, list) or not all(isinstance(p, list) for p in grid):
        raise ResultsFileError(f"{what}: 'params' is not a list of lists")
    grid = [[_text(v, f"{what} parameter value") for v in p] for p in grid]
    names = list(meta.param_names) if len(meta.param_names) == len(grid) else [f"param{i + 1}" for i in range(len(grid))]
    combos = list(itertools.product(*grid)) if grid else [()]
    n = len(combos)
    result = row.get("result")
    if result is not None and not isinstance(result, list):
        result = [result]  # a bare number: written by hand or by very old asv
    if result is not None and len(result) != n:
        raise ResultsFileError(f"{what}: {len(result)} results for {n} parameter combinations")
    version = row.get("version")
    version = _text(version, f"{what} version") if version is not None else meta.version
    started = _ms(row.get("started_at"), what, "started_at")
    if started is not None:
        starts.append(started)
    duration = _num(row.get("duration"), what, "duration")
    metric, direction = asv_metric(meta.type, meta.unit)
    mkey = (metric.section, metric.name, metric.unit)
    dvalue, fmt, version = direction.value, MetricFormat.NUMBER.value, version or ""
    ci_a, ci_b, q25, q75, number, repeat, samples_col = [_columns(row.get(k), k, n, what) for k in _STAT_COLUMNS]
    params_key = "{}" if not grid else None
    out = []
    for i, combo in enumerate(combos):
        where = f"{what} case {i}" if n > 1 else what
        value = _num(None if result is None else result[i], where, "result", nan="keep")
        if value is None:
            status = "failed"
        elif value != value:  # NaN: asv skipped it
            status, value = "skipped", None
        else:
            status = "ok"
        c = _Case(
            name=name,
            params=params_key or canonical_params(dict(zip(names, combo))),
            version=version,
            unit=meta.unit,
            type=meta.type,
            status=status,
            value=value,
            ci_low=_num(ci_a[i], where, "ci_99_a", nan="none"),
            ci_high=_num(ci_b[i], where, "ci_99_b", nan="none"),
            q1=_num(q25[i], where, "q_25", nan="none"),
            q3=_num(q75[i], where, "q_75", nan="none"),
            number=_int(number[i], where, "number"),
            repeat=_int(repeat[i], where, "repeat"),
            started_at=started,
            duration=duration,
        )
        samples = samples_col[i]
        if samples is not None:
            if not isinstance(samples, list):
                raise ResultsFileError(f"{where}: samples are {type(samples).__name__}, expected a list")
            samples = [_num(v, where, "sample") for v in samples]
            if None in samples:
                raise ResultsFileError(f"{where}: a sample is null")
        x = _Measure(metric=mkey, direction=dvalue, format=fmt, ci_low=c.ci_low, ci_high=c.ci_high, q1=c.q1, q3=c.q3)
        if status == "ok":
            x.median = value  # asv's value (the median of the samples for time benchmarks)
            if samples:
                st = sample_stats(samples)  # type: ignore[arg-type]
                x.mean, x.p95, x.min, x.max, x.count = st["mean"], st["p95"], st["min"], st["max"], len(samples)
                x.values = samples  # type: ignore[assignment]
                if x.q1 is None or x.q3 is None:
                    x.q1, x.q3 = st["q1"], st["q3"]
            else:  # asv kept only the value (and maybe its stats): no sample spread to report
                x.count = c.repeat or 1
        c.measures = [x]
        out.append(c)
    return out


_STAT_COLUMNS = ("stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples")


def _columns(col: Any, key: str, n: int, what: str) -> Sequence[Any]:
    """One per-combination column of a results row; all None when absent."""
    if col is None:
        return (None,) * n
    if type(col) is not list or len(col) != n:
        raise ResultsFileError(f"{what}: column {key!r} does not have one entry per parameter combination")
    return col


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _display(path: Path) -> str:
    """A printable path, even for names that are not valid UTF-8."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _suite_name(results_dir: Path) -> str:
    """The ``project`` of the asv.conf.json above the results (it may hold // comments), else the folder name."""
    import re

    for conf in (results_dir.parent / "asv.conf.json", results_dir.parent.parent / "asv.conf.json"):
        try:
            found = re.search(r'^\s*"project"\s*:\s*"([^"]+)"', conf.read_text(encoding="utf-8"), re.M)
        except (OSError, UnicodeDecodeError):
            continue
        if found:
            return found.group(1)
    return results_dir.resolve().name


def find_results_files(results_dir: Path) -> list[tuple[Path, str]]:
    """(file, machine directory) for every results file under ``results_dir``."""
    out = []
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        for f in sorted(machine_dir.iterdir()):
            if f.suffix == ".json" and f.name != "machine.json" and f.is_file():
                out.append((f, os.fsencode(machine_dir.name).decode("utf-8", "backslashreplace")))
    return out


def _machine_info(machine_dir: Path, cache: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    if machine_dir not in cache:
        info: dict[str, Any] = {}
        f = machine_dir / "machine.json"
        if f.is_file():
            try:
                data = _load_json(f)
                if isinstance(data, dict):
                    info = {str(k): v for k, v in data.items() if k != "version" and isinstance(v, (str, int, float))}
                    json.dumps(info, allow_nan=False)
                    for v in info.values():
                        if isinstance(v, str):
                            v.encode("utf-8")
            except (ResultsFileError, ValueError, UnicodeEncodeError, OSError):
                info = {}
        cache[machine_dir] = info
    return cache[machine_dir]


def import_asv_results(
    store: Store,
    results_dir: Path,
    progress: Progress | None = None,
    *,
    suite: str | None = None,
) -> ImportSummary:
    """Import an asv results folder; one transaction per results file, idempotent.

    A file that cannot be read is reported in ``summary.failed`` (one line each)
    and the others are still imported.
    """
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        from ..errors import UserError

        raise UserError(f"{results_dir}: not a directory; give an asv results folder (the one with benchmarks.json)")
    summary = ImportSummary()
    benchmarks: dict[str, AsvBenchmark] = {}
    bj = results_dir / "benchmarks.json"
    if bj.is_file():
        try:
            benchmarks = read_benchmarks_json(bj)
        except (ResultsFileError, OSError) as exc:
            summary.failed.append(FileProblem(_display(bj), f"{exc}; benchmark types inferred from names"))
    suite = suite if suite is not None else _suite_name(results_dir)
    files = find_results_files(results_dir)
    summary.files = len(files)
    infos: dict[Path, dict[str, Any]] = {}
    tool = {"asv_results_format": ""}
    for done, (path, machine_dir) in enumerate(files, 1):
        shown = _display(path)
        if progress is not None:
            progress(done - 1, len(files), shown)
        try:
            raw = path.read_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            source = f"asv:{machine_dir}/{_display(Path(path.name))}"
            parsed = parse_results_file(path, benchmarks, machine_dir)
            _, outcome = _write_run(
                store,
                machine=parsed.machine,
                machine_info=_machine_info(path.parent, infos),
                environment=parsed.environment,
                environment_info=parsed.environment_info,
                commit=parsed.commit,
                started_at=parsed.started_at,
                kind="asv",
                suite=suite,
                host=parsed.machine,
                tool_versions={**tool, "asv_results_format": str(parsed.format_version)},
                cases=parsed.cases,
                source=source,
                digest=digest,
            )
        except ResultsFileError as exc:
            summary.failed.append(FileProblem(shown, _one_line(str(exc))))
            continue
        except OSError as exc:
            summary.failed.append(FileProblem(shown, f"cannot read: {exc.strerror or exc}"))
            continue
        except SQLAlchemyError as exc:  # the run's transaction was rolled back; go on with the others
            summary.failed.append(FileProblem(shown, _one_line(f"not stored: {exc.__class__.__name__}: {exc}")))
            continue
        except Exception as exc:  # noqa: BLE001 - a damaged file must not stop the others
            summary.failed.append(FileProblem(shown, _one_line(f"cannot read: {type(exc).__name__}: {exc}")))
            continue
        if outcome == "unchanged":
            summary.unchanged += 1
            continue
        summary.imported += outcome == "new"
        summary.replaced += outcome == "replaced"
        summary.machines.add(parsed.machine)
        summary.environments.add(parsed.environment)
        summary.commits.add(parsed.commit.sha)
        for c in parsed.cases:
            summary.results[c.status] += 1
            summary.measurements += len(c.measures)
            summary.benchmarks.add(c.name)
    if progress is not None:
        progress(len(files), len(files), "")
    return summary
