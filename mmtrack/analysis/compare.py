"""Compare two sets of measurements (before, after): one verdict per metric.

This is the one comparison of mmtrack: ``mmtrack compare``, the end-of-run
analysis of ``mmtrack bench`` and the summary of ``mmtrack run`` all call
:func:`compare_measurements`. Pure functions over :mod:`mmtrack.results` records.

**Two samples, no history** (``bench``, A/B runs, ``compare --history 0``): a row is
flagged (improved / regressed) when

1. **Effect.** The ratio after/before moves beyond the minimum effect in either
   direction: ``max(r, 1/r) > 1 + threshold`` (asv's ``factor``; 10% by default,
   1% for deterministic counters such as instructions/op, overridable per
   benchmark or metric); and
2. **Significance on the samples.** Mann–Whitney U (two-sided, ``alpha`` = asv's
   0.002) when both sides have enough samples for the test to be able to reach
   ``alpha``; otherwise the 99% confidence intervals must not overlap (as asv
   does); with neither samples nor intervals, the effect alone decides.

**With the series' history** (``mmtrack run``, ``compare``): the newest commit is judged
against a noise model of the series' current segment (:func:`.noise.segment_noise`), not only
against the before commit's samples, because consecutive commits of unchanged code on
CI runners differ far more than one commit's samples suggest. The effect is measured
from the segment's level (and must move away from the before commit the same way by half
the threshold, so that a step is this commit's); it must also be significant on the two commits'
samples (at ``history_alpha``; without samples, on their quartiles: :func:`quartile_test`), at least
``history_z`` robust between-commit deviations from
the level (more with fewer than ``history_points`` commits of history), and at least
``history_gap`` of them from *every* commit of the segment: the level
of a runner type the series has visited before is its own noise, while one old spike no
longer hides a real step of another size (the old "beyond every excursion" rule did). A level
visited by one earlier commit only (a one-off spike, a change reverted and re-landed) is
ambiguous until persistence confirms it. With a full window, a commit that z and the gap leave
ambiguous is suspected still where the window's density puts no commit near it, a step from where
they lie (:func:`.noise.unseen_step`): on a series that flips between runner types, the spread spans
them, and z read a step beyond both as a few deviations.
A value back at the level of most commits before the current segment is ambiguous too where the
series had visited the segment's level before (it alternates): that segment was a phase (a run of
commits on another runner type), and against it a return to the usual level looked like a step that
later commits would "confirm". Where it had not (it stepped there; or the gate confirmed the step into
a phase of 5-7 commits, too short for detect, then read with the spread from before that step:
:func:`_confirmed_phase`), the return is a change reverted, judged as a step.
Such a verdict is only **suspected**: later commits **confirm** or **refute** it
(:func:`.noise.follow_up`), and the gate fails on confirmed regressions by default. The level that the
commit and the next ones hold confirms too, where one commit could not prove it (:func:`.noise.held_level`):
a level a few commits of the segment had reached, or one later commit on a faster runner.

**The whole run** (:func:`run_shift`): with at least ``min_suite`` series with history, the median
of their moves against their recent levels is the run's own. On CI each run lands on one runner,
and a runner of another type moves every benchmark of the run at once. A suspected change that the
run made too (the same way, at least :data:`RUN_SHARE` of it) is ambiguous until later commits
decide, and a confirmed one stays ambiguous when every later run moved with it as well: a runner
pool that changed, or a change to everything, which only the same-machine A/B tells apart.
Given the commit of each history value (:class:`RunLabels`), the same suite also takes its runner
levels out of each series' history before a run on the usual runner is judged (:mod:`.frames`): a step
onto a level that only other runner types reached before then stands out. A deterministic series (counts under
callgrind, :mod:`.deterministic`) takes no part in either: no runner moves it, its verdict is its two counts'.

**Contention** (:mod:`.contention`): where either side of a single-threaded CPU-domain case waited for a
CPU (its wall time well beyond its CPU time per op), its wall-clock rows take the verdict of its CPU time per op.

Near the edge: a change that misses the minimum effect by less than :data:`EDGE_BAND`
but passes every other test is **ambiguous**, never a silent unchanged.
Beyond the effect but failing a test: **ambiguous** (``~``). Neutral metrics (ids,
choices) are never flagged. A changed benchmark code version: **not comparable** (``x``).
"""

from __future__ import annotations

import array
import dataclasses
import functools
import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Literal, Mapping, Sequence

import numpy as np

from ..results import ChangePoint, Measurement, MetricKey
from ..vocabulary import Direction
from . import contention, deterministic
from .gate import FAIL_ON, failing_rows  # noqa: F401 - the gate decides; re-exported for older imports
from .noise import (
    SegmentNoise,
    YoungLevel,
    agreement,
    finite,
    follow_up,
    held_level,
    held_median,
    measured,
    phase_noise,
    positive,
    segment_noise,
    unseen_step,
    young_level,
)
from .policy import (
    EDGE_BAND,
    EVIDENCE,
    HISTORY_WINDOW,
    PHASE_SPREAD,
    QUARTILE_MIN_COUNT,
    RUN_SHARE,
    SHORT_PHASE,
    SIGNIFICANT_BELOW,
    ComparePolicy,
    Evidence,
)

if TYPE_CHECKING:
    from .frames import SuiteFrames

Verdict = Literal[
    "improved", "regressed", "unchanged", "ambiguous", "not comparable", "failed", "fixed", "new", "removed"
]

#: asv-like marks: ``+`` worse, ``-`` better, ``!`` failed, ``*`` fixed, ``x`` not comparable,
#: ``~`` ambiguous (asv prefixes the ratio with ``~``), ``n`` new, ``r`` removed.
MARKS: dict[str, str] = {
    "regressed": "+",
    "improved": "-",
    "failed": "!",
    "fixed": "*",
    "not comparable": "x",
    "ambiguous": "~",
    "unchanged": " ",
    "new": "n",
    "removed": "r",
}


Case = tuple[str, str, MetricKey]  # (benchmark, canonical params, metric): Measurement.case


@dataclass(frozen=True, slots=True)
class Row:
    """One metric of one benchmark case, before and after."""

    benchmark: str
    params: str  # canonical params
    metric: MetricKey
    direction: Direction
    verdict: Verdict
    before: Measurement | None
    after: Measurement | None
    ratio: float | None = None  # after / before (medians)
    p_value: float | None = None
    test: str = ""  # "mann-whitney", "quartiles", "ci-overlap", "range-overlap", "effect-only", ""
    threshold: float = 0.0
    history_z: float | None = None  # |deviation| / robust sd of the recent history
    note: str = ""
    state: Evidence | None = None  # None: judged on two samples alone (no history)
    near_threshold: bool = False  # the effect lies within EDGE_BAND of the threshold

    @property
    def mark(self) -> str:
        return MARKS[self.verdict]

    @property
    def name(self) -> str:
        m = self.after or self.before
        params = dict(m.params) if m else {}
        return f"{self.benchmark}({', '.join(params.values())})" if params else self.benchmark

    @property
    def metric_label(self) -> str:
        m = self.after or self.before
        return (m.display_name if m and m.display_name else self.metric.name) + f" [{self.metric.unit}]"


@dataclass(frozen=True, slots=True)
class Comparison:
    rows: tuple[Row, ...]
    before_label: str = "before"
    after_label: str = "after"
    policy: ComparePolicy = field(default_factory=ComparePolicy)
    # Earlier commits' suspected changes that the after commit decides (confirms or refutes).
    decided: tuple[Row, ...] = ()

    def counts(self) -> dict[str, int]:
        c = Counter(r.verdict for r in self.rows)
        return {v: c[v] for v in MARKS if c[v]}

    def states(self, *verdicts: str) -> dict[str, int]:
        """Rows (or those of ``verdicts``) per evidence state (history verdicts only): a refuted row is unchanged."""
        c = Counter(r.state for r in (self.by_verdict(*verdicts) if verdicts else self.rows) if r.state is not None)
        return {s: c[s] for s in EVIDENCE if c[s]}

    def near_threshold(self) -> int:
        return sum(r.near_threshold for r in self.rows)

    def by_verdict(self, *verdicts: str) -> list[Row]:
        return [r for r in self.rows if r.verdict in verdicts]

    @property
    def regressions(self) -> list[Row]:
        return self.by_verdict("regressed")

    def changed(self) -> list[Row]:
        return [r for r in self.rows if r.verdict != "unchanged"]


# --------------------------------------------------------------------------- statistics




def significance(before: Measurement, after: Measurement, alpha: float, *,
                 quartiles: bool = False) -> tuple[bool, float | None, str]:
    """(significant, p-value, test name) for two measurements of one metric.

    ``quartiles``: without samples, test the medians on the quartiles (:func:`quartile_test`) before
    falling back to the confidence intervals; the history gate asks for it (see there)."""
    if alpha >= 1.0:  # every p is below 1: no test can decide (A/B judges its rounds instead, ab/interleave.judge)
        return True, None, "effect-only"
    a, b = finite(before.samples), finite(after.samples)
    # the smallest p the exact test can reach is 1 / comb: compared as an int, which no sample count overflows
    if a.size and b.size and math.comb(a.size + b.size, min(a.size, b.size)) > 1.0 / alpha:
        if np.ptp(a) == 0 and np.ptp(b) == 0:  # deterministic on both sides
            return bool(a[0] != b[0]), (0.0 if a[0] != b[0] else 1.0), "mann-whitney"
        from scipy import stats as sps  # seconds to import: only once samples are tested (detect's medians never are)

        p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
        p = 1.0 if math.isnan(p) else p
        return p < alpha, p, "mann-whitney"
    if quartiles and (p := quartile_test(before, after)) is not None:
        return p < alpha, p, "quartiles"
    ci = [(m.ci_low, m.ci_high) for m in (before, after)]
    if all(lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi) for lo, hi in ci):
        (alo, ahi), (blo, bhi) = ci
        return not (ahi >= blo and alo <= bhi), None, "ci-overlap"  # type: ignore[operator]
    if a.size >= 2 and b.size >= 2:
        return not (a.max() >= b.min() and a.min() <= b.max()), None, "range-overlap"
    return True, None, "effect-only"


