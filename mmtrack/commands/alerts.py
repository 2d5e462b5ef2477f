"""``mmtrack alerts``: the queue a team triages, and keeping it current after each detection.

:func:`refresh_alerts` regroups every stored change point into alerts (``analysis.alerts``) and carries the stored
ids and triage states over; ``detect`` and ``update`` call it. The verbs list, show and triage the stored alerts.
"""

from __future__ import annotations

import getpass
import os
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from ..analysis.alerts import STATES, Alert, alert_row, group, queue_order, reconcile, row_alert, utc
from ..errors import EXIT_USAGE, UserError
from ..results import ChangePoint, SeriesKey


def stored_alerts(store: Any) -> list[Alert]:
    from ..store.alert_rows import load_alert_rows

    return [row_alert(r) for r in load_alert_rows(store)]


def refresh_alerts(store: Any, position: Mapping[str, int] | None = None, *,
                   pending: tuple[Sequence[SeriesKey], Sequence[ChangePoint]] | None = None) -> list[Alert]:
    """Group every stored change point into alerts, keep the stored ids and states, store them; the alerts now.

    ``pending``: series whose change points were found but not stored (``detect --dry-run``, a read-only store),
    and those change points: the alerts are computed with them in place of the stored ones, and not written."""
    from ..store import reads as q
    from ..store.alert_rows import save_alert_rows

    if position is None:
        _, position = q.series_run_points(store, [])
    changes = q.load_change_points(store)
    if pending is not None:
        replaced = set(pending[0])
        changes = [c for c in changes if c.series not in replaced] + list(pending[1])
    alerts = reconcile(group(changes, position), stored_alerts(store), position, now=datetime.now(timezone.utc))
    if pending is None:
        save_alert_rows(store, [alert_row(a) for a in alerts])
    return alerts


# --------------------------------------------------------------------------- the verbs


@dataclass(frozen=True, slots=True)
class AlertsRequest:
    db: str | None
    state: str | None = None  # only alerts in this state
    show_all: bool = False  # also the alerts re-detection no longer finds


def list_alerts(request: AlertsRequest) -> list[Alert]:
    """The queue: active alerts, untriaged first (``show_all``: the inactive ones after them)."""
    from ..store.db import open_store

    if request.state is not None and request.state not in STATES:
        raise UserError(f"--state {request.state!r}: no such state; use one of {', '.join(STATES)}", EXIT_USAGE)
    store = open_store(request.db, existing=True)
    try:
        alerts = stored_alerts(store)
    finally:
        store.close()
    return [a for a in queue_order(alerts) if (request.show_all or a.active)
            and (request.state is None or a.state == request.state)]


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


@dataclass(frozen=True, slots=True)
class AlertDetail:
    alert: Alert
    history: list[dict[str, Any]]  # every state given: state, note, who, at


def show_alert(db: str | None, wanted: str) -> AlertDetail:
    from ..store.alert_rows import triage_history
    from ..store.db import open_store

    store = open_store(db, existing=True)
    try:
        alert = resolve_alert(stored_alerts(store), wanted)
        history = [{**h, "at": utc(h["at"])} for h in triage_history(store, alert.id)]
    finally:
        store.close()
    return AlertDetail(alert, history)


def default_who() -> str:
    """Who triages: $USER, else git's user.name, else the login name."""
    if os.environ.get("USER"):
        return os.environ["USER"]
    try:
        name = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        name = ""
    if name.strip():
        return name.strip()
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def triage_alert(db: str | None, wanted: str, state: str, note: str = "", who: str | None = None) -> Alert:
    """Give the alert ``wanted`` names the ``state``; the alert as stored now."""
    from ..store.alert_rows import record_triage
    from ..store.db import open_store

    if state not in STATES:
        raise UserError(f"{state!r}: no such state; use one of {', '.join(STATES)}", EXIT_USAGE)
    store = open_store(db, existing=True)
    try:
        alert = resolve_alert(stored_alerts(store), wanted)
        record_triage(store, alert.id, state, note, who or default_who())
        return resolve_alert(stored_alerts(store), alert.id)
    finally:
        store.close()
