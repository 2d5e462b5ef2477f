"""The suite's false-alarm budget: Benjamini–Hochberg over the change points a commit holds.

A per-series false-alarm rate multiplies over a suite (500 series at 1e-4 each is 0.05 per commit). Each commit is
a family: the series measured at it (m), and the p-values of the change points detect named at it. BH at level
``q`` keeps the k smallest, k the largest with p_(k) <= k q / m; the series without a change point there count in
m with no rejection (their p-value is larger than any kept one, so counting them is conservative). With no change
anywhere, BH's false discovery rate is the chance of any false alert at the commit, so the expected false alerts
per commit are at most ``q`` where the p-values are valid; one step moving many series at once (a real regression,
an environment event) passes more easily than a lone one. Why BH and not Bonferroni or BY: docs/design/alerts.md.

Change points without a p-value (the newest commits' steps the gate's rules flag, analysis/newest.py) are left
as they are: their rule is not a test, and a suspected one forms no alert until the next commits confirm it. Where
the budget holds back detect's own step among the newest commits, which kept those rules off them, the step they
flag there without it takes its place (``SeriesReport.if_last_held_back``): a step not proven yet is judged as
one detect did not find.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..results import ChangePoint

#: The default level. The rank test's p-values are anti-conservative on real noise (runner levels, autocorrelation),
#: so the nominal level sits well below the bound it buys: measured on 500 A/A series of real CI noise, the whole
#: suite's false alerts per commit are 0.025-0.042 at this level (docs/design/alerts.md).
DEFAULT_FDR = 0.001

#: What the default level bought on real noise: the whole suite's false alerts per commit, at most
#: (docs/design/alerts.md, scripts/eval_alert_budget.py).
MEASURED_BOUND = 0.05


@dataclass(frozen=True, slots=True)
class BudgetOutcome:
    fdr: float | None  # None: no budget
    commits: int  # commits with at least one change point judged
    kept: int
    held_back: list[ChangePoint]  # change points that passed alone but not within the budget

    def describe(self) -> str:
        if self.fdr is None:
            return "false-alarm budget: off (--fdr 0): every change point detect finds is kept"
        cost = (f"held back {len(self.held_back)} change point(s) that passed alone" if self.held_back
                else "held back nothing")
        return (f"false-alarm budget: BH at q={self.fdr:g} per commit over the series it touches (measured on real "
                f"noise: at most {MEASURED_BOUND:g} false alerts per commit for a suite of 500 series); {cost}")


def bh_kept(p_values: Sequence[float], m: int, q: float) -> list[bool]:
    """Benjamini–Hochberg's step-up at level ``q`` over ``m`` tests of which ``p_values`` were reported."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    m = max(m, len(p_values))
    k = 0
    for rank, i in enumerate(order, start=1):
        if p_values[i] <= rank * q / m:
            k = rank
    keep = [False] * len(p_values)
    for i in order[:k]:
        keep[i] = True
    return keep


def within_budget(changes: Sequence[ChangePoint], family: Mapping[str, int], fdr: float | None
                  ) -> tuple[list[ChangePoint], BudgetOutcome]:
    """``changes`` without those BH at ``fdr`` rejects; ``family``: per commit sha, the series measured at it."""
    scored: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(changes):
        if c.p_value is not None:
            scored[c.after_sha].append(i)
    if fdr is None:
        return list(changes), BudgetOutcome(None, len(scored), len(changes), [])
    dropped: set[int] = set()
    for sha, idx in scored.items():
        p_values = [float(changes[i].p_value or 0.0) for i in idx]
        keep = bh_kept(p_values, family.get(sha, len(idx)), fdr)
        dropped.update(i for i, k in zip(idx, keep) if not k)
    kept = [c for i, c in enumerate(changes) if i not in dropped]
    return kept, BudgetOutcome(fdr, len(scored), len(kept), [changes[i] for i in sorted(dropped)])


def family_sizes(shas_per_series: Sequence[Sequence[str]]) -> dict[str, int]:
    """Per commit, how many series hold it: the family BH divides its level among."""
    # A suite's series mostly share one run of commits: each distinct run is counted once, times its series
    runs = Counter(map(tuple, shas_per_series))
    out: dict[str, int] = defaultdict(int)
    for shas, n in runs.items():
        for sha in set(shas):
            out[sha] += n
    return dict(out)


def budgeted_reports(reports: Sequence[object], family: Mapping[str, int], fdr: float | None
                     ) -> tuple[list[object], BudgetOutcome]:
    """Each report (``SeriesReport``) with the change points the budget keeps."""
    changes = [c for r in reports for c in r.changes]  # type: ignore[attr-defined]
    kept, outcome = within_budget(changes, family, fdr)
    keep_ids = {id(c) for c in kept}
    return [_within(r, keep_ids) for r in reports], outcome


def _within(report: object, keep_ids: set[int]) -> object:
    """``report`` with the change points kept; where its last one is held back and the gate's rules flag a step in
    the newest commits without it, that step in its place (detect's own step there kept the rules off them)."""
    changes = tuple(c for c in report.changes if id(c) in keep_ids)  # type: ignore[attr-defined]
    fallback = report.if_last_held_back  # type: ignore[attr-defined]
    if fallback is not None and id(report.changes[-1]) not in keep_ids:  # type: ignore[attr-defined]
        changes += (fallback,)
    return dataclasses.replace(report, changes=changes, if_last_held_back=None)  # type: ignore[type-var]
