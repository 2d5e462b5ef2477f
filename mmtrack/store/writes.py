"""Writing what analysis found: change points (``detect``), ``mmtrack run``'s verdicts, and the series cache
blobs that ``reads.columns`` keeps. Measurements themselves are written by ``ingest`` (and ``asv_import``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Collection, Iterable, Mapping, Sequence

from sqlalchemy import Connection, delete, select

from ..measure.metrics import Direction
from ..results import ChangePoint, RunVerdict, SeriesKey
from . import schema as m
from .db import Store
from .series_names import series_name_columns

if TYPE_CHECKING:
    from .reads.columns import SeriesColumns


@dataclass(frozen=True, slots=True)
class DetectDue:
    """The marks of what imports wrote and detect has not judged since: series row id -> token, commit sha -> token."""

    series: Mapping[int, str]
    commits: Mapping[str, str]

    def __bool__(self) -> bool:
        return bool(self.series or self.commits)


def mark_detect_due(conn: Connection, series_ids: Collection[int], commits: Collection[str]) -> None:
    """Mark these series and commits for detect, inside the import's own transaction (a kill after it commits leaves
    them marked). A series marked already gets the new token: a detect that read the old one leaves it marked."""
    if not series_ids and not commits:
        return
    token = uuid.uuid4().hex
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert
    for table, key, values in ((m.DetectDue.__table__, "series_id", sorted(series_ids)),
                               (m.DetectDueCommit.__table__, "sha", sorted(commits))):
        for i in range(0, len(values), 500):
            stmt = upsert(table)
            stmt = stmt.on_conflict_do_update(index_elements=[table.c[key]], set_={"token": stmt.excluded.token})
            conn.execute(stmt, [{key: v, "token": token} for v in values[i : i + 500]])


def read_detect_due(store: Store) -> DetectDue:
    """Every mark standing now (see :func:`mark_detect_due`)."""
    with store.read() as conn:
        series = dict(conn.execute(select(m.DetectDue.series_id, m.DetectDue.token)).all())
        commits = dict(conn.execute(select(m.DetectDueCommit.sha, m.DetectDueCommit.token)).all())
    return DetectDue(series, commits)


def _clear_detect_due(conn: Connection, due: DetectDue) -> None:
    """Delete the marks ``due`` read, each only while it still holds the token read (inside detect's transaction)."""
    for table, key, marks in ((m.DetectDue.__table__, "series_id", due.series),
                              (m.DetectDueCommit.__table__, "sha", due.commits)):
        by_token: dict[str, list[Any]] = {}
        for k, token in marks.items():
            by_token.setdefault(token, []).append(k)
        for token, keys in by_token.items():
            for i in range(0, len(keys), 500):
                conn.execute(delete(table).where(table.c[key].in_(keys[i : i + 500]), table.c.token == token))


def save_change_points(
    store: Store, points: Sequence[ChangePoint], *, replace: Iterable[SeriesKey] | None = None,
    clear_due: DetectDue | None = None,
) -> int:
    """Store change points, first deleting those stored for the series in ``replace``
    (default: the series of ``points``), so that re-running detect does not pile up
    duplicates. ``clear_due``: the detect marks judged now, cleared in the same transaction. Returns the number
    stored."""
    scope = list(dict.fromkeys(replace if replace is not None else (p.series for p in points)))
    now = datetime.now(timezone.utc)
    rows = [
        {
            **series_name_columns(p.series),
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
            named = {tuple(series_name_columns(k).values()) for k in scope}
            cols = (t.machine, t.environment, t.benchmark, t.params, t.section, t.metric, t.unit)
            found = conn.execute(select(t.id, *cols).where(t.machine.in_(sorted({k.machine for k in scope}))))
            ids = [r[0] for r in found if tuple(r[1:]) in named]
            for i in range(0, len(ids), 500):
                conn.execute(delete(t).where(t.id.in_(ids[i : i + 500])))
        if rows:
            conn.execute(m.ChangePointRow.__table__.insert(), rows)
        if clear_due:
            _clear_detect_due(conn, clear_due)
    return len(rows)


def save_run_verdicts(
    store: Store, machine: str, environment: str, after_sha: str, verdicts: Sequence[RunVerdict]
) -> int:
    """Store the rows ``mmtrack run`` reported for a commit, replacing what an earlier run of the
    same commit on this machine and environment stored. Returns the number stored."""
    now = datetime.now(timezone.utc)
    t = m.RunVerdict
    rows = [
        {
            **series_name_columns(v.series), "machine": machine, "environment": environment,
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


def series_columns_keeping_cache(
    store: Store, keys: Sequence[SeriesKey], *, usable_only: bool = True
) -> list[SeriesColumns]:
    """``reads.series_columns``, and the ``series_cache`` blobs that read found due written (on a writable store):
    the next read of those series takes them from their blobs."""
    from .reads.columns import read_series_columns

    done = read_series_columns(store, keys, usable_only=usable_only)
    if done.blobs_due and getattr(store, "writable", True):
        keep_cached_columns(store, done.blobs_due)
    return done.columns


def keep_cached_columns(store: Store, entries: Mapping[int, tuple[tuple[int, int], tuple[Any, Any]]]) -> None:
    """Write these series rows' ``series_cache`` blobs (``reads.columns.read_series_columns``'s ``blobs_due``):
    series row id -> ((changes, appends) read before the rows, columns)."""
    import numpy as np

    t = m.SeriesCache.__table__
    rows = [
        {"series_id": sid, "changes": changes, "appends": appends, "max_run_id": int(run.max(initial=-1)),
         "data": np.ascontiguousarray(run, dtype=m.CACHE_RUN_IDS).tobytes()
         + np.ascontiguousarray(med, dtype=m.CACHE_MEDIANS).tobytes()}
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
