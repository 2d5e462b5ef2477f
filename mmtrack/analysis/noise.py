"""The noise model of a series' recent history, and what the commits after a suspected change say about it.

Pure functions over medians, oldest first (log space inside). :mod:`.compare` judges the newest commit against
:func:`segment_noise`; the commits after it confirm or refute that verdict (:func:`follow_up`, :func:`held_level`),
and :func:`young_level` keeps a step from being found again in the commits just after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .policy import (
    ALTERNATION_RUN,
    ALTERNATION_VISITS,
    NEW_LEVEL_OFTEN,
    NEW_LEVEL_RADIUS,
    NEW_LEVEL_RUN,
    NEW_LEVEL_SEEN,
    NEW_LEVEL_SPREAD,
    NEW_LEVEL_TIGHT,
    NEW_LEVEL_UNSEEN_MISSES,
    SHORT_PHASE,
    UNSEEN_BAR,
    UNSEEN_FLOOR,
    UNSEEN_QUIET,
    UNSEEN_SIZES,
    ComparePolicy,
    Evidence,
)


def finite(values: Iterable[float]) -> np.ndarray:
    """The finite values, as an array."""
    a = np.asarray(list(values), dtype=float)
    return a[np.isfinite(a)]


def positive(history: Iterable[float]) -> np.ndarray:
    """The values of a history that a noise model reads (log space): finite and above 0."""
    h = finite(history)
    return h[h > 0]




@dataclass(frozen=True, slots=True)
class SegmentNoise:
    """The current level of a series and how far its commits stray from it, in log space.

    Between-commit spread, not within-commit samples: on CI each commit runs on another
    runner on another day, so the level moves much more than one commit's samples do.
    """

    level: float  # log of the current segment's median
    sd: float  # robust between-commit standard deviation of the segment
    # The spread by the scaled MAD alone: the series' usual runner's. ``sd`` also takes the IQR, which spans the
    # level of a runner type that a quarter of the commits or more visit.
    usual_sd: float
    # Every commit's deviation from its level, ascending: the segment's from the current level, and those of the
    # window's earlier levels (of at least min_points commits) from their own, since a step moves the level and
    # not the runner levels around it.
    seen: tuple[float, ...]
    points: int  # commits in the segment
    # The deviations of the window's commits before the segment, in commit order (empty when the segment is the window).
    earlier: tuple[float, ...] = ()
    # :attr:`seen` in the order the commits came, NaN for a commit not seen (one of a level too short to have its own):
    # whether the series held a level for commits in a row or only strayed there now and then.
    in_order: tuple[float, ...] = ()
    # The window's commit-to-commit spread (the robust sigma of consecutive log differences over sqrt 2): how far
    # one commit strays from the one before, the bandwidth of :meth:`step_evidence`.
    commit_sd: float = 0.0
    # The commits of a phase too short for a spread of its own (:func:`phase_noise`), whose spread is the segment's
    # before its step; 0 for a segment read with its own.
    short_phase: int = 0

    def deviation(self, value: float) -> float:
        return math.log(value) - self.level

    def near(self, value: float, radius: float) -> int:
        """How many commits seen (:attr:`seen`) lie within ``radius`` (log) of ``value``, as a deviation."""
        return self.near_deviation(self.deviation(value), radius)

    def near_deviation(self, d: float, radius: float) -> int:
        """:meth:`near` for a value given as its deviation from the level (log)."""
        return sum(abs(d - x) < radius for x in self.seen)

    def longest_run_near(self, value: float, radius: float) -> int:
        """The most commits in a row (:attr:`in_order`) that lay within ``radius`` (log) of ``value``."""
        d, best, run = self.deviation(value), 0, 0
        for x in self.in_order:
            run = run + 1 if abs(d - x) < radius else 0  # NaN: never near, so a gap breaks the run
            best = max(best, run)
        return best

    def step_evidence(self, d: float, threshold: float) -> tuple[float, float]:
        """(up, down): the log likelihood ratio of "a step of ``threshold`` to 100% up (down) from a commit like those
        seen" against "a commit like those seen", at deviation ``d``; each density a Gaussian kernel over
        :attr:`seen` with bandwidth :attr:`commit_sd`, :data:`UNSEEN_FLOOR` of its mass spread flat.

        Where the rule of z and gap reads a series that flips between runner types as one wide level (its spread
        spans them), this reads the levels it visits and how often, and one stray commit weighs 1/100th."""
        return self.held_evidence(np.array([d]), threshold, 1.0), self.held_evidence(np.array([d]), threshold, -1.0)

    def held_evidence(self, held: np.ndarray, threshold: float, way: float) -> float:
        """:meth:`step_evidence` of several commits together (``held``: their deviations, log): the log likelihood
        ratio of "one step of ``threshold`` to 100% ``way`` (+1 up, -1 down) under all of them" against "commits like
        those seen", each commit weighed by the window's density as one commit is."""
        sizes, moved = self._moved_fits(held, threshold, way)
        here = float(self.log_density(held).sum())
        return float(np.logaddexp.reduce(moved)) - math.log(sizes.size) - here

    def held_step(self, held: np.ndarray, threshold: float, way: float) -> float:
        """The step (log, ``way``) of :meth:`held_evidence`'s sizes under which ``held`` fit the window's density best:
        the new level its evidence reads, whatever runner each commit ran on."""
        sizes, moved = self._moved_fits(held, threshold, way)
        return way * float(sizes[int(np.argmax(moved))])

    def _moved_fits(self, held: np.ndarray, threshold: float, way: float) -> tuple[np.ndarray, np.ndarray]:
        """The step sizes weighed (log, :data:`UNSEEN_SIZES` from ``threshold`` to 100%) and, for each, the log
        density of ``held`` moved back by it ``way``, summed over the commits."""
        sizes = np.linspace(math.log1p(threshold), math.log(2.0), UNSEEN_SIZES)
        moved = self.log_density((held[None, :] - way * sizes[:, None]).ravel()).reshape(sizes.size, held.size)
        return sizes, moved.sum(axis=1)

    def log_density(self, y: np.ndarray) -> np.ndarray:
        """The window's density of deviations at ``y``: a Gaussian kernel over :attr:`seen` with bandwidth
        :attr:`commit_sd`, :data:`UNSEEN_FLOOR` of its mass spread flat."""
        seen = np.asarray(self.seen)
        bw = max(self.commit_sd, 1e-3)
        z = (y[:, None] - seen[None, :]) / bw
        kernel = np.exp(-0.5 * z * z).mean(axis=1) / (bw * math.sqrt(2 * math.pi))
        return np.log((1 - UNSEEN_FLOOR) * kernel + UNSEEN_FLOOR)

    def visits(self, value: float) -> bool:
        """Whether the commits seen show ``value``'s level as one the series visits: more than :data:`NEW_LEVEL_SEEN`
        of them within :data:`NEW_LEVEL_RADIUS` deviations of the usual runner, and often, tight or held there."""
        radius = NEW_LEVEL_RADIUS * self.usual_sd
        near = self.near(value, radius)
        return near > NEW_LEVEL_SEEN * len(self.seen) and (
            near > NEW_LEVEL_OFTEN * len(self.seen)  # a runner type, however it is drawn
            or near >= NEW_LEVEL_TIGHT * self.near(value, NEW_LEVEL_SPREAD * self.usual_sd)  # its tight level
            or self.longest_run_near(value, radius) >= NEW_LEVEL_RUN)  # or held: a sticky runner, a phase

    def back_to_earlier(self, value: float, gap: float, min_points: int) -> int:
        """How many commits before the segment ``value`` went back to, when it went back to their level.

        A value within ``gap`` deviations (the larger of the segment's and the earlier commits' own) of
        the earlier commits' median, with at least ``min_points`` and half of them that near: the current
        segment was a phase (a run of commits on another runner type, or a change since reverted) and the
        series returned to where it was. 0 otherwise.
        """
        e = np.asarray(self.earlier)
        if e.size < min_points:
            return 0
        centre = float(np.median(e))
        spread = max(self.sd, 1.4826 * float(np.median(np.abs(e - centre))))
        d = self.deviation(value)
        near = int(np.count_nonzero(np.abs(e - d) < gap * spread))
        return near if abs(d - centre) < gap * spread and near >= max(min_points, e.size / 2) else 0

    def visited_before(self, gap: float) -> int:
        """How many commits before the segment lay at the segment's own level (within ``gap`` deviations of it, and
        nearer to it than to the earlier commits' median).

        A series that left its usual level for the segment and had been there before alternates between the two
        (runner types it visits, a sticky runner's phases); one that had never been there stepped to it."""
        return int(np.count_nonzero(self._at_segment_level(gap)))

    def _at_segment_level(self, gap: float) -> np.ndarray:
        """For each commit before the segment, in order: whether it lay at the segment's level (:meth:`visited_before`)."""
        e = np.asarray(self.earlier)
        if e.size == 0:
            return np.zeros(0, dtype=bool)
        # A spread wide with runner levels spans the step itself: a commit at the earlier level never visited this one.
        centre = float(np.median(e))
        return (np.abs(e) < gap * self.usual_sd) & (np.abs(e) < np.abs(e - centre))

    def alternates(self, gap: float) -> bool:
        """Whether the series had visited the segment's level before it, repeatedly (:data:`ALTERNATION_VISITS`
        commits or more), often (more than :data:`NEW_LEVEL_OFTEN` of them) or held (:data:`ALTERNATION_RUN` in a row):
        then a return to the earlier level is a phase that ended, else a change reverted."""
        at = self._at_segment_level(gap)
        visits = int(np.count_nonzero(at))
        return visits >= ALTERNATION_VISITS and (visits > NEW_LEVEL_OFTEN * at.size or _longest_run(at) >= ALTERNATION_RUN)

    def back_to_visited(self, value: float, gap: float, min_points: int) -> int:
        """:meth:`back_to_earlier` where the series alternates (:meth:`alternates`); 0 for a revert."""
        return self.back_to_earlier(value, gap, min_points) if self.alternates(gap) else 0


