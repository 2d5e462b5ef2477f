"""A step in the newest commits of a series, which detect's rank test cannot prove yet, judged by the gate's rules.

Each of the newest :data:`.policy.NEWEST_COMMITS` commits after the series' last change point (but the newest commit
itself: one commit is never a level) is judged on its median
as ``mmtrack compare`` judges a commit with history (:func:`.compare.compare_pair`: its move from the current
segment's level, its distance from every commit the window has seen, the window's density), and the commits after it
settle it (:func:`.noise.follow_up`, :func:`.noise.held_level`); a commit whose move lies within the series' own
noise is suspected where it and the commits after it, together, lie beyond the window's density (the gate's density
evidence read over several commits). So such a step is ``suspected`` at once,
``confirmed`` once the next commits agree, and withdrawn (not reported) once they refute it. The first commit so
flagged starts the new level. Where the commits from one on, together, lie beyond every level the window visited as
clearly as the gate asks of one commit no commit came near (:data:`.policy.UNSEEN_BAR`), it is suspected whatever
the single commits after it did: one back on a faster runner the series visits reads as that runner, moved, and so
does the first commit of the step itself when it ran there. A suspected step gives way to a later one the other way
that reads the same commits far better: a faster runner's visit just before a step up is no step down.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..results import Measurement, MetricKey
from ..vocabulary import Direction
from .compare import compare_pair
from .detect import _median  # np.median's wrapper layers cost more than the medians of these short arrays
from .noise import UNSEEN_QUIET, SegmentNoise, already_beyond, held_level, segment_noise
from .policy import (
    HISTORY_WINDOW,
    NEWEST_COMMITS,
    NEWEST_EVIDENCE,
    NEWEST_EVIDENCE_HELD,
    NEWEST_HELD_VISITED,
    NEWEST_RECENT,
    NEWEST_RECENT_SEEN,
    NEWEST_SEGMENT,
    UNSEEN_BAR,
    ComparePolicy,
    Evidence,
)

#: What a bare median stands for: the rules read the medians only, and the threshold is the default one.
_METRIC = MetricKey("detect", "median", "")


@dataclass(frozen=True, slots=True)
class NewestStep:
    """A step the gate's rules flag in the newest commits: where the new level starts, both levels, and its state."""

    index: int  # first commit of the new level
    before: float  # median of the commits from the last change point (at most HISTORY_WINDOW before) up to the step
    after: float  # median of the step's commit and those after it
    state: Evidence  # suspected (the next commits are not in yet) or confirmed


def _bare(value: float, direction: Direction) -> Measurement:
    return Measurement(benchmark="", params={}, metric=_METRIC, direction=direction, median=value)


def newest_step(values: Sequence[float], start: int, direction: Direction,
                policy: ComparePolicy | None = None) -> NewestStep | None:
    """The first of the newest commits of ``values`` (oldest first, one benchmark code version) after index ``start``
    (the last change point, or 0) that the per-commit gate flags, suspected or confirmed, and the commits after it do
    not refute, unless a later one flagged the other way reads the commits far better (:func:`_reads_better`); None
    if none is, or where a value of the window is at or below 0. The newest commit alone is the gate's (``mmtrack
    compare``, ``run``): one commit is never a level."""
    policy = policy or ComparePolicy()
    n = len(values)
    first = max(start + policy.min_history, n - NEWEST_COMMITS, 1)
    window = np.asarray(values[max(start, first - HISTORY_WINDOW) :], dtype=float)
    if first >= n - 1 or not np.all(window > 0):
        return None  # no noise model out of log space: every wiggle around 0 would read as a step
    logs, offset = np.log(window), n - window.size
    for j in range(first, n - 1):  # one commit is never a level
        found = _flagged_at(values, j, start, direction, policy, logs[: j - offset], logs[j - offset :])
        if found is None:
            continue
        if found.state == "suspected":  # a step the other way, here or later, may read the same commits better
            for other in _other_readings(values, j, start, direction, policy, logs, offset):
                if _reads_better(values, found, other, policy):
                    return other
        return found
    return None


