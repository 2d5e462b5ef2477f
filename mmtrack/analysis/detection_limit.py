"""The smallest step a series can see: at one commit (the gate) and after the confirmation window (detect), at 80%
power, from the series' own noise.

Reads detect's levels of the series (:func:`.detect.segment_levels`) and each commit's deviation from its own level,
in order, and asks, for each step size, how often the real rules would find it:

- *after the confirmation window*: the step's commit and the ``confirm_window`` commits after it are a block of the
  series' own deviations (so a runner's burst and the heavy tail come along), moved by the step; each of the
  series' blocks is one try. Found where detect's exact rank test of the block against the current level reaches
  the suite's budget for a lone step (``fdr / series``) with its median moved ``min_effect``, or, where that test
  finds no step at all, the gate flags the block's first commit and the others hold past half of it.
- *at one commit*: found where the commit clears the gate's history rule: beyond the threshold, ``z_needed``
  deviations from the level and ``history_gap`` deviations beyond every commit seen.

The limit is the smallest step found in 80% of the tries. docs/design/alerts.md, "The smallest change each
benchmark can see", has the method and its calibration on real histories.
"""

from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .budget import DEFAULT_FDR
from .noise import positive
from .policy import HISTORY_WINDOW, ComparePolicy

#: The share of tries a stated limit is found in.
POWER = 0.8
#: A step this large (relative) a series "can see"; a series whose confirmed limit is larger is too noisy for it.
USEFUL_STEP = 0.10
#: Commits of a series' newest history its limits are stated from (:func:`limit_record`): its current noise, at a
#: bounded cost; the gate's window (policy.HISTORY_WINDOW), which the pages read without reading a series whole.
HISTORY = HISTORY_WINDOW
#: Step sizes tried (log): from 0.5% to x16, evenly in log(1 + step).
_GRID = np.log1p(np.geomspace(0.005, 15.0, 96))


@dataclass(frozen=True, slots=True)
class DetectionLimit:
    """The smallest relative steps a series shows at 80% power (``math.inf``: none up to x16)."""

    one_commit: float  # flagged by the gate at the step's own commit
    confirmed: float  # confirmed by detect once the confirmation window's commits are in
    commits: int  # commits of history the noise model read

    @property
    def too_noisy(self) -> bool:
        """Whether a :data:`USEFUL_STEP` change is below what the series confirms."""
        return self.confirmed > USEFUL_STEP

    def as_dict(self) -> dict[str, float | int | bool | None]:
        finite = lambda x: round(x, 4) if math.isfinite(x) else None  # noqa: E731 (JSON has no infinity)
        return {"one_commit": finite(self.one_commit), "confirmed": finite(self.confirmed), "commits": self.commits,
                "too_noisy": self.too_noisy}


def detection_limit(history: Sequence[float], series: int = 500, fdr: float = DEFAULT_FDR,
                    compare: ComparePolicy | None = None) -> DetectionLimit | None:
    """The detection limits of a series with ``history`` (medians, oldest first) in a suite of ``series`` series
    under the false-alarm budget ``fdr`` (:mod:`.budget`: a lone step passes at ``fdr / series``); None when the
    history is too short for a noise model."""
    from .detect import DetectPolicy, segment_levels

    compare = compare or ComparePolicy()
    detect = DetectPolicy()
    h = positive(history)
    levels = segment_levels(list(h), detect)  # detect's: its last level is what a new step is tested against
    if h.size < detect.min_points or levels[-1][1] - levels[-1][0] < detect.min_points:
        return None
    x = np.log(h)
    own = [x[a:b] - np.median(x[a:b]) for a, b in levels if b - a >= compare.min_history]
    deviations = np.concatenate(own)  # each commit from its own level, in order (a step moves the level only)
    segment = np.sort(own[-1])
    p_needed = min(detect.alpha, fdr / max(series, 1)) if fdr > 0 else detect.alpha
    bar = _gate_bar(segment, deviations, compare)
    confirmed = _confirmed_limit(segment, deviations, compare.confirm_window + 1, p_needed, bar, detect)
    return DetectionLimit(math.expm1(bar - _quantile(segment, 1 - POWER)), confirmed, int(h.size))


def _gate_bar(segment: np.ndarray, seen: np.ndarray, compare: ComparePolicy) -> float:
    """The deviation (log) from the level beyond which the gate's history rule flags one commit: the threshold,
    ``z_needed`` robust deviations (the larger of the scaled MAD and IQR, as :func:`.noise.segment_noise`), and
    ``history_gap`` of them beyond every commit seen."""
    centre = _quantile(segment, 0.5)
    mad = 1.4826 * _quantile(np.sort(np.abs(segment - centre)), 0.5)
    sd = max(mad, (_quantile(segment, 0.75) - _quantile(segment, 0.25)) / 1.349, 1e-4)
    beyond_seen = float(seen.max()) + compare.history_gap * sd
    return max(math.log1p(compare.threshold), compare.z_needed(seen.size) * sd, beyond_seen)


