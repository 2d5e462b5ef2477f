"""change points found by detect, and an index on commit dates

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('change_point',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('machine', sa.String(length=255), nullable=False),
    sa.Column('environment', sa.String(length=255), nullable=False),
    sa.Column('benchmark', sa.String(length=512), nullable=False),
    sa.Column('params', sa.Text(), nullable=False),
    sa.Column('section', sa.String(length=128), nullable=False),
    sa.Column('metric', sa.String(length=255), nullable=False),
    sa.Column('unit', sa.String(length=64), nullable=False),
    sa.Column('direction', sa.String(length=8), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('before_sha', sa.String(length=64), nullable=False),
    sa.Column('after_sha', sa.String(length=64), nullable=False),
    sa.Column('before_value', sa.Float(), nullable=False),
    sa.Column('after_value', sa.Float(), nullable=False),
    sa.Column('ratio', sa.Float(), nullable=False),
    sa.Column('p_value', sa.Float(), nullable=True),
    sa.Column('persists', sa.Boolean(), nullable=False),
    sa.Column('method', sa.String(length=64), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('detected_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_change_point'))
    )
    with op.batch_alter_table('change_point', schema=None) as batch_op:
        batch_op.create_index('ix_change_point_after_sha', ['after_sha'], unique=False)
        batch_op.create_index('ix_change_point_series', ['machine', 'environment', 'benchmark'], unique=False)

    with op.batch_alter_table('commit', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_commit_date'), ['date'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('commit', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_commit_date'))
    with op.batch_alter_table('change_point', schema=None) as batch_op:
        batch_op.drop_index('ix_change_point_series')
        batch_op.drop_index('ix_change_point_after_sha')
    op.drop_table('change_point')
