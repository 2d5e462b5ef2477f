"""alert culprit: what ``bisect --alert`` found, and how

Revision ID: 0014_i59_culprit
Revises: 0013_i59_alerts
Create Date: 2026-12-07

``mmtrack bisect --alert ID`` narrows an alert's commit range on one machine and writes the culprit on the alert:
the commit (``culprit``, there since 0013), the series it was judged on, its ratio against its parent, the verdict,
how many commits were measured out of how many in the range, the instrument, the machine and when. Existing alerts
hold no culprit: the columns are nullable.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_i59_culprit"
down_revision = "0013_i59_alerts"
branch_labels = None
depends_on = None

COLUMNS = (
    ("culprit_benchmark", sa.Text()),
    ("culprit_params", sa.Text()),
    ("culprit_metric", sa.Text()),
    ("culprit_machine", sa.Text()),
    ("culprit_ratio", sa.Float()),
    ("culprit_verdict", sa.String(64)),
    ("culprit_measured", sa.Integer()),
    ("culprit_commits", sa.Integer()),
    ("culprit_instrument", sa.String(16)),
    ("culprit_at", sa.DateTime(timezone=True)),
)


# Plain ALTER TABLE, as in 0011: nullable columns need no table copy on SQLite.
def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("alert", sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    for name, _ in reversed(COLUMNS):
        op.drop_column("alert", name)
