"""LinuxPerfBackend: PMU and software counters beside timing, through perf_event_open.

The system call is made through ctypes (``syscall(2)`` from the C library): no
compiled extension and no ``perf`` program.

How counters are opened (once per run, in the measuring thread):

1. **Kernel events or user space only.** A probe opens ``task-clock`` counting
   kernel and user space. When that is refused (EACCES/EPERM: an unprivileged
   user under ``kernel.perf_event_paranoid >= 2``), every counter is opened with
   ``exclude_kernel`` instead, and ``context-switches`` / ``cpu-migrations`` are
   left out: the kernel counts them in kernel context, so user-space-only they
   would always read 0.
2. **One group.** All counters as one perf event group, read with
   ``PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID``: one
   ``read`` returns every value, and they are scheduled on and off the PMU together.
3. **Fallback: each counter alone.** When the group cannot be opened (a counter
   the PMU lacks, a group too big for it), each counter is opened on its own;
   the ones that fail are recorded with their errno.
4. **Regrouping the survivors.** The counters that opened alone are packed
   greedily into as few groups as the kernel accepts, so a sample costs one
   ioctl pair and one read per group. With ``grouping=False`` every counter stays
   alone (the "individual counters" mode).

Per sample: ``ioctl(PERF_EVENT_IOC_ENABLE)`` on each group leader in ``begin``,
``PERF_EVENT_IOC_DISABLE`` and one ``read`` per group in ``end``. Only the
leader is toggled: members are opened enabled and count exactly while their
leader is on the PMU, so the leader switches the whole group. (Toggling with
``PERF_IOC_FLAG_GROUP`` instead disables the members too, and on Linux 6.18
re-enabling them that way lost their counts from the second sample on: a group
of task-clock and page-faults read 512 faults, then 0, for the same work.
``test_perf.py`` guards this.) ``collect`` takes the difference to the previous read (counters are
disabled between samples, so nothing else is counted), and scales each value by
``Δtime_enabled / Δtime_running`` when the kernel multiplexed the group; a group
that never ran in a sample leaves its counters out of that sample (has-flag
false). Coverage is ``Δtime_running / Δtime_enabled`` of the worst group.

**Inherit.** Counters are opened with ``inherit=1``: threads and processes that
the measuring thread starts *after* the counters are opened (a thread or a
``multiprocessing`` pool made inside the bench, a ``subprocess``) are counted with
it; a child's counts are folded in when it exits. Threads that already existed
(a BLAS or thread pool started at import) are never counted: a per-task perf
counter cannot attach to them. ``pid=0, cpu=-1`` means "the calling thread, on
any CPU", so the backend must be created in the thread that runs the bench.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import fcntl
import operator
import os
import platform
import struct
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .backend import MeasurementBackend, MeasurementDomain, Results
from .metrics import MetricValue

# -- the kernel ABI ---------------------------------------------------------------------------
PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_HW_CACHE = 3

PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
PERF_FORMAT_ID = 1 << 2
PERF_FORMAT_GROUP = 1 << 3
READ_FORMAT = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID

# perf_event_attr bit field
ATTR_DISABLED = 1 << 0
ATTR_INHERIT = 1 << 1
ATTR_EXCLUDE_KERNEL = 1 << 5
ATTR_EXCLUDE_HV = 1 << 6

PERF_FLAG_FD_CLOEXEC = 1 << 3

PERF_EVENT_IOC_ENABLE = 0x2400  # _IO('$', 0)
PERF_EVENT_IOC_DISABLE = 0x2401  # _IO('$', 1)
PERF_EVENT_IOC_ID = 0x80082407  # _IOR('$', 7, __u64 *)
PERF_IOC_FLAG_GROUP = 1

# perf_event_open's number per architecture (uname -m).
SYSCALL_NUMBERS = {
    "x86_64": 298,
    "amd64": 298,
    "i386": 336,
    "i686": 336,
    "aarch64": 241,
    "arm64": 241,
    "riscv64": 241,
    "armv7l": 364,
    "ppc64le": 319,
    "ppc64": 319,
    "s390x": 331,
}


class PerfEventAttr(ctypes.Structure):
    """``struct perf_event_attr`` up to ``config2`` (PERF_ATTR_SIZE_VER1, 72 bytes)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
    ]


