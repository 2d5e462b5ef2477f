"""Finding the first commit where one metric of one benchmark moved, by A/B measurements.

1. GOOD and BAD are measured A/B. The median of their paired round log ratios, ``L``, is
   the effect to find; it must exceed :data:`MIN_EFFECT` by 3 standard errors of that
   median, else the pair is re-measured with twice the rounds (the rounds add up), up to
   ``retries`` times, and then there is nothing to bisect.
2. Binary search over the first-parent commits between them. Each step measures the
   known-good end against the midpoint, interleaved. The midpoint is *bad* when the median
   of its round log ratios lies above ``L/2`` (towards BAD), *good* when below, and only
   when that side is significant: ``|median - L/2| > z * standard error``. Otherwise the
   midpoint is re-measured with twice the rounds, up to ``retries`` times, then decided
   by the median alone and marked as a guess.
3. The culprit and its parent are measured A/B once more, twice the rounds (both built already): that
   gives the size, and the verdict by the rule ``continuous`` applies, at its threshold
   (:func:`mmtrack.ab.verdicts.pair_verdicts`; the search's :data:`MIN_EFFECT` only steers the search).

Medians, not means: on a loaded machine a neighbour's burst slows a few rounds of one side
1.3-2.5 times, and one such round pulls a mean of six past ``L/2`` (tested in
``test_bisect_finds_the_culprit_when_load_bursts_slow_some_rounds``). Their
standard error comes from the MAD of the rounds (1.2533 σ/√n, σ = 1.4826 MAD).

Environments come from :mod:`mmtrack.ab.envs`, so a commit is built at most once, for
this bisection and the next.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError
from ..results import MetricKey
from ..vcs import git_output
from .interleave import (
    ROUND_ALPHA,
    ABPlan,
    ABResult,
    CaseKey,
    build_side,
    judge,
    refuse_empty_selection,
    round_ratios,
    run_interleaved,
)

MIN_EFFECT = 0.02  # smallest GOOD → BAD change bisect looks for


class NoStep(UserError):
    """GOOD and BAD do not differ on this machine: there is nothing to bisect (``bisect --alert`` writes nothing)."""


@dataclass(slots=True)
class Step:
    good: str
    bad: str
    tested: str
    log_ratio: float  # median over rounds of log(tested / good)
    z: float  # distance from L/2 in standard errors
    rounds: int
    decided: str  # "good", "bad"
    guess: bool = False


@dataclass(slots=True)
class BisectOutcome:
    case: CaseKey
    metric: MetricKey
    total_ratio: float
    culprit: str
    culprit_subject: str
    ratio: float | None  # culprit / parent, A/B
    p_value: float | None
    verdict: str  # the A/B verdict on (parent, culprit), as continuous reads the pair
    round_alpha: float  # the significance that verdict's rounds had to reach
    note: str = ""  # the verdict's words, as continuous's row says them
    threshold: float | None = None  # the minimum effect that verdict was judged at
    path: list[Step] = field(default_factory=list)
    built: set[str] = field(default_factory=set)  # commits with an environment, built now or cached
    new_builds: int = 0
    seconds: float = 0.0
    pair_ids: list[int] = field(default_factory=list)  # the A/B pairs stored, one per measurement


def first_parent_range(repo: Path, good: str, bad: str) -> list[str]:
    """Commits after GOOD up to BAD, oldest first, along BAD's first-parent line."""
    if not _is_ancestor(repo, good, bad):
        raise UserError(f"{good[:12]} is not an ancestor of {bad[:12]}; give GOOD before BAD on one line of history")
    out = git_output(repo, "rev-list", "--first-parent", "--reverse", f"{good}..{bad}").split()
    if not out:
        raise UserError(f"no commits between {good[:12]} and {bad[:12]}")
    return out


def _is_ancestor(repo: Path, a: str, b: str) -> bool:
    import subprocess

    return subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=repo).returncode == 0


def round_log_ratios(result: ABResult, case: CaseKey, metric: MetricKey) -> list[float]:
    return [math.log(r) for r in round_ratios(result, case, metric) if r > 0]


def robust_center(logs: list[float]) -> tuple[float, float]:
    """The median of round log ratios and its standard error (infinite with fewer than 3 rounds)."""
    if len(logs) < 3:
        return (statistics.median(logs) if logs else 0.0), math.inf
    center = statistics.median(logs)
    sigma = 1.4826 * statistics.median(abs(x - center) for x in logs) or statistics.stdev(logs)
    return center, 1.2533 * sigma / math.sqrt(len(logs))


def _did_not_run(m: Any) -> str:
    """"failed" or "was skipped" for the measurement of a benchmark that did not run on its side, else ""."""
    if m is None or m.status == "ok":
        return ""
    return "failed" if m.status == "failed" else "was skipped"


