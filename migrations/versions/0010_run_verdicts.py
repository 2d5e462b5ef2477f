"""mmtrack run's comparison with the previous commit, stored per row (run_verdict)

Revision ID: 0010_run_verdicts
Revises: 0008_ab
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010_run_verdicts'
down_revision = '0008_ab'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('run_verdict',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('machine', sa.String(length=255), nullable=False),
    sa.Column('environment', sa.String(length=255), nullable=False),
    sa.Column('benchmark', sa.String(length=512), nullable=False),
    sa.Column('params', sa.Text(), nullable=False),
    sa.Column('section', sa.String(length=128), nullable=False),
    sa.Column('metric', sa.String(length=255), nullable=False),
    sa.Column('unit', sa.String(length=64), nullable=False),
    sa.Column('before_sha', sa.String(length=64), nullable=False),
    sa.Column('after_sha', sa.String(length=64), nullable=False),
    sa.Column('verdict', sa.String(length=16), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=True),
    sa.Column('ratio', sa.Float(), nullable=True),
    sa.Column('before_value', sa.Float(), nullable=True),
    sa.Column('after_value', sa.Float(), nullable=True),
    sa.Column('p_value', sa.Float(), nullable=True),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run_verdict'))
    )
    with op.batch_alter_table('run_verdict', schema=None) as batch_op:
        batch_op.create_index('ix_run_verdict_after_sha', ['after_sha'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('run_verdict', schema=None) as batch_op:
        batch_op.drop_index('ix_run_verdict_after_sha')
    op.drop_table('run_verdict')
