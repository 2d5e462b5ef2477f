"""A CPU-bound map split with one forked child process: the per-commit commands' second core.

``mmtrack update`` detects change points on every series a CI run touched (500 of them: about
0.4 s of numpy on one core). The items' work needs no state but the items themselves, which a
forked child already holds, so the child computes the second half and sends back only its results,
pickled through a pipe. A child that fails costs only the time: its half is then computed here.

Fork only on Linux (unsafe on macOS, absent on Windows) with two CPUs or more. The child never
touches what it inherits beyond the items (no database connection, no thread's state), runs
no cleanup of the parent's (``os._exit``), and dies with the parent if that is killed first.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def can_fork() -> bool:
    """Whether a forked worker can help here: Linux (fork is unsafe on macOS, absent on Windows), 2+ CPUs."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and len(os.sched_getaffinity(0)) > 1


def map_split(
    fn: Callable[[T], R], items: Sequence[T], *, min_items: int, progress: Callable[[int, int], None] | None = None,
    child_start: Callable[[], None] | None = None,
) -> list[R]:
    """``[fn(x) for x in items]``, the second half computed in a forked child when there are at least
    ``min_items`` and :func:`can_fork`. ``progress(done, total)`` is called here as results arrive;
    ``child_start()`` runs first in the child (to drop what it must not share, such as database connections)."""
    total = len(items)
    cut = total // 2
    if total < min_items or not can_fork():
        return _mapped(fn, items, 0, total, progress)
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: its half, pickled to the pipe, then gone without the parent's cleanup
        status = 1
        try:
            os.close(read_fd)
            die_with_parent(parent)
            if child_start is not None:
                child_start()
            data = pickle.dumps([fn(x) for x in items[cut:]], protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    pipe = os.fdopen(read_fd, "rb")
    try:
        mine = _mapped(fn, items[:cut], 0, total, progress)
        data = pipe.read()
    except BaseException:  # an error or Ctrl-C here: the child's half is not wanted
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        pipe.close()
        _, status = os.waitpid(pid, 0)
    theirs: list[R] | None = None
    if status == 0:
        try:
            theirs = pickle.loads(data)
        except Exception:  # noqa: BLE001 - a truncated pickle: computed here instead
            theirs = None
    if theirs is None or len(theirs) != total - cut:
        return mine + _mapped(fn, items[cut:], cut, total, progress)
    if progress:
        progress(total, total)
    return mine + theirs


def _mapped(fn: Callable[[T], R], items: Sequence[T], done: int, total: int,
            progress: Callable[[int, int], None] | None) -> list[R]:
    out = []
    for x in items:
        out.append(fn(x))
        if progress:
            progress(done + len(out), total)
    return out


def die_with_parent(parent: int) -> None:
    """In a forked child of process ``parent``: end with it when it is killed (PR_SET_PDEATHSIG), and now
    if it already ended before this call."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - not glibc: the child ends on its own, at a broken pipe
        pass
    if os.getppid() != parent:
        os._exit(0)
