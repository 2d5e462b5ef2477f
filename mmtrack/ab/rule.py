"""The one A/B decision rule: a metric's verdict from both sides' round bests.

``continuous``, ``run --confirm`` and ``bisect``'s check of its culprit all judge a pair with :func:`decide`
(through :func:`mmtrack.ab.interleave.judge`), and widen a flag's threshold by the same A/A offset
(:mod:`mmtrack.ab.calibrate`). For each metric, from each side's round bests in its fast mode (:func:`fast_mode`):

- **ratio**: B's median over A's; the threshold applies to this point estimate, the one every row shows;
- **test**: a Welch t-test of the rounds' logs at ``alpha`` (with too few fast rounds, the rank test over all
  rounds: :func:`rank_evidence`);
- **regressed / improved**: the ratio beyond the threshold, significant, and no stray round of the slower side
  at the faster side's level (:func:`slower_side_stray`);
- **ambiguous**: the ratio beyond the threshold but the rounds do not bear it out, or significant within
  :data:`~mmtrack.analysis.policy.EDGE_BAND` under the threshold (the edge, as compare reads it);
- **unchanged** otherwise; a significant move below the threshold says so
  (:func:`mmtrack.analysis.compare.significant_below`: "×1.037, p < 0.001, below the 5% threshold").

:func:`equivalent` is the other way out of the rounds: an equivalence test bounding the difference inside
the threshold, which lets an unchanged benchmark stop early (:func:`mmtrack.ab.interleave.settle`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from ..analysis.compare import significant_below
from ..analysis.policy import EDGE_BAND
from ..errors import UserError
from ..vocabulary import Direction

#: Significance the rounds must reach by default (``--round-alpha``).
ROUND_ALPHA = 0.01


def round_alpha_for(round_alpha: float | None) -> float:
    """``--round-alpha`` (continuous, run --confirm, bisect): the significance the A/B rounds must reach;
    None: :data:`ROUND_ALPHA`. Anything but a level between 0 and 1 is one line, exit 2."""
    if round_alpha is None:
        return ROUND_ALPHA
    if not 0.0 < round_alpha < 1.0:
        raise UserError(f"--round-alpha {round_alpha}: a significance level between 0 and 1 (default {ROUND_ALPHA})")
    return round_alpha


#: Rounds (asv processes per side) in the fast mode below which no change is confirmed.
MIN_ROUNDS = 3
#: How far above a side's best round a round still counts as the machine's fast state (:func:`fast_mode`):
#: well under the slow state's 1.4-1.6x, well over the 2-4% that rounds of one build scatter in the fast one.
MODE_GAP = 0.10
#: Rounds per side below which the rank test over all rounds (:func:`rank_evidence`) is not tried:
#: with 4 + 4, even complete separation gives p = 0.029, short of :data:`ROUND_ALPHA`.
RANK_MIN_ROUNDS = 5
#: The least scatter of a side's fast-mode round bests (log), whatever the few rounds show.
ROUND_SD_FLOOR = 0.01
#: Significance of the equivalence test (two one-sided t-tests) that lets an unchanged benchmark stop early.
EQUIVALENCE_ALPHA = 0.05
#: Fast-mode rounds per side an equivalence test needs: two make one balanced A B B A block, and the
#: t quantile of so few degrees of freedom widens the bound by itself (docs/design/archive/ab-one-verdict.md).
EQUIVALENCE_MIN_ROUNDS = 2
#: A/B's default minimum effect: both commits measured here, interleaved, so the between-runner
#: noise that sets history's 10% is gone; the round test guards against the rest.
AB_THRESHOLD = 0.05
CHANGES = ("regressed", "improved")


@dataclass(frozen=True, slots=True)
class RoundVerdict:
    """One metric's A/B verdict and its evidence (rendering-neutral: the note is the row's words)."""

    verdict: str  # "regressed", "improved", "unchanged" or "ambiguous"
    ratio: float | None  # B over A: the medians of the sides' fast-mode round bests
    p_value: float | None
    threshold: float
    note: str = ""
    near_threshold: bool = False


def decide(a: Sequence[float], b: Sequence[float], direction: Direction, threshold: float,
           alpha: float = ROUND_ALPHA) -> RoundVerdict:
    """The verdict on one metric from both sides' round bests ``a`` (base) and ``b`` (head); see the module."""
    ratio = fast_ratio(a, b, direction)
    if ratio is None:
        return RoundVerdict("ambiguous", None, None, threshold, "no finite round on one side")
    if direction is Direction.NEUTRAL:
        return RoundVerdict("unchanged", ratio, None, threshold, "neutral metric: never flagged")
    effect = max(ratio, 1 / ratio) - 1
    beyond, edge = effect > threshold, abs(effect - threshold) <= min(EDGE_BAND, threshold / 2)
    p, doubt = round_evidence(a, b, direction, ratio, threshold, alpha)
    significant = p is not None and p < alpha
    if beyond and not doubt:
        worse = (ratio > 1) == (direction is Direction.LOWER)
        return RoundVerdict("regressed" if worse else "improved", ratio, p, threshold, near_threshold=edge)
    if beyond:
        return RoundVerdict("ambiguous", ratio, p, threshold, doubt, near_threshold=edge)
    if edge and significant:
        return RoundVerdict("ambiguous", ratio, p, threshold, f"at the threshold edge ({effect:.1%} vs "
                            f"{threshold:.0%}), p={p:.2g}", near_threshold=True)
    return RoundVerdict("unchanged", ratio, p, threshold, significant_below(ratio, p, threshold), near_threshold=edge)


