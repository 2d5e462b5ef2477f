"""Robust statistics for one benchmark run.

Assumptions, stated as pyperf does: samples are treated as exchangeable draws of
one distribution; nothing assumes normality. Location is the median, spread is
the MAD (median absolute deviation, unscaled) and the CV (sample standard
deviation over mean, so it is sensitive to outliers on purpose: a high CV flags
an unstable run). Outliers follow Tukey's rule: outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .metrics import Direction
from .quantiles import percentile

OUTLIER_RULE = "Tukey 1.5×IQR"


@dataclass(frozen=True, slots=True)
class Distribution:
    """Location and spread of one per-sample quantity."""

    median: float
    mean: float
    p95: float
    p5: float
    q1: float
    q3: float
    min: float
    max: float
    mad: float
    cv: float
    outliers: int
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> "Distribution":
        # Plain Python, as numpy computes it (quantiles.py): the worker never imports numpy.
        a = [float(v) for v in values]
        nan = math.nan
        if not a:
            return cls(nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, 0, 0)
        if any(math.isnan(v) for v in a):  # numpy: every statistic of an array with a NaN is NaN
            return cls(nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, 0, len(a))
        s = sorted(a)
        q1, med, q3 = percentile(s, 25), percentile(s, 50), percentile(s, 75)
        mean = math.fsum(a) / len(a)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in a) / (len(a) - 1)) if len(a) > 1 else 0.0
        iqr = q3 - q1
        low, high = q1 - 1.5 * iqr, q3 + 1.5 * iqr
        return cls(
            median=med,
            mean=mean,
            p95=percentile(s, 95),
            p5=percentile(s, 5),
            q1=q1,
            q3=q3,
            min=s[0],
            max=s[-1],
            mad=percentile(sorted(abs(v - med) for v in a), 50),
            cv=std / mean if mean else math.nan,
            outliers=sum(1 for v in a if v < low or v > high),
            count=len(a),
        )


@dataclass(frozen=True, slots=True)
class CounterSummary:
    """A hardware or software counter over the measured samples."""

    name: str
    total: float  # sum over samples, multiplex-scaled
    per_op: float  # total / total operations
    per_sample_per_op: tuple[float, ...]
    coverage_pct: float  # mean time_running / time_enabled, 100 without multiplexing


def counter_direction(name: str) -> Direction:
    return Direction.NEUTRAL if name in {"cpu-migrations", "context-switches"} else Direction.LOWER


def summarize_counters(
    per_sample: Sequence[dict[str, float]],
    operations: Sequence[int],
    enabled_running: Sequence[tuple[int, int]],
) -> list[CounterSummary]:
    """Aggregate per-sample counter totals; only counters actually collected appear."""
    names: list[str] = []
    for counters in per_sample:
        names.extend(n for n in counters if n not in names)
    ratios = [r / e for e, r in enabled_running if e > 0]
    coverage = 100.0 * sum(ratios) / len(ratios) if ratios else 100.0
    out = []
    for n in names:
        # Counters in different perf groups can miss different samples: per op is taken over
        # the samples where the counter was read, so it is not biased by the ones it missed.
        present = [(c[n], o) for c, o in zip(per_sample, operations) if n in c and not math.isnan(c[n])]
        total = float(sum(v for v, _ in present))
        ops = float(sum(o for _, o in present))
        per_op = total / ops if ops else math.nan
        out.append(CounterSummary(n, total, per_op, tuple(v / o if o else math.nan for v, o in present), coverage))
    return out


def between_process_dominated(run_medians: Sequence[float], within_cv: float, samples: float) -> bool:
    """Whether run-to-run spread exceeds what within-run noise alone gives a run's median.

    The relative standard error of a median of ``samples`` draws is about 1.25 x within CV / sqrt(n)
    (normal approximation). When the CV of several runs' medians is over twice that, the spread comes
    from the processes (placement, heap, other tenants), and more samples in one process won't shrink it.
    """
    if len(run_medians) < 2 or samples < 1 or not math.isfinite(within_cv):
        return False
    mean = math.fsum(run_medians) / len(run_medians)
    if mean == 0:
        return False
    sd = math.sqrt(math.fsum((m - mean) ** 2 for m in run_medians) / (len(run_medians) - 1))
    return sd / mean > 2 * 1.25 * within_cv / math.sqrt(samples)


def median(values: Sequence[float]) -> float:
    """The median of ``values``, without numpy (cheap on the few values of a warm-up)."""
    return percentile(sorted(values), 50)


def sample_stats(values: Sequence[float]) -> dict[str, float | int]:
    """mean, median, p95, min, max, q1, q3 and count of ``values`` (as numpy computes them).

    A plain-Python twin of ``MetricSummary.from_values`` for hot paths such as the
    asv import and the store's records (numpy's per-call overhead dominates on
    ~10 samples); a test keeps the two in agreement.
    """
    s = sorted(values)
    n = len(s)
    return {
        "mean": math.fsum(s) / n,
        "median": percentile(s, 50),
        "p95": percentile(s, 95),
        "min": s[0],
        "max": s[-1],
        "q1": percentile(s, 25),
        "q3": percentile(s, 75),
        "count": n,
    }


def sample_stats_rows(rows: Sequence[Sequence[float]]) -> dict[str, list[float]]:
    """``sample_stats`` of each of many non-empty lists of finite floats, as columns (no ``count``).

    For an import's thousands of short sample lists: numpy sorts and interpolates all lists of
    one length at once, with the same arithmetic as ``percentile`` (so the same floats; a test
    keeps the two in agreement), and ``math.fsum`` gives the mean as ``sample_stats`` does.
    numpy is imported here, not at module import: the engine's workers never load it.
    """
    import numpy as np

    n = len(rows)
    keys = ("mean", "median", "p95", "min", "max", "q1", "q3")
    out: dict[str, list[float]] = {k: [] for k in keys} if n == 0 else {k: [0.0] * n for k in keys}
    by_length: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        by_length.setdefault(len(r), []).append(i)
    for length, idx in by_length.items():
        s = np.sort(np.array([rows[i] for i in idx], dtype=np.float64).reshape(len(idx), length), axis=1)

        def pct(q: int) -> list[float]:
            pos = (length - 1) * q / 100.0  # as percentile(): lower index, upper index, fraction
            lo = math.floor(pos)
            hi = min(lo + 1, length - 1)
            return (s[:, lo] + (s[:, hi] - s[:, lo]) * (pos - lo)).tolist()

        cols = {
            "mean": [math.fsum(rows[i]) / length for i in idx],
            "median": pct(50),
            "p95": pct(95),
            "min": s[:, 0].tolist(),
            "max": s[:, -1].tolist(),
            "q1": pct(25),
            "q3": pct(75),
        }
        if len(idx) == n:  # one length (the usual case): the columns as they are
            return cols
        for k, col in cols.items():
            dest = out[k]
            for i, v in zip(idx, col):
                dest[i] = v
    return out


__all__ = [
    "OUTLIER_RULE",
    "Distribution",
    "CounterSummary",
    "counter_direction",
    "summarize_counters",
    "median",
    "between_process_dominated",
    "sample_stats",
    "sample_stats_rows",
]
