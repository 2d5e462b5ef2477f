"""What analysis stored, read back: change points (``detect``), ``mmtrack run``'s verdicts and the A/B verdicts
of ``run --confirm``."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from sqlalchemy import and_, or_, select

from ...results import ChangePoint, RunVerdict, SeriesKey
from .. import schema as m
from ..db import Store
from ..series_names import DIRECTIONS, stored_series


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
            series=stored_series(r),
            direction=DIRECTIONS[r.direction],
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


def load_ab_verdicts(store: Store, *, machine: str | None = None) -> dict[tuple[SeriesKey, str], dict[str, Any]]:
    """The latest A/B verdict (``mmtrack run --confirm``) per (series, after sha)."""
    return {
        (stored_series(r), r.after_sha): {"state": r.state, "ratio": r.ratio, "p_value": r.p_value,
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


def load_run_verdicts(store: Store, *, machine: str | None = None) -> list[RunVerdict]:
    """Every stored ``mmtrack run`` verdict (optionally of one machine), in the order stored."""
    return [
        RunVerdict(stored_series(r), r.before_sha, r.after_sha, r.verdict, r.state, r.ratio, r.before_value,
                   r.after_value, r.p_value, r.note)
        for r in _rows_in_order(store, m.RunVerdict, machine)
    ]
