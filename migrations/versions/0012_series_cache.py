"""series_cache: detect's columns of each series row, kept between runs

Revision ID: 0012_series_cache
Revises: 0011_series_appends
Create Date: 2026-12-03

``mmtrack update`` re-detects every series a new commit touched. Reading their whole
history from ``measurement`` (500,000 rows for 500 series x 1,000 commits) cost most of
its detect step. The cache holds each series row's run ids and medians as one blob,
labelled with the series' counters it was read at (``series.changes``, ``appends``), so
a series that only gained a newer point is read from its blob plus the new runs' rows.
An empty table is valid: the first detect after this revision fills it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_series_cache"
down_revision = "0011_series_appends"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "series_cache",
        sa.Column("series_id", sa.Integer(), nullable=False),
        sa.Column("changes", sa.Integer(), nullable=False),
        sa.Column("appends", sa.Integer(), nullable=False),
        sa.Column("max_run_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["series_id"], ["series.id"], name=op.f("fk_series_cache_series_id_series"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("series_id", name=op.f("pk_series_cache")),
    )


def downgrade() -> None:
    op.drop_table("series_cache")
