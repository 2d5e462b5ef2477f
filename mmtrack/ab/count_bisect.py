"""``bisect --instrument callgrind``: the first commit where a deterministic count moved, each commit counted once.

A count under callgrind is the same on every run (:mod:`mmtrack.analysis.deterministic`), so no commit is
measured twice and no step needs rounds: GOOD is counted, then each midpoint of the binary search is *bad*
when any selected case's metric moved from GOOD's beyond the A/A tolerance, *good* otherwise. BAD is counted
only when the search ends at it, to check that it differs from GOOD at all. 64 commits: GOOD and 6 midpoints.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..analysis.policy import ComparePolicy
from ..errors import UserError
from ..results import MetricKey, canonical_params
from ..vcs import git_output
from .bisect import BisectOutcome, NoStep, Step, first_parent_range
from .interleave import ABPlan, CaseKey, build_side, refuse_empty_selection, run_once

Counts = dict[tuple[CaseKey, MetricKey], float]


class CountBisector:
    def __init__(self, plan: ABPlan, repo: Path, metric_name: str, progress: Callable[[str], None] | None = None,
                 policy: ComparePolicy | None = None, case: CaseKey | None = None) -> None:
        self.plan, self.repo, self.metric_name, self.progress = plan, repo, metric_name, progress
        self.case = case  # the one case to judge on where it was counted (an alert's series), else every selected one
        self.tolerance = (policy or ComparePolicy()).deterministic_tolerance
        self.counted: dict[str, Counts] = {}
        self.new_builds = 0

    def count(self, sha: str) -> Counts:
        """The metric of every selected case at ``sha``, counted once (then remembered)."""
        if sha not in self.counted:
            if self.progress:
                self.progress(f"counting {sha[:8]} under callgrind ({len(self.counted) + 1} measured)")
            side = build_side(self.plan, self.repo, sha, "A")
            if not self.counted:
                refuse_empty_selection(self.plan, side)
            self.new_builds += 0 if side.env.cached else 1
            with tempfile.TemporaryDirectory(prefix="mmtrack-bisect-") as folder:
                collected = run_once(self.plan, side, Path(folder))
            self.counted[sha] = {
                ((c.benchmark, canonical_params(c.params)), MetricKey(*m.key)): float(m.median)
                for c in collected.cases if c.record is not None and c.status == "ok"
                for m in c.record.metrics if self.metric_name in (m.key[1], str(MetricKey(*m.key)))
            }
            wanted = {k: v for k, v in self.counted[sha].items() if k[0] == self.case}
            self.counted[sha] = wanted or self.counted[sha]
            if not self.counted[sha]:
                failed = next((c for c in collected.cases if c.status == "failed"), None)
                raise UserError(
                    f"{failed.label} failed at {sha[:8]} under callgrind: {failed.message}" if failed else
                    f"no metric {self.metric_name!r} counted at {sha[:8]} in the selected benchmarks; pick it with "
                    "--metric (e.g. instructions, est_cycles)")
        return self.counted[sha]

    def moved(self, good: Counts, other: Counts) -> tuple[CaseKey, MetricKey, float] | None:
        """The case that moved most from GOOD beyond the tolerance (its log ratio), or None."""
        moves = [(k, math.log(other[k] / v)) for k, v in good.items() if k in other and v > 0 and other[k] > 0]
        beyond = [(k, r) for k, r in moves if abs(r) > math.log1p(self.tolerance)]
        if not beyond:
            return None
        (case, metric), r = max(beyond, key=lambda kr: abs(kr[1]))
        return case, metric, r

    def run(self, good: str, bad: str) -> BisectOutcome:
        t0 = time.perf_counter()
        commits = first_parent_range(self.repo, good, bad)
        base = self.count(good)
        path: list[Step] = []
        lo, hi = -1, len(commits) - 1  # -1 is GOOD; commits[hi] is taken as bad until the end says otherwise
        while hi - lo > 1:
            mid = (lo + hi) // 2
            move = self.moved(base, self.count(commits[mid]))
            decided = "bad" if move else "good"
            path.append(Step(good if lo < 0 else commits[lo], commits[hi], commits[mid], move[2] if move else 0.0,
                             math.inf if move else 0.0, 1, decided))
            hi, lo = (mid, lo) if move else (hi, mid)
        culprit, parent = commits[hi], good if lo < 0 else commits[lo]
        found = self.moved(self.count(parent), self.count(culprit))
        if found is None:
            raise NoStep(f"{self.metric_name}: GOOD {good[:8]} and BAD {bad[:8]} count the same within "
                            f"{self.tolerance:.2%} in the selected benchmarks; nothing to bisect")
        case, metric, log_ratio = found
        total = self.moved(base, self.count(bad)) if bad in self.counted else found
        return BisectOutcome(
            case=case, metric=metric, total_ratio=math.exp(total[2] if total else log_ratio), culprit=culprit,
            culprit_subject=git_output(self.repo, "show", "-s", "--format=%s", culprit),
            ratio=math.exp(log_ratio), p_value=None, verdict="regressed (confirmed)" if log_ratio > 0 else
            "improved (confirmed)", round_alpha=0.0, path=path, built=set(self.counted),
            new_builds=self.new_builds, seconds=time.perf_counter() - t0)
