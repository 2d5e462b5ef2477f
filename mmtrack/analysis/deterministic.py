"""The verdict on a deterministic metric: the same code gives the same count, so a change beyond a small
tolerance is real at once.

Instruction counts under callgrind (:mod:`mmtrack.measure.callgrind`) do not vary from run to run: no history,
no later commits and no significance test are needed to believe a change, which is ``confirmed``. Simulated
caches (est_cycles, misses) are as repeatable, but the memory layout of another build or folder moves them:
beyond a wider tolerance they are ``suspected``. Tolerances: :class:`~.policy.ComparePolicy`, calibrated on
A/A runs and on what an unrelated edit does to the other cases' counts (docs/design/callgrind.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..results import Measurement, MetricKey
from ..vocabulary import Direction
from .policy import ComparePolicy, Evidence

SECTION = "callgrind"  # measure/callgrind.py's section (the analysis layer does not import the engine)
COUNTS = ("instructions",)
# Simulated caches see addresses: two builds of one commit in other folders moved them (docs/design/callgrind.md).
CACHED = ("est_cycles",)
# ... and the misses they weigh: read beside est_cycles, never a verdict alone (continuous read L1 data misses of
# 3 of 10 unchanged benchmarks beyond 5% between two builds, where est_cycles held).
MISSES = ("l1i_misses", "l1d_misses", "lli_misses", "lld_misses")


@dataclass(frozen=True, slots=True)
class Settled:
    verdict: str  # "regressed", "improved" or "unchanged"
    ratio: float
    tolerance: float
    state: Evidence | None
    note: str


def is_deterministic(metric: MetricKey) -> bool:
    return metric.section == SECTION and metric.name in COUNTS + CACHED + MISSES


def judge(before: Measurement, after: Measurement, policy: ComparePolicy) -> Settled | None:
    """The verdict on a deterministic metric, or None for any other (or one without medians)."""
    if not is_deterministic(after.metric) or before.median is None or after.median is None:
        return None
    b, a = float(before.median), float(after.median)
    ratio = a / b if b else (1.0 if a == b else float("inf"))
    counted = after.metric.name in COUNTS
    tolerance = policy.deterministic_tolerance if counted else policy.layout_tolerance
    floor = policy.deterministic_floor if after.metric.name in COUNTS + CACHED else policy.miss_floor
    if abs(a - b) <= max(tolerance * abs(b), floor) or after.direction is Direction.NEUTRAL:
        return Settled("unchanged", ratio, tolerance, None, "")
    if after.metric.name in MISSES:
        return Settled("unchanged", ratio, tolerance, None,
                       f"×{ratio:.3f}: misses explain est_cycles, never a verdict alone")
    worse = (a > b) if after.direction is Direction.LOWER else (a < b)
    # An instruction count is the code's own: confirmed at once. A simulated cache reading may be the layout's.
    state: Evidence = "confirmed" if counted else "suspected"
    note = (f"deterministic count: ×{ratio:.4f}, beyond the {tolerance:.2%} layout can move it" if counted else
            f"simulated caches: ×{ratio:.4f}, beyond {tolerance:.0%}; memory layout moves them too")
    return Settled("regressed" if worse else "improved", ratio, tolerance, state, note)
