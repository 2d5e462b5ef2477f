"""Alembic environment for the mmtrack store.

Run programmatically by :mod:`mmtrack.store.db`, which hands over an open
connection in ``config.attributes["connection"]``. Developers can also run
``alembic -c alembic.ini ...`` from the repository root: the store is then
``$MMTRACK_DB`` when set, else ``sqlalchemy.url`` of alembic.ini.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine

from mmtrack.store.db import normalize_url
from mmtrack.store.schema import metadata

config = context.config
target_metadata = metadata


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # ALTER support on SQLite
        compare_type=True,
    )


def _url() -> str:
    given = os.environ.get("MMTRACK_DB", "").strip()
    return normalize_url(given) if given else str(config.get_main_option("sqlalchemy.url"))


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(_url())
    with engine.connect() as connection:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
