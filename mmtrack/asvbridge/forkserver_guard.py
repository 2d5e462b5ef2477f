"""Imported by the fork server (worker.PRELOAD) for one effect: the fork server dies with
``mmtrack bench``, and its workers with it (each dies with its parent, worker.guard_worker).

Every worker holds the fork server's "alive" pipe open, so a fork server whose client was SIGKILLed
would otherwise wait for its busy workers forever. Imported anywhere else, it does nothing.
"""

from __future__ import annotations

import os
import sys
from multiprocessing import forkserver

from ..forked import die_with_parent


def _in_fork_server() -> bool:
    """Whether this import runs inside multiprocessing's fork server (its preload loop is on the stack)."""
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code is forkserver.main.__code__:
            return True
        frame = frame.f_back
    return False


if _in_fork_server():
    die_with_parent(os.getppid())
