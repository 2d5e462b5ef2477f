"""``mmtrack alerts``: the queue a team triages. The verbs list, show and triage the stored alerts; the queue on an
open store (reading it, regrouping it after each detection) is :mod:`mmtrack.analysis.alert_queue`'s.
"""

from __future__ import annotations

import getpass
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from ..analysis.alert_queue import resolve_alert, stored_alerts
from ..analysis.alerts import STATES, Alert, queue_order, utc
from ..errors import EXIT_USAGE, UserError

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
