"""Samples of one case taken in several worker processes, as pyperf does: pooled, and the spread split.

A process has its own placement, heap layout, address-space randomisation and page state, and
memory-bound or allocation-heavy code can run at a different speed in each. More samples in one
process then do not shrink the run-to-run spread: only more processes do. ``mmtrack bench
--processes N`` runs each case in N workers one after the other (the first calibrates the chunk,
the others reuse it), each taking 1/N of the samples; :func:`pool` joins their statistics into
one :class:`BenchmarkStats` and records in :class:`ProcessSpread` how far apart the processes
were, against what the noise within each process alone would give.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Any, Sequence

from .metrics import pool_metrics
from .stats import BenchmarkStats, CounterSummary, Distribution, between_process_dominated


@dataclass(frozen=True, slots=True)
class ProcessSpread:
    """How the per-process medians of time per op spread, against the spread within processes."""

    processes: int
    samples: tuple[int, ...]  # samples taken in each process, in run order
    medians: tuple[float, ...]  # each process's median time per op (s)
    between_cv: float  # standard deviation over mean of ``medians``
    within_cv: float  # median over processes of each one's own sample CV
    dominated: bool  # between-process spread exceeds what within-process noise gives a median

    @classmethod
    def of(cls, runs: Sequence[BenchmarkStats]) -> ProcessSpread:
        medians = [r.latency.median for r in runs]
        within = statistics.median(r.latency.cv for r in runs)
        per_process = statistics.median(r.samples for r in runs)
        mean = math.fsum(medians) / len(medians)
        between = statistics.stdev(medians) / mean if len(medians) > 1 and mean else math.nan
        return cls(
            processes=len(runs),
            samples=tuple(r.samples for r in runs),
            medians=tuple(medians),
            between_cv=between,
            within_cv=within,
            dominated=between_process_dominated(medians, within, per_process),
        )

    def describe(self) -> str:
        """One line for the terminal report."""
        low, high = min(self.samples), max(self.samples)
        each = f"{low}" if low == high else f"{low}–{high}"
        line = (f"{self.processes} processes × {each} samples · process medians spread {self.between_cv:.2%}, "
                f"within a process {self.within_cv:.2%}")
        if self.dominated:
            line += (" · CV dominated by between-process variation: more samples in one process won't shrink "
                     "it, more processes will")
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "samples": list(self.samples),
            "medians": [m if math.isfinite(m) else None for m in self.medians],
            "between_cv": self.between_cv if math.isfinite(self.between_cv) else None,
            "within_cv": self.within_cv if math.isfinite(self.within_cv) else None,
            "dominated": self.dominated,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProcessSpread:
        def num(x: Any) -> float:
            return math.nan if x is None else float(x)

        return cls(
            processes=int(d["processes"]),
            samples=tuple(int(x) for x in d["samples"]),
            medians=tuple(num(x) for x in d["medians"]),
            between_cv=num(d["between_cv"]),
            within_cv=num(d["within_cv"]),
            dominated=bool(d["dominated"]),
        )


def _counted_ops(run: BenchmarkStats, c: CounterSummary) -> float:
    """The operations of the samples where counter ``c`` was read in ``run``."""
    if len(c.per_sample_per_op) == run.samples:  # read in every sample (the usual case)
        return float(sum(run.operations))
    return c.total / c.per_op if c.per_op and math.isfinite(c.per_op) else 0.0


def _pool_counters(runs: Sequence[BenchmarkStats]) -> list[CounterSummary]:
    by_name: dict[str, list[tuple[BenchmarkStats, CounterSummary]]] = {}
    for r in runs:
        for c in r.counters:
            by_name.setdefault(c.name, []).append((r, c))
    out = []
    for name, pairs in by_name.items():
        parts = [c for _, c in pairs]
        total = math.fsum(c.total for c in parts)
        ops = math.fsum(_counted_ops(r, c) for r, c in pairs)
        per_sample = tuple(v for c in parts for v in c.per_sample_per_op)
        weights = [len(c.per_sample_per_op) or 1 for c in parts]
        coverage = math.fsum(c.coverage_pct * w for c, w in zip(parts, weights)) / sum(weights)
        out.append(CounterSummary(name, total, total / ops if ops else math.nan, per_sample, coverage))
    return out


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def pool(runs: Sequence[BenchmarkStats]) -> BenchmarkStats:
    """One case's statistics from the runs of its processes, in run order; the first one's setup.

    Samples are concatenated and the distributions recomputed over all of them, so the pooled
    figures are those of one run with every sample; ``process_spread`` says how the processes differed.
    """
    if not runs:
        raise ValueError("pool() needs the statistics of at least one process")
    if len(runs) == 1:
        return runs[0]
    head = runs[0]
    durations = tuple(d for r in runs for d in r.durations)
    operations = tuple(o for r in runs for o in r.operations)
    return replace(
        head,
        durations=durations,
        host_durations=tuple(h for r in runs for h in r.host_durations),
        operations=operations,
        latency=Distribution.of([d / o for d, o in zip(durations, operations)]),
        rate=Distribution.of([head.throughput.rate(o, d) for d, o in zip(durations, operations)]),
        counters=_pool_counters(runs),
        metrics=pool_metrics([r.metrics for r in runs]),
        diagnostics=pool_metrics([r.diagnostics for r in runs]),
        diagnostic_errors=_unique([e for r in runs for e in r.diagnostic_errors]),
        warnings=_unique([w for r in runs for w in r.warnings]),
        notes=_unique([n for r in runs for n in r.notes]),
        process_spread=ProcessSpread.of(runs),
    )
