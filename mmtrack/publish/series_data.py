"""What one series puts in its benchmark's data files: its entry in the meta file (names, unit, direction, band and
detection limits, restated once every ten measured commits, spread over the benchmarks), its drawable points placed in the commit
chunks, and the tail the next build carries it on from. :mod:`mmtrack.publish.builder` writes the files."""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..analysis.budget import DEFAULT_FDR
from ..analysis.detection_limit import state_offset, stated_count, stated_limit
from ..analysis.noise import measured
from ..results import SeriesKey, SeriesPoint
from .encode import _finite, _metric_label, _params
from .model import SiteModel


def _series_meta(key: SeriesKey, points: Sequence[SeriesPoint], band: str | None, family: int) -> dict[str, Any]:
    """The meta file's entry of a series read whole (the builder adds its code versions and profiles); ``family``:
    the series its commits' budget divides among."""
    first = next((p.measurement for p in points), None)
    return {
        "machine": key.machine,
        "env": key.environment,
        "params": _params(key),
        "metric": _metric_label(key),
        "name": key.metric.name,
        "display": (first.display_name if first and first.display_name else key.metric.name),
        "section": key.metric.section,
        "unit": key.metric.unit,
        "direction": first.direction.value if first else "lower",
        "format": first.format.value if first else "number",
        "band": band,
        "limit": _limit([p.measurement.median for p in points], family, state_offset(key.benchmark)),
    }


def _place_points(
    points: Sequence[SeriesPoint], band: str | None, si: int, n_series: int, pos: dict[str, int], size: int,
    chunks: dict[int, list[Any]], version: str | None, version_changes: list[list[Any]],
) -> str | None:
    """Add the drawable points of series ``si`` to their chunks' columns, and each change of the
    benchmark's code version to ``version_changes``; returns the version after the last point
    (where the series' next points carry on)."""
    for p in points:
        m = p.measurement
        med = m.median
        if m.status != "ok" or med is None or not math.isfinite(med):
            continue
        i = pos.get(p.commit.sha)
        if i is None:  # a commit stored after the commit list was read: the next publish shows it
            continue
        # Where the benchmark's code version changed: values on either side are not comparable.
        if m.version != version:
            if version is not None and m.version is not None:
                version_changes.append([i, m.version])
            version = m.version or version
        k = i // size
        row = chunks.get(k)
        if row is None:
            row = chunks[k] = [None] * n_series
        cols = row[si]
        if cols is None:
            cols = row[si] = {"i": [], "m": [], "lo": [], "hi": []}
        if band == "IQR":
            lo, hi = m.q1, m.q3
        elif band == "CI":
            lo, hi = m.ci_low, m.ci_high
        else:
            lo = hi = None
        cols["i"].append(i)
        cols["m"].append(med)
        cols["lo"].append(_finite(lo))
        cols["hi"].append(_finite(hi))
    return version


def _tail(
    model: SiteModel, key: SeriesKey, points: Sequence[SeriesPoint], pos: dict[str, int], version: str | None,
    decided: bool, marker: list[Any] | None,
) -> list[Any] | None:
    """What the next build needs to carry a series on from its newest points alone: the store revision
    it was read at, its last point (None when a point was left off the pages: read it whole next time),
    the code version after it and whether its band is decided. None without store revisions."""
    if model.revisions is None or key not in model.revisions:
        return None
    changes, appends, ids = model.revisions[key]
    if points:
        marker = [points[-1].commit.sha, points[-1].run_id]
        if any(p.commit.sha not in pos for p in points):
            marker = None
    return [repr(key), changes, appends, list(ids), marker, version, decided]


def _limit(medians: Sequence[float | None], family: int, offset: int) -> dict[str, Any]:
    """The smallest steps a series shows (:func:`~mmtrack.analysis.detection_limit.stated_limit`) as of its last
    restatement (``offset``: its benchmark's :func:`~mmtrack.analysis.detection_limit.state_offset`), ``family`` the
    series its commits' budget divides among (kept in the record: a new series in the family restates it)."""
    return {**stated_limit([v for v in medians if measured(v)], family, DEFAULT_FDR, offset), "family": family}


def _limit_since(old: Any, medians: Sequence[float | None], fresh: int, family: int, offset: int) -> dict[str, Any]:
    """:func:`_limit` of a series that gained its ``fresh`` newest commits (``medians``: all of them), the ``old``
    record kept where those did not reach its next restatement and the family is the same: both builds agree."""
    measured_now = sum(1 for v in medians if measured(v))
    measured_before = measured_now - sum(1 for v in medians[len(medians) - fresh:] if measured(v))
    same_mark = stated_count(measured_before, offset) == stated_count(measured_now, offset)
    if same_mark and isinstance(old, dict) and old.get("family") == family:
        return old
    return _limit(medians, family, offset)