def quartile_test(before: Measurement, after: Measurement) -> float | None:
    """Two-sided p of the medians' difference, each median's standard error from its quartiles; None
    unless both sides have the median, both quartiles and at least :data:`QUARTILE_MIN_COUNT` samples.

    For asv results recorded without ``--record-samples``, which keep a commit's median, quartiles,
    sample count and 99% interval only. asv's interval of a median over ~10 samples reaches from about
    the smallest sample to the largest, so one outlier sample of the before commit hides a 20% step
    (on the CI noise model, 7 of 300 steps; ``scripts/eval_gate.py --no-samples``). The quartiles ignore it:
    each side's spread is (q3 - q1) / 1.349 and its median's error 1.2533 spread / sqrt(n), as for normal
    samples, and the difference is read against Student's t with Welch's degrees of freedom, since ten samples
    estimate a spread loosely (a disturbed run's wide quartiles then count for what they are)."""
    sides = []
    for m in (before, after):
        if m.median is None or m.q1 is None or m.q3 is None or m.count < QUARTILE_MIN_COUNT:
            return None
        if not all(math.isfinite(v) for v in (m.median, m.q1, m.q3)):
            return None
        sides.append((m.median, 1.2533 * abs(m.q3 - m.q1) / 1.349 / math.sqrt(m.count), m.count - 1))
    from scipy.special import stdtr  # Student's t distribution function: a ufunc, 30x as fast as stats.t.sf

    (ma, ea, da), (mb, eb, db) = sides
    error = math.hypot(ea, eb)
    if error == 0:  # both sides tied at their median (a coarse timer): equal or not
        return 0.0 if ma != mb else 1.0
    df = 1.0 / ((ea / error) ** 4 / da + (eb / error) ** 4 / db)  # Welch-Satterthwaite, scaled: no underflow
    return float(2 * stdtr(df, -abs(mb - ma) / error))


# --------------------------------------------------------------------------- comparison


def _failed(m: Measurement) -> bool:
    return m.status == "failed" or (m.status == "ok" and (m.median is None or not math.isfinite(m.median)))


def _not_measured(m: Measurement) -> bool:
    """An n/a metric of a case that ran (a counter the machine lacks, a metric this run did not return)."""
    return m.status == "ok" and (m.median is None or not math.isfinite(m.median))


def _unmeasured_note(before: Measurement, after: Measurement) -> str:
    """Why a pair with an n/a side is not comparable (n/a is no failure, so a value after it fixed nothing); "" else."""
    if after.status != "ok" or not (_not_measured(before) or _not_measured(after)):
        return ""
    if _not_measured(before):
        return "not measured in either run" if _not_measured(after) else "not measured before"
    return "not measured in this run"


def _edge(effect: float, threshold: float) -> bool:
    """Whether a relative effect (``max(r, 1/r) - 1``) sits within the edge band of its threshold."""
    return abs(effect - threshold) <= min(EDGE_BAND, threshold / 2)


def _is_step(ratio: float, threshold: float) -> bool:
    """Whether after/before moves by more than half the threshold: a step that can be this commit's."""
    return abs(math.log(ratio)) > math.log1p(threshold / 2)


def _enough_history(history: Sequence[float], min_points: int) -> bool:
    """Whether :func:`.noise.segment_noise` would build a noise model from ``history``."""
    return positive(history).size >= min_points


def compare_pair(
    before: Measurement | None,
    after: Measurement | None,
    policy: ComparePolicy | None = None,
    history: Sequence[float] | None = None,
    later: Sequence[float] = (),
    p_value: bool = True,
    frame: float = 1.0,
) -> Row:
    """The verdict on one case: the named rules below, in order; the first that decides gives the row.

    ``history``: the series' recent medians up to and including ``before`` (oldest first);
    ``later``: the medians of the commits after ``after``, which confirm or refute a verdict.
    ``p_value=False``: the significance test (the costly part) runs only where it decides the
    verdict; a row it cannot change then has no p-value and no test name, the same verdict.
    ``frame``: what puts ``before`` in the after run's frame (:mod:`.frames`; ``history`` and ``later``
    come in that frame already); the row keeps the measurements and their ratio as measured.
    """
    policy = policy or ComparePolicy()
    ref = after or before
    assert ref is not None, "compare_pair needs at least one measurement"
    base = dict(benchmark=ref.benchmark, params=ref.params_key, metric=ref.metric, direction=ref.direction)
    thr = policy.threshold_for(ref.benchmark, ref.metric)
    if (row := _without_numbers(base, before, after, thr) or _deterministic_row(base, before, after, policy)):
        return row
    pair = _pair_facts(before, after, policy, history, later, frame, thr)  # type: ignore[arg-type]
    effect = _effect(pair)
    significant, p, test = _two_sample_test(pair, effect, p_value)
    fields = dict(base, before=before, after=after, ratio=pair.shown, p_value=p, test=test, threshold=thr,
                  near_threshold=effect.edge)
    judged = _on_two_samples(pair, effect, significant, p, test, fields) or _on_history(pair, effect, p, fields)
    return judged if isinstance(judged, Row) else _direction_and_notes(pair, effect, judged, fields)


def _without_numbers(base: dict, before: Measurement | None, after: Measurement | None, thr: float) -> Row | None:
    """The verdicts no number decides: new, removed, not comparable (the benchmark code version or the counting
    method changed, or a side was skipped), failed (still / started failing) and fixed. Reads each side's presence,
    status, code version, counting method and whether its median is a finite number; None where the medians must
    decide."""
    if before is None:
        return Row(**base, verdict="new", before=None, after=after, threshold=thr)
    if after is None:
        return Row(**base, verdict="removed", before=before, after=None, threshold=thr)
    if before.version is not None and after.version is not None and before.version != after.version:
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr,
                   note="benchmark code changed")
    if before.method and after.method and before.method != after.method:  # a new method moves counts once
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr,
                   note=f"measurement method changed ({before.method} → {after.method})")
    if "skipped" in (before.status, after.status):
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr, note="skipped")
    if (note := _unmeasured_note(before, after)):
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr, note=note)
    if _failed(after):
        note = "still failing" if _failed(before) else "started failing"
        return Row(**base, verdict="failed", before=before, after=after, threshold=thr, note=note)
    if _failed(before):
        return Row(**base, verdict="fixed", before=before, after=after, threshold=thr)
    return None


def _deterministic_row(base: dict, before: Measurement, after: Measurement, policy: ComparePolicy) -> Row | None:
    """The verdict on a deterministic count (:func:`.deterministic.judge`): reads the two sides' counts alone, no
    history and no test; None for any other metric."""
    if (settled := deterministic.judge(before, after, policy)) is None:
        return None
    return Row(**base, verdict=settled.verdict, before=before, after=after, ratio=settled.ratio,  # type: ignore[arg-type]
               test="deterministic", threshold=settled.tolerance, state=settled.state, note=settled.note)


@dataclass(frozen=True, slots=True)
class _Pair:
    """What the rules after the verdicts without numbers read: the two medians with the before commit put in the
    after run's frame (``b``, ``a``) and their ratio (``shown``: as measured), the history and later commits, and
    whether the noise model's log space holds them all (``logs``)."""

    before: Measurement  # in the after run's frame
    after: Measurement
    direction: Direction
    a: float
    b: float
    ratio: float
    shown: float
    frame: float
    threshold: float
    history: Sequence[float] | None
    later: Sequence[float]
    seen_later: list[float | None]  # the later medians, None where not finite
    logs: bool
    policy: ComparePolicy


def _pair_facts(before: Measurement, after: Measurement, policy: ComparePolicy, history: Sequence[float] | None,
                later: Sequence[float], frame: float, thr: float) -> _Pair:
    """The pair's numbers (:class:`_Pair`): reads the two medians, the frame and the later commits' medians."""
    scaled = before.scaled(frame)
    b, a = float(scaled.median), float(after.median)  # type: ignore[arg-type]
    ratio = a / b if b else (1.0 if a == b else math.inf)
    shown = a / float(before.median) if frame != 1.0 and before.median else ratio  # type: ignore[arg-type]
    # The noise model lives in log space: a value at or below 0 (a track_ benchmark's, the later commits' too: one
    # at 0 would read as not measured there) has none, nor a ratio beyond a float's range (1e-300 against 1e300).
    seen_later = [w if w is not None and math.isfinite(w) else None for w in later]
    logs = a > 0 and b > 0 and 0 < ratio < math.inf and all(w is None or w > 0 for w in seen_later)
    return _Pair(scaled, after, after.direction, a, b, ratio, shown, frame, thr, history, later, seen_later, logs,
                 policy)


@dataclass(frozen=True, slots=True)
class _Effect:
    """The size of the move (``max(r, 1/r) - 1``), the segment's noise model it was read against (None: the before
    commit's median), and whether it lies beyond the threshold or within the edge band of it."""

    noise: SegmentNoise | None
    size: float
    beyond: bool
    edge: bool


def _segment(pair: _Pair) -> tuple[SegmentNoise | None, bool]:
    """The segment's noise model (:func:`.noise.segment_noise`) of the history, in log space, and whether the step
    from the before commit is at most half the threshold (then never this commit's change, so the model, the costly
    part, is skipped: the row is unchanged either way). No model without history or log space."""
    no_step = pair.history is not None and pair.logs and pair.threshold > 0 and not _is_step(pair.ratio, pair.threshold)
    if no_step or pair.history is None or not pair.logs:
        return None, no_step
    noise = segment_noise(pair.history, pair.policy.min_history)
    k = _confirmed_phase(pair) if noise is not None else 0
    if not k:
        return noise, no_step
    if noise.points == k:  # detect split the phase off: its own model judges, as before, marked a confirmed step's
        return dataclasses.replace(noise, short_phase=k), no_step  # type: ignore[arg-type]
    return phase_noise(pair.history, k, pair.policy.min_history) or noise, no_step  # type: ignore[arg-type]


