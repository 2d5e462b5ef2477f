"""What a site is built from, as one key: a republish with nothing new compares it and stops.

The manifest of a build records this key (``state["source"]``). The next ``mmtrack publish``
works it out again before it reads any series; when it matches and the site's files are all
there, nothing is read and nothing is written.

The key covers the store's small tables whole (names, commits, runs, series rows, change
points, A/B and run verdicts, the schema revision) but not the big ones (result, measurement): every
change of a series' points bumps that series' counter (``models.Series.changes``), which the
series table carries. It also covers the selection (benchmark regex, machine), the site's
settings and the mmtrack version, so that none of them can change without a rebuild.

On SQLite the key is read with the standard library's ``sqlite3``, without importing
SQLAlchemy and Alembic (most of a republish's second), in one read transaction.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any, Callable, Sequence

from ..store.url import is_in_memory
from .model import SiteConfig

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
# changes neither the pages nor the key.
_CHANGE_POINT_SQL = (
    "SELECT machine, environment, benchmark, params, section, metric, unit, direction, kind, before_sha,"
    " after_sha, before_value, after_value, ratio, p_value, persists, method, extra FROM change_point"
    " ORDER BY machine, environment, benchmark, params, section, metric, unit, after_sha, kind, before_sha"
)


def store_digest(fetch: Callable[[str], Sequence[Sequence[Any]]]) -> str:
    """sha256 of the tables a site depends on, read through ``fetch(sql) -> rows``."""
    h = hashlib.sha256()
    for table, order in _WHOLE_TABLES:
        h.update(f"\0{table}\0".encode())
        for row in fetch(f"SELECT * FROM {table} ORDER BY {order}"):
            h.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
    h.update(b"\0change_point\0")
    for row in fetch(_CHANGE_POINT_SQL):
        h.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def source_key(store_digest_: str, config: SiteConfig, benchmark: str | None, machine: str | None) -> str:
    """The key a build records: the store's digest, the selection, the site settings, and the code that
    writes the pages (the mmtrack version, and the size and mtime of this package's files and of
    plotly.min.js, so that an edited page script or an upgraded plotly rebuilds without a version bump)."""
    from .. import __version__
    from .builder import FORMAT

    parts = [store_digest_, benchmark, machine, config.title, config.safe_commit_url, config.chunk_size,
             FORMAT, __version__, _code_stamp()]  # fmt: skip
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _code_stamp() -> list[tuple[str, int, int]]:
    here = Path(__file__).resolve().parent
    files = sorted([*here.glob("*.py"), *(here / "assets").glob("*")])
    try:
        import importlib.util

        spec = importlib.util.find_spec("plotly")  # found, not imported (plotly takes seconds to import)
        if spec is not None and spec.origin:
            files.append(Path(spec.origin).parent / "package_data" / "plotly.min.js")
    except (ImportError, ValueError):
        pass
    stamp = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        stamp.append((f.name, st.st_size, st.st_mtime_ns))
    return stamp


def sqlite_path(url: str) -> Path | None:
    """The file of a plain ``sqlite:///path`` URL; None for anything else (those take the full path)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url or is_in_memory(url):
        return None
    return Path(url[len(prefix):]).expanduser()


def sqlite_store_digest(path: Path) -> str | None:
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
        return store_digest(lambda sql: conn.execute(sql).fetchall())
    except sqlite3.Error:
        return None
    finally:
        conn.close()
