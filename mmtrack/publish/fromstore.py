"""Read a :class:`SiteModel` from the store (plain records through ``mmtrack.store.queries``)."""

from __future__ import annotations

from typing import Any, Callable

from ..results import ChangePoint, SeriesKey, SeriesPoint
from .model import SiteConfig, SiteModel


def model_from_store(
    store: Any,
    config: SiteConfig,
    *,
    benchmark_pattern: str | None = None,
    machine: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SiteModel:
    """Every series in the store (optionally one machine / benchmarks matching a regex),
    its commits in commit-date order and the change points ``detect`` stored."""
    from ..store import queries as q

    machines = [m.name for m in q.list_machines(store) if machine is None or m.name == machine]
    cases = q.list_benchmarks(store, benchmark_pattern)
    metrics_of = {(c.name, c.params_key): q.list_metrics(store, c.name, c.params_key) for c in cases}
    keys = [
        SeriesKey(mach, env.name, c.name, c.params_key, metric)
        for mach in machines
        for env in q.list_environments(store, mach)
        for c in cases
        for metric in metrics_of[(c.name, c.params_key)]
    ]
    series: dict[SeriesKey, list[SeriesPoint]] = {}
    for i, key in enumerate(keys):
        points = q.series(store, key, with_samples=False)
        if points:
            series[key] = points
        if progress:
            progress(i + 1, len(keys))
    commits = []
    for mach in machines:
        commits.extend(q.commits(store, machine=mach))
    commits.sort(key=lambda c: (c.date is None, c.date.timestamp() if c.date else 0.0, c.sha))
    change_points: list[ChangePoint] = [cp for cp in q.load_change_points(store, machine=machine) if cp.series in series]
    return SiteModel(series=series, commits=commits, change_points=change_points, config=config)
