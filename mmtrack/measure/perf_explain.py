"""Why perf counters did not open, and how to fix it: one sentence per cause (paranoid level, container, seccomp,
no PMU, descriptors) for the backend's one-time notice (:func:`mmtrack.measure.default_backend.default_backend`)."""

from __future__ import annotations

import errno as _errno
import os
from pathlib import Path

from .perf import _DENIED, HARDWARE_COUNTERS, PARANOID_PATH, PMU_DEVICES, OpenReport, _telling_errno


def paranoid_level(path: Path = PARANOID_PATH) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def in_container() -> bool:
    return Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()


def seccomp_filtered() -> bool:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Seccomp:"):
                return line.split()[1] == "2"
    except (OSError, IndexError):
        pass
    return False


def has_cpu_pmu(devices: Path = PMU_DEVICES) -> bool:
    """Whether the kernel exposes a CPU PMU (``cpu``, or ``armv8_*``/``cpu_core`` on other systems)."""
    try:
        names = [p.name for p in devices.iterdir()]
    except OSError:
        return False
    return any(n in ("cpu", "cpu_core", "cpu_atom") or n.startswith(("armv8", "armv7")) for n in names)


def _errname(code: int) -> str:
    return _errno.errorcode.get(code, str(code))


def explain(code: int, *, paranoid: int | None = None, container: bool | None = None,
            seccomp: bool | None = None) -> str:
    """Why perf_event_open failed with ``code`` and how to fix it, in one sentence or two."""
    paranoid = paranoid_level() if paranoid is None else paranoid
    container = in_container() if container is None else container
    seccomp = seccomp_filtered() if seccomp is None else seccomp
    p = "unknown" if paranoid is None else str(paranoid)
    name = _errname(code)
    if code in _DENIED:
        if seccomp or (container and code == _errno.EPERM):
            return (
                f"perf_event_open was denied ({name}) by the container's seccomp filter or missing "
                f"capability (kernel.perf_event_paranoid={p}); run the container with "
                "--cap-add PERFMON (or SYS_ADMIN) and a seccomp profile that allows perf_event_open"
            )
        if paranoid is not None and paranoid <= 2:
            return (
                f"perf_event_open was denied ({name}) although kernel.perf_event_paranoid={p} allows "
                "user-space counting of your own process: a security module (SELinux, AppArmor) or a "
                "sandbox refuses it; allow perf_event_open there, or grant CAP_PERFMON to the Python interpreter"
            )
        return (
            f"perf_event_open was denied ({name}): kernel.perf_event_paranoid={p} "
            "(3 or more refuses unprivileged users; 2 allows user-space counting of your own process); "
            "fix: sudo sysctl -w kernel.perf_event_paranoid=2 (1 to include kernel time), "
            "or grant CAP_PERFMON to the Python interpreter"
        )
    if code == _errno.ENOSYS:
        return (
            "perf_event_open is not available (ENOSYS): the kernel lacks CONFIG_PERF_EVENTS, the platform "
            "is not Linux, or a sandbox (seccomp, gVisor) stubs the call out; run on a Linux host or VM "
            "that provides perf events"
        )
    if code in (_errno.EMFILE, _errno.ENFILE):
        return (
            f"out of file descriptors ({name}) while opening perf counters; close files the process "
            "keeps open or raise the limit (ulimit -n)"
        )
    if code in (_errno.ENOENT, _errno.EOPNOTSUPP, _errno.ENODEV, _errno.EINVAL):
        where = "the kernel exposes no CPU PMU here" if not has_cpu_pmu() else "the CPU's PMU lacks these events"
        return (
            f"{where} (perf_event_open: {name}), as in VMs and containers without PMU passthrough; "
            "for hardware counters run on bare metal or enable the virtual PMU (e.g. KVM -cpu host)"
        )
    return f"perf_event_open failed ({name}: {os.strerror(code)})"


def summarize_open(report: OpenReport) -> str | None:
    """The one-time line about counters that did not open, or None when all opened."""
    if not report.failed and not report.user_only:
        return None
    parts = []
    hw_wanted = [c.name for c in HARDWARE_COUNTERS]
    hw_failed = [n for n in hw_wanted if n in report.failed]
    if hw_failed and len(hw_failed) == len(hw_wanted):
        code = _telling_errno({n: report.failed[n] for n in hw_failed}) or _errno.ENOENT
        parts.append(
            "hardware counters unavailable (cycles, instructions, caches, branches, stalls): "
            + explain(code)
            + "; counting software events only: "
            + ", ".join(report.opened)
        )
    elif report.failed:
        missing = ", ".join(f"{n} ({_errname(e)})" for n, e in report.failed.items())
        parts.append(f"some perf counters unavailable: {missing}")
        code = _telling_errno(report.failed)
        if code in _DENIED or code in (_errno.EMFILE, _errno.ENFILE):
            parts.append(explain(code))
    if report.user_only:
        parts.append(
            f"counting user space only (kernel.perf_event_paranoid={paranoid_level()}); "
            "context-switches and cpu-migrations left out; sudo sysctl -w kernel.perf_event_paranoid=1 "
            "counts the kernel too"
        )
    return "; ".join(parts)


__all__ = ["explain", "has_cpu_pmu", "paranoid_level", "summarize_open"]