def _longest_run(flags: np.ndarray) -> int:
    """The most ``True`` in a row."""
    best = run = 0
    for f in flags.tolist():
        run = run + 1 if f else 0
        best = max(best, run)
    return best


def segment_noise(history: Sequence[float], min_points: int = 5) -> SegmentNoise | None:
    """The noise model of the current segment of ``history`` (medians, oldest first).

    The current segment is the last level :mod:`.detect` finds in the history (the whole
    window when that level is shorter than ``min_points``). Its spread is the larger of
    the scaled MAD and IQR of the log values, so that a series which flips between a few
    discrete runner levels is not mistaken for a quiet one; the commits themselves are kept
    for the runner levels and the heavy tail, which no single spread captures, with those of
    the window's earlier levels, each against its own level: after a step the series still
    visits the same runner types, and a young segment that has not seen them yet would flag
    each first visit.
    None when the history is too short.
    """
    from .detect import DetectPolicy, segment_levels

    h = positive(history)
    if h.size < min_points:
        return None
    # Only splits the whole sides prove: one proved on the main runner's level alone (detect's default) shortens
    # the segment to where the series' other runner levels are not in sight.
    levels = segment_levels(list(h), DetectPolicy(min_points=max(SHORT_PHASE, min_points), main_level=False))
    start, stop = levels[-1]
    all_x = np.log(h)
    own = stop - start >= min_points
    x = all_x[start:stop] if own else all_x
    med = float(np.median(x))
    q1, q3 = np.percentile(x, [25, 75])
    usual_sd = max(1.4826 * float(np.median(np.abs(x - med))), 1e-4)
    sd = max(usual_sd, float(q3 - q1) / 1.349)
    earlier = all_x[:start] - med if own else np.empty(0)
    if own:  # a step moves the level, not the runners: the earlier levels' commits, each from its own level
        in_order = np.full(all_x.size, np.nan)
        for a, b in levels[:-1]:
            if b - a >= min_points:
                in_order[a:b] = all_x[a:b] - np.median(all_x[a:b])
        in_order[start:stop] = x - med
    else:
        in_order = x - med
    dev = np.sort(in_order[~np.isnan(in_order)])
    commit_sd = 1.4826 * float(np.median(np.abs(np.diff(all_x)))) / math.sqrt(2) if all_x.size > 1 else 0.0
    return SegmentNoise(med, sd, usual_sd, tuple(dev.tolist()), int(x.size), tuple(earlier.tolist()),
                        tuple(in_order.tolist()), commit_sd)


