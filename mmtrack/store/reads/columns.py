"""Many series as plain columns (``series_columns``, detect's bulk read and the pages' history): their
medians in commit order, joined in numpy, from the ``series_cache`` blobs where they are current.

Reads only: the blobs a read found missing or too far behind come back with it (:func:`read_series_columns`),
and ``store.writes.series_columns_keeping_cache`` writes them."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from sqlalchemy import func, select

from ...results import MetricKey, SeriesKey
from ...vocabulary import Direction
from .. import schema as m
from ..bulk import fetch_sql, gc_paused
from ..db import Store
from ..series_names import DIRECTIONS, named_series


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


#: A series row's ``series_cache`` blob as a read found it due: series row id -> ((changes, appends) read before
#: its rows, its columns).
BlobsDue = dict[int, tuple[tuple[int, int], "Columns"]]


@dataclass(frozen=True, slots=True)
class ColumnsRead:
    """What :func:`read_series_columns` read: the columns, and the cache blobs due (missing, or ``CACHE_TAIL`` runs
    behind) for the series rows it had to read from the measurement table."""

    columns: list[SeriesColumns]
    blobs_due: BlobsDue


def series_columns(store: Store, keys: Sequence[SeriesKey], *, usable_only: bool = True) -> list[SeriesColumns]:
    """The medians of many series (:func:`read_series_columns`'s columns)."""
    return read_series_columns(store, keys, usable_only=usable_only).columns


def read_series_columns(store: Store, keys: Sequence[SeriesKey], *, usable_only: bool = True) -> ColumnsRead:
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

    The blobs due are those of the series rows not read from a current blob, labelled with the counters read
    before their rows (a write that lands in between moves the counters past the label, so the blob is never
    taken for newer than it is).
    """
    wanted = {k: i for i, k in enumerate(keys)}
    with gc_paused(), store.read() as conn:
        info, counters, direction_of = _wanted_series(conn, wanted)
        if not info:
            return ColumnsRead([SeriesColumns(k, Direction.LOWER, [], [], []) for k in keys], {})
        runs = _clean_runs_by_date(conn)
        cached, since, read = _stored_columns(conn, info, counters)
    due = _blobs_due(read, counters, since)
    read.update(cached)
    series_id, run_id, median = _concatenated(read)
    rank, commit_of_rank, sha_of_rank = _commit_ranks(runs, run_id)
    kidx, rank, median, series_id = _latest_of_each_commit(info, series_id, rank, median, commit_of_rank, usable_only)
    return ColumnsRead(_split_by_key(keys, info, direction_of, kidx, rank, median, series_id, sha_of_rank,
                                     usable_only), due)


def _wanted_series(
    conn: Any, wanted: Mapping[SeriesKey, int]
) -> tuple[dict[int, tuple[int, str | None]], dict[int, tuple[int, int]], dict[int, Direction]]:
    """The series rows of the ``wanted`` keys (key -> index): per series row id, (index in keys, code version) and
    (changes, appends) as read first; per key index, its direction."""
    s, b, x = m.Series, m.Benchmark, m.Metric
    named = named_series(
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
            direction_of[i] = DIRECTIONS[r.direction]
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


def _blobs_due(read: Mapping[int, Columns], counters: Mapping[int, tuple[int, int]],
               since: Mapping[int, tuple[int, Columns]]) -> BlobsDue:
    """The blobs of the series read from the table, and of those whose blob is ``CACHE_TAIL`` runs behind."""
    # A blob a few runs behind is still read in one step with the runs after it: rewriting all of them after
    # every commit wrote 16 bytes a point of every series (8 MB at 500 x 1,000) for one point each.
    return {sid: (counters[sid], cols) for sid, cols in read.items()
            if sid not in since or cols[0].size - since[sid][1][0].size >= CACHE_TAIL}  # fmt: skip


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
    kidx, rank, median, series_id = _where((kidx >= 0) & (rank >= 0), kidx, rank, median, series_id)
    order = _packed_order(kidx * (int(rank.max(initial=0)) + 1) + rank)
    kidx, rank, median, series_id = kidx[order], rank[order], median[order], series_id[order]
    commit = commit_of_rank[rank]
    # the latest run of each commit: runs of one commit are adjacent in commit order
    last = np.ones(kidx.size, dtype=bool)
    last[:-1] = (kidx[1:] != kidx[:-1]) | (commit[1:] != commit[:-1])
    usable = last & np.isfinite(median) if usable_only else last
    return _where(usable, kidx, rank, median, series_id)


def _where(mask: Any, *arrays: Any) -> tuple[Any, ...]:
    """The ``arrays``' values where ``mask`` holds (the arrays themselves where it holds everywhere, the usual case)."""
    return arrays if mask.all() else tuple(a[mask] for a in arrays)


def _packed_order(packed: Any) -> Any:
    """The stable sort order of ``packed`` (key and rank in one non-negative integer)."""
    import numpy as np

    if packed.size and int(packed.max()) < 4 * packed.size:
        # Dense, and distinct where each run measures a series once: each value's slot in a table gives its place
        # in one pass, where a sort compares (the stable order too when no value repeats)
        slot = np.full(int(packed.max()) + 1, -1, dtype=np.int64)
        slot[packed] = np.arange(packed.size)
        order = slot[slot >= 0]
        if order.size == packed.size:
            return order
    # timsort takes each series' block in its run order as it comes, which lexsort's two passes cannot
    return np.argsort(packed, kind="stable")


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
    shas = np.array(sha_of_rank, dtype=object)  # the same str objects, indexed in C
    all_values = median.tolist()
    if not usable_only:  # unusable points: None, found in C rather than a comparison per value
        for j in np.flatnonzero(median == math.inf).tolist():
            all_values[j] = None
    out = []
    for i, key in enumerate(keys):
        a, z = int(bounds[i]), int(bounds[i + 1])
        vs = versions_per_key.get(i, {None})
        versions = ([next(iter(vs))] * (z - a) if len(vs) == 1
                    else [version_of_row[sid] for sid in series_id[a:z].tolist()])  # fmt: skip
        out.append(SeriesColumns(
            key, direction_of.get(i, Direction.LOWER), shas[rank[a:z]].tolist(), all_values[a:z], versions,
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
    packed = f"SELECT series_id * 4294967296 + result_id, coalesce(median, {_inf(conn)}) FROM measurement"
    rows = fetch_sql(conn, packed)
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


#: Points a series may have gained since its blob before the blob is due again (:func:`_blobs_due`).
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
        cols = (np.frombuffer(data, dtype=m.CACHE_RUN_IDS, count=n),
                np.frombuffer(data, dtype=m.CACHE_MEDIANS, offset=8 * n))
        if now == (changes, appends):
            current[sid] = cols
        elif now[0] - changes == now[1] - appends > 0:
            since[sid] = (max_run, cols)
    return current, since
