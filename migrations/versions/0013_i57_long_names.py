"""Names as text: any name asv writes is stored whole

Revision ID: 0013_i57_long_names
Revises: 0012_series_cache
Create Date: 2026-12-07

asv builds environment names from the whole requirement matrix (530 characters is real), and
the 255-character columns turned such histories away. Machine, environment, benchmark and metric
names, units, display names, run hosts and suites, and the verdict tables' series names become
TEXT. Only an index entry stays bounded on PostgreSQL; the store checks a name in a key against
``schema`` limits (``Column.info["limit"]``) before it writes, on both backends alike.

SQLite: the declared types are rewritten in ``sqlite_master`` (SQLite's documented procedure for a
change that leaves the stored records as they are: VARCHAR and TEXT have the same affinity). A
batch copy would drop ``run`` and ``machine``, and with foreign keys on, a drop cascades.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0013_i57_long_names"
down_revision = "0012_series_cache"
branch_labels = None
depends_on = None

_SERIES_NAMES = {"machine": 255, "environment": 255, "benchmark": 512, "section": 128, "metric": 255, "unit": 64}

# table -> {column: its former VARCHAR length}
WIDENED: dict[str, dict[str, int]] = {
    "machine": {"name": 255},
    "environment": {"name": 255},
    "run": {"suite": 255, "host": 255},
    "benchmark": {"name": 512, "unit": 64},
    "metric": {"section": 128, "name": 255, "unit": 64},
    "series": {"display_name": 255},
    "change_point": _SERIES_NAMES,
    "ab_verdict": _SERIES_NAMES,
    "run_verdict": _SERIES_NAMES,
}


def _sqlite_retype(to_text: bool) -> None:
    """Rewrite the declared type of each widened column in the tables' CREATE statements."""
    conn = op.get_bind()
    version = conn.exec_driver_sql("PRAGMA schema_version").scalar()
    conn.exec_driver_sql("PRAGMA writable_schema = ON")
    try:
        for table, columns in WIDENED.items():
            sql = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).scalar()
            if sql is None:
                continue
            for column, length in columns.items():
                old, new = (rf"VARCHAR\({length}\)", "TEXT") if to_text else ("TEXT", f"VARCHAR({length})")
                sql = re.sub(rf'(\n\s*"?{column}"?\s+){old}(?=[\s,])', rf"\g<1>{new}", sql, count=1)
            conn.exec_driver_sql(
                "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (sql, table))
        conn.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")  # other connections reread the schema
    finally:
        conn.exec_driver_sql("PRAGMA writable_schema = OFF")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_retype(to_text=True)
        return
    for table, columns in WIDENED.items():
        for column, length in columns.items():
            op.alter_column(table, column, type_=sa.Text(), existing_type=sa.String(length), existing_nullable=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_retype(to_text=False)
        return
    for table, columns in WIDENED.items():
        for column, length in columns.items():
            op.alter_column(table, column, type_=sa.String(length), existing_type=sa.Text(), existing_nullable=False)