def _confirmed_phase(pair: _Pair) -> int:
    """The commits of a phase shorter than :data:`.policy.SHORT_PHASE` at the end of the history that the after
    commit moves from, back towards the level before it, where the gate, judging the phase's first commit on the
    medians, confirmed it a change (:func:`_step_confirmed`): a level the series left by a step and held on both
    sides, judged as a step (:func:`.noise.phase_noise` where detect did not split it off: against the whole window
    the return was no move). 0 otherwise."""
    h = positive(pair.history)  # type: ignore[arg-type]
    x, a = np.log(h), math.log(pair.a)
    bar, half = math.log1p(pair.threshold), math.log1p(pair.threshold / 2)
    for k in range(pair.policy.confirm_window + 1, SHORT_PHASE):
        if h.size < k + SHORT_PHASE:
            return 0
        phase, before = float(np.median(x[-k:])), float(np.median(x[-k - SHORT_PHASE:-k]))
        back = (a - phase) * (before - phase) > 0 and abs(a - phase) > half
        held = abs(x[-1] - phase) < abs(x[-1] - before)  # up to the before commit: an earlier return is not this one
        if back and held and abs(phase - before) > bar and _step_confirmed(pair, h.tolist(), k, phase - before):
            return k
    return 0


def _step_confirmed(pair: _Pair, h: list[float], k: int, moved: float) -> bool:
    """Whether the gate, judging the commit ``k`` before the after one on the medians (as :func:`_confirmed_earlier`
    does), confirmed it changed ``moved``'s way (log) by the next commits."""
    earlier = compare_pair(_on_medians(pair.after, h[-k - 1]), _on_medians(pair.after, h[-k]), pair.policy, h[:-k],
                           h[len(h) - k + 1:])
    return earlier.state == "confirmed" and earlier.verdict == _changed(moved, pair.direction)


def _on_medians(m: Measurement, median: float) -> Measurement:
    """``m`` with ``median`` and nothing else measured: an earlier commit of its history, judged on the medians."""
    return dataclasses.replace(m, median=median, samples=(), q1=None, q3=None, ci_low=None, ci_high=None, count=0,
                               mean=None, p95=None, min=None, max=None)


def _effect(pair: _Pair) -> _Effect:
    """The effect: from the segment's level with history (:func:`_effect_from_level`), from the before commit
    without (:func:`_effect_from_before`)."""
    noise, no_step = _segment(pair)
    if no_step and _enough_history(pair.history, pair.policy.min_history):  # type: ignore[arg-type]
        size = 0.0  # what the noise model would give
    elif noise is not None:
        size = _effect_from_level(pair, noise)
    else:
        size = _effect_from_before(pair)
    return _Effect(noise, size, size > pair.threshold, _edge(size, pair.threshold))


def _effect_from_level(pair: _Pair, noise: SegmentNoise) -> float:
    """The move of the after median from the segment's level; 0 unless it also moves away from the before commit,
    the same way, by half the threshold (the step must be this commit's, or every commit after a step is flagged
    again)."""
    deviation = noise.deviation(pair.a)
    effect = math.expm1(abs(deviation))
    return effect if math.log(pair.ratio) * deviation > 0 and _is_step(pair.ratio, pair.threshold) else 0.0


def _effect_from_before(pair: _Pair) -> float:
    """The move of the after median from the before one: infinite to or from 0 or across a sign (-1 -> +1 is not
    "x-1.00, unchanged") and beyond a float's range."""
    if pair.a * pair.b <= 0:
        return math.inf if pair.a != pair.b else 0.0
    return max(pair.ratio, 1 / pair.ratio) - 1 if 0 < pair.ratio < math.inf else math.inf


def _two_sample_test(pair: _Pair, effect: _Effect, p_value: bool) -> tuple[bool, float | None, str]:
    """The two commits' samples (:func:`significance`): at ``alpha`` alone, at ``history_alpha`` and with the quartile
    test given history. Run only where it decides the verdict (a flagged metric beyond or near the threshold), or
    where ``p_value`` asks for it."""
    decides = pair.direction is not Direction.NEUTRAL and (effect.beyond or effect.edge)
    if not (decides or p_value):
        return False, None, ""
    with_history = pair.history is not None
    alpha = pair.policy.history_alpha if with_history else pair.policy.alpha
    return significance(pair.before, pair.after, alpha, quartiles=with_history)


def _on_two_samples(pair: _Pair, effect: _Effect, significant: bool, p: float | None, test: str,
                    fields: dict) -> Row | None:
    """The verdicts the effect and the two samples settle: a neutral metric, a move neither beyond the threshold nor
    at its edge (unchanged), one the samples do not call significant (unchanged at the edge, ambiguous beyond it).
    None where the move stands: history (or its absence) decides."""
    if pair.direction is Direction.NEUTRAL:
        return Row(**fields, verdict="unchanged", note="neutral metric: never flagged" if effect.beyond else "")
    if not effect.beyond and not effect.edge:
        return Row(**fields, verdict="unchanged", note=significant_below(pair.shown, p, pair.threshold))
    if significant:
        return None
    if not effect.beyond:
        return Row(**fields, verdict="unchanged")
    why = {"ci-overlap": "CIs overlap", "range-overlap": "ranges overlap"}.get(test, "not significant")
    if p is not None:
        why = f"not significant, p={p:.2g}"
    return Row(**fields, verdict="ambiguous", note=why)


@dataclass(frozen=True, slots=True)
class _Persistence:
    """What history says of a move that stands: its robust deviations from the level (``z``), its evidence state
    (None: judged on two samples alone), the commits before the segment the next commits went back to, and whether
    the window's density alone made it suspected (:func:`.noise.unseen_step`)."""

    z: float | None = None
    state: Evidence | None = None
    went_back: int = 0
    by_density: bool = False
    reverted: int = 0  # the commits before the segment whose level this one went back to, a level never left before


def _on_history(pair: _Pair, effect: _Effect, p: float | None, fields: dict) -> Row | _Persistence:
    """History's word on a move that stands: nothing without history; without a noise model (too short a history,
    values at or below 0), the later commits against the before commit (:func:`_settled_on_before`); else the
    segment's noise and persistence (:func:`_on_segment_noise`)."""
    if pair.history is None:
        return _Persistence()
    if effect.noise is None:
        return _Persistence(state=_settled_on_before(pair))
    return _on_segment_noise(pair, effect.noise, effect.beyond, p, fields)


def _settled_on_before(pair: _Pair) -> Evidence:
    """Suspected, confirmed or refuted by the later commits against the before commit's level (:func:`.noise.follow_up`
    in log space, :func:`.noise.agreement` of plain differences without it): the samples decided the move."""
    if pair.logs:
        return follow_up(SegmentNoise(math.log(pair.b), 0.0, 0.0, (0.0,), 1), pair.a, pair.later, pair.policy)
    return agreement(pair.a - pair.b, [None if w is None else w - pair.b for w in pair.seen_later], pair.policy)


@dataclass(frozen=True, slots=True)
class _Distance:
    """How far the after median lies from the segment: robust deviations from the level (``z``), those a history
    this young needs (``z_bar``), and the commits seen within ``history_gap`` deviations of it (``near``)."""

    z: float
    z_bar: float
    near: int


def _on_segment_noise(pair: _Pair, noise: SegmentNoise, beyond: bool, p: float | None,
                      fields: dict) -> Row | _Persistence:
    """The segment's noise, the earlier and young levels, the window's density and persistence, in that order."""
    distance = _distance(pair, noise)
    back = noise.back_to_earlier(pair.a, pair.policy.history_gap, pair.policy.min_history) if (
        beyond and distance.near <= 1) else 0
    if back and (row := _back_to_visited_row(pair, noise, distance, back, fields)) is not None:
        return row
    young = young_level(noise, pair.history, pair.threshold, pair.policy.history_gap) if beyond else None  # type: ignore[arg-type]
    if young is not None:
        if (row := _young_level_row(pair, young, distance.z, fields)) is not None:
            return row
        distance = _near_from_young_level(pair, noise, young, distance)
    by_density = (distance.near >= 1 or distance.z < distance.z_bar) and beyond and young is None and unseen_step(
        noise, pair.history, pair.a, pair.threshold, pair.policy)  # type: ignore[arg-type]
    state, held_value, went_back, held_back = _persistence(pair, noise, distance.near, by_density, beyond)
    if state == "confirmed" and (row := _phase_row(pair, noise, held_value, distance.z, fields)) is not None:
        return row
    if not went_back and held_value and (row := _came_earlier_row(pair, noise, distance.z, fields)) is not None:
        return row
    if (row := _within_noise_row(pair, noise, distance, state, by_density, beyond, p, fields)) is not None:
        return row
    return _Persistence(distance.z, state, went_back, by_density, back or held_back)


def _distance(pair: _Pair, noise: SegmentNoise) -> _Distance:
    """z and the gap (:class:`_Distance`): reads the segment's level, robust sd and the commits it has seen; the
    commits near are counted only at ``history_z`` deviations or more (all of them otherwise)."""
    policy = pair.policy
    z, z_bar = abs(noise.deviation(pair.a)) / noise.sd, policy.z_needed(len(noise.seen))
    near = noise.near(pair.a, policy.history_gap * noise.sd) if z >= policy.history_z else len(noise.seen)
    return _Distance(z, z_bar, near)


