"""Runs and commits, and the measurements of one run or one commit: what ``mmtrack run``, ``bench``
and ``compare`` read. Runs on a dirty tree are left out unless asked for (``include_dirty=True``):
they never silently pose as their commit."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from sqlalchemy import Select, func, select

from ...errors import UserError
from ...measure import conditions
from ...results import CommitInfo, Measurement, MetricKey
from .. import schema as m
from ..db import Store
from ..series_names import DIRECTIONS, FORMATS
from .catalog import ab_environments, prefer_history


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
    # The counting method (measure/conditions.py), read from the case's stored conditions, not the whole setup.
    m.Result.setup["conditions"]["method"].as_string().label("method"),
    m.Result.setup["conditions"]["process_model"].as_string().label("process_model"),
)


class _Builder:
    """Builds Measurements from rows, parsing each params key and metric once."""

    def __init__(self) -> None:
        self.params: dict[str, Mapping[str, str]] = {}
        self.metrics: dict[tuple[str, str, str], MetricKey] = {}

    @staticmethod
    def method(recorded: str | None, process_model: str | None) -> str | None:
        return conditions.method_of({"method": recorded, "process_model": process_model}) or None

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
            direction=DIRECTIONS[r.direction],
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
            format=FORMATS[r.format],
            display_name=r.display_name or None,
            method=self.method(r.method, r.process_model),
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
