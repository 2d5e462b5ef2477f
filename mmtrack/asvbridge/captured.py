"""What a worker writes to stdout and stderr, captured in a file instead of reaching the terminal raw.

A benchmark's ``print`` can hold terminal control sequences (OSC 0/52/8 set the title, the clipboard, links;
CSI 2J clears the screen), and a worker that fails prints its own traceback. The parent gives each worker a file
(:func:`new_capture`), the worker points its fds 1 and 2 at it before anything else (:func:`redirect_into`), and
the parent reads back a summary (:func:`summary`): how much was written and its last line, escaped as names are.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..textsafe import term

TAIL_BYTES = 8192
LINE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Written:
    size: int  # bytes
    last_line: str  # escaped for a terminal, at most LINE_CHARS characters

    def note(self) -> str:
        return f"the benchmark wrote {self.size:,d} bytes to stdout/stderr; the last line: {self.last_line}"


def new_capture() -> Path:
    fd, name = tempfile.mkstemp(prefix="mmtrack-output-", suffix=".txt")
    os.close(fd)
    return Path(name)


def redirect_into(path: Path) -> None:
    """In the worker: fds 1 and 2 (and so ``print``, tracebacks, C code's writes) go to ``path`` from now on."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return term(lines[-1])[-LINE_CHARS:] if lines else ""


def summary(path: Path, since: int = 0) -> Written | None:
    """What was written to ``path`` after its first ``since`` bytes, or None for nothing; the file is left."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            if end <= since:
                return None
            f.seek(max(end - TAIL_BYTES, since))
            tail = f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    return Written(end - since, last_line(tail))


def taken(path: Path) -> Written | None:
    """The summary of ``path``, which is then removed."""
    try:
        return summary(path)
    finally:
        try:
            path.unlink()
        except OSError:
            pass
