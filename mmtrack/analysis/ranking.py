"""What a maintainer should look at first among detect's change points.

First the change points the code may have caused (no environment event holds them) that persist, are large and
are confirmed: by later commits (the new level persists) and by other machines or environments that measured the
same commits and stepped at the same place the same way. Environment events and small moves come after, each
summarised in one line.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from typing import Mapping, Sequence

from ..results import ChangePoint
from .detect import SeriesReport
from .events import is_environment

#: A change point smaller than this (relative) is a small move: summarised, not listed first.
SMALL_MOVE = 0.05
#: Commits (in commit order) by which two places' change points of one benchmark may differ and still agree.
AGREE_REACH = 3


def with_confirmations(reports: Sequence[SeriesReport], position: Mapping[str, int]) -> list[SeriesReport]:
    """``reports`` with ``extra["elsewhere"]`` on each change point confirmed elsewhere: how many other places
    (machine/environment) measuring the same benchmark stepped the same way within :data:`AGREE_REACH` commits of it."""
    by_bench: dict[tuple[object, ...], list[tuple[ChangePoint, int, int]]] = defaultdict(list)
    for r in reports:
        for c in r.changes:
            hi = position.get(c.after_sha, -1)
            lo = position.get(c.before_sha, hi - 1)
            by_bench[(c.series.benchmark, c.series.params, c.series.metric)].append((c, lo, hi))
    out = []
    for r in reports:
        changes = []
        for c in r.changes:
            mine = by_bench[(c.series.benchmark, c.series.params, c.series.metric)]
            me = next(m for m in mine if m[0] is c)
            places = {(o.series.machine, o.series.environment) for o, lo, hi in mine
                      if (o.series.machine, o.series.environment) != (c.series.machine, c.series.environment)
                      and o.kind == c.kind and lo - AGREE_REACH <= me[2] and hi + AGREE_REACH >= me[1]}
            changes.append(dataclasses.replace(c, extra={**c.extra, "elsewhere": len(places)}) if places else c)
        out.append(dataclasses.replace(r, changes=tuple(changes)))
    return out


def is_small(cp: ChangePoint) -> bool:
    """A move under :data:`SMALL_MOVE`: real, but not where a maintainer looks first."""
    return cp.size < math.log1p(SMALL_MOVE)


def attention(cp: ChangePoint) -> tuple[object, ...]:
    """Sort key, most deserving of attention first: code-attributable regressions, persisting, not small,
    confirmed elsewhere, large."""
    return (is_environment(cp), cp.kind != "regression", not cp.persists, is_small(cp),
            -int(cp.extra.get("elsewhere", 0) or 0), -cp.size)


__all__ = ["SMALL_MOVE", "AGREE_REACH", "with_confirmations", "is_small", "attention"]
