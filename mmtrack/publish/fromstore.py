"""Read a :class:`SiteModel` from the store (plain records through ``mmtrack.store.reads``)."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..results import ChangePoint, RunVerdict, SeriesKey, SeriesPoint
from ..vocabulary import Direction
from .model import SiteConfig, SiteModel
from .source import source_key


class StoreSeries(Mapping[SeriesKey, Sequence[SeriesPoint]]):
    """The selected series of a store, each read on first access: a republish reads only
    the benchmarks whose series changed (the store must stay open while the site is built)."""

    def __init__(self, store: Any, keys: Sequence[SeriesKey], progress: Callable[[int, int], None] | None,
                 columns: Sequence[Any] = ()) -> None:
        self._store, self._keys, self._progress = store, list(keys), progress
        self._known = set(self._keys)
        self.loaded: dict[SeriesKey, Sequence[SeriesPoint]] = {}
        self.newest_read: set[SeriesKey] = set()  # series read only for their newest points
        self.read_elsewhere: set[SeriesKey] = set()  # series read by a forked child (builder: rendered there)
        self._newest: dict[tuple[SeriesKey, int], Sequence[SeriesPoint]] = {}  # read in bulk, handed out once
        # reads.SeriesColumns (usable_only=False) of the prefetched series, their history; ``columns``: read already
        self._columns: dict[SeriesKey, Any] = {c.key: c for c in columns}

    def __getitem__(self, key: SeriesKey) -> Sequence[SeriesPoint]:
        points = self.loaded.get(key)
        if points is None:
            if key not in self._known:
                raise KeyError(key)
            from ..store import reads

            points = self.loaded[key] = reads.series(self._store, key, with_samples=False)
            if self._progress:
                self._progress(len(self.loaded), len(self._keys))
        return points

    def newest(self, key: SeriesKey, n: int) -> Sequence[SeriesPoint]:
        """The newest ``n`` points of a series, with their samples (read now, not kept)."""
        from ..store import reads

        if key not in self.loaded:  # (a benchmark read whole reads them too)
            self.newest_read.add(key)
        points = self._newest.pop((key, n), None)
        return points if points is not None else reads.series(self._store, key, last=n)

    def prefetch_newest(self, keys: Sequence[SeriesKey], n: int) -> None:
        """Read the newest ``n`` points of these series in bulk now (the builder names the benchmarks it
        carries on from their newest points)."""
        from ..store import reads

        wanted = [k for k in keys if k in self._known]
        if wanted:
            newest = reads.series_newest_many(self._store, wanted, n)
            self._newest.update(((k, n), points) for k, points in newest.items())
            self.prefetch_columns(wanted)

    def prefetch_columns(self, keys: Sequence[SeriesKey]) -> None:
        """Read the history columns of these series in bulk now (:meth:`history_columns`)."""
        from ..store import reads

        unread = [k for k in keys if k in self._known and k not in self._columns]
        if unread:
            self._columns.update((c.key, c) for c in reads.series_columns(self._store, unread, usable_only=False))

    def history_columns(self, key: SeriesKey) -> tuple[list[str], list[float | None], list[str | None], Direction]:
        """A series' commits, medians (None: failed), versions and direction from the store's columns
        (``reads.series_columns``, the detect cache): read in bulk for every series prefetched, or now
        for this one."""
        from ..store import reads

        cols = self._columns.get(key)
        if cols is None:
            (cols,) = reads.series_columns(self._store, [key], usable_only=False)
        return cols.shas, cols.values, cols.versions, cols.direction

    def prefetch(self, keys: Sequence[SeriesKey]) -> None:
        """Read these series in bulk now (the builder names the benchmarks it will rebuild)."""
        from ..store import reads

        missing = [k for k in keys if k in self._known and k not in self.loaded]
        if missing:
            self.loaded.update(reads.series_many(self._store, missing))
            if self._progress:
                self._progress(len(self.loaded), len(self._keys))

    def after_fork(self) -> None:
        """In a forked child that renders benchmarks: its own connections, and no progress drawn from it."""
        self._store.after_fork()
        self._progress = None

    def read_by_child(self, keys: Sequence[SeriesKey]) -> None:
        """These series were read whole by a forked child (the progress counts them)."""
        self.read_elsewhere.update(k for k in keys if k not in self.loaded)
        if self._progress:
            self._progress(len(self.loaded) + len(self.read_elsewhere), len(self._keys))

    def __iter__(self) -> Iterator[SeriesKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._known


def bench_tokens(
    keys: Sequence[SeriesKey], revisions: Mapping[SeriesKey, Any],
    change_points: Sequence[ChangePoint],
    run_verdicts: Sequence[RunVerdict] = (),
    ab_verdicts: Mapping[tuple[SeriesKey, str], Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """Per benchmark, a hash of its series' store revisions, its change points, run and A/B verdicts
    (a change point's row on the regressions page shows its A/B verdict)."""
    parts: dict[str, list[str]] = {}
    for key in keys:
        rev = revisions.get(key)
        n, total = (rev.rows, rev.changes) if rev is not None else (0, 0)
        parts.setdefault(key.benchmark, []).append(f"{key!r}:{n}:{total}")
    for cp in change_points:
        if cp.series.benchmark in parts:
            parts[cp.series.benchmark].append(repr(cp))
    for v in run_verdicts:
        if v.series.benchmark in parts:
            parts[v.series.benchmark].append(repr(v))
    for (series, after_sha), verdict in (ab_verdicts or {}).items():
        if series.benchmark in parts:
            parts[series.benchmark].append(repr((series, after_sha, sorted(verdict.items()))))
    return {bench: hashlib.sha256("\n".join(sorted(p)).encode("utf-8", "surrogatepass")).hexdigest()
            for bench, p in parts.items()}


def model_from_store(
    store: Any,
    config: SiteConfig,
    *,
    benchmark_pattern: str | None = None,
    machine: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    columns: Sequence[Any] = (),
) -> SiteModel:
    """Every series in the store (optionally one machine / benchmarks matching a regex),
    its commits in commit-date order and the change points ``detect`` stored. ``columns``: series
    columns (``reads.series_columns(..., usable_only=False)``) the caller read already, with nothing
    written to those series since (``mmtrack update`` hands over what detect read).

    Series are read lazily (:class:`StoreSeries`), and each benchmark carries a token of
    its series' change counters: the builder reads only the benchmarks whose token moved."""
    from ..store import reads
    from ..store.digest import store_digest
    from ..store.selection import check_machine_env, series_keys

    check_machine_env(store, machine, None)

    # The same series selection as `mmtrack detect` (machine, benchmark regex), so the pages
    # show exactly the series detect looked at.
    keys = series_keys(store, machine=machine, benchmark=benchmark_pattern)
    # The source key and the tokens first: whatever is stored later (writers do not wait for publish)
    # either appears in this build or moves them, so the next publish rebuilds it; never the other way round.
    digest = store_digest(store)
    revisions = reads.series_revisions(store)
    machines = sorted({k.machine for k in keys})
    commits = []
    for mach in machines:
        commits.extend(reads.commits(store, machine=mach))
    commits.sort(key=lambda c: (c.date is None, c.date.timestamp() if c.date else 0.0, c.sha))
    selected = set(keys)
    change_points = [cp for cp in reads.load_change_points(store, machine=machine) if cp.series in selected]
    run_verdicts = [v for v in reads.load_run_verdicts(store, machine=machine) if v.series in selected]
    ab_verdicts = reads.load_ab_verdicts(store, machine=machine)
    tokens = bench_tokens(keys, revisions, change_points, run_verdicts, ab_verdicts)
    series = StoreSeries(store, keys, progress, columns)
    return SiteModel(
        series=series, commits=commits, change_points=change_points, config=config,
        bench_state=tokens, commits_complete=True, ab_verdicts=ab_verdicts,
        run_verdicts=run_verdicts, newest_points=series.newest, history_columns=series.history_columns,
        prefetch_columns=series.prefetch_columns,
        revisions={k: (rev.changes, rev.appends, list(rev.ids)) for k, rev in revisions.items() if k in selected},
        source=source_key(digest, config, benchmark_pattern, machine),
        alerts=stored_alerts(store, machine),
    )


def stored_alerts(store: Any, machine: str | None = None) -> list[Any]:
    """The alerts for the queue page; with ``machine``, those holding a series of it."""
    from ..analysis.alerts import row_alert
    from ..store.alert_rows import load_alert_rows

    alerts = [row_alert(r) for r in load_alert_rows(store)]
    return [a for a in alerts if machine is None or machine in a.machines]
