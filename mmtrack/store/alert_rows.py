"""Reading and writing alerts (``schema.AlertRow``, ``AlertTriageRow``) as plain rows: dicts of their columns.

``analysis.alert_queue`` turns them into ``analysis.alerts.Alert`` records; the store knows no analysis.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Sequence

from sqlalchemy import select, update

from .db import Store
from .schema import AlertRow, AlertTriageRow

COLUMNS = tuple(c.key for c in AlertRow.__table__.columns)


def load_alert_rows(store: Store) -> list[dict[str, Any]]:
    """Every stored alert, active or not, oldest first."""
    with store.read() as conn:
        rows = conn.execute(select(AlertRow).order_by(AlertRow.created_at, AlertRow.id)).mappings().all()
    return [dict(r) for r in rows]


def save_alert_rows(store: Store, rows: Sequence[dict[str, Any]]) -> None:
    """Insert new alerts and update stored ones in place (their triage history stays attached)."""
    now = datetime.now(timezone.utc)
    with store.write() as conn:
        have = set(conn.execute(select(AlertRow.id)).scalars())
        new = [{**r, "updated_at": now} for r in rows if r["id"] not in have]
        for r in rows:
            if r["id"] in have:
                values = {k: v for k, v in r.items() if k not in ("id", "created_at")}
                conn.execute(update(AlertRow).where(AlertRow.id == r["id"]).values(**values, updated_at=now))
        if new:
            conn.execute(AlertRow.__table__.insert(), new)


def record_triage(store: Store, alert_id: str, state: str, note: str, who: str, at: datetime | None = None) -> None:
    """Give an alert a state: its row says the current one, ``alert_triage`` keeps every one."""
    at = at or datetime.now(timezone.utc)
    with store.write() as conn:
        conn.execute(update(AlertRow).where(AlertRow.id == alert_id)
                     .values(state=state, note=note, who=who, triaged_at=at, updated_at=at))
        conn.execute(AlertTriageRow.__table__.insert(),
                     [{"alert_id": alert_id, "state": state, "note": note, "who": who, "at": at}])


def record_culprit(store: Store, alert_id: str, columns: dict[str, Any]) -> None:
    """Write what ``bisect --alert`` found on the alert: its ``culprit`` and ``culprit_*`` columns."""
    if not all(k == "culprit" or k.startswith("culprit_") for k in columns):
        raise ValueError(f"not culprit columns: {sorted(columns)}")
    with store.write() as conn:
        conn.execute(update(AlertRow).where(AlertRow.id == alert_id)
                     .values(**columns, updated_at=datetime.now(timezone.utc)))


def triage_history(store: Store, alert_id: str) -> list[dict[str, Any]]:
    t = AlertTriageRow
    with store.read() as conn:
        rows = conn.execute(select(t.state, t.note, t.who, t.at).where(t.alert_id == alert_id).order_by(t.id))
        return [dict(r) for r in rows.mappings()]
