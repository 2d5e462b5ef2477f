"""``mmtrack db upgrade`` / ``mmtrack db current``: the store's schema revision."""

from __future__ import annotations

from dataclasses import dataclass

from ..store.db import head_revision, open_store, redact, sqlite_path, upgrade


@dataclass(frozen=True, slots=True)
class RevisionReport:
    url: str  # password hidden
    before: str | None
    current: str | None
    head: str
    exists: bool = True  # False: no SQLite file there (db current creates nothing)

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head


def db_upgrade(url: str) -> RevisionReport:
    """Create the store or upgrade it to the newest schema revision."""
    store = open_store(url, upgrade_schema=False)
    try:
        before, after = upgrade(store)
    finally:
        store.close()
    return RevisionReport(redact(url), before, after, head_revision())


def db_current(url: str) -> RevisionReport:
    """The store's schema revision, without changing anything (not even creating it)."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return RevisionReport(redact(url), None, None, head_revision(), exists=False)
    store = open_store(url, upgrade_schema=False)
    try:
        current = store.current_revision()
    finally:
        store.close()
    return RevisionReport(redact(url), current, current, head_revision())
