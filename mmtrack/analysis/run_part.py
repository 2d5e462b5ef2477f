"""The run's part: what a whole run moved, read from every series measured in it.

On CI each run lands on one runner, and a runner of another type (or a new image, a run date) moves every benchmark
of the run at once, each by its own amount; a code change moves a few. Reads each series' value in the run against
its recent level: the median of those moves is the run's shift (:func:`run_shift`), and a suspected change the run
made too is ambiguous (:func:`_explained_by_run`). Given the commit of each history value (:class:`RunLabels`), the
runner levels are taken out of each series' history before the run is judged (:mod:`.frames`), and each case is
judged in its run (:func:`judge_in_run`). A deterministic count takes no part: no runner moves it.
Environment events over a whole history (run dates, temporary periods, re-runs of old commits) are :mod:`.events`.
"""

from __future__ import annotations

import array
import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np

from ..vocabulary import Direction
from ..results import Measurement
from . import deterministic
from .history_evidence import _history_at, _later, _ok_median, compare_pair
from .policy import HISTORY_WINDOW, RUN_SHARE, ComparePolicy
from .rows import Case, Row, _flagged

if TYPE_CHECKING:
    from .frames import SuiteFrames

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
