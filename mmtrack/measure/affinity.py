"""Pinning the measuring thread to one CPU for the length of a run.

A thread that migrates between cores mid-sample pays cold caches and TLBs on the
new core, and its counters mix two cores' behaviour. ``pin_current_thread``
restricts the *calling thread* (``sched_setaffinity(0, ...)`` acts on the
thread on Linux) to the core it is running on now, and :func:`restore` puts the
previous mask back. Threads the bench starts while pinned inherit the one-core
mask, so a multi-threaded bench should opt out (``RunOptions(pin_cpu=False)``,
``mmtrack bench --no-pin``). When pinning fails (no sched_setaffinity, a
cpuset that refuses), one warning is logged per process and the run goes on unpinned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .backend import announce_once


@dataclass(frozen=True, slots=True)
class Pinned:
    """A pinning in force: the CPU chosen and the mask to restore."""

    cpu: int
    previous: frozenset[int]


def current_cpu(stat: Path = Path("/proc/thread-self/stat")) -> int | None:
    """The CPU this thread last ran on (field 39 of its stat line), or None."""
    try:
        text = stat.read_text()
        return int(text[text.rindex(")") + 2 :].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def pin_current_thread() -> Pinned | None:
    """Pin the calling thread to one allowed CPU; None (and a one-time warning) on failure."""
    try:
        allowed = frozenset(os.sched_getaffinity(0))
        cpu = current_cpu()
        if cpu not in allowed:
            cpu = max(allowed)
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError, ValueError) as exc:
        announce_once(f"could not pin the measuring thread to one CPU ({exc}); running unpinned")
        return None
    return Pinned(cpu, allowed)


def restore(pinned: Pinned | None) -> None:
    """Give the thread back the CPU mask it had before :func:`pin_current_thread`."""
    if pinned is None:
        return
    try:
        os.sched_setaffinity(0, pinned.previous)
    except OSError as exc:
        announce_once(f"could not restore the CPU mask after a pinned run ({exc})")
