"""series table; measurements clustered by series, samples packed as float64

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

Reading one series of 10,000 commits took some 80 ms, most of it in two places:
every measurement row sat on its own page (rows of all series interleaved, in
insertion order), and 100,000 samples were parsed from JSON text. Now a
``series`` row names each (machine, environment, benchmark case, metric); the
measurement table is keyed by (series_id, result_id), without a rowid on
SQLite, so a series is one contiguous range; and per-sample values are
little-endian float64 (NaN where a sample has no value). What is constant
along a series (the metric's direction, format and display name) moves to the
series row, so a point is fewer values to store and to read. ``position``
keeps the order of the metrics of a result, which the dropped ``id`` gave.
``ix_result_benchmark_run`` goes: it served the old series query only, and
every import paid for it (a run's results land on as many of its pages as
the run has benchmarks).

The old table is copied into the new one in key order (SQLite writes full
pages that way), then dropped: nothing references ``measurement``, so unlike
``result`` in 0003 the drop cascades nowhere.
"""

from __future__ import annotations

import json
import struct

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

STATS = ('mean', 'median', 'p95', 'min', 'max', 'q1', 'q3', 'ci_low', 'ci_high', 'count')
CHUNK = 5000
# the series row of a measurement in the old table x (joined to its result r and run)
SERIES_OF_X = (
    'JOIN series s ON s.machine_id = run.machine_id AND s.environment_id = run.environment_id '
    'AND s.benchmark_id = r.benchmark_id AND s.metric_id = x.metric_id AND s.direction = x.direction '
    "AND s.format = x.format AND s.display_name = COALESCE(x.display_name, '') "
)


def _stat_columns() -> list[sa.Column]:
    return [
        *(sa.Column(n, sa.Float(), nullable=True) for n in STATS[:-1]),
        sa.Column('count', sa.Integer(), nullable=False),
    ]


def _pack(text: str | None) -> bytes | None:
    if text is None:
        return None
    values = json.loads(text) if isinstance(text, str) else text
    if values is None:
        return None
    return struct.pack(f'<{len(values)}d', *(float('nan') if v is None else v for v in values))


def _unpack(blob: bytes | None) -> str | None:
    if blob is None:
        return None
    values = struct.unpack(f'<{len(blob) >> 3}d', bytes(blob))
    return json.dumps([None if v != v else v for v in values])


def _copied(names: tuple[str, ...]) -> str:
    return ', '.join(f'x.{n}' for n in names)


def _register(bind, name: str, fn) -> bool:
    """A Python function callable from SQL (SQLite only); False elsewhere."""
    if bind.dialect.name != 'sqlite':
        return False
    bind.connection.driver_connection.create_function(name, 1, fn, deterministic=True)
    return True


def _convert_values(bind, select_sql: str, update_sql: str, convert) -> None:
    """Fill a values column in Python (PostgreSQL), CHUNK rows at a time. ``select_sql`` gives
    (key a, key b, old value, ascending primary key of the table read) after ``:last``."""
    last = None
    while True:
        rows = bind.execute(sa.text(select_sql), {'last': last if last is not None else -1, 'n': CHUNK}).all()
        if not rows:
            return
        bind.execute(sa.text(update_sql), [{'a': r[0], 'b': r[1], 'v': convert(r[2])} for r in rows])
        last = rows[-1][-1]


