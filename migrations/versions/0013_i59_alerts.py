"""alerts: change points grouped by cause, with triage states that stick

Revision ID: 0013_i59_alerts
Revises: 0012_series_cache
Create Date: 2026-12-07

``detect`` and ``update`` group the change points whose commit ranges overlap into alerts (one per cause) with a
stable id; a team marks each acknowledged, invalid, wontfix, fixed or backed-out (``mmtrack alerts``). ``alert``
holds each alert, its series and its current state; ``alert_triage`` every state given, who gave it and when.
Empty tables are valid: the next detect fills ``alert``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_i59_alerts"
down_revision = "0013_i60_detect_due"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alert",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("before_sha", sa.String(64), nullable=False),
        sa.Column("after_sha", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("series", sa.JSON(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("who", sa.String(255), nullable=False),
        sa.Column("triaged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("merged", sa.JSON(), nullable=False),
        sa.Column("merged_into", sa.String(32), nullable=True),
        sa.Column("split_from", sa.String(32), nullable=True),
        sa.Column("culprit", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert")),
    )
    op.create_index("ix_alert_active_state", "alert", ["active", "state"])
    op.create_table(
        "alert_triage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("alert_id", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("who", sa.String(255), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["alert_id"], ["alert.id"], name=op.f("fk_alert_triage_alert_id_alert"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_triage")),
    )
    op.create_index(op.f("ix_alert_triage_alert_id"), "alert_triage", ["alert_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_alert_triage_alert_id"), table_name="alert_triage")
    op.drop_table("alert_triage")
    op.drop_index("ix_alert_active_state", table_name="alert")
    op.drop_table("alert")