@dataclass(frozen=True, slots=True)
class Counter:
    """One event: the name diagnose.py and the report use, and its perf type/config."""

    name: str
    type: int
    config: int

    @property
    def hardware(self) -> bool:
        return self.type != PERF_TYPE_SOFTWARE


def _hw_cache(cache: int, op: int, result: int) -> int:
    return cache | (op << 8) | (result << 16)


HARDWARE_COUNTERS: tuple[Counter, ...] = (
    Counter("cycles", PERF_TYPE_HARDWARE, 0),
    Counter("instructions", PERF_TYPE_HARDWARE, 1),
    Counter("cache-references", PERF_TYPE_HARDWARE, 2),
    Counter("cache-misses", PERF_TYPE_HARDWARE, 3),
    Counter("branches", PERF_TYPE_HARDWARE, 4),
    Counter("branch-misses", PERF_TYPE_HARDWARE, 5),
    Counter("stalled-cycles-frontend", PERF_TYPE_HARDWARE, 7),
    Counter("stalled-cycles-backend", PERF_TYPE_HARDWARE, 8),
    # L1I (1), read (0), miss (1)
    Counter("L1-icache-load-misses", PERF_TYPE_HW_CACHE, _hw_cache(1, 0, 1)),
)
SOFTWARE_COUNTERS: tuple[Counter, ...] = (
    Counter("task-clock", PERF_TYPE_SOFTWARE, 1),
    Counter("page-faults", PERF_TYPE_SOFTWARE, 2),
    Counter("context-switches", PERF_TYPE_SOFTWARE, 3),
    Counter("cpu-migrations", PERF_TYPE_SOFTWARE, 4),
)
ALL_COUNTERS: tuple[Counter, ...] = HARDWARE_COUNTERS + SOFTWARE_COUNTERS
KERNEL_CONTEXT_COUNTERS = frozenset({"context-switches", "cpu-migrations"})
_BY_NAME = {c.name: c for c in ALL_COUNTERS}

PARANOID_PATH = Path("/proc/sys/kernel/perf_event_paranoid")
PMU_DEVICES = Path("/sys/bus/event_source/devices")


# -- the system call --------------------------------------------------------------------------
Opener = Callable[[PerfEventAttr, int, int, int, int], int]
_libc_syscall = None


def _real_perf_event_open(attr: PerfEventAttr, pid: int, cpu: int, group_fd: int, flags: int) -> int:
    """perf_event_open(2) through libc's ``syscall``; returns the fd or raises OSError."""
    global _libc_syscall
    machine = platform.machine().lower()
    number = SYSCALL_NUMBERS.get(machine)
    if number is None or not hasattr(os, "sched_getaffinity"):  # not Linux, or an unknown arch
        raise OSError(_errno.ENOSYS, f"perf_event_open: no syscall number known for {machine!r} on {os.name}")
    if _libc_syscall is None:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.syscall
        fn.restype = ctypes.c_long
        fn.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_ulong]
        _libc_syscall = fn
    fd = _libc_syscall(number, ctypes.addressof(attr), pid, cpu, group_fd, flags)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"perf_event_open: {os.strerror(err)}")
    return int(fd)


# Tests replace this with a function that raises OSError(errno) to inject a refusal.
perf_event_open: Opener = _real_perf_event_open


def _open_counter(counter: Counter, flags: int, group_fd: int) -> int:
    attr = PerfEventAttr()
    attr.type = counter.type
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = counter.config
    attr.read_format = READ_FORMAT
    # A leader starts disabled and is enabled per sample; members follow their leader.
    attr.flags = flags | (ATTR_DISABLED if group_fd == -1 else 0)
    return perf_event_open(attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC)