def fast_ratio(a: Sequence[float], b: Sequence[float], direction: Direction) -> float | None:
    """B over A: the median of each side's :func:`fast_mode` round bests (all its rounds where none is fast)."""
    fa, fb = fast_mode(a, direction) or _finite(a), fast_mode(b, direction) or _finite(b)
    if not fa or not fb:
        return None
    ma, mb = statistics.median(fa), statistics.median(fb)
    return mb / ma if ma else None


def _finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def fast_mode(values: Sequence[float], direction: Direction) -> list[float]:
    """A side's rounds in its fast mode: round bests within :data:`MODE_GAP` of its fastest round
    that another round comes within :data:`MODE_GAP` of.

    A shared machine is often in one of two states for seconds at a time: on this project's
    2-core VM, idle, a pure-Python kernel's best sample reads 0.72 ms in one and 1.1 ms in the
    other, and a round falls wholly in the slow one about a third of the time. Those rounds
    measure the neighbour, not the code; a test that keeps them sees a 50% scatter and cannot
    confirm a 10% change. A mode is at least two rounds: one round faster than every other by more
    than the gap is a stray, and anchoring on it left 1 of 8 rounds in the mode (undecided) in a CI
    run of a 3x change. A neutral metric has no fast side: all its rounds count.
    """
    finite = [v for v in values if v > 0 and math.isfinite(v)]
    if not finite or direction is Direction.NEUTRAL:
        return finite
    lower = direction is Direction.LOWER
    ranked = sorted(finite, reverse=not lower)  # fastest first
    near = (lambda a, b: b <= a * (1 + MODE_GAP)) if lower else (lambda a, b: b >= a / (1 + MODE_GAP))
    anchor = next((a for a, b in zip(ranked, ranked[1:]) if near(a, b)), ranked[0])
    return [v for v in finite if near(anchor, v) and (v >= anchor if lower else v <= anchor)]


def round_evidence(a: Sequence[float], b: Sequence[float], direction: Direction, ratio: float,
                   threshold: float, alpha: float = ROUND_ALPHA) -> tuple[float | None, str]:
    """(the rounds' p-value, why they do not bear out a change beyond the threshold: "" when they do).

    ``a`` and ``b`` are the sides' round bests; ``ratio`` is :func:`fast_ratio` (its side is the
    change's direction). Each side keeps its :func:`fast_mode` rounds; then

    - at least :data:`MIN_ROUNDS` of them per side: with fewer, one process per side that happens
      to run slower (memory layout, a neighbour's burst) looks like a consistent change (then only
      a change clear of all rounds' scatter is confirmed, by rank: :func:`rank_evidence`);
    - a Welch t-test of their logs at p < ``alpha`` (:data:`ROUND_ALPHA`), each side's variance at least
      :data:`ROUND_SD_FLOOR` squared: rounds of one build never agree better than that (process
      layout alone moves them), and a few identical bests must not make any difference significant;
    - and no round of the slower side that its fast mode set aside as a stray reaches within the
      threshold of the faster side's level (:func:`slower_side_stray`).
    """
    from scipy.special import stdtr  # Student's t as scipy.stats computes it, without importing scipy.stats

    fa, fb = fast_mode(a, direction), fast_mode(b, direction)
    n = min(len(fa), len(fb))
    if n < MIN_ROUNDS:
        few = (f"{len(fa)} and {len(fb)} of {len(a)} and {len(b)} rounds in the fast mode: confirming "
               f"a change needs at least {MIN_ROUNDS} per side (raise --rounds)")
        return rank_evidence(a, b, ratio, threshold, few, alpha)
    diff, se, df = log_difference(fa, fb)
    p = float(2 * stdtr(df, -abs(diff) / se))
    if not p < alpha:
        return p, (f"rounds disagree: fast-mode ratio {ratio:.3f}, p={p:.2g} over {len(fa)}+{len(fb)} "
                   f"of {len(a)}+{len(b)} rounds")
    return p, slower_side_stray(a, b, fa, fb, direction, threshold)


