"""Drift since a baseline: per series, how far its level moved since a named commit (a release), however small each
step on the way was.

The level at either end is the median of a window of commits inside one of detect's segments (so no step detect
sees mixes two levels): the newest :data:`WINDOW` commits, and the :data:`WINDOW` commits up to the baseline (the
code a release holds). Their ratio is the drift; its interval is the wider of a 99% one from the series'
between-commit spread (:func:`.noise.segment_noise`, the noise the per-commit verdicts judge against; a median's
standard error about 1.25 sigma / sqrt(n)) and the farthest two neighbouring windows of
the series moved apart where detect saw no change. A series *drifted* when the move is the worse way, beyond the
threshold and the interval excludes no move. Pure functions over a series' plain columns (docs/design/drift.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Collection, Iterable, Sequence

import numpy as np

from ..results import SeriesKey
from ..vocabulary import Direction
from .detect import DetectPolicy, is_worse, segment_levels
from .noise import segment_noise

#: Commits whose median gives the level at each end: enough that one commit on another runner cannot move it.
WINDOW = 7
#: Fewest commits a window holds before it reaches past the baseline into its segment's later commits.
MIN_WINDOW = 3
#: Two-sided confidence of the interval; a drift must exclude no move at it to count (a gate must not flap).
CONFIDENCE = 0.99
#: sqrt(pi/2): the standard error of a median over that of a mean, for normal noise.
MEDIAN_SE = 1.2533

VERDICTS = ("drifted", "improved", "moved", "within", "unknown")


@dataclass(frozen=True, slots=True)
class SeriesDrift:
    """One series' move since the baseline: ``ratio`` current / baseline level with its interval, and the verdict:
    drifted (the worse way, beyond the threshold, significant), improved (the better way, likewise), moved (a
    neutral metric, likewise), within, or unknown (``note`` says why)."""

    series: SeriesKey
    direction: Direction
    verdict: str
    baseline_level: float | None = None
    current_level: float | None = None
    ratio: float | None = None
    low: float | None = None  # the interval's bounds on the ratio
    high: float | None = None
    baseline_commits: int = 0  # commits in each window
    current_commits: int = 0
    note: str = ""
    dismissed: bool = False  # a change point of it since the baseline is in an alert marked invalid or won't fix

    @property
    def change(self) -> float | None:
        """The relative move, signed (+0.1: 10% higher)."""
        return None if self.ratio is None else self.ratio - 1.0


def unknown(key: SeriesKey, direction: Direction, note: str) -> SeriesDrift:
    return SeriesDrift(key, direction, "unknown", note=note)


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def baseline_window(at: int, segment: tuple[int, int], size: int = WINDOW) -> range:
    """The commits that give the baseline's level: up to ``size`` ending at ``at``, inside its segment; where the
    segment begins at or just before ``at`` (a step landed there), its first ``MIN_WINDOW`` commits or more."""
    start, stop = segment
    lo = max(start, at + 1 - size)
    hi = at + 1
    if hi - lo < MIN_WINDOW:
        hi = min(stop, lo + MIN_WINDOW)
    return range(lo, hi)


def current_window(segment: tuple[int, int], size: int = WINDOW) -> range:
    """The newest ``size`` commits, inside the newest segment."""
    start, stop = segment
    return range(max(start, stop - size), stop)


def _segment_of(at: int, segments: Sequence[tuple[int, int]]) -> tuple[int, int]:
    return next(s for s in segments if s[0] <= at < s[1])


def series_drift(key: SeriesKey, shas: Sequence[str], values: Sequence[float], versions: Sequence[str | None],
                 direction: Direction, baseline: str, threshold: float, policy: DetectPolicy | None = None
                 ) -> SeriesDrift:
    """The drift of one series (its usable commits, oldest first) since the commit ``baseline`` (a full sha)."""
    policy = policy or DetectPolicy()
    try:
        at = list(shas).index(baseline)
    except ValueError:
        return unknown(key, direction, "baseline not measured in this series")
    first = _version_start(versions)
    if at < first:
        return unknown(key, direction, "benchmark code changed since the baseline")
    x = np.asarray(values[first:], dtype=float)
    at -= first
    if not np.all(x > 0):
        return unknown(key, direction, "values at or below 0: no ratio")
    noise = segment_noise(x, policy.min_points)
    if noise is None:
        return unknown(key, direction, f"fewer than {policy.min_points} commits: no noise to judge against")
    segments = segment_levels(list(x), policy)
    base = baseline_window(at, _segment_of(at, segments))
    now = current_window(segments[-1])
    logs = np.log(x)
    b, c = float(np.median(logs[base.start:base.stop])), float(np.median(logs[now.start:now.stop]))
    d = c - b
    se = MEDIAN_SE * noise.sd * math.sqrt(1 / len(base) + 1 / len(now))
    margin = max(_z(CONFIDENCE) * se, _neighbour_moves(logs, segments, WINDOW))
    drift = SeriesDrift(key, direction, "within", math.exp(b), math.exp(c), math.exp(d), math.exp(d - margin),
                        math.exp(d + margin), len(base), len(now))
    return _judged(drift, significant=abs(d) > margin, beyond=abs(math.expm1(d)) >= threshold)


def _neighbour_moves(logs: np.ndarray, segments: Sequence[tuple[int, int]], size: int) -> float:
    """The farthest the medians of two neighbouring windows of ``size`` commits lie apart inside one segment: what
    the series' own noise moved a window's level by where detect saw no change, runner levels included (a series
    that flips between two runners flips a 7-commit median too, which no sigma describes). 0 where no segment holds
    two windows."""
    moves = []
    for a, b in segments:
        if b - a < 2 * size:
            continue
        view = np.lib.stride_tricks.sliding_window_view(logs[a:b], size)
        medians = np.median(view, axis=1)
        moves.append(np.abs(medians[size:] - medians[:-size]))
    return float(np.concatenate(moves).max()) if moves else 0.0


def _version_start(versions: Sequence[str | None]) -> int:
    """Where the newest benchmark code version begins: levels across a change are not comparable."""
    newest = next((v for v in reversed(versions) if v is not None), None)
    start = len(versions)
    while start > 0 and versions[start - 1] in (newest, None):
        start -= 1
    return start


def _judged(drift: SeriesDrift, *, significant: bool, beyond: bool) -> SeriesDrift:
    from dataclasses import replace

    if not (significant and beyond):
        return drift
    worse = is_worse(drift.direction, 1.0, drift.ratio or 1.0)
    return replace(drift, verdict="moved" if worse is None else ("drifted" if worse else "improved"))


@dataclass(frozen=True, slots=True)
class DriftReport:
    """Every series' drift since one baseline: ``ref`` as the user named it, ``sha`` the commit it names."""

    ref: str
    sha: str
    threshold: float
    series: tuple[SeriesDrift, ...]

    @property
    def drifted(self) -> list[SeriesDrift]:
        """Drifted series, the worst first."""
        return sorted((s for s in self.series if s.verdict == "drifted"), key=_worst_first)

    @property
    def gated(self) -> list[SeriesDrift]:
        """The drifted series ``--fail-on drift`` fails on: those with a dismissed alert since the baseline left out."""
        return [s for s in self.drifted if not s.dismissed]

    def count(self, verdict: str) -> int:
        return sum(s.verdict == verdict for s in self.series)

    def summary(self) -> str:
        """One line: how many series drifted beyond the threshold, the worst, and how many could not be judged."""
        drifted = self.drifted
        worst = ""
        if drifted:
            w = drifted[0]
            worst = f", worst {_percent(w.change)} {w.series.benchmark} {w.series.metric.name}"
        dismissed = len(drifted) - len(self.gated)
        named = self.ref if self.sha.startswith(self.ref.lower()) else f"{self.ref} ({self.sha[:8]})"
        return (f"drift since {named}: {len(drifted)} of {len(self.series)} series beyond "
                f"{self.threshold:.0%}{worst}"
                + (f" ({dismissed} in alerts marked invalid or won't fix)" if dismissed else "")
                + f"; {self.count('improved')} improved, {self.count('unknown')} unknown")


def _worst_first(s: SeriesDrift) -> float:
    return -abs(math.log(s.ratio)) if s.ratio else 0.0


def _percent(change: float | None) -> str:
    return "-" if change is None else f"{change * 100:+.1f}%"


def with_dismissed(drifts: Iterable[SeriesDrift], shas_after: dict[SeriesKey, Collection[str]],
                   dismissed: Collection[tuple[SeriesKey, str]]) -> list[SeriesDrift]:
    """``drifts`` with ``dismissed`` set where one of the series' dismissed change points (series, after commit)
    lies after the baseline (``shas_after``: each series' commits after it)."""
    from dataclasses import replace

    by_series: dict[SeriesKey, set[str]] = {}
    for key, sha in dismissed:
        by_series.setdefault(key, set()).add(sha)
    return [replace(d, dismissed=True) if by_series.get(d.series, set()) & set(shas_after.get(d.series, ())) else d
            for d in drifts]


__all__ = ["CONFIDENCE", "MIN_WINDOW", "VERDICTS", "WINDOW", "DriftReport", "SeriesDrift", "baseline_window",
           "current_window", "series_drift", "unknown", "with_dismissed"]
