"""the measurement setup of an engine result (throughput, domain, backend)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

``mmtrack bench`` compares a run only with an earlier run measured the same
way; the setup of each case is what it checks beside the code version.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('result', sa.Column('setup', sa.JSON(), nullable=True))


def downgrade() -> None:
    # Not batch mode: on SQLite it would copy ``result`` into a new table, and dropping the
    # old one cascades to every measurement. SQLite >= 3.35 drops a column in place.
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE result DROP COLUMN setup')
    else:
        op.drop_column('result', 'setup')