def _back_to_visited_row(pair: _Pair, noise: SegmentNoise, distance: _Distance, back: int,
                         fields: dict) -> Row | None:
    """Ambiguous: back at the level of ``back`` commits before the segment, which no more than one commit of it
    visited (:meth:`.noise.SegmentNoise.back_to_earlier`), in a series that had visited the segment's level before
    (:meth:`.noise.SegmentNoise.alternates`): the segment was a phase, and a return looks like a step. None for a
    series that had never been at the segment's level: it stepped there, and stepping back is a change (a revert)."""
    if not noise.alternates(pair.policy.history_gap):
        return None
    return Row(**fields, verdict="ambiguous", history_z=distance.z, note=(
        f"back to the level of {back} commits before the last {noise.points}; the series visits both levels "
        f"({noise.visited_before(pair.policy.history_gap)} earlier commits were at the last {noise.points}' level): "
        "a runner phase ended, or a change was reverted"))


def _young_level_row(pair: _Pair, young: YoungLevel, z: float, fields: dict) -> Row | None:
    """Ambiguous: the after median lies within the threshold of a level the newest commits already reached
    (:func:`.noise.young_level`): the change came with the first of them."""
    if not abs(math.log(pair.a) - young.centre) <= math.log1p(pair.threshold):
        return None
    return Row(**fields, verdict="ambiguous", history_z=z, note=(
        "the before commit already reached this level: the change came with it" if young.count == 1
        else f"the last {young.count} commits already reached this level: the change came with the first of them"))


def _near_from_young_level(pair: _Pair, noise: SegmentNoise, young: YoungLevel, distance: _Distance) -> _Distance:
    """``distance`` with the commits seen as far from their level as the after median lies from the young level
    (but for the young level's own, not a move from it): a runner type's move the series has made before."""
    if not distance.z >= pair.policy.history_z:
        return distance
    radius, moved = pair.policy.history_gap * noise.sd, math.log(pair.a) - young.centre
    seen_there = noise.near_deviation(moved, radius) - int(np.count_nonzero(np.abs(young.own - moved) < radius))
    return dataclasses.replace(distance, near=max(distance.near, seen_there))


def _persistence(pair: _Pair, noise: SegmentNoise, near: int, by_density: bool,
                 beyond: bool) -> tuple[Evidence | None, float | None, int, int]:
    """The evidence state from the later commits (:func:`.noise.follow_up`, where the level is one no more than one
    commit visited or the density suspects it), the level they hold (:func:`.noise.held_level`, which may confirm
    it still), and the commits before the segment whose level they went back to (those refute it where the series
    alternates, :meth:`.noise.SegmentNoise.alternates`; else the return is a revert): (state, the held median where
    confirmed, the commits went back to, the commits a revert went back to)."""
    policy, a, later = pair.policy, pair.a, pair.later
    state: Evidence | None = follow_up(noise, a, later, policy) if near <= 1 or by_density else None
    if state != "confirmed" and beyond:
        held = held_level(noise, pair.history, a, later, pair.threshold, policy)  # type: ignore[arg-type]
        if held == "confirmed":
            state = "confirmed"
        elif state == "refuted" and held == "suspected":
            state = "suspected"  # one commit on a faster runner does not refute a level the rest may hold
    # The next commits agreed on their way back to the level before the segment (a phase that ended through a commit
    # on a third runner type, between the two): they refute it (held_level never confirms that).
    held_value = held_median(a, later, policy) if state == "confirmed" else None
    back = noise.back_to_earlier(held_value, policy.history_gap, policy.min_history) if held_value else 0
    went_back = back if back and noise.alternates(policy.history_gap) else 0
    return ("refuted" if went_back else state), held_value, went_back, back - went_back


def _phase_row(pair: _Pair, noise: SegmentNoise, held_value: float | None, z: float, fields: dict) -> Row | None:
    """Ambiguous: a level the next commits hold, on a series whose usual runner's spread and commit-to-commit spread
    (:attr:`.noise.SegmentNoise.usual_sd`, :attr:`~.noise.SegmentNoise.commit_sd`) both reach
    :data:`.policy.PHASE_SPREAD` thresholds, where runners hold levels for a few commits and leave them; None on a
    quieter series (one that flips between tight runner levels, whose commits stray far from one to the next,
    included)."""
    spread, bar = min(noise.usual_sd, noise.commit_sd), math.log1p(pair.threshold)
    if spread < PHASE_SPREAD * bar:
        return None
    held = held_value or held_median(pair.a, pair.later, pair.policy)
    shown = f" ×{math.exp(noise.deviation(held)):.2f}" if held else ""
    return Row(**fields, verdict="ambiguous", history_z=z, note=(
        f"the next {len(pair.later)} commits held{shown}, but on a series this noisy "
        f"(its commits stray {math.expm1(spread):.0%}) runners hold a level that long and leave it: "
        "detect decides once more commits hold it"))


def _came_earlier_row(pair: _Pair, noise: SegmentNoise, z: float, fields: dict) -> Row | None:
    """Ambiguous: the level the next commits hold began a few commits before this one, which was confirmed the same
    change there (:func:`_confirmed_earlier`): the change came with it."""
    came = _confirmed_earlier(pair.after, pair.history, pair.a, pair.later, pair.policy,  # type: ignore[arg-type]
                              _changed(noise.deviation(pair.a), pair.direction))
    if not came:
        return None
    return Row(**fields, verdict="ambiguous", history_z=z, note=(
        f"the level the next commits hold began {came} commit{'s' if came > 1 else ''} before this one: "
        "the change came with it"))


def _within_noise_row(pair: _Pair, noise: SegmentNoise, distance: _Distance, state: Evidence | None,
                      by_density: bool, beyond: bool, p: float | None, fields: dict) -> Row | None:
    """Unchanged (at the edge) or ambiguous: a level commits visited, or a move a young history may not have shown
    yet, that persistence did not confirm and the density did not suspect. A level no commit visited: None."""
    z, z_bar, near = distance.z, distance.z_bar, distance.near
    if not ((near >= 1 or z < z_bar) and state != "confirmed" and not by_density):
        return None
    if not beyond:
        return Row(**fields, verdict="unchanged", history_z=z, note=significant_below(pair.shown, p, pair.threshold))
    return Row(**fields, verdict="ambiguous", history_z=z, note="within the series' own noise" if near else (
        f"a young history ({len(noise.seen)} commits) needs {z_bar:.1f} deviations, {z:.1f} here"))


def _direction_and_notes(pair: _Pair, effect: _Effect, read: _Persistence, fields: dict) -> Row:
    """The final row of a move that stands: ambiguous at the threshold's edge; else its direction (from the level
    with a noise model, the before commit without), its notes, and unchanged where the next commits refuted it."""
    if not effect.beyond:
        return Row(**fields, verdict="ambiguous", history_z=read.z,
                   note=f"at the threshold edge ({effect.size:.1%} vs {pair.threshold:.0%})")
    changed = _direction(pair, effect.noise)
    notes = _notes(pair, effect.noise, read)
    if read.state == "refuted":  # the next commits left the level: never a change, as an A/B run that refutes it reads
        notes.insert(0, f"suspected {changed}; the next commits did not hold the level")
        changed = "unchanged"
    return Row(**fields, verdict=changed, history_z=read.z, state=read.state, note="; ".join(notes))


def _direction(pair: _Pair, noise: SegmentNoise | None) -> Verdict:
    """Regressed or improved: the level, not the before commit, says which way it moved, where there is one."""
    if noise is not None:
        return _changed(noise.deviation(pair.a), pair.direction)
    worse = (pair.a > pair.b) if pair.direction is Direction.LOWER else (pair.a < pair.b)
    return "regressed" if worse else "improved"


def _notes(pair: _Pair, noise: SegmentNoise | None, read: _Persistence) -> list[str]:
    """The frame the before commit was put in, the window's density, the earlier level the next commits went back to."""
    notes = [f"×{pair.ratio:.3f} with the before commit put in this run's frame (×{pair.frame:.3f})"] if abs(
        math.log(pair.frame)) > 0.01 else []
    if read.by_density:
        notes.append(f"beyond every level the last {len(noise.seen)} commits visited ({read.z:.1f} deviations of a "  # type: ignore[union-attr]
                     "series spread over several runner levels)")
    if read.reverted:
        notes.append(_reverted_note(noise, read.reverted, pair.policy.history_gap))  # type: ignore[arg-type]
    if read.went_back:
        notes.append(f"the next commits went back to the level of {read.went_back} commits before the last "
                     f"{noise.points}: a runner phase ended")  # type: ignore[union-attr]
    return notes


def _reverted_note(noise: SegmentNoise, reverted: int, gap: float) -> str:
    """The reading of a flagged return to an earlier level: a change reverted (a step the series had not visited
    otherwise, or now and then only; one the gate confirmed a few commits before, read with the spread from before
    it), never a runner phase that ended (:meth:`.noise.SegmentNoise.alternates`)."""
    visits = noise.visited_before(gap)
    seen = f"had visited only now and then ({visits} earlier commits)" if visits else "had never visited otherwise"
    left = (f"left {noise.short_phase} commits before by a step the gate confirmed (read with the spread of the "
            "commits before it)" if noise.short_phase else f"left by a step and {seen}")
    return (f"back to the level of {reverted} commits before the last {noise.points}, which the series {left}: "
            "a change reverted, judged as a step")