def _quantile(ascending: np.ndarray, q: float) -> float:
    """np.quantile's (linear) of an array already sorted, without its wrapper layers (a limit takes several)."""
    at = q * (ascending.size - 1)
    lo = int(at)
    hi = min(lo + 1, ascending.size - 1)
    return float(ascending[lo] + (at - lo) * (ascending[hi] - ascending[lo]))


def _confirmed_limit(segment: np.ndarray, deviations: np.ndarray, k: int, p_needed: float, bar: float,
                     detect) -> float:
    """The smallest step whose blocks of ``k`` commits (the series' own, in order) are confirmed in :data:`POWER`
    of them: by detect's rank test against the sorted ``segment`` deviations at ``p_needed``, its median moved
    ``min_effect``; or by the gate, the first commit beyond ``bar`` and the others past half its deviation."""
    if deviations.size < k:
        return math.inf
    blocks = np.lib.stride_tricks.sliding_window_view(deviations, k)  # (tries, k)
    u_budget, u_alpha = _u_needed(k, segment.size, p_needed), _u_needed(k, segment.size, detect.alpha)
    floor = math.log1p(detect.min_effect)
    block_median = np.median(blocks, axis=1)
    def power(step: float) -> float:
        moved = blocks + step
        # Mann-Whitney U of the block against the segment, ties counted half.
        u = ((np.searchsorted(segment, moved, side="left") + np.searchsorted(segment, moved, side="right")) / 2
             ).sum(axis=1)
        big = block_median + step >= floor
        # The gate's rules counted only where detect's own test found no step: where the budget holds one back, detect
        # hands those commits to them (analysis/series.py), which this leaves out, so the limit errs large.
        gate = (moved[:, 0] >= bar) & np.all(moved[:, 1:] >= moved[:, :1] / 2, axis=1) & ~(big & (u >= u_alpha))
        return float(((big & (u >= u_budget)) | gate).mean())

    lo, hi = -1, _GRID.size  # power grows with the step: the first grid step at POWER, by bisection
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(float(_GRID[mid])) >= POWER else (mid, hi)
    return math.expm1(float(_GRID[hi])) if hi < _GRID.size else math.inf


def limit_record(values: Sequence[float], series: int, fdr: float) -> dict[str, float | int | bool | None]:
    """The limits of a series of ``values`` (medians, oldest first; its newest :data:`HISTORY`) as JSON, as
    ``mmtrack list benchmarks`` and the benchmark pages show them: ``too_noisy`` None where the history is too short
    for a noise model, ``one_commit`` and ``confirmed`` None there or where no step up to x16 is found."""
    limit = detection_limit(values[-HISTORY:], series=series, fdr=fdr)
    if limit is None:
        return {"one_commit": None, "confirmed": None, "commits": len(values), "too_noisy": None}
    return limit.as_dict()


#: Limits are restated once every this many measured commits of a series: they read its noise, which one commit
#: rarely moves, so an update need not restate them (and rewrite every benchmark's page data) each commit, and
#: ``mmtrack list benchmarks`` and the pages state the same figures.
STATE_EVERY = 10


def state_offset(benchmark: str) -> int:
    """Where in :data:`STATE_EVERY` commits a benchmark's limits are restated: spread by its name, so that each
    update restates about a tenth of a suite's benchmarks rather than all of them at every tenth commit."""
    return zlib.crc32(benchmark.encode()) % STATE_EVERY


def stated_count(measured: int, offset: int) -> int:
    """How many of a series' ``measured`` commits its limits are stated from: the last count at its ``offset``."""
    return max(0, measured - (measured - offset) % STATE_EVERY)


def stated_limit(values: Sequence[float], series: int, fdr: float, offset: int = 0
                 ) -> dict[str, float | int | bool | None]:
    """:func:`limit_record` of ``values`` (measured medians, oldest first) up to their last count at ``offset``
    (:func:`state_offset`): the limits ``list benchmarks`` and the pages state."""
    return limit_record(values[: stated_count(len(values), offset)], series, fdr)


@functools.lru_cache(maxsize=256)
def _u_needed(k: int, m: int, p: float) -> float:
    """The smallest U of ``k`` values against ``m`` whose exact two-sided p (detect's) is at most ``p``; above
    ``k * m`` when none is."""
    from .rank_tests import exact_u_p  # detect's own exact test: the limit asks what detect would prove

    lo, hi = k * m, 2 * k * m  # doubled U: ties make half-integers
    if exact_u_p(k * m, k, m) > p:
        return k * m + 1.0
    while hi - lo > 1:  # p falls as U grows: the smallest doubled U at or under p
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if exact_u_p(mid / 2, k, m) <= p else (mid, hi)
    return hi / 2


__all__ = ["DetectionLimit", "detection_limit", "limit_record", "stated_limit", "state_offset", "stated_count",
           "HISTORY", "POWER", "STATE_EVERY", "USEFUL_STEP"]
