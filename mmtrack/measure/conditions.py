"""What a run was measured under: process model, Python build, GIL, GC and heap at the start of sampling.

Two runs that differ in any of the comparable fields (:data:`COMPARABLE`) measured different
things: code under a disabled GC or a free-threaded build, or in a fresh process instead of
a long-lived one, runs at another speed even when nothing in it changed. The heap size and GC
counters are recorded to explain a reading (allocation-heavy code slows down as the heap and
the GC's young generation fill), not to refuse a comparison: they vary run to run.
"""

from __future__ import annotations

import gc
import os
import platform
import sys
import sysconfig
from dataclasses import asdict, dataclass
from typing import Any, Mapping

IN_PROCESS = "in-process"  # the sampling loop runs in the process that discovered the suite
WORKER_PER_CASE = "worker per case"
UNDER_CALLGRIND = "under callgrind"  # measure/callgrind.py: its host time is Valgrind's pace, never a verdict

# The fields two runs must share to be compared (analysis/baseline.py's incompatibility).
COMPARABLE = ("process_model", "python_build", "gil_enabled", "gc_enabled", "method")
# The counting method of runs stored before methods were recorded: every callgrind run then counted as version 1.
UNRECORDED_METHODS = {UNDER_CALLGRIND: "callgrind 1"}


@dataclass(frozen=True, slots=True)
class SamplingConditions:
    process_model: str
    python_build: str  # e.g. "CPython 3.12.3", "CPython 3.13.1 free-threaded", "... debug"
    gil_enabled: bool
    gc_enabled: bool
    gc_counts: tuple[int, int, int]  # objects pending per generation (gc.get_count())
    heap_rss_bytes: int | None  # resident set size (/proc/self/statm); None where unreadable
    allocated_blocks: int  # sys.getallocatedblocks(): live pymalloc blocks, an allocator-side heap size
    pinned_cpu: int | None = None  # the core the sampling thread was pinned to; None when unpinned
    # The counting method's version ("callgrind 2"; "" for clocks): counts of two methods are not comparable.
    method: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gc_counts"] = list(self.gc_counts)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SamplingConditions:
        return cls(
            process_model=str(d["process_model"]),
            python_build=str(d["python_build"]),
            gil_enabled=bool(d["gil_enabled"]),
            gc_enabled=bool(d["gc_enabled"]),
            gc_counts=tuple(int(x) for x in d["gc_counts"]),  # type: ignore[arg-type]
            heap_rss_bytes=None if d.get("heap_rss_bytes") is None else int(d["heap_rss_bytes"]),
            allocated_blocks=int(d["allocated_blocks"]),
            pinned_cpu=None if d.get("pinned_cpu") is None else int(d["pinned_cpu"]),
            method=method_of(d),
        )

    def describe(self) -> str:
        """One line for the terminal report."""
        gil = "GIL on" if self.gil_enabled else "GIL off"
        gc_state = "GC on" if self.gc_enabled else "GC off"
        heap = f"heap {self.heap_rss_bytes / 2**20:.1f} MiB RSS, " if self.heap_rss_bytes is not None else "heap "
        where = f"pinned to CPU {self.pinned_cpu}" if self.pinned_cpu is not None else "unpinned"
        method = f" · method {self.method}" if self.method else ""
        return (
            f"{self.process_model}, {where} · {self.python_build} ({gil}) · {gc_state}, pending "
            f"{'/'.join(map(str, self.gc_counts))} · {heap}{self.allocated_blocks:,d} blocks{method}"
        )


def method_of(conditions: Mapping[str, Any]) -> str:
    """The counting method a stored record of conditions names: "" for clocks, version 1 for older callgrind runs."""
    return str(conditions.get("method") or UNRECORDED_METHODS.get(str(conditions.get("process_model")), ""))


def comparable(conditions: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A stored record's :data:`COMPARABLE` fields as (name, value) pairs, its counting method filled in."""
    filled = {**conditions, "method": method_of(conditions)}
    return tuple((name, str(filled[name])) for name in COMPARABLE if name in filled)


def python_build() -> str:
    build = f"{platform.python_implementation()} {platform.python_version()}"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        build += " free-threaded"
    if hasattr(sys, "gettotalrefcount"):  # only debug builds have it
        build += " debug"
    return build


def gil_enabled() -> bool:
    check = getattr(sys, "_is_gil_enabled", None)  # 3.13+; older builds always hold a GIL
    return bool(check()) if check is not None else True


def resident_bytes() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def capture(process_model: str, pinned_cpu: int | None = None, method: str = "") -> SamplingConditions:
    """The conditions now; called by the runner right before its first timed sample."""
    return SamplingConditions(
        process_model=process_model,
        python_build=python_build(),
        gil_enabled=gil_enabled(),
        gc_enabled=gc.isenabled(),
        gc_counts=gc.get_count(),
        heap_rss_bytes=resident_bytes(),
        allocated_blocks=sys.getallocatedblocks(),
        pinned_cpu=pinned_cpu,
        method=method,
    )