def detect_says(verdict: str, note: str, change: ChangePoint) -> tuple[str, str] | None:
    """The verdict and note a pair's row should read given detect's change point at the same pair of the same series
    (reads the stored change point: its kind, ratio, persistence and, from :mod:`.events`, whether an environment
    event holds it); None where the row stands as it is.

    A step an environment event holds is the run's, not the code's: a row that flagged it reads ambiguous, with the
    event's line. A code step detect found where the row did not flag one keeps the row's verdict and says in one line
    why the two differ."""
    if change.extra.get("cause") == "environment":
        event = change.extra.get("event_line") or change.extra.get("event")
        line = f"detect: an environment event, not the code ({event})"
        if verdict in ("regressed", "improved"):
            return "ambiguous", f"{line}; compare alone: {verdict}"
        return verdict, f"{line}; {note}" if note else line
    flagged = {"regression": "regressed", "improvement": "improved"}.get(change.kind)
    if flagged is None or verdict == flagged:
        return None
    step = f"detect: {'persisting ' if change.persists else ''}{change.kind} ×{change.ratio:.2f} at this pair"
    return verdict, f"{step}; compare: {verdict} ({note or 'the two commits alone do not cross the threshold'})"


def reconciled_with_detect(row: Row, change: ChangePoint) -> Row:
    """``row`` as detect's change point at the same pair of the same series bears on it (:func:`detect_says`); an
    environment event's row loses its evidence state, which history gave a change of the code."""
    said = detect_says(row.verdict, row.note, change)
    if said is None:
        return row
    verdict, note = said
    return dataclasses.replace(row, verdict=verdict, note=note, state=None if verdict != row.verdict else row.state)


def significant_below(ratio: float, p: float | None, threshold: float) -> str:
    """What an unchanged row says of a move its two commits' samples call significant (p below
    :data:`.policy.SIGNIFICANT_BELOW`) though it stays under the threshold, e.g. "×1.037, p < 0.001, below the 5%
    threshold"; "" for any other. Reads only the ratio and the samples' p-value: a bare "unchanged" hid such moves."""
    if p is None or p >= SIGNIFICANT_BELOW or not 0 < ratio < math.inf or ratio == 1.0:
        return ""
    return f"×{ratio:.3f}, p < {SIGNIFICANT_BELOW:g}, below the {threshold:.0%} threshold"


def _started_before(history: Sequence[float], value: float, later: Sequence[float], threshold: float, back: int) -> int:
    """How many commits before ``value`` the level it and the ``later`` commits hold began, when :mod:`.detect`
    starts it at one of the newest ``back`` commits of ``history`` (beyond ``threshold``, the way ``value`` moved)
    and not at ``value``; 0 otherwise."""
    from .detect import find_steps

    h = positive(history)
    way = math.log(value) - float(np.median(np.log(h)))
    held = [w for w in later if w is not None and math.isfinite(w)]  # a later commit that failed has no level
    starts = [h.size - s.index for s in find_steps([*h, value, *held])
              if abs(math.log(s.ratio)) > math.log1p(threshold) and math.log(s.ratio) * way > 0]
    return 0 if 0 in starts else min((k for k in starts if 1 <= k <= back), default=0)


def _changed(deviation: float, direction: Direction) -> Verdict:
    """The verdict on a move of ``deviation`` (log) from the series' level, for a metric of ``direction``."""
    return "regressed" if (deviation > 0) == (direction is Direction.LOWER) else "improved"


def _confirmed_earlier(after: Measurement, history: Sequence[float], value: float, later: Sequence[float],
                       policy: ComparePolicy, verdict: Verdict) -> int:
    """How many commits before ``value`` (at most ``confirm_window``) the level it and the ``later`` commits hold
    began, when that commit, judged on the medians as this one is judged, was confirmed ``verdict`` there
    (:func:`_started_before`); 0 otherwise. Against a segment that still holds the old level (detect splits after 8
    commits), a commit on a slower runner just after a step was that step again, confirmed and failing the gate a
    second time; a step whose first commit was left unconfirmed (a faster runner there) is still confirmed here, one
    commit late."""
    threshold = policy.threshold_for(after.benchmark, after.metric)
    k = _started_before(history, value, later, threshold, policy.confirm_window)
    if not k or len(history) <= k or not all(measured(v) for v in history[-k - 1:]):
        return 0
    earlier = compare_pair(_on_medians(after, history[-k - 1]), _on_medians(after, history[-k]), policy, history[:-k],
                           [*history[len(history) - k + 1:], value, *later])
    return k if (earlier.verdict, earlier.state) == (verdict, "confirmed") else 0


@dataclass(frozen=True, slots=True)
class RunShift:
    """How far a whole run moved against its series' recent levels: the median slowdown (log)."""

    shift: float  # > 0: the run is slower (times up, rates down) than its series' recent levels
    cases: int  # series with history that it was read from

    def explains(self, slowdown: float, share: float = RUN_SHARE) -> bool:
        """Whether the run moved, the same way, at least ``share`` as far as one series (``slowdown``, log)."""
        return self.shift * slowdown > 0 and abs(self.shift) >= abs(slowdown) * share


def _slowdown(direction: Direction, history: Sequence[float], value: float | None) -> float | None:
    """log(value / the history's median), signed so that > 0 is worse; None without a usable pair."""
    centre = _log_centres({None: history}, 0).get(None)  # type: ignore[dict-item]
    return None if centre is None else _signed_slowdown(direction, centre, value)


def _signed_slowdown(direction: Direction, centre: float, value: float | None) -> float | None:
    """log(value) - ``centre``, signed so that > 0 is worse; None for a neutral metric or no usable value."""
    if direction is Direction.NEUTRAL or value is None or not (value > 0 and math.isfinite(value)):
        return None
    d = math.log(value) - centre
    return d if direction is Direction.LOWER else -d


def _log_centres(history: Mapping[Case, Sequence[float]], min_points: int) -> dict[Case, float]:
    """Each case's median log over the positive finite values of its history, for the cases with at least
    ``min_points`` values and one of them usable: at once for a whole suite (a run's shift and its later
    runs' read the same centres)."""
    keys = [k for k, h in history.items() if len(h) >= max(min_points, 1)]
    if not keys:
        return {}
    table = np.full((len(keys), max(len(history[k]) for k in keys)), np.nan)
    for row, k in enumerate(keys):
        table[row, : len(history[k])] = history[k]
    from .frames import _quiet_nans, nan_median  # a history with no usable value: NaN, left out below

    with _quiet_nans():
        centres = nan_median(np.where(np.isfinite(table) & (table > 0), np.log(table), np.nan), axis=1)
    return {k: float(c) for k, c in zip(keys, centres) if math.isfinite(c)}


def run_shift(
    values: Mapping[Case, float | None], directions: Mapping[Case, Direction],
    history: Mapping[Case, Sequence[float]], policy: ComparePolicy, centres: Mapping[Case, float] | None = None,
) -> RunShift | None:
    """One run's common shift (``values``: each series' value in that run), or None with fewer than
    ``policy.min_suite`` series with history (``centres``: :func:`_log_centres` of it, when known already).

    On CI each run lands on one runner: a runner of another type moves every benchmark of the run
    at once (each by its own amount), a code change moves a few. The median keeps the few out.
    """
    if policy.min_suite <= 0:
        return None
    centres = _log_centres(history, policy.min_history) if centres is None else centres
    slowdowns = [d for k, c in centres.items() if k in values
                 if (d := _signed_slowdown(directions[k], c, values[k])) is not None]
    if len(slowdowns) < policy.min_suite:
        return None
    return RunShift(float(np.median(slowdowns)), len(slowdowns))


def _explained_by_run(row: Row, history: Sequence[float] | None, shift: RunShift | None,
                      later: Sequence[RunShift | None], by_frame: bool = False) -> Row:
    """A change the whole run made too: ambiguous. Suspected, until later commits decide; confirmed,
    unless the later runs moved with it as well (a runner pool that changed, or a change to everything:
    the same-machine A/B re-measurement tells them apart); refuted: unchanged, a runner change that the next
    commits left (read once they are stored, it was never a regression, and no longer says ``regressed``).

    ``by_frame``: the run's frame (a runner type the history knows) already found the row's move to be what
    that runner does to this series: a run that moved the same way explains it, however much further the
    series moved than the run's median (a series twice as sensitive to its runner as most)."""
    if shift is None or history is None or row.state is None:  # a state: history flagged it (refuted: at first)
        return row
    slowdown = _slowdown(row.direction, history, _ok_median(row.after) if row.after else None)
    share = 0.0 if by_frame else RUN_SHARE  # the frame already measured how far: the same way is enough
    if slowdown is None or not shift.explains(slowdown, share):
        return row
    moved = f"the whole run moved ×{math.exp(shift.shift):.3f} (median of {shift.cases} series)"
    if row.state == "suspected":
        return dataclasses.replace(row, verdict="ambiguous", state=None, note=f"{moved}: a runner change? later commits decide")
    if row.state == "refuted":
        return dataclasses.replace(row, verdict="unchanged", state=None, note=f"{moved}: a runner change, which the next "
                                   "commits left")
    if later and all(s is not None and s.explains(slowdown, share) for s in later):
        return dataclasses.replace(row, verdict="ambiguous", state=None, note=(
            f"{moved}, and the next {len(later)} runs too: a runner change or a change to everything "
            "(mmtrack run --confirm tells them apart)"))
    return row


def _run_shifts(
    after: Mapping[Case, float | None], directions: Mapping[Case, Direction], history: Mapping[Case, Sequence[float]],
    later: Mapping[Case, Sequence[float]] | None, policy: ComparePolicy,
) -> tuple[RunShift | None, list[RunShift | None]]:
    """The after run's common shift (``after``: each case's median), and each later run's (as far as every
    series has one)."""
    if policy.min_suite <= 0:
        return None, []
    centres = _log_centres(history, policy.min_history)
    shift = run_shift(after, directions, history, policy, centres)
    if shift is None or not later:
        return shift, []
    depth = min((len(v) for k, v in later.items() if k in after), default=0)
    return shift, [run_shift({k: v[j] for k, v in later.items() if k in after}, directions, history, policy, centres)
                   for j in range(depth)]