def _other_readings(values: Sequence[float], j: int, start: int, direction: Direction, policy: ComparePolicy,
                    logs: np.ndarray, offset: int) -> Iterator[NewestStep]:
    """The readings of the newest commits besides the one flagged at ``j``, oldest first: the commits from ``j`` on
    read together (:func:`_level_beyond_every_other`), then each later commit flagged by every rule (``logs``: the
    window's logs, ``offset``: the index of its first commit)."""
    before = _median(logs[: j - offset])
    level = _level_beyond_every_other(values, j, start, before, float(logs[j - offset]), policy,
                                      functools.cache(functools.partial(_segment_before, values, j, policy)))
    if level is not None:
        yield NewestStep(j, math.exp(before), math.exp(level), "suspected")
    for later in range(j + 1, len(values) - 1):
        other = _flagged_at(values, later, start, direction, policy, logs[: later - offset], logs[later - offset :])
        if other is not None:
            yield other


def _flagged_at(values: Sequence[float], j: int, start: int, direction: Direction, policy: ComparePolicy,
                logs_before: np.ndarray, logs_from: np.ndarray) -> NewestStep | None:
    """The step the gate's rules flag at commit ``j`` (``logs_before``: the window's logs before it, ``logs_from``:
    from it on), or None."""
    before, after = _median(logs_before), _median(logs_from)
    # The gate's segment model of the commits before j, the cost: worked out once, and only if a rule reads it.
    noise_before = functools.cache(functools.partial(_segment_before, values, j, policy))
    state = _gate_state(values, j, start, direction, policy, noise_before) if _holds_the_move(
        before, logs_from, policy.threshold) else None  # else no level: the gate's model is skipped
    if state is not None:
        return NewestStep(j, math.exp(before), math.exp(after), state)
    level = _level_beyond_every_other(values, j, start, before, float(logs_from[0]), policy, noise_before)
    if level is not None:
        return NewestStep(j, math.exp(before), math.exp(level), "suspected")
    return None


def _reads_better(values: Sequence[float], found: NewestStep, other: NewestStep, policy: ComparePolicy) -> bool:
    """Whether ``other``, a later step the other way than the suspected ``found``, reads the commits from ``found`` on
    better by the window's density before ``found`` (:meth:`.noise.SegmentNoise.log_density`), the commits before
    ``other`` unmoved and those from it on moved by its step against all of them moved by ``found``'s, by a log
    likelihood ratio of :data:`.policy.UNSEEN_BAR` or more: as clearly as the gate asks of a commit no commit came
    near. A faster runner's visit just before a step up reads as a step down when the step's later commits ran there
    too."""
    if (found.after > found.before) == (other.after > other.before):
        return False
    noise = _segment_before(values, found.index, policy)
    if noise is None:
        return False
    d = np.log(np.asarray(values[found.index :], dtype=float)) - noise.level
    split = other.index - found.index
    moved = d - (math.log(found.after) - noise.level)
    unmoved_then_moved = np.concatenate([d[:split], d[split:] - (math.log(other.after) - noise.level)])
    return float(noise.log_density(unmoved_then_moved).sum() - noise.log_density(moved).sum()) >= UNSEEN_BAR


def _gate_state(values: Sequence[float], j: int, start: int, direction: Direction, policy: ComparePolicy,
                noise_before: Callable[[], SegmentNoise | None]) -> Evidence | None:
    """The state of commit ``j``'s step by the gate's rules (suspected or confirmed), or None where they do not
    flag it: the gate's own row, its held level read over the commits there are, or the window's density."""
    row = compare_pair(_bare(values[j - 1], direction), _bare(values[j], direction), policy,
                       history=values[max(0, j - HISTORY_WINDOW) : j],
                       later=values[j + 1 : j + 1 + policy.confirm_window], p_value=False)
    if row.verdict in ("regressed", "improved") and row.state in ("suspected", "confirmed"):
        return row.state
    if (row.verdict == "ambiguous" and _holds_so_far(values, j, policy, noise_before)) or _beyond_the_density(
            values, j, start, policy, noise_before):
        return "suspected"
    return None