def phase_noise(history: Sequence[float], k: int, min_points: int = 5) -> SegmentNoise | None:
    """The noise model of a phase: the newest ``k`` commits of ``history`` (medians, oldest first), at their own
    level, with the spread, commits seen and commit-to-commit spread of the segment before them
    (:func:`segment_noise` of the commits before): the same series on the same runners, its level moved by a step.
    A few commits have no spread of their own to speak of, and detect splits none off under :data:`SHORT_PHASE`: against
    the whole window a return from them is no move. None when the commits before are too few."""
    h = positive(history)
    before = segment_noise(h[:-k], min_points) if 0 < k < h.size else None
    if before is None:
        return None
    x = np.log(h[-k:])
    level = float(np.median(x))
    own = x - level
    return SegmentNoise(level, before.sd, before.usual_sd, tuple(sorted((*before.seen, *own.tolist()))), k,
                        tuple((np.log(h[:-k]) - level).tolist()), (*before.in_order, *own.tolist()),
                        before.commit_sd, short_phase=k)


def measured(value: float | None) -> bool:
    return value is not None and value > 0 and math.isfinite(value)


def follow_up(
    noise: SegmentNoise, value: float, later: Sequence[float], policy: ComparePolicy | None = None
) -> Evidence:
    """Whether the commits after a suspected one (``later``, oldest first) confirm or refute it.

    A later commit agrees when it lies on the suspected commit's side of the old level by
    at least half the suspected deviation, i.e. nearer the new value than the old level.
    ``confirm_agree`` agreeing commits among the first ``confirm_window`` confirm; once
    too many disagree for that to happen, refuted; until then the change stays suspected.
    A missing value (a failed run) counts as neither.
    """
    return agreement(noise.deviation(value), [noise.deviation(w) if measured(w) else None for w in later], policy)