@dataclass(frozen=True, slots=True)
class RunLabels:
    """The commit of each value that :func:`compare_measurements` is given: what aligns the series of a run
    for its frames (:mod:`.frames`). ``history`` and ``later`` map a case to one label per value; ``before``
    is the before commit of every case (``mmtrack compare``), or each case's own (the pages, where a series
    that skipped a commit compares with its own previous one)."""

    before: str | Mapping[Case, str]
    after: str
    history: Mapping[Case, Sequence[str]]
    later: Mapping[Case, Sequence[str]] = field(default_factory=dict)

    def before_of(self, case: Case) -> str | None:
        return self.before if isinstance(self.before, str) else self.before.get(case)


@dataclass(frozen=True, slots=True)
class InRun:
    """What the rest of its run says about one case, beyond the case's own series (:func:`runs_of`).

    ``framed``: the case's history and later commits put in the after run's frame, and the factor that puts
    its before commit there (None when the run has no frames, or ran on a runner type its history does not
    know); ``usual``: the run ran on the usual runner; ``shift``: the whole run's common shift, and
    ``later_shifts`` each later run's. Its :meth:`fingerprint` is what a cached verdict depends on (the pages)."""

    framed: tuple[list[float], list[float], float] | None = None
    usual: bool = False
    shift: RunShift | None = None
    later_shifts: tuple[RunShift | None, ...] = ()

    def fingerprint(self) -> str:
        """A short hash of all of it: a verdict cached with one is still good while it is unchanged."""
        h = hashlib.blake2b(digest_size=8)
        if self.framed is not None:
            for part in self.framed[:2]:
                h.update(array.array("d", part).tobytes() + b"|")  # as np.asarray(part, float) holds them
        # repr of the 4-tuple (factor, usual, shift, later shifts); the run's part is one string for all its cases
        h.update(f"({(self.framed and self.framed[2])!r}, {self.usual!r}, {_run_repr(self.shift, self.later_shifts)})"
                 .encode())
        return h.hexdigest()


_RUN_REPRS: dict[tuple[int, int], tuple[object, object, str]] = {}  # the objects kept: their ids stay theirs


def _run_repr(shift: RunShift | None, later: tuple[RunShift | None, ...]) -> str:
    """``repr`` of a run's shift and later shifts, once for the InRuns that share those objects (by identity: equal
    values may differ in repr, 0.0 and -0.0)."""
    key = (id(shift), id(later))
    hit = _RUN_REPRS.get(key)
    if hit is None or hit[0] is not shift or hit[1] is not later:
        if len(_RUN_REPRS) >= 64:
            _RUN_REPRS.clear()
        hit = _RUN_REPRS[key] = (shift, later, f"{shift!r}, {later!r}")
    return hit[2]


def runs_of(
    after: Mapping[Case, float | None], before: Mapping[Case, float | None], directions: Mapping[Case, Direction],
    history: Mapping[Case, Sequence[float]], later: Mapping[Case, Sequence[float]], labels: RunLabels | None,
    policy: ComparePolicy,
) -> dict[Case, InRun]:
    """Each case's :class:`InRun` in one run: ``after`` and ``before`` map the run's cases to their medians
    (None: failed), ``history`` and ``later`` to their series' (:func:`compare_measurements`); frames need
    ``labels`` and ``policy.run_frames``."""
    if not history:
        return {}
    shift, later_shifts = _run_shifts(after, directions, history, later, policy)
    frames = _in_after_frame(after, before, history, later, labels, policy) if (
        labels is not None and policy.run_frames) else None
    usual = frames is not None and frames.settled(labels.after)  # type: ignore[union-attr]

    def framed(k: Case) -> tuple[list[float], list[float], float] | None:
        if frames is None or k not in history:
            return None
        h, v = history[k], later.get(k, ())
        hl, ll = labels.history.get(k, ()), labels.later.get(k, ())  # type: ignore[union-attr]
        hl, ll = (hl if len(hl) == len(h) else ()), (ll if len(ll) == len(v) else ())  # unlabelled: as measured
        before_label = labels.before_of(k)  # type: ignore[union-attr]
        f = frames.factor_array(k, [*hl, *ll, before_label or ""], labels.after)  # type: ignore[union-attr]
        return ((np.asarray(h, dtype=float) * f[: len(hl)]).tolist() if hl else list(h),
                (np.asarray(v, dtype=float) * f[len(hl) : -1]).tolist() if ll else list(v),
                float(f[-1]) if before_label is not None else 1.0)

    later_run = tuple(later_shifts)  # one object for all: their fingerprints read its repr once
    return {k: InRun(framed(k), usual, shift, later_run) for k in after.keys() | before.keys()}


def _in_after_frame(
    after: Mapping[Case, float | None], before: Mapping[Case, float | None], history: Mapping[Case, Sequence[float]],
    later: Mapping[Case, Sequence[float]], labels: RunLabels, policy: ComparePolicy,
) -> "SuiteFrames | None":
    """The run's frames, fitted on every case's history, before, after and later values; None when the run has
    none or ran on a runner type the history does not know."""
    from .frames import fit_frames

    values: dict[Case, dict[str, float]] = {}
    for k, h in history.items():
        by_label = dict(zip(labels.history.get(k, ()), h))
        by_label.update(zip(labels.later.get(k, ()), later.get(k, ())))
        before_label = labels.before_of(k)
        for label, v in ((before_label, before.get(k)), (labels.after, after.get(k))):
            if label is not None and v is not None:
                by_label[label] = v
        values[k] = by_label
    frames = fit_frames(values, labels.history, policy.min_suite)
    return frames if frames is not None and frames.known(labels.after) else None


def _runner_moves(case: Case) -> bool:
    """Whether a runner can move the case's series: every metric but a deterministic count (:mod:`.deterministic`),
    which takes no part in a run's shift or frames and is judged on its two counts alone."""
    return not deterministic.is_deterministic(case[2])


def _flagged(row: Row) -> bool:
    return row.verdict in ("regressed", "improved")


def judge_in_run(
    before: Measurement | None, after: Measurement | None, policy: ComparePolicy, history: Sequence[float] | None,
    later: Sequence[float], run: InRun | None, p_value: bool = True,
) -> Row:
    """:func:`compare_pair` of one case, read with what its run says (:class:`InRun`; None: nothing).

    On the usual runner the case is judged in the run's frame. On a runner type the history knows, a flag
    in its frame (the series moved beyond what that runner does to it) stands; any other verdict is the
    plain one, which a run that moved the same way makes ambiguous, however much further the series moved
    (the frame found it that runner's doing): a change to everything looks like that runner, and must stay
    in sight. A change the whole run made too is ambiguous (:func:`_explained_by_run`)."""
    def plain() -> Row:
        return compare_pair(before, after, policy, history, later, p_value=p_value)

    if run is None:
        return plain()
    by_frame = False
    if run.framed is None:
        row = plain()
    else:
        in_frame, later_in_frame, factor = run.framed
        row = compare_pair(before, after, policy, in_frame, later_in_frame, p_value=p_value, frame=factor)
        if not run.usual:
            if _flagged(row):
                return row  # the series' own move beyond its runner's level: the run's shift is already out
            row, by_frame = plain(), True
    return _explained_by_run(row, history, run.shift, run.later_shifts, by_frame)


def compare_measurements(
    before: Iterable[Measurement],
    after: Iterable[Measurement],
    policy: ComparePolicy | None = None,
    *,
    history: Mapping[Case, Sequence[float]] | None = None,
    later: Mapping[Case, Sequence[float]] | None = None,
    labels: RunLabels | None = None,
    decided: Sequence[Row] = (),
    before_label: str = "before",
    after_label: str = "after",
) -> Comparison:
    """Compare every metric of every benchmark case present on either side.

    ``history`` optionally maps a case (``Measurement.case``) to the medians of its
    series' recent commits, oldest first, ending with the before commit; ``later`` to the
    medians of the commits measured after the after commit (see :func:`.noise.follow_up`).
    ``labels``: the commit of each of those values; with them, and a run on its usual runner,
    every case is judged in the after run's frame (:mod:`.frames`, ``policy.run_frames``).
    ``decided`` carries the rows of earlier commits that the after commit decides
    (:func:`decided_by_last`).
    """
    policy = policy or ComparePolicy()
    bmap = {m.case: m for m in before}
    amap = {m.case: m for m in after}
    keys = sorted(set(bmap) | set(amap), key=lambda k: (k[0], k[1], k[2]))
    history, later = history or {}, later or {}
    timed = {k: m for k, m in amap.items() if _runner_moves(k)}
    runs = runs_of({k: _ok_median(m) for k, m in timed.items()},
                   {k: _ok_median(m) for k, m in bmap.items() if _runner_moves(k)},
                   {k: m.direction for k, m in timed.items()},
                   {k: h for k, h in history.items() if _runner_moves(k)}, later, labels, policy)
    rows = tuple(judge_in_run(bmap.get(k), amap.get(k), policy, history.get(k), later.get(k, ()), runs.get(k))
                 for k in keys)
    rows = contention.read_cpu_time_where_contended(rows, bmap, amap)
    return Comparison(rows, before_label, after_label, policy, tuple(decided))


