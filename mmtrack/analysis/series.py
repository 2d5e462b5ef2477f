"""Change points of whole series, as ``mmtrack detect`` reports them.

Each benchmark code version is analysed on its own: detect's steps (:func:`.detect.find_steps`), then, in the newest
commits the rank test cannot prove yet, a step the per-commit gate's rules flag (:func:`.newest.newest_step`),
reported ``suspected`` until the next commits settle it. Pure functions over the plain records of
:mod:`mmtrack.results`.
"""

from __future__ import annotations

import math
from typing import Callable, Collection, Iterable, Mapping, Sequence

from ..results import ChangePoint, SeriesKey, SeriesPoint
from ..vocabulary import Direction
from .detect import DetectPolicy, SeriesReport, Step, find_steps, find_steps_after, is_worse
from .newest import newest_step
from .policy import KEPT_STEP_MAX_P, KEPT_STEP_MIN_AFTER, NEWEST_COMMITS


def _usable(points: Sequence[SeriesPoint]) -> list[SeriesPoint]:
    out = []
    for pt in points:
        m = pt.measurement
        if m.status == "ok" and m.median is not None and math.isfinite(m.median):
            out.append(pt)
    return out


def _version_runs(versions: Sequence[str | None]) -> list[range]:
    """Index ranges of one benchmark code version each: levels across a change are not comparable."""
    if len(set(versions) - {None}) <= 1:  # one version (the common case): no per-point walk
        return [range(len(versions))] if versions else []
    runs: list[range] = []
    start, current = 0, None
    for i, v in enumerate(versions):
        if i and v is not None and current is not None and v != current:
            runs.append(range(start, i))
            start = i
        if v is not None:
            current = v
    if versions:
        runs.append(range(start, len(versions)))
    return runs


def detect_series(key: SeriesKey, points: Sequence[SeriesPoint], policy: DetectPolicy | None = None) -> SeriesReport:
    """Change points of one series (points in commit order, oldest first)."""
    usable = _usable(points)
    return detect_values(
        key,
        [pt.commit.sha for pt in usable],
        [float(pt.measurement.median) for pt in usable],  # type: ignore[arg-type]
        [pt.measurement.version for pt in usable],
        usable[-1].measurement.direction if usable else Direction.LOWER,
        policy,
    )


def _persists(step: Step, latest: float, min_effect: float) -> bool:
    """Whether the latest value is still beyond ``min_effect`` from the level before, the way the step went.

    A ratio means nothing at or below 0 (a track_ benchmark's values): there the latest value must lie nearer the new
    level than the old one (a step up from exactly 0 did not "persist" as a ratio to 0).
    """
    if step.before > 0:
        rel = latest / step.before - 1
        return math.copysign(1, rel) == math.copysign(1, step.after - step.before) and abs(rel) >= min_effect
    return step.after != step.before and (latest - step.before) / (step.after - step.before) > 0.5


def _nearer(value: float, level: float, other: float) -> bool:
    """Whether ``value`` is nearer ``level`` than ``other`` (as ratios where all three are positive)."""
    if value > 0 and level > 0 and other > 0:
        value, level, other = math.log(value), math.log(level), math.log(other)
    return abs(value - level) < abs(value - other)


def named_range(values: Sequence[float], at: int, lo: int, hi: int, before: float, after: float) -> tuple[int, int]:
    """The commits a change point names, (last of the old level, first of the new): the split's two neighbours, or,
    where one of them reads the other side's level (a commit on another runner), the nearest commit beyond it that
    reads its own side's, within the segments [lo, at) and [at, hi). The range then says where the change began
    without a named commit contradicting the levels shown."""
    first = at - 1
    while first > lo and not _nearer(values[first], before, after):
        first -= 1
    last = at
    while last < hi - 1 and not _nearer(values[last], after, before):
        last += 1
    return first, last


def detect_values(
    key: SeriesKey,
    shas: Sequence[str],
    values: Sequence[float],
    versions: Sequence[str | None],
    direction: Direction,
    policy: DetectPolicy | None = None,
    kept_before: Sequence[int] | None = None,
) -> SeriesReport:
    """Change points of one series given as plain columns of its usable commits (ok, finite), oldest first.

    The bulk path of ``mmtrack detect`` reads these columns for every series in one query, without
    building a record per point. ``kept_before``: the indices of the steps a last detect found, when the series
    only gained newer commits since (:func:`kept_steps`): only the values from the last of them on are searched.
    """
    policy = policy or DetectPolicy()
    runs = _version_runs(versions)
    notes = []
    if len(runs) > 1:
        notes.append(f"benchmark code changed {len(runs) - 1} time(s); each version is analysed on its own")
    if all(len(r) < policy.min_points for r in runs):
        return SeriesReport(key, "too_short", len(values), (), (f"needs {policy.min_points} commits",) + tuple(notes))
    changes: list[ChangePoint] = []
    fallback = None
    for run in runs:
        run_values = values if len(run) == len(values) else [values[i] for i in run]
        found = find_steps_after(run_values, kept_before, policy) if kept_before and len(runs) == 1 else None
        if found is None:
            found = find_steps(run_values, policy, settle=True)
        steps: list[tuple[Step, str | None]] = [(s, None) for s in found]
        if run is runs[-1] and policy.newest and len(run) >= policy.min_points:
            steps.extend(_newest(run_values, [s for s, _ in steps], direction))
            fallback = _if_held_back(key, shas, values, run, run_values, found, direction, policy)
        changes.extend(_change_points(key, shas, values, run, steps, direction, policy, last=run is runs[-1]))
    return SeriesReport(key, "ok", len(values), tuple(changes), tuple(notes), fallback)


