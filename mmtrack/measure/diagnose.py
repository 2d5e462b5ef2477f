"""Run-stability warnings and CPU bottleneck heuristics, gated by measurement domain.

Stability warnings apply in every domain. CPU bottleneck heuristics read the
host PMU counters and only make sense when the CPU is what is measured: they
are suppressed for the GPU and IO domains and for backends that opt out
(``emits_cpu_diagnostics`` false), and prefixed ``[host]`` for MIXED.

Thresholds (documented in docs/reference/perf.md, chosen as common rules of thumb from
Intel's top-down method and micromeasure's defaults):

=============================  ==========================================  ==========
heuristic                      signal                                      threshold
=============================  ==========================================  ==========
data-side memory latency       stalled-cycles-backend / cycles             > 30 %
                               or cache-misses / cache-references          > 20 %
branch predictor disruption    branch-misses / branches                    > 5 %
i-cache pressure               L1-icache-load-misses per 1k instructions   > 10
                               or stalled-cycles-frontend / cycles         > 30 %
low IPC                        instructions / cycles                       < 0.5
high CV (stability)            sample CV of time per op                    > 5 %
many outliers (stability)      Tukey outliers / samples                    > 10 %
=============================  ==========================================  ==========

A ratio is only judged when its denominator counted at least ``MIN_EVENTS``
events over the run (1,000): a handful of cache references or branches says
nothing about the code. A missing counter (not collected on this machine)
silences the signals that need it and nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import contention
from .backend import MeasurementDomain
from .benchmark_stats import BenchmarkStats
from .stats import OUTLIER_RULE

BACKEND_STALL_RATIO = 0.30
CACHE_MISS_RATIO = 0.20
BRANCH_MISS_RATIO = 0.05
ICACHE_MISSES_PER_KI = 10.0
FRONTEND_STALL_RATIO = 0.30
LOW_IPC = 0.5
HIGH_CV = 0.05
OUTLIER_FRACTION = 0.10
MIN_EVENTS = 1000.0


@dataclass(frozen=True, slots=True)
class Readings:
    """Counter totals of one run; None where the counter was not collected."""

    cycles: float | None = None
    instructions: float | None = None
    cache_references: float | None = None
    cache_misses: float | None = None
    icache_misses: float | None = None
    branches: float | None = None
    branch_misses: float | None = None
    stalled_frontend: float | None = None
    stalled_backend: float | None = None

    @classmethod
    def of(cls, stats: BenchmarkStats) -> "Readings":
        """Run totals; a counter missing from some samples is extrapolated to all of them.

        Counters in different perf groups can be missing from different samples
        (a group that never reached the PMU in a sample is left out of it), so
        their raw totals cover different work. Their mean per op times the run's
        operations puts every counter on the same footing before ratios are taken.
        """
        all_ops = float(sum(stats.operations))

        def total(name: str) -> float | None:
            c = stats.counter(name)
            return None if c is None or math.isnan(c.per_op) else c.per_op * all_ops

        return cls(
            cycles=total("cycles"),
            instructions=total("instructions"),
            cache_references=total("cache-references"),
            cache_misses=total("cache-misses"),
            icache_misses=total("L1-icache-load-misses"),
            branches=total("branches"),
            branch_misses=total("branch-misses"),
            stalled_frontend=total("stalled-cycles-frontend"),
            stalled_backend=total("stalled-cycles-backend"),
        )


def _ratio(num: float | None, den: float | None) -> float | None:
    """num / den, or None when either is missing or den counted too few events to judge."""
    return num / den if num is not None and den is not None and den >= MIN_EVENTS else None


def bottlenecks(r: Readings) -> list[str]:
    """The heuristics on raw readings, ungated (tested on recorded readings)."""
    found = []
    backend = _ratio(r.stalled_backend, r.cycles)
    cache = _ratio(r.cache_misses, r.cache_references)
    if (backend is not None and backend > BACKEND_STALL_RATIO) or (cache is not None and cache > CACHE_MISS_RATIO):
        parts = []
        if backend is not None:
            parts.append(f"backend stalls {backend:.0%} of cycles")
        if cache is not None:
            parts.append(f"cache miss rate {cache:.0%}")
        found.append("data-side memory latency: " + ", ".join(parts))
    branch = _ratio(r.branch_misses, r.branches)
    if branch is not None and branch > BRANCH_MISS_RATIO:
        found.append(f"branch predictor disruption: {branch:.1%} of branches mispredicted")
    icache = _ratio(r.icache_misses, r.instructions)
    frontend = _ratio(r.stalled_frontend, r.cycles)
    if (icache is not None and icache * 1000 > ICACHE_MISSES_PER_KI) or (
        frontend is not None and frontend > FRONTEND_STALL_RATIO
    ):
        parts = []
        if icache is not None:
            parts.append(f"{icache * 1000:.1f} L1i misses per 1k instructions")
        if frontend is not None:
            parts.append(f"frontend stalls {frontend:.0%} of cycles")
        found.append("i-cache pressure: " + ", ".join(parts))
    ipc = _ratio(r.instructions, r.cycles)
    if ipc is not None and ipc < LOW_IPC:
        found.append(f"low IPC: {ipc:.2f} instructions per cycle")
    return found


def cpu_diagnostics(stats: BenchmarkStats) -> list[str]:
    """Bottleneck lines for the report, after domain and backend gating."""
    if stats.domain in (MeasurementDomain.GPU, MeasurementDomain.IO) or not stats.emits_cpu_diagnostics:
        return []
    lines = bottlenecks(Readings.of(stats))
    if stats.domain is MeasurementDomain.MIXED:
        lines = [f"[host] {line}" for line in lines]
    return lines


def stability_warnings(stats: BenchmarkStats) -> list[str]:
    """Warnings that apply in every domain."""
    out = []
    lat = stats.latency
    if lat.count > 1 and lat.cv > HIGH_CV:
        out.append(f"unstable run: CV {lat.cv:.1%} of time per op exceeds {HIGH_CV:.0%}")
    if lat.count and lat.outliers / lat.count > OUTLIER_FRACTION:
        out.append(f"many outliers: {lat.outliers} of {lat.count} samples ({OUTLIER_RULE})")
    ratio = contention.wall_per_cpu(stats)
    if ratio is not None and contention.waited(ratio.mean):
        out.append(f"waited for a CPU: wall time {ratio.mean:.2f}x its CPU time per op (other tenants took the CPU)")
    return out
