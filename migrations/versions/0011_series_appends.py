"""series.appends: how many of a series' changes were appends of a newer point

Revision ID: 0011_series_appends
Revises: 0010_run_verdicts
Create Date: 2026-12-03

``series.changes`` counts every write that adds, replaces or removes a point; ``appends``
counts those that only added one point at a commit dated after every commit the series'
machine and environment had a run of (ingest._appends_newest). A site built when a series
stood at (changes, appends) = (c, a) and finding (c + d, a + d) knows its old points are
untouched and the d new ones come after them: it reads and rewrites only its last chunk.
Any other write moves ``changes`` alone, and publish reads the whole series again.
Existing rows start at 0: the first build after this revision reads everything once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_series_appends"
down_revision = "0010_run_verdicts"
branch_labels = None
depends_on = None


# Plain ALTER TABLE, as in 0006: a batch copy of ``series`` would have to drop the table ``measurement`` references.
def upgrade() -> None:
    op.add_column("series", sa.Column("appends", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    op.drop_column("series", "appends")
