"""Compare two sets of measurements (before, after): one verdict per metric.

This is the one comparison of mmtrack: ``mmtrack compare``, the end-of-run
analysis of ``mmtrack bench`` and the summary of ``mmtrack run`` all call
:func:`compare_measurements`. Pure functions over :mod:`mmtrack.results` records.

A row is flagged (improved / regressed) only when all of these hold:

1. **Effect.** The ratio after/before moves beyond the minimum effect in either
   direction: ``max(r, 1/r) > 1 + threshold`` (asv's ``factor``; 10% by default,
   1% for deterministic counters such as instructions/op, overridable per
   benchmark or metric).
2. **Significance on the samples.** Mann–Whitney U (two-sided, ``alpha`` = asv's
   0.002) when both sides have enough samples for the test to be able to reach
   ``alpha``; otherwise the 99% confidence intervals must not overlap (as asv
   does); with neither samples nor intervals, the effect alone decides.
3. **Beyond the series' own noise** (only when the caller gives the recent history
   of the series): the after value lies more than ``history_margin`` (1) times
   farther from the current level's median than any commit of that level did, and
   at least ``history_z`` (4) robust standard deviations from it.
   Consecutive commits of unchanged code differ far more than one commit's samples
   suggest (runners, days), so a test on two sample sets alone is overconfident.

Beyond the effect but failing 2 or 3: **ambiguous** (``~``). Neutral metrics (ids,
choices) are never flagged. A changed benchmark code version: **not comparable** (``x``).
"""

from __future__ import annotations

import fnmatch
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Literal, Mapping, Sequence

import numpy as np
from scipy import stats as sps
from scipy.special import comb

from ..measure.metrics import Direction
from ..results import Measurement, MetricKey

Verdict = Literal[
    "improved", "regressed", "unchanged", "ambiguous", "not comparable", "failed", "fixed", "new", "removed"
]

#: asv-like marks: ``+`` worse, ``-`` better, ``!`` failed, ``*`` fixed, ``x`` not comparable,
#: ``~`` ambiguous (asv prefixes the ratio with ``~``), ``n`` new, ``r`` removed.
MARKS: dict[str, str] = {
    "regressed": "+",
    "improved": "-",
    "failed": "!",
    "fixed": "*",
    "not comparable": "x",
    "ambiguous": "~",
    "unchanged": " ",
    "new": "n",
    "removed": "r",
}

#: What ``--fail-on`` accepts, and the verdicts each one gates on.
FAIL_ON: dict[str, frozenset[str]] = {
    "regression": frozenset({"regressed", "failed"}),  # a benchmark that starts failing regressed too
    "failed": frozenset({"failed"}),
    "ambiguous": frozenset({"regressed", "failed", "ambiguous"}),
}

Case = tuple[str, str, MetricKey]  # (benchmark, canonical params, metric): Measurement.case


@dataclass(frozen=True, slots=True)
class ComparePolicy:
    """How strict the comparison is.

    ``thresholds`` maps fnmatch patterns to a minimum effect; a pattern is tried
    against the benchmark name, the metric name, ``str(MetricKey)`` and
    ``"benchmark:metric name"``; the first matching pattern wins, before the
    deterministic-counter and default thresholds.
    """

    threshold: float = 0.10
    counter_threshold: float = 0.01
    counter_sections: tuple[str, ...] = ("counters",)
    # Counters that do not depend on timing: same code, same count. Cycles, task-clock,
    # cache and branch misses vary from run to run and keep the default threshold.
    deterministic_counters: tuple[str, ...] = ("instructions", "branches")
    thresholds: Mapping[str, float] = field(default_factory=dict)
    alpha: float = 0.002
    # Measured with scripts/eval_detect.py and on the real MetPy history (docs/analysis.md):
    # margin 1.5 with z 3 halves A/A false alarms, but on MetPy it demotes 13 of 16 real,
    # lasting regressions of one commit to "ambiguous" (their windows held a one-off spike).
    history_z: float = 4.0
    history_margin: float = 1.0
    min_history: int = 5

    def threshold_for(self, benchmark: str, metric: MetricKey) -> float:
        names = (benchmark, metric.name, str(metric), f"{benchmark}:{metric.name}")
        for pattern, value in self.thresholds.items():
            if any(fnmatch.fnmatchcase(n, pattern) for n in names):
                return float(value)
        if metric.section in self.counter_sections and metric.name in self.deterministic_counters:
            return self.counter_threshold
        return self.threshold


