"""Read a :class:`SiteModel` from the store (plain records through ``mmtrack.store.queries``)."""

from __future__ import annotations

from typing import Any, Callable

from ..results import SeriesKey, SeriesPoint
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
    from ..commands.select import check_machine_env, series_keys
    from ..store import queries as q

    check_machine_env(store, machine, None)

    # The same series selection as `mmtrack detect` (machine, benchmark regex), so the pages
    # show exactly the series detect looked at.
    keys = series_keys(store, machine=machine, benchmark=benchmark_pattern)
    machines = sorted({k.machine for k in keys})
    # Hundreds of thousands of records, none in a cycle: with the collector on, every
    # collection would traverse all of them again (about 20% of the load time).
    with q.gc_paused():
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
        change_points = [cp for cp in q.load_change_points(store, machine=machine) if cp.series in series]
        return SiteModel(series=series, commits=commits, change_points=change_points, config=config,
                         ab_verdicts=q.load_ab_verdicts(store, machine=machine))
