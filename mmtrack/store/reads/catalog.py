"""What the store holds, by name: machines, environments, benchmarks, metrics and series keys, with
each series' revision counters (what publish compares to reread only what changed)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence, TypeVar

from sqlalchemy import func, select

from ...results import MetricKey, SeriesKey
from .. import schema as m
from ..db import Store
from ..series_names import named_series

T = TypeVar("T")


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


# -- dimensions ----------------------------------------------------------------------------------


def list_machines(store: Store) -> list[MachineInfo]:
    with store.read() as conn:
        rows = conn.execute(select(m.Machine.name, m.Machine.info).order_by(m.Machine.name)).all()
    return [MachineInfo(r.name, r.info or {}) for r in rows]


def hosts_by_machine(store: Store) -> dict[str, list[str]]:
    """The hosts (``run.host``: asv's machine names) that ran each machine class's runs, sorted."""
    q = select(m.Machine.name, m.Run.host).join(m.Run, m.Run.machine_id == m.Machine.id).distinct()
    out: dict[str, list[str]] = {}
    with store.read() as conn:
        for name, host in conn.execute(q):
            out.setdefault(name, []).append(host)
    return {name: sorted(hosts) for name, hosts in out.items()}


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


def list_series(
    store: Store, *, machine: str | None = None, environment: str | None = None, benchmark: str | None = None
) -> list[SeriesKey]:
    """Every series recorded, each key once (whatever its code versions), ordered by benchmark,
    params, metric, machine and environment; ``benchmark`` is a regular expression searched
    in the name. Only combinations that were measured: no machine x benchmark cross product.
    Without ``environment``, the A/B environments (:func:`ab_environments`) are left out."""
    import re

    q = named_series(
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
    the sums of their change and append counters (schema.Series.changes, .appends), their ids."""

    rows: int
    changes: int
    appends: int
    ids: tuple[int, ...]


def series_revisions(store: Store) -> dict[SeriesKey, SeriesRevision]:
    """Per series key, its :class:`SeriesRevision`. The counters only grow, so a key whose rows and
    changes are unchanged has the same points: publish rereads only the others; and one whose changes
    moved by as many as its appends only gained newer points."""
    s = m.Series
    q = named_series(
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
            q = named_series(
                m.Benchmark.name, m.Benchmark.params, m.Metric.section, m.Metric.name.label("metric_name"),
                m.Metric.unit, m.Machine.name.label("machine"), m.Environment.name.label("env"),
            ).where(s.id.in_(wanted[i : i + 500]))  # fmt: skip
            for r in conn.execute(q):
                keys.add(SeriesKey(r.machine, r.env, r.name, r.params, MetricKey(r.section, r.metric_name, r.unit)))
    return sorted(keys, key=lambda k: (k.benchmark, k.params, str(k.metric), k.machine, k.environment))