# -- groups -----------------------------------------------------------------------------------
class _Group:
    """One open perf event group (a single counter is a group of one)."""

    __slots__ = ("leader", "fds", "names", "unpack", "size", "prev")

    def __init__(self, leader: int, fds: list[int], names: Sequence[str]) -> None:
        self.leader = leader
        self.fds = fds
        self.size = 8 * (3 + 2 * len(fds))
        self.unpack = struct.Struct(f"={3 + 2 * len(fds)}Q").unpack
        # The read lists values in the kernel's order: map them back by id, not by hope.
        first = self.unpack(os.read(leader, self.size))
        ids = {_event_id(fd): name for fd, name in zip(fds, names)}
        self.names = tuple(ids[first[4 + 2 * i]] for i in range(len(fds)))
        self.prev = first

    @classmethod
    def replay(cls, names: Sequence[str], first: tuple[int, ...]) -> "_Group":
        """A group with no file descriptors, fed recorded reads: tests the arithmetic."""
        g = cls.__new__(cls)
        g.leader, g.fds, g.names, g.prev = -1, [], tuple(names), first
        g.size = 8 * (3 + 2 * len(names))
        g.unpack = struct.Struct(f"={3 + 2 * len(names)}Q").unpack
        return g

    def close(self) -> None:
        for fd in reversed(self.fds):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def _event_id(fd: int) -> int:
    buf = bytearray(8)
    fcntl.ioctl(fd, PERF_EVENT_IOC_ID, buf)
    return struct.unpack("=Q", buf)[0]


