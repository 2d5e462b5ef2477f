"""The history store: every metric of every benchmark per commit, in SQL.

``db`` opens a store (URL, engine, upgrade on first use), ``models`` holds the
schema, ``ingest`` writes asv results and engine runs, ``queries`` reads plain
records (``mmtrack.results``) back. Nothing here runs at import time.
"""

from __future__ import annotations

from .db import Store, open_store, resolve_url

__all__ = ["Store", "open_store", "resolve_url"]
