"""A/B pairs of runs (continuous, confirm, bisect) and A/B verdicts on suspected regressions

Revision ID: 0008_ab
Revises: 0006_publish
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008_ab'
down_revision = '0006_publish'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('ab_pair',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('purpose', sa.String(length=16), nullable=False),
    sa.Column('base_run_id', sa.Integer(), nullable=False),
    sa.Column('head_run_id', sa.Integer(), nullable=False),
    sa.Column('rounds', sa.Integer(), nullable=False),
    sa.Column('order', sa.String(length=255), nullable=False),
    sa.Column('seconds', sa.Float(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['base_run_id'], ['run.id'], name=op.f('fk_ab_pair_base_run_id_run'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['head_run_id'], ['run.id'], name=op.f('fk_ab_pair_head_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ab_pair'))
    )
    with op.batch_alter_table('ab_pair', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ab_pair_base_run_id'), ['base_run_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_ab_pair_head_run_id'), ['head_run_id'], unique=False)
    op.create_table('ab_verdict',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('pair_id', sa.Integer(), nullable=True),
    sa.Column('machine', sa.String(length=255), nullable=False),
    sa.Column('environment', sa.String(length=255), nullable=False),
    sa.Column('benchmark', sa.String(length=512), nullable=False),
    sa.Column('params', sa.Text(), nullable=False),
    sa.Column('section', sa.String(length=128), nullable=False),
    sa.Column('metric', sa.String(length=255), nullable=False),
    sa.Column('unit', sa.String(length=64), nullable=False),
    sa.Column('before_sha', sa.String(length=64), nullable=False),
    sa.Column('after_sha', sa.String(length=64), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('ratio', sa.Float(), nullable=True),
    sa.Column('p_value', sa.Float(), nullable=True),
    sa.Column('rounds', sa.Integer(), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['pair_id'], ['ab_pair.id'], name=op.f('fk_ab_verdict_pair_id_ab_pair'),
                            ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ab_verdict'))
    )
    with op.batch_alter_table('ab_verdict', schema=None) as batch_op:
        batch_op.create_index('ix_ab_verdict_after_sha', ['after_sha'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('ab_verdict', schema=None) as batch_op:
        batch_op.drop_index('ix_ab_verdict_after_sha')
    op.drop_table('ab_verdict')
    with op.batch_alter_table('ab_pair', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ab_pair_head_run_id'))
        batch_op.drop_index(batch_op.f('ix_ab_pair_base_run_id'))
    op.drop_table('ab_pair')
