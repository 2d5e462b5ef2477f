"""Reading many rows fast: literal statements straight from the driver's cursor, and the collector
paused while records are built. Plain standard library, so that a caller that must not import
SQLAlchemy (``digest``) can use it too."""

from __future__ import annotations

import contextlib
import gc
from typing import Any, Iterator


def fetch_sql(conn: Any, sql: str) -> list[Any]:
    """Rows of a literal statement as plain tuples, from the driver's cursor on SQLite (see reads.points._fetch)."""
    if conn.dialect.name != "sqlite":
        return [tuple(r) for r in conn.exec_driver_sql(sql).all()]
    cursor = conn.connection.driver_connection.cursor()
    try:
        return cursor.execute(sql).fetchall()
    finally:
        cursor.close()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while records are built in bulk: tens of thousands of
    new objects would trigger collections that traverse the whole (growing) heap for nothing,
    since rows and records cannot form cycles. Nests; restores the previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
