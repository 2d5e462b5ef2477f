"""drop ix_measurement_metric_result so series queries drive from runs, not from the metric

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

Without statistics, SQLite chose ix_measurement_metric_result for the series
query and scanned every measurement of the metric (all benchmarks, all
machines): 10x slower on a store of 20 series x 10,000 commits. The unique
(result_id, metric_id) constraint serves the lookup the series query needs.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("measurement", schema=None) as batch_op:
        batch_op.drop_index("ix_measurement_metric_result")


def downgrade() -> None:
    with op.batch_alter_table("measurement", schema=None) as batch_op:
        batch_op.create_index("ix_measurement_metric_result", ["metric_id", "result_id"], unique=False)
