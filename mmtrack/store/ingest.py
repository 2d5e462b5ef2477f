"""Writing runs to the store: the one write path, and engine runs.

Every source (an engine run here, an asv results file in :mod:`.asv_import`) turns its input into the same
columns (:class:`RunRows`) and writes one run per transaction, so a run is either complete in the store or
absent: an import killed midway loses at most the file it was writing, and re-running it skips what is
already there (``Run.source`` + ``Run.source_digest``).
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from sqlalchemy import Connection, Table, and_, delete, select, update

from ..measure.metrics import MetricSummary
from ..measure.stats import sample_stats
from ..results import PRIMARY, CommitInfo, Status, canonical_params
from ..vocabulary import Direction, MetricFormat
from . import schema as m
from .db import Store, taking_lock
from .driver_sql import MeasurementSink, bulk_insert, dialect_insert, run_statements, scalar

if TYPE_CHECKING:  # only annotations: update and import-asv never load the engine's statistics
    from ..measure.benchmark_stats import BenchmarkStats

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


RESULT_COLUMNS = ("status", "message", "value", "ci_low", "ci_high", "q1", "q3", "number", "repeat", "started_at",
                  "duration")
MEASURE_COLUMNS = ("mean", "median", "p95", "min", "max", "q1", "q3", "ci_low", "ci_high", "count", "values")
BenchmarkIdentity = tuple[str, str, str, str, str]  # name, canonical params, code version, unit, type
MetricIdentity = tuple[tuple[str, str, str], str, str, str]  # metric key, direction, format, display name ("" for none)


@dataclass(slots=True)
class RunRows:
    """What one run writes, as columns (lists): one entry per result in ``benchmark`` and
    ``result``, one per measurement (a result has one per metric) in the others.

    Columns rather than an object per case: an asv file's cases are checked and summarised
    column by column, and the driver takes the rows as ``zip(*columns)``."""

    benchmark: list[BenchmarkIdentity]
    result: dict[str, list[Any]]  # RESULT_COLUMNS, plus "setup" when any result has one
    measured: list[int]  # the index of each measurement's result
    position: list[int]  # its place among its result's metrics
    metric: list[MetricIdentity]
    measure: dict[str, list[Any]]  # MEASURE_COLUMNS; "values" packed (schema.pack_floats) or None

    @property
    def status_counts(self) -> dict[str, int]:
        status = self.result["status"]
        return {k: status.count(k) for k in ("ok", "failed", "skipped")}


def _rows_of_cases(cases: Sequence[_Case]) -> RunRows:
    """The columns of cases built one by one (engine runs: a few cases each)."""
    rows = RunRows(
        benchmark=[(c.name, c.params, c.version, c.unit, c.type) for c in cases],
        result={k: [getattr(c, k) for c in cases] for k in RESULT_COLUMNS},
        measured=[], position=[], metric=[], measure={k: [] for k in MEASURE_COLUMNS},
    )
    if any(c.setup is not None for c in cases):  # asv results have none to write
        rows.result["setup"] = [c.setup for c in cases]
    for i, c in enumerate(cases):
        for position, x in enumerate(c.measures):
            rows.measured.append(i)
            rows.position.append(position)
            rows.metric.append((x.metric, x.direction, x.format, x.display_name or ""))
            for k in MEASURE_COLUMNS:
                v = getattr(x, k)
                rows.measure[k].append(m.pack_floats(v) if k == "values" and v is not None else v)
    return rows


# benchmark id, metric id, direction, format, display name ("" for none): with the machine and
# environment, what makes a series row (schema.Series)
SeriesIdentity = tuple[int, int, str, str, str]
SERIES_KEY = ("machine_id", "environment_id", "benchmark_id", "metric_id", "direction", "format", "display_name")


class Dims:
    """Get-or-create of dimension rows, cached on the store once committed."""

    def __init__(self, store: Store, conn: Connection) -> None:
        self.conn = conn
        self.shared: dict[tuple, int] = store.__dict__.setdefault("_dim_cache", {})
        self.new: dict[tuple, int] = {}
        # The last run's keys and ids, per kind: the runs of a history mostly hold the same cases, and comparing two
        # lists costs a fraction of a lookup per key. Valid for this transaction only (a rollback discards it).
        self.last: dict[str, tuple[Any, list[int]]] = {}

    def _get(self, table: Table, key: dict[str, Any], extra: dict[str, Any] | None = None) -> int:
        ck = (table.name, *key.values())
        found = self.shared.get(ck) or self.new.get(ck)
        if found:
            return found
        where = and_(*(table.c[k] == v for k, v in key.items()))
        ident = self.conn.execute(select(table.c.id).where(where)).scalar()
        if ident is None:
            stmt = dialect_insert(self.conn.dialect.name, table).values(**key, **(extra or {}))
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

    def benchmark_ids(self, keys: Sequence[BenchmarkIdentity]) -> list[int]:
        """The id of each benchmark (name, params, version, unit, type), made where missing, in a few
        statements for a whole run, not three per new case."""
        last = self.last.get("benchmark")
        if last is not None and last[0] == keys:
            return list(last[1])
        ids = self._benchmark_ids(keys)
        self.last["benchmark"] = (list(keys), ids)
        return list(ids)

    def _benchmark_ids(self, keys: Sequence[BenchmarkIdentity]) -> list[int]:
        t = m.Benchmark.__table__
        shared, new = self.shared, self.new
        cks = [("benchmark", name, params, version) for name, params, version, _, _ in keys]
        found = [shared.get(c) or new.get(c) for c in cks]
        if None not in found:
            return found  # type: ignore[return-value]
        missing = {c[1:]: k for c, k, f in zip(cks, keys, found) if f is None}
        names = sorted({k[0] for k in missing})

        def load() -> None:
            for i in range(0, len(names), 500):
                for row in self.conn.execute(
                    select(t.c.id, t.c.name, t.c.params, t.c.version).where(t.c.name.in_(names[i : i + 500]))
                ):
                    if (row.name, row.params, row.version) in missing:
                        new[("benchmark", row.name, row.params, row.version)] = row.id

        load()
        todo = [k for ident, k in missing.items() if ("benchmark", *ident) not in new]
        if todo:
            stmt = dialect_insert(self.conn.dialect.name, t).on_conflict_do_nothing(
                index_elements=["name", "params", "version"])
            self.conn.execute(stmt, [dict(zip(("name", "params", "version", "unit", "type"), k)) for k in todo])
            load()
        return [shared.get(c) or new[c] for c in cks]

    def metric(self, key: tuple[str, str, str]) -> int:
        return self._get(m.Metric.__table__, {"section": key[0], "name": key[1], "unit": key[2]})

    def series(self, machine_id: int, environment_id: int, keys: Sequence[SeriesIdentity]) -> list[int]:
        """The series id of each (benchmark id, metric id, direction, format, display name) on a
        machine and environment, made where missing, in a few statements (a run holds hundreds)."""
        last = self.last.get("series")
        if last is not None and last[0] == (machine_id, environment_id, keys):
            return list(last[1])
        ids = self._series(machine_id, environment_id, keys)
        self.last["series"] = ((machine_id, environment_id, list(keys)), ids)
        return list(ids)

    def _series(self, machine_id: int, environment_id: int, keys: Sequence[SeriesIdentity]) -> list[int]:
        t = m.Series.__table__

        def ck(key: SeriesIdentity) -> tuple:
            return ("series", machine_id, environment_id, *key)

        cks = [("series", machine_id, environment_id, *k) for k in keys]
        shared, new = self.shared, self.new
        found = [shared.get(c) or new.get(c) for c in cks]  # one lookup per key: a run holds hundreds
        if None not in found:
            return found  # type: ignore[return-value]
        missing = sorted({k for k, f in zip(keys, found) if f is None})

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

        load()
        todo = [k for k in missing if ck(k) not in new]
        if todo:
            stmt = dialect_insert(self.conn.dialect.name, t).on_conflict_do_nothing(index_elements=list(SERIES_KEY))
            self.conn.execute(stmt, [dict(zip(SERIES_KEY, (machine_id, environment_id, *k))) for k in todo])
            load()
        return [shared.get(c) or new[c] for c in cks]

    def commit(self, info: CommitInfo) -> int:
        t = m.Commit.__table__
        stmts = run_statements(self.conn.dialect.name)
        # Insert first: a commit is usually new (one statement); an existing one is merged.
        values = {"sha": info.sha, "date": m.as_utc(info.date), "message": info.message,
                  "branches": sorted(set(info.branches))}
        new_id = scalar(self.conn, stmts.new_commit, values)
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


def _write_run(store: Store, **run: Any) -> tuple[int | None, str]:
    """Write one run atomically (its own transaction). Returns (run id, "new" | "replaced" | "unchanged")."""
    with store.write() as conn:
        dims = Dims(store, conn)
        run_id, outcome, _ = write_run_in(conn, dims, **run)
    dims.publish()
    return run_id, outcome


def _touch_series(conn: Connection, ids: set[int], appended: Callable[[], bool] = lambda: False) -> None:
    """Bump the change counters (schema.Series.changes) publish compares with the last build, and
    ``appends`` too when ``appended()`` says the write only added a newest point (asked once the
    rows are locked, so that no concurrent write to these series can be missed)."""
    t = m.Series.__table__
    ordered = sorted(ids)
    chunks = [ordered[i : i + 500] for i in range(0, len(ordered), 500)]
    if conn.dialect.name == "postgresql":
        for chunk in chunks:
            # Lock the rows in id order first: an UPDATE locks them in whatever order its scan meets them, and
            # two writers touching the same series in different orders deadlock (seen with 8 writers). NO KEY
            # UPDATE, like the UPDATE itself: it must not wait on the key-share locks of measurement inserts.
            with taking_lock():
                conn.execute(select(t.c.id).where(t.c.id.in_(chunk)).order_by(t.c.id).with_for_update(key_share=True))
    if not chunks:
        return
    both = appended()
    if conn.dialect.name == "sqlite":
        # One prepared UPDATE per range of consecutive ids (a run's series were mostly made
        # together): compiling an IN list of hundreds of ids cost more than SQLite executing it.
        bump = "changes = changes + 1, appends = appends + 1" if both else "changes = changes + 1"
        conn.exec_driver_sql(f"UPDATE series SET {bump} WHERE id BETWEEN ? AND ?", _id_ranges(ordered))
        return
    values = {"changes": t.c.changes + 1, **({"appends": t.c.appends + 1} if both else {})}
    for chunk in chunks:
        conn.execute(update(t).where(t.c.id.in_(chunk)).values(**values))


def _id_ranges(ordered: Sequence[int]) -> list[tuple[int, int]]:
    """(first, last) of each run of consecutive ids in ``ordered`` (sorted, distinct)."""
    ranges: list[tuple[int, int]] = []
    start = prev = ordered[0]
    for i in ordered[1:]:
        if i != prev + 1:
            ranges.append((start, prev))
            start = i
        prev = i
    ranges.append((start, prev))
    return ranges


def _appends_newest(conn: Connection, run_id: int, machine_id: int, environment_id: int, commit_id: int) -> bool:
    """Whether a new clean run's points come after every other point of their series, in the order of
    ``reads.series`` (commit date, then run start) and of the pages (commit date, then sha): its commit
    has a date, and every other run of its machine and environment (the only runs its series can hold)
    is of a commit dated strictly before it."""
    stmts = run_statements(conn.dialect.name)
    later_params = {"machine_id": machine_id, "environment_id": environment_id, "run_id": run_id}
    date = scalar(conn, stmts.commit_date, {"commit_id": commit_id})
    # On SQLite the date as stored, compared as stored (no conversion back); later_run's column is a key, never NULL.
    return date is not None and scalar(conn, stmts.later_run, {"date": date, **later_params}, convert=False) is None


def _series_of_run(conn: Connection, run_id: int) -> set[int]:
    mt, rt = m.Measurement.__table__, m.Result.__table__
    rows = conn.execute(
        select(mt.c.series_id).distinct().join(rt, rt.c.id == mt.c.result_id).where(rt.c.run_id == run_id)
    )
    return set(rows.scalars())


def write_run_in(
    conn: Connection,
    dims: Dims,
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
    rows: RunRows,
    source: str | None = None,
    digest: str | None = None,
    stat: str | None = None,
    old: Any = None,
    sink: MeasurementSink | None = None,
) -> tuple[int | None, str, set[int]]:
    """Write one run inside the caller's transaction: (run id, outcome, series ids it touched).

    ``old`` is the (id, source_digest) row already stored for ``source`` when the caller looked it up.
    ``sink``: on SQLite, the run's measurement rows are handed to it, for the caller to flush before it commits."""
    run_t = m.Run.__table__
    stmts = run_statements(conn.dialect.name)
    outcome = "new"
    touched: set[int] = set()
    if source is not None:
        if old is None:
            old = conn.execute(stmts.run_by_source, {"source": source}).first()
        if old is not None:
            if digest is None or old.source_digest == digest:
                if stat is not None:
                    conn.execute(update(run_t).where(run_t.c.id == old.id).values(source_stat=stat))
                return old.id, "unchanged", touched
            touched = _series_of_run(conn, old.id)
            conn.execute(delete(run_t).where(run_t.c.id == old.id))  # cascades to results
            outcome = "replaced"
    machine_id = dims.machine(machine, machine_info)
    environment_id = dims.environment(environment, environment_info)
    commit_id = dims.commit(commit)
    run_values = {
        "started_at": m.as_utc(started_at),
        "machine_id": machine_id,
        "environment_id": environment_id,
        "commit_id": commit_id,
        "dirty": commit.dirty,
        "tool_versions": dict(tool_versions),
        "kind": kind,
        "suite": suite,
        "host": host,
        "source": source,
        "source_digest": digest,
        "source_stat": stat,
    }
    if conn.dialect.name == "sqlite":
        run_id = scalar(conn, stmts.new_run, run_values)
    else:
        run_id = conn.execute(stmts.new_run, run_values).scalar_one()
    if rows.benchmark:
        bids = dims.benchmark_ids(rows.benchmark)
        n = len(bids)
        results = {"run_id": [run_id] * n, "benchmark_id": bids, **rows.result}
        res_t = m.Result.__table__
        if conn.dialect.name == "sqlite":
            # BEGIN IMMEDIATE holds the write lock: ids after max(id) are ours, and a
            # plain executemany is several times faster than INSERT ... RETURNING.
            first = (scalar(conn, stmts.max_result_id) or 0) + 1
            ids: Sequence[int] = range(first, first + n)
            bulk_insert(conn, res_t, {"id": ids, **results})
        else:
            names = tuple(results)
            ids = conn.execute(
                dialect_insert(conn.dialect.name, res_t).returning(res_t.c.id, sort_by_parameter_order=True),
                [dict(zip(names, row)) for row in zip(*results.values())],
            ).scalars().all()
        metric_ids = {ident[0]: dims.metric(ident[0]) for ident in dict.fromkeys(rows.metric)}  # in order
        series = dims.series(machine_id, environment_id, [
            (bids[i], metric_ids[key], direction, fmt, display)
            for i, (key, direction, fmt, display) in zip(rows.measured, rows.metric)
        ])
        if series:
            measured = {"series_id": series, "result_id": [ids[i] for i in rows.measured], "position": rows.position,
                        **rows.measure}
            if sink is not None and conn.dialect.name == "sqlite":
                sink.add(conn, measured)
            else:
                bulk_insert(conn, m.Measurement.__table__, measured)
        touched.update(series)
    _touch_series(conn, touched, lambda: outcome == "new" and not commit.dirty and _appends_newest(
        conn, run_id, machine_id, environment_id, commit_id))
    return run_id, outcome, touched


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
        # Concurrent benchmarks: roles, thread counts, sample window and metadata (measure/concurrent.py).
        **({"scenario": st.scenario.identity} if st.scenario is not None else {}),
        # What it was measured under (process model, Python build, GIL, GC, heap): no migration, setup is JSON.
        **({"conditions": st.conditions.to_dict()} if st.conditions is not None else {}),
        # Sampled in several processes: their spread (measure/processes.py); not part of the identity.
        **({"process_spread": st.process_spread.to_dict()} if st.process_spread is not None else {}),
    }


def engine_case(case: EngineCaseRecord) -> _Case:
    c = _Case(
        name=case.benchmark,
        params=canonical_params(case.params),
        version=case.version or "",
        unit="seconds",
        type="engine",
        status=case.status,
        message=case.message.replace("\x00", "\\x00") if case.message else case.message,  # PostgreSQL refuses NUL
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
        rows=_rows_of_cases([engine_case(c) for c in cases]),
        source=run.source,
        digest=None,
    )
    assert run_id is not None
    return run_id
