"""ThreadCpuBackend: the wall clock plus the measuring thread's CPU time, where perf counters do not open.

perf's ``task-clock`` is the CPU time the measuring task ran (docs/design/contention.md). Where
perf_event_open is refused, ``CLOCK_THREAD_CPUTIME_ID`` (``time.thread_time_ns``) reads the same
quantity for the measuring thread, so a case still gets its CPU time per op, recorded under the same
counter name: what :mod:`.contention` sets beside the wall clock. Unlike perf's ``inherit``, threads
and processes the op starts are not counted.
"""

from __future__ import annotations

import time

from .backend import WallClockBackend

CPU_TIME_COUNTER = "task-clock"  # perf's name for the task's CPU time, in nanoseconds


class ThreadCpuBackend(WallClockBackend):
    """Timing plus the thread's CPU time per sample (counter ``task-clock``, ns)."""

    __slots__ = ("_start", "_stop")

    def __init__(self) -> None:
        self._start = self._stop = 0

    def begin(self) -> None:
        self._start = time.thread_time_ns()

    def end(self) -> None:
        self._stop = time.thread_time_ns()

    def collect(self, host_elapsed, ops, chunk_index, results, metrics):  # noqa: D401
        results.duration = host_elapsed
        results.iterations = ops
        results.chunks_executed = 1
        results.counters[CPU_TIME_COUNTER] = float(self._stop - self._start)

    @property
    def measurement_label(self) -> str:
        return "timing + thread CPU time"


__all__ = ["CPU_TIME_COUNTER", "ThreadCpuBackend"]