def slower_side_stray(a: Sequence[float], b: Sequence[float], fa: Sequence[float], fb: Sequence[float],
                      direction: Direction, threshold: float) -> str:
    """Why the slower side's fast mode may be the machine's slow state: "" when nothing says so.

    :func:`fast_mode` sets aside a side's lone round that is more than :data:`MODE_GAP` faster than
    all its others. On the slower side, such a round can be the only one that met the machine's
    fast state, its fast mode then holding the neighbour's slow rounds. Interference only adds time, so
    that round bounds the side's own cost: within the threshold of the faster side's level, it
    refutes the change. Under a bursty neighbour (``scripts/eval_ab.py --neighbour``), the rounds of
    identical code split at random 4 + 4 (``scripts/eval_ab_resample.py``) were flagged 1.4% of the
    time without this and 0.6% with it; 10% changes were confirmed as often (docs/design/ab.md).
    """
    if direction is Direction.NEUTRAL:
        return ""
    cost = (lambda v: v) if direction is Direction.LOWER else (lambda v: 1 / v)  # lower is better
    level = {"A": statistics.median(map(cost, fa)), "B": statistics.median(map(cost, fb))}
    slower, faster = ("B", "A") if level["B"] > level["A"] else ("A", "B")
    rounds, mode = (b, fb) if slower == "B" else (a, fa)
    fastest = min(cost(v) for v in rounds if v > 0 and math.isfinite(v))
    if fastest < min(map(cost, mode)) and fastest <= level[faster] * (1 + threshold):
        return (f"{slower}'s fast mode may be the machine's slow state: one {slower} round set aside as a stray "
                f"reads x{fastest / level[faster]:.3f} of {faster}'s level")
    return ""


def rank_evidence(a: Sequence[float], b: Sequence[float], ratio: float, threshold: float,
                  doubt: str, alpha: float = ROUND_ALPHA) -> tuple[float | None, str]:
    """Evidence from all rounds, by rank, when the fast mode holds too few: (p, "") when an exact
    Mann-Whitney test of every round's best gives p < ``alpha`` and the Hodges-Lehmann
    shift (median of all B-over-A log ratios) is beyond the threshold on the ratio's side; else
    (p or None, ``doubt``).

    On a busy runner round bests scatter continuously, no 10% gap between them, so the fast mode
    can hold two rounds of eight (a 3x change stayed undecided that way in CI). Ranks need no mode: the
    rounds alternate sides, so load falls on both alike and, for identical code, any ranking is as
    likely as another. They need :data:`RANK_MIN_ROUNDS` per side: at 5 + 5, complete separation
    alone gives p = 0.008, so only a change that stands clear of the whole scatter is confirmed.
    """
    la = [math.log(x) for x in a if x > 0 and math.isfinite(x)]
    lb = [math.log(y) for y in b if y > 0 and math.isfinite(y)]
    if min(len(la), len(lb)) < RANK_MIN_ROUNDS:
        return None, doubt
    from scipy import stats  # only here: its import is a large part of a short run, and most runs never rank

    p = float(stats.mannwhitneyu(lb, la, alternative="two-sided", method="exact").pvalue)
    shift = statistics.median(y - x for x in la for y in lb)
    side = 1.0 if ratio > 1 else -1.0
    if side * shift > math.log1p(threshold) and p < alpha:
        return p, ""
    return p, f"{doubt}; all rounds by rank: shift {math.exp(shift):.3f}, p={p:.2g}"


def equivalent(a: Sequence[float], b: Sequence[float], direction: Direction, threshold: float) -> bool:
    """Whether the fast-mode rounds bound the difference inside ``threshold``: two one-sided Welch tests at
    :data:`EQUIVALENCE_ALPHA`, given enough fast rounds per side (:func:`_enough_to_bound`)."""
    from scipy.special import stdtrit

    fa, fb = fast_mode(a, direction), fast_mode(b, direction)
    if not (_enough_to_bound(fa, a) and _enough_to_bound(fb, b)):
        return False
    diff, se, df = log_difference(fa, fb)
    reach = float(stdtrit(df, 1 - EQUIVALENCE_ALPHA)) * se
    return abs(diff) + reach < math.log1p(threshold)


def _enough_to_bound(fast: Sequence[float], rounds: Sequence[float]) -> bool:
    """At least :data:`MIN_ROUNDS` fast rounds, or, at the first look, every round of the side in its fast mode
    (:data:`EQUIVALENCE_MIN_ROUNDS` of them): a fast mode of two among more rounds is a thin sample of a
    machine that changes state, and let a real change pass for unchanged (docs/design/archive/ab-one-verdict.md)."""
    return len(fast) >= MIN_ROUNDS or len(fast) >= EQUIVALENCE_MIN_ROUNDS and len(fast) == len(rounds)


def log_difference(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """(mean log B - mean log A, its standard error, Welch's degrees of freedom); each side's variance at
    least :data:`ROUND_SD_FLOOR` squared."""
    la, lb = [math.log(x) for x in a], [math.log(y) for y in b]
    va = max(statistics.variance(la), ROUND_SD_FLOOR ** 2) / len(la)
    vb = max(statistics.variance(lb), ROUND_SD_FLOOR ** 2) / len(lb)
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    return statistics.fmean(lb) - statistics.fmean(la), math.sqrt(va + vb), df
