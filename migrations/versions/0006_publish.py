"""series.changes: a counter each write to a series bumps, so publish reads only what changed

Revision ID: 0006_publish
Revises: 0005
Create Date: 2026-12-02

Every import or engine run that adds, replaces or removes points of a series
adds one to its ``changes``. A published site's manifest records the counters
it was built from; a republish compares them and reads only the series whose
counter moved (none at all when nothing is new). Existing rows start at 1: a
site built before this revision has no counters and is rebuilt once.

``run.source_stat`` ("size:mtime_ns" of the imported file) lets a re-import skip
an unchanged file without reading and hashing it: `mmtrack update` in CI finds
the one new file among a thousand in milliseconds.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_publish"
down_revision = "0005"
branch_labels = None
depends_on = None


# Plain ALTER TABLE (SQLite >= 3.35 drops a column in place): a batch copy of ``series`` would
# have to drop the table ``measurement`` references.
def upgrade() -> None:
    op.add_column("series", sa.Column("changes", sa.Integer(), nullable=False, server_default="1"))
    op.add_column("run", sa.Column("source_stat", sa.String(64), nullable=True))


def downgrade() -> None:
    op.drop_column("run", "source_stat")
    op.drop_column("series", "changes")
