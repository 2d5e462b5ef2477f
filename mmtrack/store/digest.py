"""One hash of the store's small tables: what a site is built from, so that a republish with nothing new
can tell before it reads any series.

It covers the small tables whole (names, commits, runs, series rows, change points, A/B and run
verdicts, the schema revision) but not the big ones (result, measurement): every change of a
series' points bumps that series' counter (``schema.Series.changes``), which the series table
carries.

A plain SQLite file can be hashed with the standard library's ``sqlite3``, without importing
SQLAlchemy and Alembic (most of a republish's second), in one read transaction; this module
imports neither.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .bulk import fetch_sql
from .url import is_in_memory

if TYPE_CHECKING:
    from .db import Store

# (table, order): read whole; their rows are few (one per commit, run, series, name)
_WHOLE_TABLES = (
    ("alembic_version", "version_num"),
    ("machine", "id"),
    ("environment", "id"),
    ('"commit"', "id"),
    ("run", "id"),
    ("benchmark", "id"),
    ("metric", "id"),
    ("series", "id"),
    ("ab_verdict", "id"),
    ("run_verdict", "id"),
)
# Change points without their id and detection time: re-running detect with the same findings
# changes neither the pages nor the digest.
_CHANGE_POINT_SQL = (
    "SELECT machine, environment, benchmark, params, section, metric, unit, direction, kind, before_sha,"
    " after_sha, before_value, after_value, ratio, p_value, persists, method, extra FROM change_point"
    " ORDER BY machine, environment, benchmark, params, section, metric, unit, after_sha, kind, before_sha"
)


# Alerts without their update time: a re-detection that finds the same alerts changes neither.
_ALERT_SQL = (
    "SELECT id, before_sha, after_sha, kind, series, active, state, note, who, triaged_at, merged, merged_into,"
    " split_from, culprit, culprit_benchmark, culprit_metric, culprit_ratio, culprit_verdict FROM alert ORDER BY id"
)


def _digest(fetch: Callable[[str], Sequence[Sequence[Any]]]) -> str:
    """sha256 of the tables a site depends on, read through ``fetch(sql) -> rows``."""
    h = hashlib.sha256()
    for table, order in _WHOLE_TABLES:
        h.update(f"\0{table}\0".encode())
        for row in fetch(f"SELECT * FROM {table} ORDER BY {order}"):
            h.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
    h.update(b"\0change_point\0")
    for row in fetch(_CHANGE_POINT_SQL):
        h.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
    h.update(b"\0alert\0")
    for row in fetch(_ALERT_SQL):
        h.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def store_digest(store: Store) -> str:
    """The digest of an open store, in one read transaction."""
    with store.read() as conn:
        return _digest(lambda sql: fetch_sql(conn, sql))


def plain_sqlite_path(url: str) -> Path | None:
    """The file of a plain ``sqlite:///path`` URL; None for anything else (those take the full path). Unlike
    ``db.sqlite_path`` it parses nothing, so that it needs no SQLAlchemy."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url or is_in_memory(url):
        return None
    return Path(url[len(prefix):]).expanduser()


def sqlite_file_digest(path: Path) -> str | None:
    """:func:`store_digest` of a SQLite file read-only through the standard library; None when it cannot
    be read that way (missing, locked, not a store): the caller then takes the full path, which says why."""
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("BEGIN")  # one snapshot for every table
        return _digest(lambda sql: conn.execute(sql).fetchall())
    except sqlite3.Error:
        return None
    finally:
        conn.close()