def _holds_the_move(before: float, held: np.ndarray, threshold: float) -> bool:
    """Whether the commits ``held`` (logs, from the flagged commit on) hold its move from ``before``: more than half of
    them beyond ``threshold`` that way. The gate keeps a suspicion until four commits are in, though the first ones
    went back; and of two commits, one that went back leaves no level."""
    way = math.copysign(1.0, held[0] - before)
    return int(np.count_nonzero(way * (held - before) > math.log1p(threshold))) * 2 > held.size


def _segment_before(values: Sequence[float], j: int, policy: ComparePolicy) -> SegmentNoise | None:
    """The gate's noise model (:func:`.noise.segment_noise`) of the window of commits before commit ``j``."""
    return segment_noise(values[max(0, j - HISTORY_WINDOW) : j], policy.min_history)


def _segment_of_newest(noise: SegmentNoise | None, policy: ComparePolicy) -> bool:
    """Whether ``noise`` reads a full window and :data:`.policy.NEWEST_SEGMENT` commits or more in its segment."""
    return noise is not None and len(noise.seen) >= policy.history_points and noise.points >= NEWEST_SEGMENT


def _holds_so_far(values: Sequence[float], j: int, policy: ComparePolicy,
                  noise_before: Callable[[], SegmentNoise | None]) -> bool:
    """Whether commit ``j`` and the commits after it, fewer than ``confirm_window``, hold a new level by the gate's
    held-level rule (:func:`.noise.held_level`) read over the commits there are: a commit the gate left ambiguous
    that the next commits would confirm, were it the last of them."""
    later = list(values[j + 1 : j + 1 + policy.confirm_window])
    if not 1 <= len(later) < policy.confirm_window or (noise := noise_before()) is None:
        return False
    history = values[max(0, j - HISTORY_WINDOW) : j]
    so_far = dataclasses.replace(policy, confirm_window=len(later), confirm_agree=len(later))
    return held_level(noise, history, values[j], later, policy.threshold, so_far) == "confirmed"


def _beyond_the_density(values: Sequence[float], j: int, start: int, policy: ComparePolicy,
                        noise_before: Callable[[], SegmentNoise | None] | None = None) -> bool:
    """Whether commit ``j`` and every commit after it, together, are a step beyond the levels the window visited: their
    joint step evidence (:meth:`.noise.SegmentNoise.held_evidence`, the gate's density read over the commits there
    are) at least :data:`.policy.NEWEST_EVIDENCE`, or :data:`.policy.NEWEST_EVIDENCE_HELD` where each of them lies
    beyond the threshold the same way (each agrees, as the next commits must to confirm a suspicion). ``j`` and the
    newest commit beyond the threshold that way; a full window, and :data:`.policy.NEWEST_SEGMENT` commits or more
    both in the gate's segment and since detect's last change point ``start``. Where fewer than
    :data:`.policy.NEWEST_HELD_VISITED` commits each hold it, the held median not at a level the series visits
    (:meth:`.noise.SegmentNoise.visits`) and none of the commits just before ``j`` already there
    (:func:`.noise.already_beyond`); where more do, only the move must not have begun just before ``j``
    (:func:`_moved_before`). Either way, not a level the commits before reached (:func:`_reached_before`). Two or
    three commits each within the series' own noise hold a level one commit could not show, and three that each hold
    it are no runner's visit."""
    if j - start < NEWEST_SEGMENT:
        return False  # the tail of a step detect just found: the new level's runners are not seen yet
    noise = noise_before() if noise_before else _segment_before(values, j, policy)
    if not _segment_of_newest(noise, policy):
        return False
    history = values[max(0, j - HISTORY_WINDOW) : j]
    held = np.log(np.asarray(values[j:], dtype=float)) - noise.level
    centre, bar = _median(held), math.log1p(policy.threshold)
    way = math.copysign(1.0, centre)
    if not (way * held[0] > bar and way * held[-1] > bar) or _reached_before(noise, history, way, bar):
        return False  # the level starts with a commit beyond the threshold, and the newest has not gone back
    each = bool(np.all(way * held > bar))
    if each and held.size >= NEWEST_HELD_VISITED:
        if _moved_before(noise, history, way, bar):
            return False
    elif noise.visits(math.exp(noise.level + centre)) or already_beyond(noise, history, way, policy.threshold):
        return False
    return noise.held_evidence(held, policy.threshold, way) >= (NEWEST_EVIDENCE_HELD if each else NEWEST_EVIDENCE)