def _decisions(
    points: Sequence[Measurement], labels: Sequence[str], policy: ComparePolicy, window: int,
    frames: "SuiteFrames | None" = None, settled: Collection[str] = (),
) -> list[tuple[int, Row, list[float], str | None]]:
    """(index, row, history as measured, what a known runner type's frame said) of each earlier commit of one
    series whose suspicion its last commit settles; with ``frames`` (the run's, :mod:`.frames`), judged in the
    frame of that commit's run as :func:`compare_measurements` judges the newest commit. What the frame said, on
    a runner type other than the usual one: ``"own"``, a flag in its frame (the row); ``"runner"``, nothing
    beyond what that runner does to the series (the row is the plain one); None elsewhere. The commits labelled
    in ``settled`` are left out: a same-machine A/B run settled them already."""
    medians = [m.median if m.status == "ok" and m.median is not None else math.nan for m in points]
    last = len(points) - 1
    case = points[-1].case

    def decision(j: int, framed: bool) -> Row | None:
        """The decision on commit j, judged in its run's frame or as measured."""
        thr = policy.threshold_for(points[j].benchmark, points[j].metric)
        # the before commit as compare_pair judges it (in the frame, when framed)
        b = medians[j - 1] * (frames.factor(case, labels[j - 1], labels[j]) if framed else 1.0)  # type: ignore[union-attr]
        if not (medians[j] > 0 and b > 0 and _is_step(medians[j] / b, thr)):
            return None  # no step at j (compare_pair would say unchanged): skip the noise model
        put = frames.factors(case, labels, labels[j]) if framed else [1.0] * len(points)  # type: ignore[union-attr]
        lo = max(0, j - window)
        judged = [v * f for v, f in zip(medians[lo:j], put[lo:j]) if math.isfinite(v)]
        later = [v * f for v, f in zip(medians[j + 1 : last + 1], put[j + 1 : last + 1])]
        row = compare_pair(points[j - 1], points[j], policy, judged, later, frame=put[j - 1])
        if row.state in ("confirmed", "refuted"):
            earlier = compare_pair(points[j - 1], points[j], policy, judged, later[:-1], frame=put[j - 1])
            if earlier.state == "suspected" or (row.state == "confirmed" and earlier.state is None):
                # where it was suspected, then the row's own note: why the later commits settled it so
                return dataclasses.replace(row, note=f"at {labels[j]}" + (f": {row.note}" if row.note else ""))
        return None

    out: list[tuple[int, Row, list[float], str | None]] = []
    for j in range(max(1, last - policy.confirm_window), last):
        if labels[j] in settled:
            continue
        row, said = None, None
        if frames is not None and frames.known(labels[j]):  # as compare_measurements judges the newest commit
            row = decision(j, True)
            if not frames.settled(labels[j]):
                said = "own" if row is not None and _flagged(row) else "runner"
                row = row if said == "own" else decision(j, False)
        else:
            row = decision(j, False)
        if row is not None:
            out.append((j, row, [v for v in medians[max(0, j - window) : j] if math.isfinite(v)], said))
    return out


def decided_by_last(
    points: Sequence[Measurement], labels: Sequence[str], policy: ComparePolicy | None = None, window: int = HISTORY_WINDOW
) -> list[Row]:
    """The rows of earlier commits of one series whose suspected change its last commit decides.

    ``points`` are the series' measurements, oldest first, ending with the newest commit;
    ``labels`` name their commits. A commit suspected of a change is confirmed or refuted
    by the commits after it (:func:`.noise.follow_up`); the row is returned when the last commit
    is the one that settles it, so a per-commit gate reports each decision once (a refutal
    only of what was suspected; a confirmation also of what the history alone left ambiguous).
    One series alone: :func:`decided_in_run` also reads the whole run's shift.
    """
    return [row for _, row, _, _ in _decisions(points, labels, policy or ComparePolicy(), window)]


def decided_in_run(
    tails: Mapping[Case, tuple[Sequence[Measurement], Sequence[str]]],
    policy: ComparePolicy | None = None,
    window: int = HISTORY_WINDOW,
    settled: Mapping[Case, Collection[str]] | None = None,
) -> list[Row]:
    """:func:`decided_by_last` over every series of one run, each decision read against the run's shift.

    ``tails`` maps each case to its measurements and commit labels, oldest first, all ending with the
    run's commit. A confirmation that the whole run made at the commit it was suspected at, and every
    run after it too, is ambiguous (:func:`_explained_by_run`), as :func:`compare_measurements` judges
    the newest commit: a runner pool that changed fails no gate four commits later. ``settled``: per case,
    the labels of the commits a same-machine A/B run confirmed or refuted at their own run (``mmtrack run
    --confirm``); history does not decide them again, so that what A/B confirmed fails the gate once, at its
    commit, and what it refuted never fails it.
    """
    from .frames import fit_frames

    policy = policy or ComparePolicy()
    # A deterministic count is judged at its own commit, at once: later commits and the run settle nothing of it.
    tails = {c: tail for c, tail in tails.items() if _runner_moves(c)}
    medians = {c: [_ok_median(m) for m in points] for c, (points, _) in tails.items()}
    where = {c: {label: i for i, label in enumerate(labels)} for c, (_, labels) in tails.items()}
    directions = {c: points[-1].direction for c, (points, _) in tails.items() if points}
    frames = None
    if policy.run_frames:  # one fit for the whole tail: each decision is judged in its own commit's frame
        values = {c: {label: v for label, v in zip(labels, medians[c]) if v is not None} for c, (_, labels) in tails.items()}
        frames = fit_frames(values, {c: labels for c, (_, labels) in tails.items()}, policy.min_suite)

    def history_before(case: Case, label: str) -> list[float] | None:
        i = where[case].get(label)
        return None if i is None else [v for v in medians[case][max(0, i - window) : i] if v is not None]

    @functools.cache  # a runner change settles in every series at once: each (at, since) once, not per series
    def shift(at: str, since: str) -> RunShift | None:
        """The run at commit ``at`` against each series' history before commit ``since``."""
        cases = [c for c in tails if at in where[c] and since in where[c]]
        return run_shift({c: medians[c][where[c][at]] for c in cases}, directions,
                         {c: h for c in cases if (h := history_before(c, since)) is not None}, policy)

    out: list[Row] = []
    for case, (points, labels) in tails.items():
        for j, row, history, said in _decisions(points, labels, policy, window, frames, (settled or {}).get(case, ())):
            if said == "own":  # the series' own move beyond its runner's level: that run's shift is already out
                out.append(row)
                continue
            later = [shift(label, labels[j]) for label in labels[j + 1 :][: policy.confirm_window]]
            judged = _explained_by_run(row, history, shift(labels[j], labels[j]), later, by_frame=said == "runner")
            out.append(judged if judged is row else dataclasses.replace(judged, note=f"{row.note}: {judged.note}"))
    return out


def _ok_median(m: Measurement) -> float | None:
    return m.median if m.status == "ok" and m.median is not None else None


def series_history(points: Sequence[Measurement], at: int, window: int) -> list[float]:
    """The medians that judge a change after ``points[at]`` (a series, oldest first): up to ``window``
    commits ending at ``at``, of ``points[at]``'s benchmark code version, failed runs left out."""
    return _history(*history_columns(points), at, window)


def series_history_at(points: Sequence[Measurement], at: int, window: int) -> list[int]:
    """Where in ``points`` each value of :func:`series_history` comes from (their commits label them)."""
    return _history_at(*history_columns(points), at, window)


def history_columns(points: Sequence[Measurement]) -> tuple[list[float | None], list[str | None]]:
    """What a series' history is read from: each point's median (None: a failed run) and code version."""
    return [_ok_median(m) for m in points], [m.version for m in points]


def _history(medians: Sequence[float | None], versions: Sequence[str | None], at: int, window: int) -> list[float]:
    """:func:`series_history` of a series given as columns (None: a failed run)."""
    return [medians[i] for i in _history_at(medians, versions, at, window)]  # type: ignore[misc]


def _history_at(medians: Sequence[float | None], versions: Sequence[str | None], at: int, window: int) -> list[int]:
    """The indices of :func:`_history`'s values."""
    version = versions[at]
    return [i for i in range(max(0, at + 1 - window), at + 1) if versions[i] == version and medians[i] is not None]


def series_later(points: Sequence[Measurement], at: int, policy: ComparePolicy) -> list[float]:
    """The medians of the commits after ``points[at]`` that confirm or refute its verdict (:func:`.noise.follow_up`):
    up to ``confirm_window`` of them, until the benchmark code version changes; NaN for a failed run."""
    return _later(*history_columns(points[at : at + 1 + policy.confirm_window]), 0, policy.confirm_window)


def _later(medians: Sequence[float | None], versions: Sequence[str | None], at: int, n: int) -> list[float]:
    """:func:`series_later` of a series given as columns."""
    out: list[float] = []
    for i in range(at + 1, min(len(medians), at + 1 + n)):
        if versions[i] != versions[at]:
            break
        out.append(math.nan if medians[i] is None else medians[i])  # None: a failed run (0 is a value)
    return out


#: One series as columns: its commits (shas), medians (None: failed), code versions, and direction.
SuiteColumns = tuple[Sequence[str], Sequence[float | None], Sequence[str | None], Direction]


def suite_runs(
    columns: Mapping[Case, SuiteColumns], judged: Mapping[Case, Iterable[str]], policy: ComparePolicy | None = None,
    window: int = HISTORY_WINDOW,
) -> dict[Case, dict[str, InRun]]:
    """What each run says about each series of one suite (one machine and environment): per case, the
    :class:`InRun` of each of its commits named in ``judged`` (after shas), judged against the series'
    commit before it, as :func:`compare_measurements` reads the run when ``mmtrack compare`` judges that
    commit with history. Every series measured in a run takes part in its frames and shift."""
    policy = policy or ComparePolicy()
    cases = list(columns)  # numbered: a run's fit hashes each case many times, and a MetricKey hashes slowly
    cols = [columns[c] for c in cases]
    moves = [_runner_moves(c) for c in cases]
    wanted: dict[str, list[int]] = {}
    number = {c: n for n, c in enumerate(cases)}
    for c, shas in judged.items():
        for sha in shas:
            wanted.setdefault(sha, []).append(number[c])
    where = [_last_positions(shas, wanted) for shas, _, _, _ in cols]
    out: dict[Case, dict[str, InRun]] = {c: {} for c in judged}
    for sha, judged_here in wanted.items():
        after, before, directions = {}, {}, {}
        history, later, history_labels, later_labels, before_labels = {}, {}, {}, {}, {}
        for n, (shas, medians, versions, direction) in enumerate(cols):
            i = where[n].get(sha)
            if i is None or i == 0 or not moves[n]:
                continue
            after[n], before[n], directions[n], before_labels[n] = medians[i], medians[i - 1], direction, shas[i - 1]
            history[n], history_labels[n] = _history_with_labels(shas, medians, versions, i - 1, window)
            later[n] = _later(medians, versions, i, policy.confirm_window)
            later_labels[n] = shas[i + 1 : i + 1 + len(later[n])]
        labels = RunLabels(before_labels, sha, history_labels, later_labels)  # type: ignore[arg-type]
        runs = runs_of(after, before, directions, history, later, labels, policy)  # type: ignore[arg-type]
        for n in judged_here:
            if n in runs:
                out[cases[n]][sha] = runs[n]  # type: ignore[index]
    return out


