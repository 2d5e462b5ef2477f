"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path | str, text: str) -> Path:
    """Create parent folders, write a temporary file beside ``path``, fsync, rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def folder_problem(path: Path | str, what: str) -> str | None:
    """Why a folder cannot be created or written at ``path`` (one line naming ``what``), or None.

    Checked before any work starts: a path under a file, a file where the folder should be, or a
    nearest existing folder that is not writable.
    """
    path = Path(path)
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        return f"{what} {path}: {blocker} is a file, not a folder"
    nearest = next(p for p in (path, *path.parents) if p.exists())
    if not os.access(nearest, os.W_OK | os.X_OK):
        return f"{what} {path}: folder {nearest} is not writable"
    return None
