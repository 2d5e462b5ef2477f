"""Where a change point sits when other machines measured the same commits.

A code change moves a benchmark on every machine at the same commit. Where one series' change point lies a few
commits off the commit on which the same benchmark's change points of other machines or environments agree, and its
own values fit that commit about as well (no more than :data:`ALIGN_SLACK` more commits on the wrong side of the
split), it moves there, its levels taken again from its new adjacent segments. One series' noise then no longer
names another pair than the rest of the fleet does.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from typing import Mapping, Sequence

import numpy as np

from ..results import ChangePoint
from .detect import SeriesReport
from .policy import ALIGN_PLACES, ALIGN_REACH, ALIGN_SLACK


def _wrong_side(x: np.ndarray, lo: int, t: int, hi: int) -> int:
    """Commits of ``x[lo:hi]`` on the wrong side of a split at ``t``: nearer the other side's median."""
    a, b = float(np.median(x[lo:t])), float(np.median(x[t:hi]))
    seg = x[lo:hi]
    new = np.abs(seg - b) < np.abs(seg - a)
    return int(new[: t - lo].sum() + (~new[t - lo :]).sum())


def _agreed(change: ChangePoint, others: Sequence[ChangePoint], position: Mapping[str, int]) -> str | None:
    """The after commit on which the other places' change points of the same step agree (the most named, by at least
    :data:`ALIGN_PLACES` places), when it differs from ``change``'s and lies within :data:`ALIGN_REACH` commits
    of it."""
    mine = position.get(change.after_sha)
    near = [c.after_sha for c in others
            if c.kind == change.kind and mine is not None and c.after_sha in position
            and abs(position[c.after_sha] - mine) <= ALIGN_REACH]
    if not near:
        return None
    sha, count = Counter(near).most_common(1)[0]
    return None if sha == change.after_sha or count < ALIGN_PLACES else sha


def align_to_agreement(reports: Sequence[SeriesReport], columns: Mapping[object, tuple[Sequence[str], Sequence[float]]],
                       position: Mapping[str, int]) -> list[SeriesReport]:
    """``reports`` with each change point moved to the commit the same benchmark's change points elsewhere agree on,
    where its own values allow (``columns``: each series' shas and values, in commit order, as detect read them);
    a moved one carries ``extra["aligned_from"]``, the after commit detect first named."""
    by_bench: dict[tuple[object, ...], list[ChangePoint]] = defaultdict(list)
    for r in reports:
        for c in r.changes:
            by_bench[(c.series.benchmark, c.series.params, c.series.metric)].append(c)
    out = []
    for r in reports:
        cols = columns.get(r.series)
        if not r.changes or cols is None:
            out.append(r)
            continue
        out.append(_series_aligned(r, cols, by_bench, position))
    return out


def _series_aligned(r: SeriesReport, cols: tuple[Sequence[str], Sequence[float]],
                    by_bench: Mapping[tuple[object, ...], list[ChangePoint]],
                    position: Mapping[str, int]) -> SeriesReport:
    """One series' report with each change point moved where the other places agree and its values allow."""
    shas, values = cols
    index: dict[str, int] | None = None  # worked out for the first change point other places agree on
    changes = list(r.changes)
    for k, c in enumerate(changes):
        others = [o for o in by_bench[(c.series.benchmark, c.series.params, c.series.metric)]
                  if (o.series.machine, o.series.environment) != (c.series.machine, c.series.environment)]
        target = _agreed(c, others, position)
        if target is None:
            continue
        if index is None:
            index = {s: i for i, s in enumerate(shas)}
            as_floats = np.asarray(values, dtype=float)
            x = np.log(as_floats) if bool(np.all(as_floats > 0)) else as_floats
        moved = _moved_to(target, k, changes, shas, values, index, x)
        if moved is not None:
            changes[k] = moved
    return dataclasses.replace(r, changes=tuple(changes))


def _moved_to(target: str, k: int, changes: list[ChangePoint], shas: Sequence[str], values: Sequence[float],
              index: Mapping[str, int], x: np.ndarray) -> ChangePoint | None:
    """Change point ``k`` moved to ``target``, its levels from its new adjacent segments; None where the split
    there leaves a segment under two commits or puts more than :data:`ALIGN_SLACK` more commits on the wrong side."""
    c = changes[k]
    at = c.extra.get("index")
    if target not in index or not isinstance(at, int):
        return None
    lo = changes[k - 1].extra.get("index", 0) if k else 0
    hi = changes[k + 1].extra.get("index", len(x)) if k + 1 < len(changes) else len(x)
    t = index[target]
    if not (isinstance(lo, int) and isinstance(hi, int) and lo + 2 <= t <= hi - 2):
        return None
    if _wrong_side(x, lo, t, hi) > _wrong_side(x, lo, at, hi) + ALIGN_SLACK:
        return None
    before, after = float(np.median(values[lo:t])), float(np.median(values[t:hi]))
    return dataclasses.replace(
        c, before_sha=shas[t - 1], after_sha=target, before_value=before, after_value=after,
        ratio=after / before if before else math.inf,
        extra={**c.extra, "index": t, "aligned_from": c.after_sha})


__all__ = ["ALIGN_REACH", "ALIGN_SLACK", "ALIGN_PLACES", "align_to_agreement"]
