"""A step in the newest commits of a series, which detect's rank test cannot prove yet, judged by the gate's rules.

Each of the newest :data:`.policy.NEWEST_COMMITS` commits after the series' last change point (but the newest commit
itself: one commit is never a level) is judged on its median
as ``mmtrack compare`` judges a commit with history (:func:`.compare.compare_pair`: its move from the current
segment's level, its distance from every commit the window has seen, the window's density), and the commits after it
settle it (:func:`.noise.follow_up`, :func:`.noise.held_level`). So such a step is ``suspected`` at once,
``confirmed`` once the next commits agree, and withdrawn (not reported) once they refute it. The first commit so
flagged starts the new level.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..measure.metrics import Direction
from ..results import Measurement, MetricKey
from .compare import compare_pair
from .noise import held_level, segment_noise
from .policy import HISTORY_WINDOW, NEWEST_COMMITS, ComparePolicy, Evidence

#: What a bare median stands for: the rules read the medians only, and the threshold is the default one.
_METRIC = MetricKey("detect", "median", "")


@dataclass(frozen=True, slots=True)
class NewestStep:
    """A step the gate's rules flag in the newest commits: where the new level starts, both levels, and its state."""

    index: int  # first commit of the new level
    before: float  # median of the commits from the last change point up to the step
    after: float  # median of the step's commit and those after it
    state: Evidence  # suspected (the next commits are not in yet) or confirmed


def _bare(value: float, direction: Direction) -> Measurement:
    return Measurement(benchmark="", params={}, metric=_METRIC, direction=direction, median=value)


def newest_step(values: Sequence[float], start: int, direction: Direction,
                policy: ComparePolicy | None = None) -> NewestStep | None:
    """The first of the newest commits of ``values`` (oldest first, one benchmark code version) after index ``start``
    (the last change point, or 0) that the per-commit gate flags, suspected or confirmed, and the commits after it do
    not refute; None if none is, or where a value of the window is at or below 0. The newest commit alone is the
    gate's (``mmtrack compare``, ``run``): one commit is never a level."""
    policy = policy or ComparePolicy()
    n = len(values)
    if not np.all(np.asarray(values[max(0, n - NEWEST_COMMITS - HISTORY_WINDOW) :]) > 0):
        return None  # no noise model out of log space: every wiggle around 0 would read as a step
    for j in range(max(start + policy.min_history, n - NEWEST_COMMITS, 1), n - 1):  # one commit is never a level
        level = _level(values[max(start, j - HISTORY_WINDOW) : j])
        if abs(math.log(values[j] / level)) <= math.log1p(policy.threshold) / 2:
            continue  # near detect's level since its last change point: the gate's segment model (the cost) is moot
        row = compare_pair(_bare(values[j - 1], direction), _bare(values[j], direction), policy,
                           history=values[max(0, j - HISTORY_WINDOW) : j],
                           later=values[j + 1 : j + 1 + policy.confirm_window], p_value=False)
        flagged = row.verdict in ("regressed", "improved") and row.state in ("suspected", "confirmed")
        if (flagged or (row.verdict == "ambiguous" and _holds_so_far(values, j, policy))) and _held_so_far(
                values, start, j, policy.threshold):
            return NewestStep(j, _level(values[start:j]), _level(values[j:]), row.state if flagged else "suspected")
    return None


def _held_so_far(values: Sequence[float], start: int, j: int, threshold: float) -> bool:
    """Whether the commits from ``j`` on hold the move (their median beyond ``threshold`` from the level before, the
    way commit ``j`` moved): the gate keeps a suspicion until four commits are in, though the first ones went back."""
    before, moved = _level(values[start:j]), math.log(values[j] / _level(values[start:j]))
    held = math.log(_level(values[j:]) / before)
    return held * moved > 0 and abs(held) > math.log1p(threshold)


def _holds_so_far(values: Sequence[float], j: int, policy: ComparePolicy) -> bool:
    """Whether commit ``j`` and the commits after it, fewer than ``confirm_window``, hold a new level by the gate's
    held-level rule (:func:`.noise.held_level`) read over the commits there are: a commit the gate left ambiguous
    that the next commits would confirm, were it the last of them."""
    later = list(values[j + 1 : j + 1 + policy.confirm_window])
    if not 1 <= len(later) < policy.confirm_window:
        return False
    history = values[max(0, j - HISTORY_WINDOW) : j]
    noise = segment_noise(history, policy.min_history)
    if noise is None:
        return False
    so_far = dataclasses.replace(policy, confirm_window=len(later), confirm_agree=len(later))
    return held_level(noise, history, values[j], later, policy.threshold, so_far) == "confirmed"


def _level(values: Sequence[float]) -> float:
    """The median of ``values``, in log space where all are positive (as detect reads its levels)."""
    x = np.asarray(values, dtype=float)
    return math.exp(float(np.median(np.log(x)))) if np.all(x > 0) else float(np.median(x))


__all__ = ["NewestStep", "newest_step"]
