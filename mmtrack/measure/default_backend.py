"""The platform's default measurement backend: perf counters where they open, else the wall clock."""

from __future__ import annotations

import errno

from .backend import MeasurementBackend, WallClockBackend, announce_once


def default_backend() -> MeasurementBackend:
    """The platform default: LinuxPerfBackend when at least one counter opens, else wall clock.

    Either way one line (once per process) says what is missing, why and how to fix it.
    Opening is attempted per call, so it never fails the run: every error ends in
    a working backend.
    """
    try:
        from .perf import LinuxPerfBackend, PerfUnavailable, explain, summarize_open
    except ImportError as exc:  # no fcntl: not a POSIX system
        announce_once(f"perf counters need Linux ({exc}); timing only")
        return WallClockBackend()
    except OSError as exc:  # reading the module itself failed, e.g. no file descriptor left
        fix = "close files the process keeps open or raise the limit (ulimit -n)" if exc.errno in (
            errno.EMFILE, errno.ENFILE) else "check the mmtrack installation"
        announce_once(
            f"perf counters unavailable, timing only: could not load the perf backend "
            f"({errno.errorcode.get(exc.errno or 0, exc.errno)}: {exc.strerror}); {fix}"
        )
        return WallClockBackend()
    try:
        backend = LinuxPerfBackend()
    except PerfUnavailable as exc:
        announce_once(f"perf counters unavailable, timing only: {explain(exc.errno)}")
        return WallClockBackend()
    except OSError as exc:
        announce_once(f"perf counters unavailable, timing only: {explain(exc.errno or 0)}")
        return WallClockBackend()
    line = summarize_open(backend.report)
    if line:
        announce_once(line)
    return backend