def agreement(d: float, later: Sequence[float | None], policy: ComparePolicy | None = None) -> Evidence:
    """:func:`follow_up` on deviations from the old level: ``d`` the suspected commit's, ``later`` the next
    commits' (None: not measured). Any space: log for a noise model, plain differences for values at or below 0."""
    policy = policy or ComparePolicy()
    sign = 1.0 if d > 0 else -1.0
    agree = disagree = 0
    for w in later[: policy.confirm_window]:
        if w is None:
            continue
        if sign * w >= abs(d) / 2:
            agree += 1
        else:
            disagree += 1
        if agree >= policy.confirm_agree:
            return "confirmed"
        if disagree > policy.confirm_window - policy.confirm_agree:
            return "refuted"
    return "suspected"


def already_beyond(noise: SegmentNoise, history: Sequence[float], d: float, threshold: float) -> bool:
    """Whether one of the newest :data:`UNSEEN_QUIET` commits of ``history`` already lay beyond ``threshold`` from
    the level the way of deviation ``d``: a move that began before is no step at this commit."""
    bar = math.log1p(threshold)
    return any(math.copysign(1.0, d) * noise.deviation(v) > bar for v in history[-UNSEEN_QUIET:] if measured(v))


def unseen_step(noise: SegmentNoise, history: Sequence[float], value: float, threshold: float,
                policy: ComparePolicy) -> bool:
    """Whether ``value`` is a step beyond every level the window visited: with at least ``history_points`` commits
    seen, none of the newest :data:`UNSEEN_QUIET` beyond ``threshold`` its way, its way's likelihood ratio
    (:meth:`SegmentNoise.step_evidence`) at least :data:`UNSEEN_BAR` and above the other way's."""
    d = noise.deviation(value)
    if len(noise.seen) < policy.history_points or already_beyond(noise, history, d, threshold):
        return False
    up, down = noise.step_evidence(d, threshold)
    way, other = (up, down) if d > 0 else (down, up)
    return way >= UNSEEN_BAR and way >= other


def held_median(value: float, later: Sequence[float], policy: ComparePolicy) -> float | None:
    """The level a commit and the next ``confirm_window`` commits hold (their median); None until all are measured."""
    held = [value, *later[: policy.confirm_window]]
    if len(held) <= policy.confirm_window or not all(measured(v) for v in held):
        return None
    return math.exp(float(np.median(np.log(held))))


@dataclass(frozen=True, slots=True)
class YoungLevel:
    """The level the newest commits of a history reached since its segment began (:func:`young_level`)."""

    centre: float  # the median log of those commits
    own: np.ndarray  # their deviations from the segment's level

    @property
    def count(self) -> int:
        return int(self.own.size)


def young_level(noise: SegmentNoise, history: Sequence[float], threshold: float, gap: float) -> YoungLevel | None:
    """The level the newest commits of ``history`` reached since the segment began, if any: when they all lie beyond
    ``threshold`` from the segment's level the same way (one is enough: two caught fewer repeats), at
    a level no earlier commit came within ``gap`` deviations of (not a runner type's).

    After a step the segment keeps the old level until :mod:`.detect` can split there (8 commits). Judged against it
    alone, a commit that moved half the threshold from its before commit (back from a faster runner, one wiggle
    further, a runner type's visit at the new level) was the same step again, flagged and confirmed a second time."""
    bar = math.log1p(threshold)
    x = np.log(positive(history))
    if x.size == 0 or abs(x[-1] - noise.level) <= bar:
        return None
    way = math.copysign(1.0, x[-1] - noise.level)
    n = 1
    while n < x.size and way * (x[-1 - n] - noise.level) > bar:
        n += 1
    centre = float(np.median(x[-n:]))
    if np.any(np.abs(x[:-n] - centre) < gap * noise.sd):
        return None
    return YoungLevel(centre, x[-n:] - noise.level)