@dataclass(frozen=True, slots=True)
class Row:
    """One metric of one benchmark case, before and after."""

    benchmark: str
    params: str  # canonical params
    metric: MetricKey
    direction: Direction
    verdict: Verdict
    before: Measurement | None
    after: Measurement | None
    ratio: float | None = None  # after / before (medians)
    p_value: float | None = None
    test: str = ""  # "mann-whitney", "ci-overlap", "range-overlap", "effect-only", ""
    threshold: float = 0.0
    history_z: float | None = None  # |deviation| / robust sd of the recent history
    note: str = ""

    @property
    def mark(self) -> str:
        return MARKS[self.verdict]

    @property
    def name(self) -> str:
        m = self.after or self.before
        params = dict(m.params) if m else {}
        return f"{self.benchmark}({', '.join(params.values())})" if params else self.benchmark

    @property
    def metric_label(self) -> str:
        m = self.after or self.before
        return (m.display_name if m and m.display_name else self.metric.name) + f" [{self.metric.unit}]"


@dataclass(frozen=True, slots=True)
class Comparison:
    rows: tuple[Row, ...]
    before_label: str = "before"
    after_label: str = "after"
    policy: ComparePolicy = field(default_factory=ComparePolicy)

    def counts(self) -> dict[str, int]:
        c = Counter(r.verdict for r in self.rows)
        return {v: c[v] for v in MARKS if c[v]}

    def by_verdict(self, *verdicts: str) -> list[Row]:
        return [r for r in self.rows if r.verdict in verdicts]

    @property
    def regressions(self) -> list[Row]:
        return self.by_verdict("regressed")

    def changed(self) -> list[Row]:
        return [r for r in self.rows if r.verdict != "unchanged"]


# --------------------------------------------------------------------------- statistics


def _finite(values: Iterable[float]) -> np.ndarray:
    a = np.asarray(list(values), dtype=float)
    return a[np.isfinite(a)]


def significance(before: Measurement, after: Measurement, alpha: float) -> tuple[bool, float | None, str]:
    """(significant, p-value, test name) for two measurements of one metric."""
    a, b = _finite(before.samples), _finite(after.samples)
    if a.size and b.size and 1.0 / comb(a.size + b.size, min(a.size, b.size)) < alpha:
        if np.ptp(a) == 0 and np.ptp(b) == 0:  # deterministic on both sides
            return bool(a[0] != b[0]), (0.0 if a[0] != b[0] else 1.0), "mann-whitney"
        p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
        p = 1.0 if math.isnan(p) else p
        return p < alpha, p, "mann-whitney"
    ci = [(m.ci_low, m.ci_high) for m in (before, after)]
    if all(lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi) for lo, hi in ci):
        (alo, ahi), (blo, bhi) = ci
        return not (ahi >= blo and alo <= bhi), None, "ci-overlap"  # type: ignore[operator]
    if a.size >= 2 and b.size >= 2:
        return not (a.max() >= b.min() and a.min() <= b.max()), None, "range-overlap"
    return True, None, "effect-only"


def history_deviation(history: Sequence[float], value: float, min_points: int = 5) -> tuple[float, float] | None:
    """How far ``value`` lies from the current level of ``history`` (oldest first).

    Returns (robust z, excursion ratio) or None when the history is too
    short. The current level is the last segment :mod:`.detect` finds in the
    history (the whole window when it finds none); its spread is the larger of
    the scaled MAD and IQR of the log values, so that a series that flips
    between a few discrete levels is not mistaken for a quiet one. The excursion
    ratio is the distance from the level over the largest distance any commit of
    the level showed, either way (above 1: a new extreme).
    """
    from .detect import DetectPolicy, segment_levels

    h = _finite(history)
    h = h[h > 0]
    if h.size < min_points or not (value > 0):
        return None
    start, stop = segment_levels(list(h), DetectPolicy(min_points=max(8, min_points)))[-1]
    all_x = np.log(h)
    x = all_x[start:stop] if stop - start >= min_points else all_x
    med = float(np.median(x))
    q1, q3 = np.percentile(x, [25, 75])
    sd = max(1.4826 * float(np.median(np.abs(x - med))), float(q3 - q1) / 1.349, 1e-4)
    d = math.log(value) - med
    # Beyond every excursion the level has shown, either way: a series whose commits
    # have jumped by 15% before is not flagged for a 12% jump now.
    widest = float(np.max(np.abs(x - med)))
    return abs(d) / sd, (abs(d) / widest if widest > 0 else math.inf)


# --------------------------------------------------------------------------- comparison


def _failed(m: Measurement) -> bool:
    return m.status == "failed" or (m.status == "ok" and (m.median is None or not math.isfinite(m.median)))


