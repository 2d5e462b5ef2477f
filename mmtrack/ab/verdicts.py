"""From an A/B pair's rounds to its verdicts: the one path ``continuous``, ``run --confirm`` and ``bisect`` share.

Each metric is decided by :func:`mmtrack.ab.rule.decide` (through :func:`.interleave.judge`); the benchmarks still
undecided get more rounds (:func:`.interleave.settle`); a flag then stands only beyond what two builds of the base
read (:func:`.calibrate.calibrate`). The verbs differ only in the threshold they hand in and in how many rounds
they allow: ``continuous`` and ``bisect`` judge at the A/B threshold (:data:`.rule.AB_THRESHOLD`, or
``--factor``), ``run --confirm`` at the history's threshold whose suspicion it settles; ``bisect``'s check of its
culprit measures a fixed number of rounds, which also give the culprit's size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from . import calibrate as _calibrate
from .interleave import ABPlan, ABResult, judge, settle
from .rule import AB_THRESHOLD


def ab_policy(threshold: float = AB_THRESHOLD, round_alpha: float | None = None) -> Any:
    """The comparison policy of an A/B verdict: ``threshold``, and the significance its rounds must reach."""
    from ..analysis.compare import ComparePolicy

    return ComparePolicy(threshold=threshold, round_alpha=round_alpha)


def pair_verdicts(plan: ABPlan, repo: Path, result: ABResult, policy: Any,
                  progress: Callable[[str], None] | None = None, *, more_rounds: bool = True) -> Any:
    """The comparison of ``result``'s pair: the rule on its rounds (with ``more_rounds``, more for the undecided
    benchmarks first), each flag then re-judged at its A/A-calibrated tolerance."""
    comparison = settle(plan, result, policy, progress) if more_rounds else judge(result, policy)
    return _calibrate.calibrate(plan, repo, result, comparison, policy, progress)
