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


def unreadable_entry(path: Path, what: str = "results file") -> str | None:
    """Why ``path`` is not a regular file to read (dangling or looping link, folder, FIFO, ...), or None.

    Every input file gets this check before it is opened: a FIFO would block the read forever."""
    import errno
    import stat

    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "cannot read: a symbolic link loop"
        if exc.errno == errno.ENOENT and path.is_symlink():
            return f"cannot read: a dangling symbolic link (to {os.readlink(path)})"
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode) and not os.access(path, os.R_OK | os.X_OK):
        return "cannot read the folder: permission denied"
    kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
    return f"cannot read: {kind}, not a {what}"