def _close_all(fds: Iterable[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _open_group(counters: Sequence[Counter], flags: int) -> _Group:
    """All of ``counters`` as one group, or OSError (with nothing left open)."""
    fds: list[int] = []
    try:
        for c in counters:
            fds.append(_open_counter(c, flags, fds[0] if fds else -1))
        return _Group(fds[0], fds, [c.name for c in counters])
    except OSError:
        _close_all(reversed(fds))
        raise


@dataclass(frozen=True, slots=True)
class OpenReport:
    """What opening found: the mode, what opened, what failed and why."""

    mode: str  # "perf event group", "perf event groups", "individual counters"
    opened: tuple[str, ...]
    failed: dict[str, int]  # counter name -> errno
    user_only: bool
    group_errno: int | None  # why the single group failed, when it did


class PerfUnavailable(Exception):
    """No counter could be opened; ``errno`` is the telling failure."""

    def __init__(self, errno: int, failed: dict[str, int]) -> None:
        super().__init__(f"perf_event_open failed: {_errno.errorcode.get(errno, errno)}")
        self.errno = errno
        self.failed = failed


_DENIED = (_errno.EACCES, _errno.EPERM)


def open_counters(
    counters: Sequence[Counter] = ALL_COUNTERS, *, inherit: bool = True, grouping: bool = True
) -> tuple[list[_Group], OpenReport]:
    """Open ``counters`` as described in the module docstring; PerfUnavailable if none opens."""
    base = ATTR_EXCLUDE_HV | (ATTR_INHERIT if inherit else 0)
    user_only = _user_only(base)
    flags = base | (ATTR_EXCLUDE_KERNEL if user_only else 0)
    wanted = [c for c in counters if not (user_only and c.name in KERNEL_CONTEXT_COUNTERS)]
    group_errno: int | None = None
    if grouping:
        try:
            group = _open_group(wanted, flags)
            names = tuple(c.name for c in wanted)
            return [group], OpenReport("perf event group", names, {}, user_only, None)
        except OSError as exc:
            group_errno = exc.errno
    # Fallback: each counter alone.
    singles, failed = _open_singles(wanted, flags)
    try:  # both close everything they hold when they fail
        groups = _regroup(singles, flags) if grouping else _alone(singles)
    except OSError as exc:  # reading or identifying a fresh fd failed: give up cleanly
        raise PerfUnavailable(exc.errno or _errno.EIO, failed) from None
    opened = tuple(n for g in groups for n in g.names)
    return groups, OpenReport(_mode_of(groups), opened, failed, user_only, group_errno)


def _user_only(base: int) -> bool:
    """Whether only user-space counting is allowed (a probe counter opens only with kernel events excluded);
    PerfUnavailable when it opens neither way."""
    probe = _BY_NAME["task-clock"]
    try:
        os.close(_open_counter(probe, base, -1))
    except OSError as exc:
        if exc.errno not in _DENIED:
            raise PerfUnavailable(exc.errno or _errno.EIO, {}) from None
        try:
            os.close(_open_counter(probe, base | ATTR_EXCLUDE_KERNEL, -1))
        except OSError as exc2:
            raise PerfUnavailable(exc2.errno or exc.errno, {}) from None
        return True
    return False


def _open_singles(wanted: Sequence[Counter], flags: int) -> tuple[list[tuple[Counter, int]], dict[str, int]]:
    """Each counter opened alone, and the errno of each that failed; PerfUnavailable when none opened."""
    singles: list[tuple[Counter, int]] = []
    failed: dict[str, int] = {}
    for c in wanted:
        try:
            singles.append((c, _open_counter(c, flags, -1)))
        except OSError as exc:
            failed[c.name] = exc.errno or _errno.EIO
    if not singles:
        _, first_errno = next(iter(failed.items()), ("", _errno.ENOENT))
        raise PerfUnavailable(_telling_errno(failed) or first_errno, failed)
    return singles, failed


def _mode_of(groups: list[_Group]) -> str:
    """How the counters were opened, as :class:`OpenReport` names it."""
    if all(len(g.fds) == 1 for g in groups) and len(groups) > 1:
        return "individual counters"
    return "perf event group" if len(groups) == 1 else "perf event groups"


def _alone(singles: list[tuple[Counter, int]]) -> list[_Group]:
    """Each counter as its own group of one."""
    try:
        return [_Group(fd, [fd], [c.name]) for c, fd in singles]
    except OSError:
        _close_all(fd for _, fd in singles)
        raise


def _regroup(singles: list[tuple[Counter, int]], flags: int) -> list[_Group]:
    """Pack counters that opened alone into as few groups as the kernel accepts (greedy)."""
    groups: list[tuple[int, list[int], list[str]]] = []
    for counter, fd in singles:
        if groups:
            leader, fds, names = groups[-1]
            try:
                member = _open_counter(counter, flags, leader)
            except OSError:
                member = -1
            if member >= 0:
                os.close(fd)
                fds.append(member)
                names.append(counter.name)
                continue
        groups.append((fd, [fd], [counter.name]))
    built: list[_Group] = []
    try:
        for leader, fds, names in groups:
            built.append(_Group(leader, fds, names))
    except OSError:
        for g in built:
            g.close()
        _close_all(fd for _, fds, _ in groups[len(built):] for fd in fds)
        raise
    return built


def _telling_errno(failed: dict[str, int]) -> int | None:
    """The errno that best explains a failure: a denial or fd exhaustion beats 'not supported'."""
    codes = set(failed.values())
    for e in (_errno.EMFILE, _errno.ENFILE, _errno.EACCES, _errno.EPERM, _errno.ENOSYS):
        if e in codes:
            return e
    return next(iter(codes), None)


# -- the backend ------------------------------------------------------------------------------
_ioctl = fcntl.ioctl
_read = os.read
_sub = operator.sub


class LinuxPerfBackend(MeasurementBackend):
    """Timing plus perf_event counters per sample; the duration is host elapsed time.

    Raises :class:`PerfUnavailable` when no counter opens (``default_backend``
    turns that into a wall-clock run with a message).
    """

    zero_means_host_time = True  # a sample without a device/counter reading is timed by the host

    def __init__(
        self,
        counters: Sequence[str] | None = None,
        *,
        inherit: bool = True,
        grouping: bool = True,
    ) -> None:
        chosen = ALL_COUNTERS if counters is None else tuple(_BY_NAME[n] for n in counters)
        self._adopt(*open_counters(chosen, inherit=inherit, grouping=grouping))

    def _adopt(self, groups: list[_Group], report: OpenReport) -> None:
        self._groups, self.report = groups, report
        self._leaders = tuple(g.leader for g in self._groups)
        self._single = self._groups[0] if len(self._groups) == 1 else None
        self._raw: list[bytes] = []
        self._enabled = 0
        self._running = 0
        self.has_hardware = any(_BY_NAME[n].hardware for n in self.report.opened)
        self._finalizer = weakref.finalize(self, _close_groups, list(self._groups))

    # -- hot path: keep it short ----------------------------------------------------------
    def begin(self) -> None:
        for fd in self._leaders:
            _ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)

    def end(self) -> None:
        g = self._single
        if g is not None:
            _ioctl(g.leader, PERF_EVENT_IOC_DISABLE, 0)
            self._raw = _read(g.leader, g.size)
            return
        for fd in self._leaders:
            _ioctl(fd, PERF_EVENT_IOC_DISABLE, 0)
        self._raw = [_read(g.leader, g.size) for g in self._groups]

    def collect(
        self, host_elapsed: float, ops: int, chunk_index: int, results: Results, metrics: list[MetricValue]
    ) -> None:
        results.duration = host_elapsed
        results.iterations = ops
        results.chunks_executed = 1
        g = self._single
        if g is not None:
            enabled, running = _apply(g, self._raw, results.counters)
        else:  # several groups: coverage is the worst group's
            enabled = running = 0
            for g, raw in zip(self._groups, self._raw):
                e, r = _apply(g, raw, results.counters)
                if enabled == 0 or r * enabled < running * e:
                    enabled, running = e, r
        results.time_enabled_ns = enabled
        results.time_running_ns = running
        self._enabled += enabled
        self._running += running

    # -- reporting ------------------------------------------------------------------------
    @property
    def measurement_label(self) -> str:
        return "timing + PMU" if self.has_hardware else "timing + perf software counters"

    @property
    def emits_cpu_diagnostics(self) -> bool:
        return True

    @property
    def coverage_pct(self) -> float:
        return 100.0 * self._running / self._enabled if self._enabled else 100.0

    def describe(self, domain: MeasurementDomain | None = None) -> str | None:
        if domain is MeasurementDomain.GPU:
            kind = "orchestration"
        elif domain is MeasurementDomain.MIXED:
            kind = "mixed workload"
        else:
            kind = self.report.mode
        scope = ", user space only" if self.report.user_only else ""
        return f"host PMU ({kind}): coverage={self.coverage_pct:.1f}%{scope}"

    def close(self) -> None:
        self._finalizer()
        self._groups = []
        self._leaders = ()
        self._single = None

    @property
    def open_fds(self) -> int:
        return sum(len(g.fds) for g in self._groups)


def _apply(g: _Group, raw: bytes, counters: dict[str, float]) -> tuple[int, int]:
    """Put one group's sample (this read minus the previous) into ``counters``.

    Returns (Δtime_enabled, Δtime_running). Values are scaled by enabled/running
    when the group was multiplexed; a group that never ran adds nothing.
    """
    vals = g.unpack(raw)
    prev = g.prev
    g.prev = vals
    enabled = vals[1] - prev[1]
    running = vals[2] - prev[2]
    if running <= 0:
        return max(enabled, 1), 0
    deltas = map(_sub, vals[3::2], prev[3::2])
    if running < enabled:
        scale = enabled / running
        counters.update(zip(g.names, [d * scale for d in deltas]))
    else:
        counters.update(zip(g.names, deltas))
    return enabled, running


def _close_groups(groups: list[_Group]) -> None:
    for g in groups:
        g.close()


__all__ = [
    "ALL_COUNTERS",
    "HARDWARE_COUNTERS",
    "SOFTWARE_COUNTERS",
    "Counter",
    "LinuxPerfBackend",
    "OpenReport",
    "PerfUnavailable",
    "open_counters",
]
