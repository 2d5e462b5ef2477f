"""core tables: machine, environment, commit, run, benchmark, metric, result, measurement

Revision ID: 0001
Revises: 
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('benchmark',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=512), nullable=False),
    sa.Column('params', sa.Text(), nullable=False),
    sa.Column('version', sa.String(length=128), nullable=False),
    sa.Column('unit', sa.String(length=64), nullable=False),
    sa.Column('type', sa.String(length=32), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_benchmark')),
    sa.UniqueConstraint('name', 'params', 'version', name=op.f('uq_benchmark_name_params_version'))
    )
    op.create_table('commit',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('sha', sa.String(length=64), nullable=False),
    sa.Column('date', sa.DateTime(timezone=True), nullable=True),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('branches', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_commit')),
    sa.UniqueConstraint('sha', name=op.f('uq_commit_sha'))
    )
    op.create_table('environment',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('info', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_environment')),
    sa.UniqueConstraint('name', name=op.f('uq_environment_name'))
    )
    op.create_table('machine',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('info', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_machine')),
    sa.UniqueConstraint('name', name=op.f('uq_machine_name'))
    )
    op.create_table('metric',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('section', sa.String(length=128), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('unit', sa.String(length=64), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_metric')),
    sa.UniqueConstraint('section', 'name', 'unit', name=op.f('uq_metric_section_name_unit'))
    )
    op.create_table('run',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('machine_id', sa.Integer(), nullable=False),
    sa.Column('environment_id', sa.Integer(), nullable=False),
    sa.Column('commit_id', sa.Integer(), nullable=False),
    sa.Column('dirty', sa.Boolean(), nullable=False),
    sa.Column('tool_versions', sa.JSON(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('suite', sa.String(length=255), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=False),
    sa.Column('source', sa.String(length=1024), nullable=True),
    sa.Column('source_digest', sa.String(length=64), nullable=True),
    sa.ForeignKeyConstraint(['commit_id'], ['commit.id'], name=op.f('fk_run_commit_id_commit')),
    sa.ForeignKeyConstraint(['environment_id'], ['environment.id'], name=op.f('fk_run_environment_id_environment')),
    sa.ForeignKeyConstraint(['machine_id'], ['machine.id'], name=op.f('fk_run_machine_id_machine')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_run')),
    sa.UniqueConstraint('source', name=op.f('uq_run_source'))
    )
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.create_index('ix_run_commit', ['commit_id'], unique=False)
        batch_op.create_index('ix_run_series', ['machine_id', 'environment_id', 'commit_id'], unique=False)
        batch_op.create_index('ix_run_started_at', ['started_at'], unique=False)

    op.create_table('result',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('benchmark_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=8), nullable=False),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('value', sa.Float(), nullable=True),
    sa.Column('ci_low', sa.Float(), nullable=True),
    sa.Column('ci_high', sa.Float(), nullable=True),
    sa.Column('q1', sa.Float(), nullable=True),
    sa.Column('q3', sa.Float(), nullable=True),
    sa.Column('number', sa.Integer(), nullable=True),
    sa.Column('repeat', sa.Integer(), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('duration', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['benchmark_id'], ['benchmark.id'], name=op.f('fk_result_benchmark_id_benchmark')),
    sa.ForeignKeyConstraint(['run_id'], ['run.id'], name=op.f('fk_result_run_id_run'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_result')),
    sa.UniqueConstraint('run_id', 'benchmark_id', name=op.f('uq_result_run_id_benchmark_id'))
    )
    with op.batch_alter_table('result', schema=None) as batch_op:
        batch_op.create_index('ix_result_benchmark_run', ['benchmark_id', 'run_id'], unique=False)

    op.create_table('measurement',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('result_id', sa.Integer(), nullable=False),
    sa.Column('metric_id', sa.Integer(), nullable=False),
    sa.Column('mean', sa.Float(), nullable=True),
    sa.Column('median', sa.Float(), nullable=True),
    sa.Column('p95', sa.Float(), nullable=True),
    sa.Column('min', sa.Float(), nullable=True),
    sa.Column('max', sa.Float(), nullable=True),
    sa.Column('q1', sa.Float(), nullable=True),
    sa.Column('q3', sa.Float(), nullable=True),
    sa.Column('ci_low', sa.Float(), nullable=True),
    sa.Column('ci_high', sa.Float(), nullable=True),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('values', sa.JSON(), nullable=True),
    sa.Column('direction', sa.String(length=8), nullable=False),
    sa.Column('format', sa.String(length=8), nullable=False),
    sa.Column('display_name', sa.String(length=255), nullable=True),
    sa.ForeignKeyConstraint(['metric_id'], ['metric.id'], name=op.f('fk_measurement_metric_id_metric')),
    sa.ForeignKeyConstraint(['result_id'], ['result.id'], name=op.f('fk_measurement_result_id_result'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_measurement')),
    sa.UniqueConstraint('result_id', 'metric_id', name=op.f('uq_measurement_result_id_metric_id'))
    )
    with op.batch_alter_table('measurement', schema=None) as batch_op:
        batch_op.create_index('ix_measurement_metric_result', ['metric_id', 'result_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('measurement', schema=None) as batch_op:
        batch_op.drop_index('ix_measurement_metric_result')

    op.drop_table('measurement')
    with op.batch_alter_table('result', schema=None) as batch_op:
        batch_op.drop_index('ix_result_benchmark_run')

    op.drop_table('result')
    with op.batch_alter_table('run', schema=None) as batch_op:
        batch_op.drop_index('ix_run_started_at')
        batch_op.drop_index('ix_run_series')
        batch_op.drop_index('ix_run_commit')

    op.drop_table('run')
    op.drop_table('metric')
    op.drop_table('machine')
    op.drop_table('environment')
    op.drop_table('commit')
    op.drop_table('benchmark')
