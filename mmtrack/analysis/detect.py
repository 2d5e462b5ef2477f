"""Change points per series: where a metric's level moved, and which way is worse.

Reads one series' per-commit values (its medians) in commit order, and nothing else: pure functions over the
plain records of :mod:`mmtrack.results`; nothing here touches the store. The rank statistics its tests use are
:mod:`.rank_tests`'s.

Method (chosen by measurement with ``scripts/eval_detect.py`` on the CI-runner noise model of
``scripts/ci_noise.py``; see docs/design/analysis.md), ``rankseg``, over the per-commit medians in log space
so that a step is a ratio:

1. *Candidates.* Binary segmentation on ranks: each segment is split where the standardised
   Mann-Whitney statistic (a tie-corrected rank CUSUM) peaks, while it is >= ``split_z``; once more,
   tentatively, above ``try_z`` (an up and a down step cancel in their common segment).
2. *Pruning.* A candidate is kept only when the two neighbouring segments differ by a Mann-Whitney U
   test at ``alpha`` (exact for a short side) **and** their medians by ``min_effect``; the weakest
   failing one is dropped until all pass (Otava's merge step). The test judges a step against the
   between-commit spread of the series itself, not against one commit's samples. It also reads each
   side's main level (its commits on other runner types left out), at a price (:func:`_test`); tied
   values get the exact test conditional on their ties (:func:`.rank_tests.exact_rank_sum_p`).
3. *Refinement.* Each point moves, 10 commits at most per pass and until it settles, to where both sides'
   residuals share the same runner levels.
4. *Settling.* A clear step moves to where the fewest commits lie on the wrong side of it (:func:`_settle`), so
   that the commits it names read the levels it shows.
5. *Tail.* A change in the newest 3-5 commits, which the rank test cannot yet prove, is reported when
   every one of them lies ``tail_z`` robust sigmas beyond the segment before it; at the start of the run of such
   commits where the ones before them lie beyond too.

A series' change points as ``mmtrack detect`` reports them, a step in the newest commits judged by the per-commit
gate's rules among them, are :mod:`.series`'s (it reads the gate's modules, which read this one).

The previous default, E-Divisive means with significance testing as Apache Otava / Hunter do it
(``method="edivisive"``), and PELT (``method="pelt"``) remain available.

Each side needs ``min_segment`` commits, so a change must persist for a few
commits before it is reported: one noisy commit is never a change point.
Series with fewer than ``min_points`` usable commits are reported as too short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np

from ..results import ChangePoint, SeriesKey
from ..vocabulary import Direction
from .policy import MAIN_LEVEL_PRICE, MAIN_LEVEL_Z, REFINE_CONTEXT, REFINE_PASSES, SETTLE_Z

# Under their old names, which newest.py and the tests import from here.
from .rank_tests import average_ranks as _ranks
from .rank_tests import exact_rank_sum_p as _exact_rank_sum_p  # noqa: F401
from .rank_tests import mannwhitney_p as _mannwhitney_p
from .rank_tests import median as _median

Method = Literal["rankseg", "edivisive", "pelt"]
Test = Literal["ttest", "mannwhitney"]




@dataclass(frozen=True, slots=True)
class DetectPolicy:
    """Knobs of the detector; the defaults are the ones the harness measured."""

    method: Method = "rankseg"
    test: Test = "mannwhitney"
    alpha: float = 1e-4  # significance of each change point
    min_effect: float = 0.02  # smallest relative step reported (2%)
    min_segment: int = 3  # commits on each side of a change point
    min_points: int = 8  # fewer usable commits: "too short"
    split_all: bool = True  # E-Divisive: split to the end, then let pruning decide
    pelt_penalty: float = 6.0  # PELT only: penalty in units of sigma^2 * log(n)
    split_z: float = 3.0  # rankseg only: a segment is split further while its best rank statistic exceeds this
    try_z: float = 2.0  # rankseg only: ...and split once more, tentatively, above this (see _rankseg_candidates)
    tail_commits: int = 5  # rankseg only: a change in the newest min_segment..tail_commits commits is looked for
    tail_z: float = 4.0  # ...when every one of them is this many robust sigmas beyond the current segment
    main_level: bool = True  # Mann-Whitney: also test each side's main level, other runners' commits left out (_test)
    newest: bool = True  # series: judge the newest commits by the per-commit gate's rules too (analysis/newest.py)

    def __post_init__(self) -> None:
        # The CLI turns its knobs' bad values into one-line usage errors first (detect_pass.py:
        # policy_for); this guards programmatic callers.
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, not {self.alpha!r}")
        if not (math.isfinite(self.min_effect) and self.min_effect >= 0):
            raise ValueError(f"min_effect must be a relative step >= 0, not {self.min_effect!r}")
        if self.min_segment < 2 or self.min_points < 2 * self.min_segment:
            raise ValueError(f"min_segment must be >= 2 and min_points >= 2 * min_segment, not "
                             f"{self.min_segment!r} and {self.min_points!r}")
        if not (self.try_z <= self.split_z and self.tail_z > 0 and self.tail_commits >= self.min_segment):
            raise ValueError("need try_z <= split_z, tail_z > 0 and tail_commits >= min_segment")

    @property
    def name(self) -> str:
        if self.method in ("pelt", "rankseg"):
            return f"{self.method}+{self.test}" if self.method == "rankseg" else "pelt"
        return f"edivisive{'' if self.split_all else '-binseg'}+{self.test}"


@dataclass(frozen=True, slots=True)
class Step:
    """A change point found in a plain sequence of values (indices, not commits)."""

    index: int  # first index of the new level
    before: float  # level (median) of the segment before
    after: float  # level (median) of the segment after
    p_value: float

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else math.inf


# --------------------------------------------------------------------------- numerics


def _transform(values: np.ndarray) -> tuple[np.ndarray, bool]:
    """Log space when every value is positive (a step becomes a ratio), else as is."""
    if values.size and np.all(values > 0):
        return np.log(values), True
    return values.astype(float), False


def _energy_split(x: np.ndarray, min_segment: int) -> tuple[int, float] | None:
    """The split of ``x`` maximising E-Divisive's energy statistic, or None if too short.

    O(n^2) time and O(n) memory: moving the split one point right moves that point's
    distances from the right-hand sums to the left-hand ones.
    """
    n = x.size
    if n < 2 * min_segment:
        return None
    left = np.empty(n)  # sum of |x_t - x_i| over i < t
    right = np.empty(n)  # sum of |x_t - x_j| over j > t
    for t in range(n):
        d = np.abs(x - x[t])
        left[t] = d[:t].sum()
        right[t] = d[t + 1 :].sum()
    within_a = 0.0  # sum over pairs i < j < t
    within_b = float(right.sum())  # sum over pairs t <= i < j
    between = 0.0  # sum over i < t <= j
    best: tuple[int, float] | None = None
    for t in range(1, n):
        # move point t-1 from the right part to the left part
        p = t - 1
        within_b -= right[p]
        between += right[p] - left[p]
        within_a += left[p]
        if t < min_segment or n - t < min_segment:
            continue
        n1, n2 = t, n - t
        e_between = between / (n1 * n2)
        e_a = 2 * within_a / (n1 * (n1 - 1)) if n1 > 1 else 0.0
        e_b = 2 * within_b / (n2 * (n2 - 1)) if n2 > 1 else 0.0
        q = n1 * n2 / n * (2 * e_between - e_a - e_b)
        if best is None or q > best[1]:
            best = (t, q)
    return best


def _spread(x: np.ndarray, centre: float) -> tuple[np.ndarray, float]:
    """``|x - centre|`` and a robust sigma of ``x``: the scaled MAD, or, where over half of ``x`` ties (a coarse
    timer: MAD 0), the scaled mean absolute deviation, which still sees the other ticks; 0 when ``x`` is constant."""
    dev = np.abs(x - centre)
    sigma = 1.4826 * _median(dev)
    if sigma <= 0:
        sigma = 1.2533 * float(dev.mean())
    return dev, sigma


def _main_level(x: np.ndarray) -> np.ndarray:
    """``x`` without its commits beyond :data:`MAIN_LEVEL_Z` robust sigmas of its median (commits on another
    runner type: on CI they sit a discrete 8-40% away)."""
    dev, sigma = _spread(x, _median(x))
    return x[dev <= MAIN_LEVEL_Z * sigma] if sigma > 0 else x


def _test(a: np.ndarray, b: np.ndarray, policy: DetectPolicy) -> float:
    if a.size < 2 or b.size < 2:
        return 1.0
    if policy.test == "mannwhitney":
        # Commits on other runner types, scattered over both sides, rank above a small step and hide it from the
        # test of the whole sides; the same test of each side's main level sees it. Trimming each side by its own
        # spread makes that p-value too small under no change, so it pays MAIN_LEVEL_PRICE.
        p = _mannwhitney_p(a, b)
        if policy.main_level:
            main_a, main_b = _main_level(a), _main_level(b)
            if (main_a.size < a.size or main_b.size < b.size) and min(main_a.size, main_b.size) >= 2:
                p = min(p, MAIN_LEVEL_PRICE * _mannwhitney_p(main_a, main_b))
        return p
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # deterministic values (counters)
        return 1.0 if a[0] == b[0] else 0.0
    # Imported here: scipy.stats takes 1-2 s to import and only this non-default test needs it
    # (`mmtrack update` runs detect in a fresh process on every commit).
    from scipy import stats as sps

    p = float(sps.ttest_ind(a, b, equal_var=False).pvalue)
    return 1.0 if math.isnan(p) else p


def _effect(a: np.ndarray, b: np.ndarray, logged: bool) -> tuple[float, float, float]:
    """(level before, level after, relative size of the step) in original units."""
    ma, mb = _median(a), _median(b)
    if logged:
        return math.exp(ma), math.exp(mb), abs(math.expm1(min(mb - ma, 700.0)))  # 700: no overflow past 1e304
    scale = max(abs(ma), abs(mb)) or 1.0
    return ma, mb, abs(mb - ma) / scale


def _passes(x: np.ndarray, lo: int, t: int, hi: int, logged: bool, policy: DetectPolicy) -> tuple[bool, float]:
    a, b = x[lo:t], x[t:hi]
    if a.size < policy.min_segment or b.size < policy.min_segment:
        return False, 1.0
    _, _, size = _effect(a, b, logged)
    if size < policy.min_effect:
        return False, 1.0
    p = _test(a, b, policy)
    return p < policy.alpha, p


def _edivisive_candidates(x: np.ndarray, logged: bool, policy: DetectPolicy) -> list[int]:
    found: list[int] = []
    stack = [(0, x.size)]
    while stack:
        lo, hi = stack.pop()
        split = _energy_split(x[lo:hi], policy.min_segment)
        if split is None:
            continue
        t = lo + split[0]
        if policy.split_all or _passes(x, lo, t, hi, logged, policy)[0]:
            found.append(t)
            stack.extend([(lo, t), (t, hi)])
    return sorted(found)


def _rank_split(x: np.ndarray, min_segment: int) -> tuple[int, float] | None:
    """The split of ``x`` with the largest standardised Mann-Whitney (rank CUSUM) statistic, tie-corrected.

    One vectorised pass: the rank sum of the left part at every split comes from one cumulative sum.
    """
    n = x.size
    if n < 2 * min_segment:
        return None
    r, counts = _ranks(x)  # tied values share one rank
    tie = 1.0 if counts.size == n else 1.0 - float(np.sum(counts**3 - counts)) / (n**3 - n)
    if tie <= 0:  # every value equal
        return None
    t = np.arange(min_segment, n - min_segment + 1)
    s = np.cumsum(r)[t - 1]
    z = (s - t * (n + 1) / 2) / np.sqrt(t * (n - t) * (n + 1) / 12 * tie)
    i = int(np.argmax(np.abs(z)))
    return int(t[i]), float(abs(z[i]))


def _rankseg_candidates(x: np.ndarray, policy: DetectPolicy) -> list[int]:
    """Binary segmentation on the rank statistic, down to ``min_segment``; pruning decides what stays.

    A segment whose best split is below ``split_z`` (but above ``try_z``) is still split once, tentatively:
    an up step and a down step inside one segment (a regression later fixed) cancel in its
    statistic, and only its parts show them. Pruning drops the tentative split if it holds nothing.
    """
    found: list[int] = []
    stack = [(0, x.size, True)]
    while stack:
        lo, hi, may_try = stack.pop()
        split = _rank_split(x[lo:hi], policy.min_segment)
        if split is None:
            continue
        strong = split[1] >= policy.split_z
        if not strong and not (may_try and split[1] >= policy.try_z and hi - lo >= 4 * policy.min_segment):
            continue
        t = lo + split[0]
        found.append(t)
        stack.extend([(lo, t, strong), (t, hi, strong)])
    return sorted(found)


def _tail_change(x: np.ndarray, last: int, logged: bool, policy: DetectPolicy) -> tuple[int, float] | None:
    """A change in the newest few commits, which the rank test cannot yet prove (3 points against many).

    The newest ``k`` commits (``tail_commits`` down to ``min_segment``; the earliest start that fits wins)
    are a new level when every one of them lies ``tail_z`` robust sigmas (MAD) beyond the median of the
    segment before them, on the same side, and their median moved by ``min_effect``. Requiring all of
    them keeps one commit on an odd runner from passing; the MAD ignores the runner jumps inside the segment.
    When over half the segment ties (a coarse timer), its MAD is 0 and would make any tick a change: the mean
    absolute deviation (times 1.2533, a sigma for normal data) takes its place.
    """
    n = x.size
    newest = x[max(0, n - policy.tail_commits) :].tolist()  # the sides of a few values, in Python, not numpy calls
    for k in range(policy.tail_commits, policy.min_segment - 1, -1):
        start = n - k
        if start - last < max(policy.min_points, policy.min_segment):
            continue
        seg, tail = x[last:start], x[start:]
        med = _median(seg)
        if not (all(v > med for v in newest[-k:]) or all(v < med for v in newest[-k:])):  # dev below needs it
            continue
        sigma = _spread(seg, med)[1]
        if sigma <= 0:
            sigma = 1e-9 * (abs(med) or 1.0)  # a constant segment: any move is a change
        dev = (tail - med) / sigma
        if not (np.all(dev > policy.tail_z) or np.all(dev < -policy.tail_z)):
            continue
        start = _run_start(x, last, start, med, math.copysign(policy.tail_z * sigma, float(dev[0])), policy)
        seg, tail = x[last:start], x[start:]
        if _effect(seg, tail, logged)[2] < policy.min_effect:
            continue
        return start, _test(seg, tail, policy)
    return None


def _run_start(x: np.ndarray, last: int, start: int, med: float, bound: float, policy: DetectPolicy) -> int:
    """Where the run of commits beyond ``bound`` from ``med`` that ends at ``start`` begins, leaving ``min_points``
    before it: a step the rank test could not prove (10 commits against 10 read 1.8e-4) is not in the newest few
    commits, and they alone would name the wrong commit."""
    beyond = (x[last:start] - med) > bound if bound > 0 else (x[last:start] - med) < bound
    while start - last > max(policy.min_points, policy.min_segment) and beyond[start - last - 1]:
        start -= 1
    return start




def _refine(x: np.ndarray, cps: list[int], policy: DetectPolicy, reach: int = 10) -> list[int]:
    """:func:`_refine_pass` until no point moves (at most :data:`REFINE_PASSES`): binary segmentation's
    first split of a long segment can land more than ``reach`` commits from a small step."""
    for _ in range(REFINE_PASSES):
        moved = _refine_pass(x, cps, policy, reach)
        if moved == cps:
            break
        cps = moved
    return cps


def _refine_pass(x: np.ndarray, cps: list[int], policy: DetectPolicy, reach: int = 10) -> list[int]:
    """Re-place each point within ``reach`` commits where both sides' residuals cluster tightest.

    The rank statistic places a split a commit or two towards the middle of what it saw. On CI the
    commits also sit on a few runner levels, discrete offsets that a step moves by its own size on
    both sides alike. With the split on the right commit, the residuals of each side from its own
    median fall on the same few levels; one commit off, the misplaced commits land between them.
    So the fit is the sum of a Gaussian kernel over every pair of residuals (bandwidth: the series'
    robust commit-to-commit spread) of the commits within :data:`REFINE_CONTEXT` of the window.
    The absolute deviation from the two medians would let a run of commits on an odd runner next to a
    step pull the point to the run's start.
    """
    bounds = [0, *cps, x.size]
    out: list[int] = []
    for i, c in enumerate(cps):
        lo, hi = (out[-1] if out else 0), bounds[i + 2]
        ts = np.arange(max(lo + policy.min_segment, c - reach), min(hi - policy.min_segment, c + reach) + 1)
        if ts.size < 2:
            out.append(c)
            continue
        seg = x[lo:hi]
        h = max(1.4826 * _median(np.abs(np.diff(seg))) / math.sqrt(2), 1e-6 * (float(np.max(np.abs(seg))) or 1.0))
        wlo, whi = max(lo, int(ts[0]) - REFINE_CONTEXT), min(hi, int(ts[-1]) + REFINE_CONTEXT)
        w = x[wlo:whi] / h
        diff = w[:, None] - w[None, :]
        # Pairs on one side: their residuals differ as their values do, whatever the medians; 2D prefix
        # sums of that kernel give every candidate's two blocks. Pairs across the split differ by the
        # step between the medians too, so only those are evaluated per candidate.
        same = np.pad(np.exp(-0.5 * diff**2).cumsum(0).cumsum(1), ((1, 0), (1, 0)))
        fit, n = np.empty(ts.size), w.size
        for k, t in enumerate(ts):
            j = int(t) - wlo
            step = (_median(x[lo:t]) - _median(x[t:hi])) / h
            across = np.exp(-0.5 * (diff[:j, j:] - step) ** 2).sum()
            fit[k] = same[j, j] + (same[n, n] - same[j, n] - same[n, j] + same[j, j]) + 2 * across
        out.append(int(ts[int(np.argmax(fit))]))
    return out




def _misplaced(x: np.ndarray, lo: int, hi: int, a: float, b: float) -> np.ndarray:
    """For each split t of ``x[lo:hi]`` (index t - lo), the commits on the wrong side of it: before t yet nearer the
    new level ``b``, or from t on yet nearer the old level ``a``."""
    new = (np.abs(x[lo:hi] - b) < np.abs(x[lo:hi] - a)).astype(int)
    return np.concatenate([[0], np.cumsum(new)]) + np.concatenate([np.cumsum((1 - new)[::-1])[::-1], [0]])


def _settle(x: np.ndarray, cps: list[int], policy: DetectPolicy, reach: int = 10) -> list[int]:
    """Move each clear step whose named commits read the other side's level to the split, within ``reach`` commits,
    that leaves the fewest commits on the wrong side of it (the nearest such to where it was): the rank
    statistic and the runner-level fit can leave a commit of the new level before a large step (the issue's 1.9x
    step named a "before" commit that read the new level)."""
    bounds = [0, *cps, x.size]
    out: list[int] = []
    for i, c in enumerate(cps):
        lo, hi = (out[-1] if out else 0), bounds[i + 2]
        a, b = _median(x[lo:c]), _median(x[c:hi])
        resid = np.concatenate([x[lo:c] - a, x[c:hi] - b])
        spread = float(np.percentile(np.abs(resid), 90))  # the runner levels' jumps too, which the MAD ignores
        ts = np.arange(max(lo + policy.min_segment, c - reach), min(hi - policy.min_segment, c + reach) + 1)
        named = x[c - 1 : c + 1]
        contradicted = abs(named[0] - b) < abs(named[0] - a) or abs(named[1] - a) < abs(named[1] - b)
        if ts.size < 2 or not contradicted or abs(b - a) < SETTLE_Z * spread:
            out.append(c)
            continue
        wrong = _misplaced(x, lo, hi, a, b)[ts - lo]
        best = ts[wrong == wrong.min()]
        t = int(best[np.argmin(np.abs(best - c))])
        out.append(t if wrong[ts == t][0] < wrong[ts == c][0] else c)
    return out


def _pelt_candidates(x: np.ndarray, logged: bool, policy: DetectPolicy) -> list[int]:
    """PELT (Killick et al. 2012) with a Gaussian mean cost and a robust noise scale."""
    n = x.size
    diffs = np.diff(x)
    sigma = 1.4826 * _median(np.abs(diffs - _median(diffs))) / math.sqrt(2) if n > 2 else 0.0
    sigma = max(sigma, 1e-6 * (float(np.max(np.abs(x))) or 1.0))
    beta = policy.pelt_penalty * sigma**2 * math.log(max(n, 2))
    s1 = np.concatenate([[0.0], np.cumsum(x)])
    s2 = np.concatenate([[0.0], np.cumsum(x * x)])

    def cost(a: int, b: int) -> float:
        m = b - a
        return float(s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / m)

    m = policy.min_segment
    f = np.full(n + 1, np.inf)
    f[0] = -beta
    last = np.zeros(n + 1, dtype=int)
    candidates = [0]
    for t in range(m, n + 1):
        best, arg = np.inf, 0
        for s in candidates:
            if t - s < m:
                continue
            v = f[s] + cost(s, t) + beta
            if v < best:
                best, arg = v, s
        f[t], last[t] = best, arg
        candidates = [s for s in candidates if t - s < m or f[s] + cost(s, t) <= f[t]] + [t - m + 1]
    cps = []
    t = n
    while t > 0:
        t = int(last[t])
        if t > 0:
            cps.append(t)
    cps = sorted(cps)
    return [c for c in cps if m <= c <= n - m]


def _prune(x: np.ndarray, cps: list[int], logged: bool, policy: DetectPolicy) -> list[tuple[int, float]]:
    """Re-test every point against its neighbours; drop the weakest failing one, repeat."""
    cps = sorted(set(cps))
    cache: dict[tuple[int, int, int], tuple[bool, float]] = {}  # only the removed point's neighbours change

    def passes(lo: int, t: int, hi: int) -> tuple[bool, float]:
        if (lo, t, hi) not in cache:
            cache[(lo, t, hi)] = _passes(x, lo, t, hi, logged, policy)
        return cache[(lo, t, hi)]

    while True:
        bounds = [0, *cps, x.size]
        results = [passes(bounds[i], bounds[i + 1], bounds[i + 2]) for i in range(len(cps))]
        failing = [(p, i) for i, (ok, p) in enumerate(results) if not ok]
        if not failing:
            return [(c, p) for c, (_, p) in zip(cps, results)]
        _, worst = max(failing)
        del cps[worst]


def find_steps(values: Sequence[float], policy: DetectPolicy | None = None, *, settle: bool = False) -> list[Step]:
    """Change points in a plain sequence of per-commit values, oldest first. ``settle``: step 4 of the method
    (:func:`_settle`), which detect's reports take; the per-commit gate's noise model reads the steps without it, as
    it was calibrated (one suite series of 80 lost its confirmation with it, docs/design/environment-events.md)."""
    policy = policy or DetectPolicy()
    raw = np.asarray(values, dtype=float)
    if raw.size < max(policy.min_points, 2 * policy.min_segment):
        return []
    x, logged = _transform(raw)
    kept = _kept(x, logged, policy, settle)
    if policy.method == "rankseg":
        tail = _tail_change(x, kept[-1][0] if kept else 0, logged, policy)
        if tail is not None:
            kept.append(tail)
    return _as_steps(x, logged, kept)


def _kept(x: np.ndarray, logged: bool, policy: DetectPolicy, settle: bool) -> list[tuple[int, float]]:
    """Steps 1-4 of the method: the points that pass their test against their neighbours, with its p-value."""
    if policy.method == "pelt":
        cps = _pelt_candidates(x, logged, policy)
    elif policy.method == "rankseg":
        cps = _rankseg_candidates(x, policy)
    else:
        cps = _edivisive_candidates(x, logged, policy)
    kept = _prune(x, cps, logged, policy)
    if policy.method == "rankseg" and kept:
        kept = _prune(x, _refine(x, [c for c, _ in kept], policy), logged, policy)
    if kept and settle:
        kept = _prune(x, _settle(x, [c for c, _ in kept], policy), logged, policy)
    return kept


def _as_steps(x: np.ndarray, logged: bool, kept: Sequence[tuple[int, float]]) -> list[Step]:
    """Each kept point with the levels of the segments on either side of it."""
    bounds = [0, *(c for c, _ in kept), x.size]
    steps = []
    for i, (c, p) in enumerate(kept):
        before, after, _ = _effect(x[bounds[i] : c], x[c : bounds[i + 2]], logged)
        steps.append(Step(index=c, before=before, after=after, p_value=p))
    return steps


def find_steps_after(values: Sequence[float], kept_before: Sequence[int], policy: DetectPolicy | None = None
                     ) -> list[Step] | None:
    """:func:`find_steps` (rankseg, settled) of a series that only gained newer values since its change points
    ``kept_before`` were found: those are kept, the last of them is tested again against the grown segment after it,
    and only the values from it on are searched for newer steps (docs/design/nightly-update-profile.md says where
    this can differ from searching the whole series). None when a kept point no longer passes its test: the
    caller searches the whole series. Also None when the values from the last kept point on hold a newer step: where
    it lies can move the points before it, and a new step is rare, so the whole series is searched then."""
    policy = policy or DetectPolicy()
    if policy.method != "rankseg" or not kept_before:
        return None
    x, logged = _transform(np.asarray(values, dtype=float))
    last = kept_before[-1]
    if _kept(x[last:], logged, policy, settle=True):
        return None
    bounds = [0, *kept_before, x.size]
    kept = []
    for i, c in enumerate(kept_before):
        ok, p = _passes(x, bounds[i], c, bounds[i + 2], logged, policy)
        if not ok:
            return None
        kept.append((c, p))
    tail = _tail_change(x, kept[-1][0], logged, policy)
    if tail is not None:
        kept.append(tail)
    return _as_steps(x, logged, kept)


def segment_levels(values: Sequence[float], policy: DetectPolicy | None = None) -> list[tuple[int, int]]:
    """The [start, stop) index ranges of the levels found in ``values``."""
    steps = find_steps(values, policy)
    bounds = [0, *(s.index for s in steps), len(values)]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def is_worse(direction: Direction, before: float, after: float) -> bool | None:
    """True if ``after`` is worse than ``before`` for this direction; None for neutral metrics."""
    if direction is Direction.NEUTRAL:
        return None
    return after > before if direction is Direction.LOWER else after < before


# --------------------------------------------------------------------------- series


@dataclass(frozen=True, slots=True)
class SeriesReport:
    """What detection found in one series."""

    series: SeriesKey
    status: Literal["ok", "too_short"]
    points: int  # usable commits
    changes: tuple[ChangePoint, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    # The step the gate's rules flag in the newest commits, in place of the last change point (detect's own step
    # there, which keeps those rules off them) where the suite's budget holds that one back (analysis/budget.py).
    if_last_held_back: ChangePoint | None = None

    @property
    def regressions(self) -> tuple[ChangePoint, ...]:
        return tuple(c for c in self.changes if c.kind == "regression")


__all__ = [
    "DetectPolicy",
    "Step",
    "SeriesReport",
    "find_steps",
    "find_steps_after",
    "segment_levels",
    "is_worse",
]
