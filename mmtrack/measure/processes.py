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
from dataclasses import replace
from typing import Sequence

from .benchmark_stats import BenchmarkStats
from .metrics import pool_metrics
from .spread import ProcessSpread
from .stats import CounterSummary, Distribution


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
