"""Errors a user can cause: one clear line, a documented exit code, no traceback."""

from __future__ import annotations

import re

EXIT_OK = 0
EXIT_FAILURES = 1  # a regression with --fail-on, or some inputs failed
EXIT_USAGE = 2  # a usage error or a failed benchmark
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it); finished work is kept
EXIT_TERMINATED = 143  # SIGTERM (128 + 15), as shells report it; finished work is kept


class Terminated(BaseException):
    """SIGTERM arrived: raised where the command is, so that its ``finally`` blocks end its children and remove its
    temporary folders, as Ctrl-C does (a BaseException: no ``except Exception`` of a command swallows it)."""


def raise_on_sigterm() -> None:
    """From now on SIGTERM raises :class:`Terminated` in the main thread (a verb may put its own handler over it)."""
    import signal

    def _raise(signum: int, frame: object) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, _raise)


class UserError(Exception):
    """Say what went wrong, where, and what to do; the CLI prints it as one line."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class StoreError(UserError):
    """The store cannot be opened, created or written (a bad --db, a read-only file, a newer schema)."""


def user_regex(pattern: str, option: str) -> re.Pattern[str]:
    """``pattern`` (given with ``option``, e.g. ``-b``) compiled, or one line saying why it is not a regex."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UserError(f"{option} {pattern!r} is not a regular expression ({exc}); give a Python regex, "
                        "e.g. 'time_.*'", EXIT_USAGE) from None


def os_reason(exc: OSError) -> str:
    """What the system said and on which path(s): "No such file or directory: /proc/x"."""
    paths = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{what}: {paths}" if paths else what


def is_relative_effect(value: float) -> bool:
    """A minimum relative effect a user may give (``--min-effect``, ``compare --threshold-for``):
    from 0 up to 10 (x11); NaN and inf are not."""
    return 0 <= value <= 10
