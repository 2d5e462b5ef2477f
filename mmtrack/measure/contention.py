"""Did a case wait for a CPU? Its wall time per op against its CPU time per op.

A single-threaded op on a CPU of its own is on the CPU for the whole of its wall time: wall / CPU time
stays near 1. When other tenants take the CPU, the op waits in the run queue: its wall time grows and its
CPU time does not. The engine records that ratio per sample, as the neutral metric ``timing/wall_per_cpu``,
for the cases where it means this (CPU domain, one measuring thread, a CPU-time counter); the verdicts of
:mod:`mmtrack.analysis.contention` read it. Calibration: docs/design/contention.md.
"""

from __future__ import annotations

import math

from .backend import MeasurementDomain
from .cputime import CPU_TIME_COUNTER
from .metrics import Direction, MetricSummary

SECTION, NAME, UNIT = "timing", "wall_per_cpu", "x"
#: Wall time this many times the CPU time per op: the case waited for a CPU (idle runs here read 1.00-1.03).
WAITED_RATIO = 1.10
#: Below this the op ran on more than one CPU at once (threads, child processes): not a single-threaded case.
MANY_CPUS_RATIO = 0.90


def waited(ratio: float | None) -> bool:
    """Whether a case's mean wall/CPU ratio over its samples says it waited for a CPU.

    The mean, not the median: a chunk shorter than the scheduler's time slice often runs unpreempted, and
    a third of samples that waited tens of times their CPU time still skew the wall clock's tests."""
    return ratio is not None and math.isfinite(ratio) and ratio > WAITED_RATIO


def wall_per_cpu(stats) -> MetricSummary | None:
    """Each sample's wall time over its CPU time, for a single-threaded CPU-domain case; None elsewhere.

    ``stats`` is a :class:`~.benchmark_stats.BenchmarkStats` (not imported: it imports this module)."""
    counter = stats.counter(CPU_TIME_COUNTER)
    if (stats.domain is not MeasurementDomain.CPU or stats.scenario is not None or counter is None
            or len(counter.per_sample_per_op) != len(stats.host_durations)):
        return None
    ratios = [wall / (cpu_per_op * ops * 1e-9) if cpu_per_op > 0 else math.nan
              for wall, cpu_per_op, ops in zip(stats.host_durations, counter.per_sample_per_op, stats.operations)]
    summary = MetricSummary.from_values(SECTION, NAME, UNIT, ratios, display_name="wall / CPU time",
                                        direction=Direction.NEUTRAL)
    if not math.isfinite(summary.median) or summary.median < MANY_CPUS_RATIO:  # the typical sample
        return None
    return summary


__all__ = ["MANY_CPUS_RATIO", "NAME", "SECTION", "UNIT", "WAITED_RATIO", "waited", "wall_per_cpu"]