def _level_beyond_every_other(values: Sequence[float], j: int, start: int, before: float, first: float,
                              policy: ComparePolicy, noise_before: Callable[[], SegmentNoise | None]) -> float | None:
    """The new level (log) where commit ``j`` and every commit after it, together, lie beyond every level the window
    visited as clearly as the gate asks of one commit no commit came near: their joint step evidence
    (:meth:`.noise.SegmentNoise.held_evidence`) at least :data:`.policy.UNSEEN_BAR` the way it is higher, whatever
    single commits did after ``j`` (a commit back on a faster runner the series visits reads as that runner, moved by
    the step; the level is the step that fits them best, not their median); ``j`` itself beyond the threshold from the
    level ``before`` (log) that way, or read by the window's density as a commit moved by that step
    (:func:`_moved_by`: the step's first commit ran on a faster runner); a full window and
    :data:`.policy.NEWEST_SEGMENT` commits since detect's last change point ``start`` and in the gate's segment, and
    not a level the commits before reached (:func:`_reached_before`), as :func:`_beyond_the_density` asks. None where
    they do not."""
    bar = math.log1p(policy.threshold)
    if abs(first - before) <= bar or j - start < NEWEST_SEGMENT:
        return None  # the cheap tests first: the gate's segment model is the cost
    noise = noise_before()
    if not _segment_of_newest(noise, policy):
        return None
    history = values[max(0, j - HISTORY_WINDOW) : j]
    held = np.log(np.asarray(values[j:], dtype=float)) - noise.level
    up, down = noise.held_evidence(held, policy.threshold, 1.0), noise.held_evidence(held, policy.threshold, -1.0)
    way = 1.0 if up >= down else -1.0  # as the gate's unseen step: a faster commit before a slower level is no fall
    if max(up, down) < UNSEEN_BAR or _reached_before(noise, history, way, bar):
        return None
    step = noise.held_step(held, policy.threshold, way)
    if way * (first - before) <= bar and not _moved_by(noise, float(held[0]), step):
        return None
    return noise.level + step


def _moved_by(noise: SegmentNoise, d: float, step: float) -> bool:
    """Whether the window's density reads a commit at deviation ``d`` (log) as one moved by ``step`` (log) rather than
    one like those seen: a commit on a faster runner the step moved, though within the threshold of the old level."""
    moved, here = noise.log_density(np.array([d - step, d]))
    return bool(moved > here)


def _moved_before(noise: SegmentNoise, history: Sequence[float], way: float, bar: float) -> bool:
    """Whether the move began just before the held commits: the commit right before them, or two of the
    :data:`.noise.UNSEEN_QUIET` before, beyond ``bar`` (log) ``way`` from the level; one of them alone is a runner's
    visit."""
    recent = [way * noise.deviation(v) > bar for v in history[-UNSEEN_QUIET:]]
    return bool(recent) and (recent[-1] or sum(recent) >= 2)


def _reached_before(noise: SegmentNoise, history: Sequence[float], way: float, bar: float) -> bool:
    """Whether :data:`.policy.NEWEST_RECENT_SEEN` or more of the :data:`.policy.NEWEST_RECENT` commits before the held
    ones lay beyond ``bar`` (log) ``way`` from the level: a level the series reached before (a step detect missed,
    not split from the segment yet), not a new one."""
    return sum(way * noise.deviation(v) > bar for v in history[-NEWEST_RECENT:]) >= NEWEST_RECENT_SEEN


__all__ = ["NewestStep", "newest_step"]
