"""Which database the store is: the URL from ``--db``, ``$MMTRACK_DB`` or the project.

Kept apart from ``db`` so the CLI can resolve ``--db`` without importing SQLAlchemy
(about a second on a loaded machine) before ``mmtrack bench`` takes its first sample.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..vcs import project_root

ENV_VAR = "MMTRACK_DB"
DEFAULT_RELATIVE = Path(".mmtrack") / "mmtrack.db"


def resolve_url(cli_value: str | None = None) -> str:
    """The database URL: ``--db``, else ``$MMTRACK_DB``, else the project's SQLite file.

    A value without ``://`` is taken as a SQLite file path.
    """
    value = cli_value or os.environ.get(ENV_VAR) or ""
    if not value.strip():
        return f"sqlite:///{project_root() / DEFAULT_RELATIVE}"
    return normalize_url(value.strip())


def normalize_url(value: str) -> str:
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser().resolve()}"
    for plain in ("postgresql://", "postgres://"):
        if value.startswith(plain):  # psycopg 3 is the driver mmtrack ships with
            return "postgresql+psycopg://" + value[len(plain) :]
    return value


def is_in_memory(url: str) -> bool:
    """``sqlite://``, ``sqlite:///`` or ``...:memory:``: a SQLite store that is gone when the process exits."""
    scheme, sep, rest = url.partition("://")
    database = rest[1:] if rest.startswith("/") else rest
    return bool(sep) and scheme.split("+")[0] == "sqlite" and database.split("?")[0] in ("", ":memory:")


def redact(url: str) -> str:
    """The URL with its password hidden (``***``, as SQLAlchemy renders it), without importing SQLAlchemy."""
    scheme, sep, rest = url.partition("://")
    netloc = rest.split("/", 1)[0]
    creds, at, host = netloc.rpartition("@")  # a password may itself hold "@"
    if not sep or not at or ":" not in creds:
        return url
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}{rest[len(netloc):]}"
