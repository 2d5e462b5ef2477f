"""What one change point's runs say: the run-date evidence of :mod:`.events`.

Reads every clean run of one series around one change point: its commit's place in commit order, its run day and
its value. Each run is labelled by the level it is nearer to; the best split in commit order and the best split in
run-date order are compared (old commits re-measured after a date, and commits measured out of order, are misplaced
in commit order but not in date order). The runs of old commits measured on or after the new level's first day read
the run's factor alone (:attr:`DateEvidence.old_late_level`): their code did not change.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..results import ChangePoint
from .policy import EVENT_DATE_MARGIN, EVENT_SIGN_ALPHA, RERUNS


@dataclass(frozen=True, slots=True)
class RunPoints:
    """Every clean, usable run of one series: its commit, its run day (days since 1970, UTC) and value."""

    shas: Sequence[str]
    days: np.ndarray
    values: np.ndarray


@dataclass(frozen=True, slots=True)
class DateEvidence:
    """What one change point's runs say: the misplaced points of the best split in commit order and in
    run-date order, the first day of the new level by date, and the old commits measured from that day on."""

    commit_errors: int
    date_errors: int
    day: float
    old_late: int  # runs of commits before the change point measured on or after ``day``
    old_late_new: int  # ... of which read the new level
    old_late_level: float = math.nan  # log(their median / the old level): the run's part of the step (NaN: none)



def _labels(values: np.ndarray, before: float, after: float) -> np.ndarray:
    """True where a value lies nearer the new level than the old one (in log space where both are positive)."""
    if before > 0 and after > 0 and np.all(values > 0):
        x, a, b = np.log(values), math.log(before), math.log(after)
    else:
        x, a, b = values, before, after
    return np.abs(x - b) < np.abs(x - a)


def _best_split(order: np.ndarray, new: np.ndarray, prefer: float) -> tuple[int, float]:
    """Fewest misplaced points of a split of ``new`` (old level first) along ``order``, and the first order value
    of its new side (of the splits that tie, the one nearest ``prefer``); splits fall only between distinct order
    values."""
    idx = np.argsort(order, kind="stable")
    o, lab = order[idx], new[idx].astype(int)
    new_before = np.concatenate([[0], np.cumsum(lab)])
    old_after = np.concatenate([np.cumsum((1 - lab)[::-1])[::-1], [0]])
    errors = new_before + old_after
    cuts = np.flatnonzero(np.diff(o) > 0) + 1  # a cut k puts o[:k] before, o[k:] after
    if cuts.size == 0:
        return int(errors[0]), float(o[0])
    best = cuts[errors[cuts] == errors[cuts].min()]
    k = int(best[int(np.argmin(np.abs(o[best] - prefer)))])
    return int(errors[k]), float(o[k])


def date_evidence(cp: ChangePoint, runs: RunPoints, position: Mapping[str, int], lo: int, hi: int
                  ) -> DateEvidence | None:
    """The run-date evidence of one change point, from its series' runs of commits at positions [lo, hi)."""
    pos = np.fromiter(map(position.get, runs.shas, itertools.repeat(-1)), dtype=np.int64, count=len(runs.shas))
    inside = (pos >= lo) & (pos < hi)
    if inside.sum() < 4:
        return None
    pos, days, values = pos[inside], runs.days[inside], runs.values[inside]
    new = _labels(values, cp.before_value, cp.after_value)
    at = position.get(cp.after_sha, hi)
    commit_errors, _ = _best_split(pos.astype(float), new, float(at))
    first_new = days[pos >= at]  # the new segment's first run: a late-measured first commit is not the start
    own_day = float(first_new.min()) if first_new.size else float(np.median(days))
    date_errors, day = _best_split(days, new, own_day)  # a tie goes to the split nearest the change point's own run
    if date_errors >= commit_errors:  # the dates say nothing the commits do not: the new level began with its run
        day = own_day
    late_old = (pos < at) & (days >= day)
    return DateEvidence(commit_errors, date_errors, day, int(late_old.sum()), int((late_old & new).sum()),
                        _level_of(values[late_old], cp.before_value))


def _level_of(values: np.ndarray, before: float) -> float:
    """log(median of ``values`` / ``before``): where old commits re-measured after the date lie against their old
    level; NaN with fewer than :data:`RERUNS` of them or no log space."""
    if values.size < RERUNS or not before > 0 or not np.all(values > 0):
        return math.nan
    return float(np.log(np.median(values) / before))


def follows_run_date(evidence: Iterable[DateEvidence], strict: bool = True) -> bool:
    """Whether pooled change points follow the run date: the date order misplaces at least
    :data:`EVENT_DATE_MARGIN` fewer points than the commit order, more than twice as many of them favour the date as
    the commit, and (``strict``) those that favour the date outnumber those that favour the commit beyond a sign test
    at :data:`EVENT_SIGN_ALPHA`: each change point's runs are one vote, the commit's or the run date's. A part of a
    day's cluster that passes only the loose test makes no event."""
    ev = list(evidence)
    gain = sum(e.commit_errors - e.date_errors for e in ev)
    for_date = sum(e.commit_errors > e.date_errors for e in ev)
    for_commit = sum(e.commit_errors < e.date_errors for e in ev)
    loose = gain >= EVENT_DATE_MARGIN and for_date > 2 * for_commit
    return loose and (not strict or _sign_p(for_date, for_commit) < EVENT_SIGN_ALPHA)


def _sign_p(wins: int, losses: int) -> float:
    """One-sided sign test: the chance of ``wins`` or more of ``wins + losses`` fair coin tosses."""
    n = wins + losses
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n if n else 1.0