class Bisector:
    def __init__(self, plan: ABPlan, repo: Path, metric_name: str, z: float = 2.0, retries: int = 2,
                 progress: Callable[[str], None] | None = None, min_effect: float = MIN_EFFECT,
                 round_alpha: float = ROUND_ALPHA, on_measured: Callable[[ABResult], None] | None = None,
                 case: CaseKey | None = None) -> None:
        from .verdicts import ab_policy

        self.plan, self.repo, self.metric_name, self.z, self.retries = plan, repo, metric_name, z, retries
        # The user says GOOD and BAD differ: the search looks for moves down to min_effect, not compare's 10%.
        self.policy = ab_policy(min_effect, round_alpha)
        self.verdict_policy = ab_policy(round_alpha=round_alpha)  # the culprit's verdict: continuous's rule
        self.min_effect = min_effect
        self.progress = progress
        self.on_measured = on_measured  # each measurement as it finishes (stored: a Ctrl-C keeps the ones done)
        self.case = case  # the case to judge on where measured (an alert's series), else the most moved
        self.sides: dict[str, Any] = {}
        self.new_builds = 0
        self.target: tuple[CaseKey, MetricKey] = (("", ""), MetricKey("", "", ""))

    def side(self, sha: str, label: str) -> Any:
        from dataclasses import replace

        if sha not in self.sides:
            s = build_side(self.plan, self.repo, sha, label)
            if not self.sides:
                refuse_empty_selection(self.plan, s)
            self.new_builds += 0 if s.env.cached else 1
            self.sides[sha] = s
        base = self.sides[sha]
        return replace(base, label=label, cases={}, environment="", run_seconds=0.0)

    def measure(self, good: str, other: str, rounds: int) -> ABResult:
        from dataclasses import replace

        plan = replace(self.plan, rounds=rounds)
        result = run_interleaved(plan, self.side(good, "A"), self.side(other, "B"), self.progress)
        if self.on_measured is not None:
            self.on_measured(result)
        return result

    def pick_case(self, result: ABResult) -> tuple[CaseKey, MetricKey, Any]:
        """The selected benchmark's case and metric that GOOD → BAD changed most (significantly)."""
        comparison = judge(result, self.policy)
        rows = [r for r in comparison.rows
                if self.metric_name in (r.metric.name, str(r.metric)) and r.ratio and r.ratio > 0]
        if not rows:
            failing = next(((r, side) for r in comparison.rows for side in ("before", "after")
                            if _did_not_run(getattr(r, side))), None)
            if failing is not None:
                row, side = failing
                raise UserError(
                    f"{row.name} {_did_not_run(getattr(row, side))} on the {'GOOD' if side == 'before' else 'BAD'} "
                    f"side, so its {self.metric_name} cannot be compared; nothing to bisect: fix the benchmark on "
                    "that side, or select another with -b")
            names = sorted({r.metric.name for r in comparison.rows})
            raise UserError(f"no metric {self.metric_name!r} in the selected benchmarks; metrics: {', '.join(names)}")
        rows = [r for r in rows if (r.benchmark, r.params) == self.case] or rows
        row = max(rows, key=lambda r: (r.verdict in ("regressed", "improved"), abs(math.log(r.ratio))))
        return (row.benchmark, row.params), row.metric, row

    def run(self, good: str, bad: str) -> BisectOutcome:
        import time

        t0 = time.perf_counter()
        commits = first_parent_range(self.repo, good, bad)
        rounds = self.plan.rounds
        logs: list[float] = []
        for _ in range(self.retries + 1):  # a noisy first measurement is repeated with twice the rounds
            result = self.measure(good, bad, rounds)
            if not logs:
                case, metric, row = self.pick_case(result)
                self.target = (case, metric)
            logs += round_log_ratios(result, case, metric)
            total, se = robust_center(logs)
            if abs(total) > math.log1p(self.min_effect) + 3 * se:
                break
            rounds *= 2
        else:
            raise NoStep(
                f"{row.benchmark} {metric.name}: GOOD {good[:8]} and BAD {bad[:8]} do not differ significantly "
                f"(median round ratio {math.exp(total):.3f} ± {se:.2g} in log over {len(logs)} rounds; "
                f"compare: {row.verdict}{': ' + row.note if row.note else ''}); nothing to bisect"
            )
        path: list[Step] = []
        lo, hi = -1, len(commits) - 1  # indexes: -1 is GOOD; commits[hi] is known bad
        while hi - lo > 1:
            mid = (lo + hi) // 2
            low_sha = good if lo < 0 else commits[lo]
            step = self.classify(low_sha, commits[hi], commits[mid], total)
            path.append(step)
            if step.decided == "bad":
                hi = mid
            else:
                lo = mid
        culprit = commits[hi]
        parent = good if lo < 0 else commits[lo]
        frow = self.check(parent, culprit)
        return BisectOutcome(
            case=case, metric=metric, total_ratio=math.exp(total), culprit=culprit,
            culprit_subject=git_output(self.repo, "show", "-s", "--format=%s", culprit),
            ratio=frow.ratio if frow else None, p_value=frow.p_value if frow else None,
            verdict=frow.verdict if frow else "unknown", round_alpha=self.policy.round_alpha,
            note=frow.note if frow else "", threshold=frow.threshold if frow else None, path=path,
            built=set(self.sides),
            new_builds=self.new_builds, seconds=time.perf_counter() - t0,
        )

    def check(self, parent: str, culprit: str) -> Any:
        """The culprit's row against its parent: twice the rounds, judged as ``continuous`` judges a pair (the
        same rule, threshold and A/A tolerance: :func:`.verdicts.pair_verdicts`); None when it was not measured."""
        from .verdicts import pair_verdicts

        result = self.measure(parent, culprit, 2 * self.plan.rounds)
        final = pair_verdicts(self.plan, self.repo, result, self.verdict_policy, self.progress, more_rounds=False)
        case, metric = self.target
        return next((r for r in final.rows if (r.benchmark, r.params) == case and r.metric == metric), None)

    def classify(self, good: str, bad: str, mid: str, total: float) -> Step:
        """Is ``mid`` like GOOD or like BAD? Re-measured with more rounds while the answer is noise."""
        rounds = self.plan.rounds
        logs: list[float] = []
        for attempt in range(self.retries + 1):
            result = self.measure(good, mid, rounds)
            logs += round_log_ratios(result, *self.target)
            center, se = robust_center(logs)
            z = abs(center - total / 2) / se if se > 0 else math.inf
            if z >= self.z:
                break
            rounds *= 2
        towards_bad = (center - total / 2) * math.copysign(1.0, total) > 0
        return Step(good, bad, mid, center, z, len(logs), "bad" if towards_bad else "good", guess=z < self.z)
