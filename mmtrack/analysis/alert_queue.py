"""The alert queue on an open store: the stored alerts as records, the queue regrouped after each detection
(:func:`refresh_alerts`, which ``detect`` and ``update`` run), and the alert an id names."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from ..errors import EXIT_USAGE, UserError
from ..results import ChangePoint, SeriesKey
from .alerts import Alert, alert_row, group, reconcile, row_alert


def stored_alerts(store: Any) -> list[Alert]:
    from ..store.alert_rows import load_alert_rows

    return [row_alert(r) for r in load_alert_rows(store)]


def refresh_alerts(store: Any, position: Mapping[str, int] | None = None, *,
                   pending: tuple[Sequence[SeriesKey], Sequence[ChangePoint]] | None = None) -> list[Alert]:
    """Group every stored change point into alerts, keep the stored ids and states, store them; the alerts now.

    ``pending``: series whose change points were found but not stored (``detect --dry-run``, a read-only store),
    and those change points: the alerts are computed with them in place of the stored ones, and not written."""
    from ..store.alert_rows import save_alert_rows
    from ..store.db import ALERTS_LOCK_ID

    if pending is not None:
        return _grouped(store, position, pending)
    # Two updates at once: the later refresh reads every change point both stored (the same ids, inserted twice,
    # broke the other)
    with store.one_at_a_time(ALERTS_LOCK_ID):
        alerts = _grouped(store, position, None)
        save_alert_rows(store, [alert_row(a) for a in alerts])
    return alerts


def _grouped(store: Any, position: Mapping[str, int] | None,
             pending: tuple[Sequence[SeriesKey], Sequence[ChangePoint]] | None) -> list[Alert]:
    from ..store import reads as q

    if position is None:
        _, position = q.series_run_points(store, [])
    changes = q.load_change_points(store)
    if pending is not None:
        replaced = set(pending[0])
        changes = [c for c in changes if c.series not in replaced] + list(pending[1])
    return reconcile(group(changes, position), stored_alerts(store), position, now=datetime.now(timezone.utc))


def resolve_alert(alerts: Sequence[Alert], wanted: str) -> Alert:
    """The alert ``wanted`` names, by its id or a unique start of it; one line and exit 2 otherwise."""
    exact = [a for a in alerts if a.id == wanted]
    matches = exact or [a for a in alerts if a.id.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UserError(f"no alert {wanted!r} in the store; `mmtrack alerts list` shows their ids", EXIT_USAGE)
    raise UserError(f"alert id {wanted!r} is ambiguous ({len(matches)} alerts start with it); give more of it",
                    EXIT_USAGE)
