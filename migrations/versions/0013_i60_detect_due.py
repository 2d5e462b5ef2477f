"""detect_due: series and commits an import wrote that detect has not judged yet

Revision ID: 0013_i60_detect_due
Revises: 0012_series_cache
Create Date: 2026-12-07

``mmtrack update`` imports, then detects on the series the import touched. An update
killed between the two lost those series for good: the next run found nothing new to
import and so nothing to detect. The import now marks what it wrote in its own
transaction, and detect clears the marks in the transaction that stores its findings.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_i60_detect_due"
down_revision = "0013_i57_long_names"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "detect_due",
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["series_id"], ["series.id"], name=op.f("fk_detect_due_series_id_series"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("series_id", name=op.f("pk_detect_due")),
    )
    op.create_table(
        "detect_due_commit",
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("sha", name=op.f("pk_detect_due_commit")),
    )


def downgrade() -> None:
    op.drop_table("detect_due_commit")
    op.drop_table("detect_due")
