"""The history store: every metric of every benchmark per commit, in SQL.

``db`` opens a store (URL, engine, upgrade on first use), ``schema`` holds the
tables (``models`` the ORM classes over them, for session writers); writes: ``ingest`` (runs: the one write path) and ``asv_import`` (asv results, through ingest),
``writes`` (change points, run verdicts, the series cache); reads: ``reads``
(plain records, ``mmtrack.results``), ``selection`` (what a command looks at)
and ``digest`` (one hash of the small tables). Nothing here runs at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .url import resolve_url

if TYPE_CHECKING:
    from .db import Store, open_store

__all__ = ["Store", "open_store", "resolve_url"]


def __getattr__(name: str) -> Any:
    # db imports SQLAlchemy: load it on first use, so resolving a URL stays cheap.
    if name in ("Store", "open_store"):
        from . import db

        return getattr(db, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