def _if_held_back(key: SeriesKey, shas: Sequence[str], values: Sequence[float], run: range,
                  run_values: Sequence[float], found: Sequence[Step], direction: Direction, policy: DetectPolicy
                  ) -> ChangePoint | None:
    """The change point of the step the gate's rules flag in the newest commits were detect's own last step, which
    lies among them, held back by the suite's budget: the rules judge those commits then, from the step before."""
    if not found or found[-1].index < len(run) - NEWEST_COMMITS:
        return None  # no step of detect's own among the newest commits: the rules judged them already
    earlier = list(found[:-1])
    flagged = _newest(run_values, earlier, direction)
    if not flagged:
        return None
    steps = [(s, None) for s in earlier] + flagged
    return _change_points(key, shas, values, run, steps, direction, policy, last=True)[-1]


def kept_steps(changes: Sequence[ChangePoint], shas: Sequence[str], new: Collection[str], policy: DetectPolicy
               ) -> list[int] | None:
    """The indices of detect's own steps among a series' stored ``changes``, when the series (its usable commits
    ``shas`` now) only gained the commits ``new`` at its end since they were found and its last step lies
    ``KEPT_STEP_MIN_AFTER`` commits or more before the newest, every one proved at ``KEPT_STEP_MAX_P``; else None
    (detect searches the whole series)."""
    own = [c for c in changes if "state" not in c.extra]  # a newest-commit step is judged again from the steps
    if not own or any(c.method != policy.name or "aligned_from" in c.extra for c in own):
        return None  # a step moved to where other machines agree: detect's own place of it is not stored
    if any(c.p_value is None or c.p_value > KEPT_STEP_MAX_P for c in own):
        return None
    counts = {c.extra.get("points") for c in changes}
    old = counts.pop() if len(counts) == 1 else None
    new = new if isinstance(new, (set, frozenset)) else set(new)  # set operations: 1,000 commits a series in C
    if not isinstance(old, int) or not 0 < old < len(shas) or not new.issuperset(shas[old:]):
        return None
    if not new.isdisjoint(shas[:old]):  # a commit measured again: its value may have moved
        return None
    index = sorted(int(c.extra["index"]) for c in own)
    return index if index[-1] <= len(shas) - KEPT_STEP_MIN_AFTER else None


def _newest(values: Sequence[float], steps: Sequence[Step], direction: Direction) -> list[tuple[Step, str | None]]:
    """The step the gate's rules flag in the newest commits (:func:`.newest.newest_step`) with its state, unless
    detect's own last step already lies among them."""
    start = steps[-1].index if steps else 0
    if start >= len(values) - NEWEST_COMMITS:
        return []
    found = newest_step(values, start, direction)
    if found is None:
        return []
    return [(Step(found.index, found.before, found.after, math.nan), found.state)]


def _change_points(key: SeriesKey, shas: Sequence[str], values: Sequence[float], run: range,
                   steps: Sequence[tuple[Step, str | None]], direction: Direction, policy: DetectPolicy,
                   last: bool) -> list[ChangePoint]:
    """The change points of one code version's ``steps`` (index within ``run``, and the state of a step in the newest
    commits: None for detect's own), named by :func:`named_range`; ``last``: the run holds the latest commit."""
    bounds = [run.start, *(run.start + s.index for s, _ in steps), run.stop]
    out = []
    for k, (s, state) in enumerate(steps):
        worse = is_worse(direction, s.before, s.after)
        at = run.start + s.index
        first, end = named_range(values, at, bounds[k], bounds[k + 2], s.before, s.after)
        out.append(ChangePoint(
            series=key,
            direction=direction,
            kind="change" if worse is None else ("regression" if worse else "improvement"),
            before_sha=shas[first],
            after_sha=shas[end],
            before_value=s.before,
            after_value=s.after,
            ratio=s.ratio,
            p_value=None if state else s.p_value,
            persists=last and _persists(s, float(values[-1]), policy.min_effect),
            method=policy.name,
            extra={"index": at, "points": len(values), **({"state": state} if state else {})},
        ))
    return out


def detect_all(
    series: Mapping[SeriesKey, Sequence[SeriesPoint]] | Iterable[tuple[SeriesKey, Sequence[SeriesPoint]]],
    policy: DetectPolicy | None = None,
    progress: Callable[[SeriesKey], None] | None = None,
) -> list[SeriesReport]:
    """Detect over many series; ``progress`` is called once per series."""
    items = series.items() if isinstance(series, Mapping) else series
    out = []
    for key, points in items:
        out.append(detect_series(key, points, policy))
        if progress:
            progress(key)
    return out



__all__ = ["detect_series", "detect_values", "detect_all", "kept_steps", "named_range"]
