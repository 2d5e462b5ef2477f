"""The verdict on a deterministic metric: the same code gives the same count, so a change beyond a small
tolerance is real at once.

Instruction counts and simulated caches under callgrind (:mod:`mmtrack.measure.callgrind`) do not vary
from run to run: no history, no later commits and no significance test are needed to believe a change.
The tolerances (:class:`~.policy.ComparePolicy`) were calibrated on A/A runs (docs/design/callgrind.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..measure.metrics import Direction
from ..results import Measurement, MetricKey
from .policy import ComparePolicy, Evidence

SECTION = "callgrind"  # measure/callgrind.py's section (the analysis layer does not import the engine)
COUNTS = ("instructions", "est_cycles")
MISSES = ("l1i_misses", "l1d_misses", "lli_misses", "lld_misses")


@dataclass(frozen=True, slots=True)
class Settled:
    verdict: str  # "regressed", "improved" or "unchanged"
    ratio: float
    tolerance: float
    state: Evidence | None
    note: str


def is_deterministic(metric: MetricKey) -> bool:
    return metric.section == SECTION and metric.name in COUNTS + MISSES


def judge(before: Measurement, after: Measurement, policy: ComparePolicy) -> Settled | None:
    """The verdict on a deterministic metric, or None for any other (or one without medians)."""
    if not is_deterministic(after.metric) or before.median is None or after.median is None:
        return None
    b, a = float(before.median), float(after.median)
    tolerance = policy.deterministic_tolerance
    ratio = a / b if b else (1.0 if a == b else float("inf"))
    moved = abs(a - b) > max(tolerance * abs(b), policy.deterministic_floor)
    if after.metric.name in MISSES:  # a fraction of a miss per op is never worth a verdict: est_cycles weighs them
        tolerance = policy.miss_tolerance
        moved = abs(a - b) > max(tolerance * abs(b), policy.miss_floor)
    if not moved or after.direction is Direction.NEUTRAL:
        return Settled("unchanged", ratio, tolerance, None, "")
    worse = (a > b) if after.direction is Direction.LOWER else (a < b)
    return Settled("regressed" if worse else "improved", ratio, tolerance, "confirmed",
                   f"deterministic count: ×{ratio:.4f}, beyond the {tolerance:.2%} an A/A run allows")
