"""The history's evidence: one pair of commits judged against its series' own recent commits (:func:`compare_pair`).

Reads the series' medians up to the before commit (the current segment's noise model, :func:`.noise.segment_noise`:
its level, robust between-commit spread and the levels its commits visited) and the medians of the commits after the
after commit, which confirm or refute a suspected change (:func:`.noise.follow_up`, :func:`.noise.held_level`).
The effect is read from the segment's level; it must be significant on the two commits' samples
(:mod:`.two_sample`), ``history_z`` robust deviations from the level and ``history_gap`` of them from every commit of
the segment: the level of a runner type the series visited before is its own noise. A level the next commits hold
confirms; a return refutes. Phases (a few commits on another runner type, :data:`.policy.PHASE_SPREAD`,
:data:`.policy.SHORT_PHASE`) and a change reverted are read here too.

Also what a series' history is, as the CLI and the pages read it (:func:`series_history`, :func:`series_later`):
one benchmark code version, failed runs left out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..vocabulary import Direction
from ..results import Measurement
from .noise import (
    SegmentNoise,
    YoungLevel,
    agreement,
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
from .policy import PHASE_SPREAD, SHORT_PHASE, ComparePolicy, Evidence
from .rows import Row, Verdict, _changed
from .two_sample import _deterministic_row, _edge, _is_step, _without_numbers, significance, significant_below


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


def _ok_median(m: Measurement) -> float | None:
    return m.median if m.status == "ok" and m.median is not None else None