def held_level(
    noise: SegmentNoise, history: Sequence[float], value: float, later: Sequence[float], threshold: float,
    policy: ComparePolicy,
) -> Evidence:
    """Whether ``value`` and the next ``confirm_window`` commits (``later``) hold a new level: what confirms a
    change that the one commit could not prove (a level a few commits of the segment had reached, a commit
    within the segment's own spread), or that one later commit on a faster runner did not agree with.

    ``confirmed`` when all of: every one of those commits measured; :mod:`.detect`, run on the history, the
    commit and those commits, starts a level at this commit (or one beside it), beyond ``threshold`` the same
    way as ``value`` (or, in a window of ``history_points`` commits or more, no commit seen lies within
    :data:`NEW_LEVEL_SPREAD` deviations of the held level and at most :data:`NEW_LEVEL_UNSEEN_MISSES` of the
    next commits fall short of ``threshold``); the median of the held commits lies beyond ``threshold`` from
    the segment's level; at most :data:`NEW_LEVEL_SEEN` of the commits seen (:attr:`SegmentNoise.seen`) lie
    within :data:`NEW_LEVEL_RADIUS` deviations of the usual runner (:attr:`SegmentNoise.usual_sd`) of that
    median, or more but strays of the tail (neither often, tight nor held: :data:`NEW_LEVEL_OFTEN`); and it is
    not back at the level before the segment of a series that alternates (:meth:`SegmentNoise.back_to_visited`;
    a series that never visited the segment's level before it stepped there, and steps back: a change reverted).
    ``refuted`` once that can no longer happen (too few of the next commits beyond ``threshold`` for the median,
    or one of them failed); ``suspected`` until the next commits are in. Detect's rank test weighs the whole
    held level against the history, where :func:`follow_up` asks each commit to agree."""
    from .detect import find_steps

    window = list(later[: policy.confirm_window])
    if not all(measured(v) for v in window):
        return "refuted"
    d, bar = noise.deviation(value), math.log1p(threshold)
    held = [value, *window]
    misses = sum(not (math.copysign(1.0, d) * noise.deviation(v) > bar) for v in window)
    if misses > policy.confirm_window - (policy.confirm_window + 1) // 2:  # the held median cannot clear the bar
        return "refuted"
    held_value = held_median(value, later, policy)
    if held_value is None:
        return "suspected"
    centre = noise.deviation(held_value)
    around = noise.near(held_value, NEW_LEVEL_SPREAD * noise.usual_sd)  # the commits seen in its wider band
    if centre * d <= 0 or abs(centre) <= bar or noise.visits(held_value) or noise.back_to_visited(
            held_value, policy.history_gap, policy.min_history):
        return "refuted"  # a runner level the series visits, or back where it was before a phase it had shown before
    if noise.short_phase and noise.back_to_earlier(held_value, policy.history_gap, policy.min_history):
        return "confirmed"  # back where it was before a step the gate confirmed: too short a phase for detect to split
    # A level no commit of a full window came near, held by all but NEW_LEVEL_UNSEEN_MISSES of the next commits:
    # detect's tail rule (below) asks every one of them to lie 4 sigmas out, so one commit on a faster runner kept it
    # from starting a level that nothing in 60 commits or more had shown (docs/design/analysis.md, "An unseen level").
    if misses <= NEW_LEVEL_UNSEEN_MISSES and len(noise.seen) >= policy.history_points and around == 0:
        return "confirmed"
    h = positive(history)
    # At this commit or one beside it: detect sets a step landing on a slower runner (+60%, then +20% held)
    # apart as a spike, one commit early.
    starts = any(abs(s.index - h.size) <= 1 and abs(math.log(s.ratio)) > bar and math.log(s.ratio) * d > 0
                 for s in find_steps([*h, *held]))
    return "confirmed" if starts else "refuted"


__all__ = [
    "finite",
    "positive",
    "measured",
    "SegmentNoise",
    "segment_noise",
    "phase_noise",
    "follow_up",
    "unseen_step",
    "already_beyond",
    "UNSEEN_BAR",
    "UNSEEN_QUIET",
    "held_median",
    "YoungLevel",
    "young_level",
    "NEW_LEVEL_SEEN",
    "NEW_LEVEL_RADIUS",
    "NEW_LEVEL_OFTEN",
    "NEW_LEVEL_TIGHT",
    "NEW_LEVEL_SPREAD",
    "NEW_LEVEL_RUN",
    "NEW_LEVEL_UNSEEN_MISSES",
    "held_level",
]