def compare_pair(
    before: Measurement | None,
    after: Measurement | None,
    policy: ComparePolicy | None = None,
    history: Sequence[float] | None = None,
) -> Row:
    """The verdict on one case; ``history`` = the series' recent medians up to ``before``."""
    policy = policy or ComparePolicy()
    ref = after or before
    assert ref is not None, "compare_pair needs at least one measurement"
    base = dict(benchmark=ref.benchmark, params=ref.params_key, metric=ref.metric, direction=ref.direction)
    thr = policy.threshold_for(ref.benchmark, ref.metric)
    if before is None:
        return Row(**base, verdict="new", before=None, after=after, threshold=thr)
    if after is None:
        return Row(**base, verdict="removed", before=before, after=None, threshold=thr)
    if before.version is not None and after.version is not None and before.version != after.version:
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr, note="benchmark code changed")
    if "skipped" in (before.status, after.status):
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr, note="skipped")
    if _failed(after):
        note = "still failing" if _failed(before) else "started failing"
        return Row(**base, verdict="failed", before=before, after=after, threshold=thr, note=note)
    if _failed(before):
        return Row(**base, verdict="fixed", before=before, after=after, threshold=thr)

    b, a = float(before.median), float(after.median)  # type: ignore[arg-type]
    ratio = a / b if b else (1.0 if a == b else math.inf)
    if b == 0 or a == 0:
        beyond = a != b
    else:
        beyond = max(ratio, 1 / ratio) > 1 + thr
    significant, p, test = significance(before, after, policy.alpha)
    row = dict(base, before=before, after=after, ratio=ratio, p_value=p, test=test, threshold=thr)
    if ref.direction is Direction.NEUTRAL:
        return Row(**row, verdict="unchanged", note="neutral metric: never flagged" if beyond else "")
    if not beyond:
        return Row(**row, verdict="unchanged")
    if not significant:
        why = {"ci-overlap": "CIs overlap", "range-overlap": "ranges overlap"}.get(test, "not significant")
        if p is not None:
            why = f"not significant, p={p:.2g}"
        return Row(**row, verdict="ambiguous", note=why)
    z = None
    if history is not None:
        dev = history_deviation(history, a, policy.min_history)
        if dev is not None:
            z, excursion = dev
            if z < policy.history_z or excursion <= policy.history_margin:
                return Row(
                    **row, verdict="ambiguous", history_z=z, note="within the series' own noise"
                )
    worse = (a > b) if ref.direction is Direction.LOWER else (a < b)
    return Row(**row, verdict="regressed" if worse else "improved", history_z=z)


def compare_measurements(
    before: Iterable[Measurement],
    after: Iterable[Measurement],
    policy: ComparePolicy | None = None,
    *,
    history: Mapping[Case, Sequence[float]] | None = None,
    before_label: str = "before",
    after_label: str = "after",
) -> Comparison:
    """Compare every metric of every benchmark case present on either side.

    ``history`` optionally maps a case (``Measurement.case``) to the medians of its
    series' recent commits, oldest first, ending with the before commit.
    """
    policy = policy or ComparePolicy()
    bmap = {m.case: m for m in before}
    amap = {m.case: m for m in after}
    keys = sorted(set(bmap) | set(amap), key=lambda k: (k[0], k[1], k[2]))
    rows = tuple(
        compare_pair(bmap.get(k), amap.get(k), policy, (history or {}).get(k)) for k in keys
    )
    return Comparison(rows, before_label, after_label, policy)


def failing_rows(comparison: Comparison, fail_on: Iterable[str] = ("regression",)) -> list[Row]:
    """The rows that make ``--fail-on`` fail; "failed" gates only newly failing rows."""
    gates: set[str] = set()
    for name in fail_on:
        if name not in FAIL_ON:
            raise ValueError(f"unknown --fail-on value {name!r}; choose from {', '.join(FAIL_ON)}")
        gates |= FAIL_ON[name]
    return [
        r
        for r in comparison.rows
        if r.verdict in gates
        and r.direction is not Direction.NEUTRAL
        and not (r.verdict == "failed" and r.note == "still failing")
    ]


def should_fail(comparison: Comparison, fail_on: Iterable[str] = ("regression",)) -> bool:
    return bool(failing_rows(comparison, fail_on))


__all__ = [
    "MARKS",
    "FAIL_ON",
    "Verdict",
    "ComparePolicy",
    "Row",
    "Comparison",
    "significance",
    "history_deviation",
    "compare_pair",
    "compare_measurements",
    "failing_rows",
    "should_fail",
]