def _history_with_labels(shas: Sequence[str], medians: Sequence[float | None], versions: Sequence[str | None], at: int,
                         window: int) -> tuple[list[float], list[str]]:
    """:func:`_history` and the commit of each of its values: a window of one code version without a failed run is
    taken as it lies (two slices, not a test of each commit)."""
    lo = max(0, at + 1 - window)
    if versions[lo : at + 1].count(versions[at]) == at + 1 - lo and None not in medians[lo : at + 1]:
        return list(medians[lo : at + 1]), list(shas[lo : at + 1])  # type: ignore[arg-type]
    index = _history_at(medians, versions, at, window)
    return [medians[x] for x in index], [shas[x] for x in index]  # type: ignore[misc]


def _last_positions(shas: Sequence[str], wanted: Iterable[str]) -> dict[str, int]:
    """The index of each wanted sha's last place in ``shas``, where it has one: what a map of every sha to its
    index gives for them, without a dict of the whole series for the few commits a run fit asks about."""
    backwards = list(shas)[::-1]
    out = {}
    for sha in wanted:
        try:
            out[sha] = len(backwards) - 1 - backwards.index(sha)
        except ValueError:
            continue
    return out


def series_steps(
    points: Sequence[Measurement], policy: ComparePolicy | None = None, *, window: int = HISTORY_WINDOW, last: int = 10,
    p_value: bool = True, earlier: tuple[Sequence[float | None], Sequence[str | None]] = ((), ()),
    runs: Sequence[InRun | None] = (),
) -> list[tuple[int, Row]]:
    """``mmtrack compare`` of each of the ``last`` newest commits of one series against the commit
    before it, as ``(index of the after commit, row)``: the same history and later commits as the CLI
    (:func:`series_history`, :func:`series_later`), so the published pages give the CLI's verdicts
    (``p_value``: see :func:`compare_pair`). ``earlier``: the medians (None: failed) and code versions
    of the series' commits before ``points``, oldest first, when ``points`` holds only its newest ones
    (the samples are needed only for the commits compared; the history needs only medians). ``runs``:
    what each point's run says (:func:`suite_runs`), one per point; none: the series judged alone."""
    policy = policy or ComparePolicy()
    own_medians, own_versions = history_columns(points)
    medians, versions = [*earlier[0], *own_medians], [*earlier[1], *own_versions]
    offset = len(earlier[0])
    out = []
    for j in range(max(1, len(points) - last), len(points)):
        history = _history(medians, versions, offset + j - 1, window)
        later = series_later(points, j, policy)
        run = runs[j] if j < len(runs) else None
        out.append((j, judge_in_run(points[j - 1], points[j], policy, history, later, run, p_value=p_value)))
    return out


#: A step verdict as the pages keep it: (index of the after commit, verdict, state, ratio as measured).
StepVerdict = tuple[int, Verdict, "Evidence | None", "float | None"]


def series_step_verdicts(
    points: Sequence[Measurement], policy: ComparePolicy | None = None, *, window: int = HISTORY_WINDOW,
    last: int = 10, earlier: tuple[Sequence[float | None], Sequence[str | None]] = ((), ()),
    runs: Sequence[InRun | None] = (),
) -> list[StepVerdict]:
    """:func:`series_steps` without p-values, as ``(index, verdict, state, ratio)``: the same verdicts, but a pair
    :func:`compare_pair` settles at once as unchanged (:func:`_unchanged_at_once`, in every reading
    :func:`judge_in_run` makes of it) is not judged through the rules (most of the pages' 2,500 after a commit)."""
    policy = policy or ComparePolicy()
    own_medians, own_versions = history_columns(points)
    medians, versions = [*earlier[0], *own_medians], [*earlier[1], *own_versions]
    offset = len(earlier[0])
    out: list[StepVerdict] = []
    for j in range(max(1, len(points) - last), len(points)):
        before, after, run = points[j - 1], points[j], (runs[j] if j < len(runs) else None)

        def plain() -> tuple[Sequence[float], Sequence[float]]:
            return _history(medians, versions, offset + j - 1, window), series_later(points, j, policy)

        ratio = _unchanged_in_run(before, after, policy, run, plain)
        if ratio is not None:
            out.append((j, "unchanged", None, ratio))
            continue
        history, later = plain()
        row = judge_in_run(before, after, policy, history, later, run, p_value=False)
        out.append((j, row.verdict, row.state, row.ratio))
    return out


def _unchanged_in_run(before: Measurement, after: Measurement, policy: ComparePolicy, run: InRun | None,
                      plain: Callable[[], tuple[Sequence[float], Sequence[float]]]) -> float | None:
    """The ratio of :func:`judge_in_run`'s row (p_value=False) where each :func:`compare_pair` it calls settles the pair
    as unchanged at once (:func:`_unchanged_at_once`), and no state lets the run's shift read it again; else None.
    ``plain``: the series' own history and later commits, asked for only where the plain reading is made."""
    if run is None or run.framed is None:
        return _unchanged_at_once(before, after, policy, *plain(), 1.0)
    in_frame, later_in_frame, factor = run.framed
    ratio = _unchanged_at_once(before, after, policy, in_frame, later_in_frame, factor)
    if ratio is None or run.usual:
        return ratio
    return _unchanged_at_once(before, after, policy, *plain(), 1.0)  # not flagged in its frame: the plain row


def _unchanged_at_once(before: Measurement, after: Measurement, policy: ComparePolicy, history: Sequence[float],
                       later: Sequence[float], frame: float) -> float | None:
    """``compare_pair(..., p_value=False)``'s ratio where it reads ``unchanged`` (no state) at once: two ok runs of one
    code version and method (:func:`_without_numbers` decides nothing), not a deterministic count, in log space, with
    enough history for a noise model, and a step from the before commit (in ``frame``) of at most half the threshold
    (:func:`_segment`'s no-step: size 0, neither beyond the threshold nor at its edge, no test). None otherwise."""
    if not (before.status == "ok" == after.status and before.median is not None and after.median is not None):
        return None
    if before.version is not None and after.version is not None and before.version != after.version:
        return None
    if (before.method and after.method and before.method != after.method) or deterministic.is_deterministic(after.metric):
        return None
    thr = policy.threshold_for(after.benchmark, after.metric)
    b, a = float(before.median * frame if frame != 1.0 else before.median), float(after.median)
    if not (thr > 0 and a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b) and not _edge(0.0, thr)):
        return None
    ratio = a / b
    if not (0 < ratio < math.inf and all(w is None or not math.isfinite(w) or w > 0 for w in later)):
        return None
    if _is_step(ratio, thr) or not _has_positive(history, policy.min_history):
        return None
    return a / float(before.median) if frame != 1.0 else ratio


def _has_positive(history: Sequence[float], count: int) -> bool:
    """Whether ``history`` holds ``count`` finite values above 0 (:func:`_enough_history`), read only that far."""
    if count <= 0:
        return True
    for v in history:
        if 0 < v < math.inf:
            count -= 1
            if not count:
                return True
    return False


def settled_by_ab(row: Row, state: str, ratio: float | None, p_value: float | None = None, rounds: int = 0) -> Row:
    """``row`` as a same-machine A/B run of its pair settled it (``mmtrack run --confirm``): ``confirmed``, the change
    it measured (a row history left ambiguous reads as that change); ``refuted``, unchanged. The A/B evidence is the
    note now, not history's doubt; any other state leaves the row as history read it."""
    if state == "refuted":
        verdict: Verdict = "unchanged"
    elif state != "confirmed":
        return row
    elif row.verdict in ("regressed", "improved"):
        verdict = row.verdict
    elif ratio and ratio > 0 and ratio != 1:
        verdict = _changed(math.log(ratio), row.direction)
    else:
        return row
    evidence = (f"A/B ×{ratio:.3f}" if ratio else "A/B") + (f", p={p_value:.2g}" if p_value is not None else "") + (
        f", {rounds} rounds" if rounds else "")
    if state == "refuted" and row.verdict in ("regressed", "improved"):
        evidence = f"suspected {row.verdict}; {evidence} refuted it"
    return dataclasses.replace(row, verdict=verdict, state=state, note=evidence)  # type: ignore[arg-type]


__all__ = [
    "MARKS",
    "FAIL_ON",
    "Verdict",
    "Evidence",
    "EVIDENCE",
    "EDGE_BAND",
    "ComparePolicy",
    "HISTORY_WINDOW",
    "RunShift",
    "RunLabels",
    "run_shift",
    "decided_by_last",
    "decided_in_run",
    "settled_by_ab",
    "reconciled_with_detect",
    "detect_says",
    "significant_below",
    "series_history",
    "series_history_at",
    "series_later",
    "series_steps",
    "series_step_verdicts",
    "StepVerdict",
    "suite_runs",
    "SuiteColumns",
    "InRun",
    "runs_of",
    "judge_in_run",
    "Row",
    "Comparison",
    "significance",
    "compare_pair",
    "compare_measurements",
    "failing_rows",
]
