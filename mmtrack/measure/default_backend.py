"""The platform's default measurement backend: perf counters where they open, else the wall clock and the
thread's CPU time."""

from __future__ import annotations

import errno

from .backend import MeasurementBackend, announce_once
from .cputime import ThreadCpuBackend


def default_backend() -> MeasurementBackend:
    """The platform default: LinuxPerfBackend when at least one counter opens, else ThreadCpuBackend (the wall
    clock and the thread's CPU time): either way every case gets its CPU time per op (``task-clock``).

    Either way one line (once per process) says what is missing, why and how to fix it.
    Opening is attempted per call, so it never fails the run: every error ends in
    a working backend.
    """
    try:
        from .perf import LinuxPerfBackend, PerfUnavailable
        from .perf_explain import explain, summarize_open
    except ImportError as exc:  # no fcntl: not a POSIX system
        announce_once(f"perf counters need Linux ({exc}); timing and thread CPU time")
        return ThreadCpuBackend()
    except OSError as exc:  # reading the module itself failed, e.g. no file descriptor left
        fix = "close files the process keeps open or raise the limit (ulimit -n)" if exc.errno in (
            errno.EMFILE, errno.ENFILE) else "check the mmtrack installation"
        announce_once(
            f"perf counters unavailable, timing and thread CPU time: could not load the perf backend "
            f"({errno.errorcode.get(exc.errno or 0, exc.errno)}: {exc.strerror}); {fix}"
        )
        return ThreadCpuBackend()
    try:
        backend = LinuxPerfBackend()
    except PerfUnavailable as exc:
        announce_once(f"perf counters unavailable, timing and thread CPU time: {explain(exc.errno)}")
        return ThreadCpuBackend()
    except OSError as exc:
        announce_once(f"perf counters unavailable, timing and thread CPU time: {explain(exc.errno or 0)}")
        return ThreadCpuBackend()
    line = summarize_open(backend.report)
    if line:
        announce_once(line)
    return backend