def upgrade() -> None:
    bind = op.get_bind()
    op.create_table(
        'series',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('machine_id', sa.Integer(), nullable=False),
        sa.Column('environment_id', sa.Integer(), nullable=False),
        sa.Column('benchmark_id', sa.Integer(), nullable=False),
        sa.Column('metric_id', sa.Integer(), nullable=False),
        sa.Column('direction', sa.String(length=8), nullable=False),
        sa.Column('format', sa.String(length=8), nullable=False),
        sa.Column('display_name', sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(['benchmark_id'], ['benchmark.id'], name='fk_series_benchmark_id_benchmark'),
        sa.ForeignKeyConstraint(['environment_id'], ['environment.id'], name='fk_series_environment_id_environment'),
        sa.ForeignKeyConstraint(['machine_id'], ['machine.id'], name='fk_series_machine_id_machine'),
        sa.ForeignKeyConstraint(['metric_id'], ['metric.id'], name='fk_series_metric_id_metric'),
        sa.PrimaryKeyConstraint('id', name='pk_series'),
        sa.UniqueConstraint('machine_id', 'environment_id', 'benchmark_id', 'metric_id', 'direction', 'format',
                            'display_name', name='uq_series_identity'),
    )
    joins = (
        'FROM measurement x JOIN result r ON r.id = x.result_id JOIN run ON run.id = r.run_id '
    )
    op.execute(
        'INSERT INTO series (machine_id, environment_id, benchmark_id, metric_id, direction, format, display_name) '
        'SELECT DISTINCT run.machine_id, run.environment_id, r.benchmark_id, x.metric_id, x.direction, x.format, '
        f"COALESCE(x.display_name, '') {joins}"
        'ORDER BY 1, 2, 3, 4, 5, 6, 7'
    )
    if bind.dialect.name != 'sqlite':  # index names are per schema there: free the old ones
        op.drop_constraint('uq_measurement_result_id_metric_id', 'measurement', type_='unique')
        op.drop_constraint('pk_measurement', 'measurement', type_='primary')
    op.create_table(
        'measurement_new',
        sa.Column('series_id', sa.Integer(), nullable=False),
        sa.Column('result_id', sa.Integer(), nullable=False),
        sa.Column('position', sa.SmallInteger(), nullable=False),
        *_stat_columns(),
        sa.Column('values', sa.LargeBinary(), nullable=True),
        sa.ForeignKeyConstraint(['result_id'], ['result.id'], name='fk_measurement_result_id_result', ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['series_id'], ['series.id'], name='fk_measurement_series_id_series'),
        sa.PrimaryKeyConstraint('series_id', 'result_id', name='pk_measurement'),
        sqlite_with_rowid=False,
    )
    packed = 'mmtrack_pack(x."values")' if _register(bind, 'mmtrack_pack', _pack) else 'NULL'
    op.execute(
        f'INSERT INTO measurement_new (series_id, result_id, position, {", ".join(STATS)}, "values") '
        f'SELECT s.id, x.result_id, ROW_NUMBER() OVER (PARTITION BY x.result_id ORDER BY x.id) - 1, '
        f'{_copied(STATS)}, {packed} {joins}{SERIES_OF_X}'
        'ORDER BY s.id, x.result_id'
    )
    if packed == 'NULL':
        _convert_values(
            bind,
            f'SELECT s.id, x.result_id, x."values", x.id {joins}{SERIES_OF_X}'
            'WHERE x."values" IS NOT NULL AND x.id > :last ORDER BY x.id LIMIT :n',
            'UPDATE measurement_new SET "values" = :v WHERE series_id = :a AND result_id = :b',
            _pack,
        )
    op.drop_table('measurement')
    op.rename_table('measurement_new', 'measurement')
    op.create_index('ix_measurement_result_id', 'measurement', ['result_id'], unique=False)
    op.drop_index('ix_result_benchmark_run', table_name='result')


def downgrade() -> None:
    bind = op.get_bind()
    op.create_index('ix_result_benchmark_run', 'result', ['benchmark_id', 'run_id'], unique=False)
    if bind.dialect.name != 'sqlite':
        op.drop_constraint('pk_measurement', 'measurement', type_='primary')
    op.drop_index('ix_measurement_result_id', table_name='measurement')
    op.create_table(
        'measurement_old',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('result_id', sa.Integer(), nullable=False),
        sa.Column('metric_id', sa.Integer(), nullable=False),
        *_stat_columns(),
        sa.Column('values', sa.JSON(), nullable=True),
        sa.Column('direction', sa.String(length=8), nullable=False),
        sa.Column('format', sa.String(length=8), nullable=False),
        sa.Column('display_name', sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(['metric_id'], ['metric.id'], name='fk_measurement_metric_id_metric'),
        sa.ForeignKeyConstraint(['result_id'], ['result.id'], name='fk_measurement_result_id_result', ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name='pk_measurement'),
        sa.UniqueConstraint('result_id', 'metric_id', name='uq_measurement_result_id_metric_id'),
    )
    unpacked = 'mmtrack_unpack(x."values")' if _register(bind, 'mmtrack_unpack', _unpack) else 'NULL'
    op.execute(
        f'INSERT INTO measurement_old (id, result_id, metric_id, {", ".join(STATS)}, "values", direction, format, '
        'display_name) '
        f'SELECT ROW_NUMBER() OVER (ORDER BY x.result_id, x.position), x.result_id, s.metric_id, '
        f"{_copied(STATS)}, {unpacked}, s.direction, s.format, NULLIF(s.display_name, '') "
        'FROM measurement x JOIN series s ON s.id = x.series_id ORDER BY x.result_id, x.position'
    )
    if unpacked == 'NULL':
        _convert_values(
            bind,
            'SELECT o.result_id, o.metric_id, x."values", o.id FROM measurement_old o '
            'JOIN measurement x ON x.result_id = o.result_id JOIN series s ON s.id = x.series_id '
            'AND s.metric_id = o.metric_id '
            'WHERE x."values" IS NOT NULL AND o.id > :last ORDER BY o.id LIMIT :n',
            'UPDATE measurement_old SET "values" = CAST(:v AS JSON) WHERE result_id = :a AND metric_id = :b',
            _unpack,
        )
        op.execute("SELECT setval(pg_get_serial_sequence('measurement_old', 'id'), "
                   "COALESCE((SELECT max(id) FROM measurement_old), 0) + 1, false)")
    op.drop_table('measurement')
    op.rename_table('measurement_old', 'measurement')
    op.drop_table('series')
