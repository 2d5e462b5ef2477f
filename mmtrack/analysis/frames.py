"""Run frames: the part of each run's move that every series of a suite shares, taken out of its history.

On CI each run lands on one runner, and a runner of another type moves every benchmark of the run at
once, each by its own amount. A lone series cannot tell a commit on such a runner from a change: both
are a value off its usual level, and the runner levels it has visited hide real steps of the same size
(most of the per-commit gate's misses on CI noise, docs/analysis.md). Across a suite the runner shows
itself: the median move of a run's series against their own levels is the run's **shift**.

Each series' **offset** in a run is how far that run's runner moves it: where the series' history holds
other runs of about the same shift (the same runner type, visited before), the median of its own moves
in them; otherwise its **sensitivity** to the shift (fitted on the history by least squares: a benchmark
bound by memory moves more than one bound by the CPU's clock, one bound by the network not at all) times
the run's shift. A run on the usual runner has offset 0. A value measured in run ``r`` is put in run
``t``'s frame by the factor ``exp(offset[t] - offset[r])``. :mod:`.compare` judges the newest commit
against a history put in that commit's frame, which takes the runner levels out of the history: what
stays is the series' own noise, against which a step stands out.

Frames apply only to a run on the usual runner (its shift within :data:`RUN_SETTLED` of the history's
median shift): a run on another runner is the one whose adjustment depends most on what other runs
said, and the whole run's move already makes its changes ambiguous (:func:`.compare.run_shift`). A
change to more than half the suite moves the run's shift as a runner does: frames do not hide it, the
run's shift makes it ambiguous, and only the same-machine A/B tells the two apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping

import numpy as np

#: A run whose shift lies within this (log) of the history's median shift ran on the usual runner.
RUN_SETTLED = 0.03
#: Sensitivities are kept within [0, BETA_MAX]: a series never moves against its runner.
BETA_MAX = 3.0
#: Below this spread (log) of the history's shifts the suite never changed runner: sensitivity 1.
MIN_SHIFT_SPREAD = 0.01


@dataclass(frozen=True, slots=True)
class SuiteFrames:
    """Each run's shift (log, by commit label) and each series' offset in each of its runs."""

    shifts: Mapping[str, float]
    offsets: Mapping[Hashable, Mapping[str, float]]
    sensitivity: Mapping[Hashable, float]
    usual: float  # the median shift over the history's runs

    def factor(self, series: Hashable, label: str, target: str) -> float:
        """What multiplies a value of ``series`` measured in run ``label`` to put it in run ``target``'s frame
        (1 where either run or the series is unknown)."""
        own = self.offsets.get(series)
        if own is None or label not in own or target not in own:
            return 1.0
        return math.exp(own[target] - own[label])

    def settled(self, label: str) -> bool:
        """Whether run ``label`` ran on the usual runner (its shift near the history's median)."""
        shift = self.shifts.get(label)
        return shift is not None and abs(shift - self.usual) < RUN_SETTLED


def fit_frames(
    values: Mapping[Hashable, Mapping[str, float]],
    history: Mapping[Hashable, Iterable[str]],
    min_suite: int,
) -> SuiteFrames | None:
    """The frames of a suite: ``values`` maps each series to its values by commit label; ``history`` to the
    labels of its history (its level, offsets and sensitivity come from them, never from the commits judged).

    A run's shift is the median, over the series measured in it, of their log values against their history's
    median; a run with fewer than ``min_suite`` such series has no shift. None when no run has one.
    """
    if min_suite <= 0:
        return None
    centred: dict[Hashable, dict[str, float]] = {}
    for series, by_label in values.items():
        own = [math.log(by_label[h]) for h in history.get(series, ()) if _usable(by_label.get(h))]
        if len(own) < 2:
            continue
        centre = float(np.median(own))
        centred[series] = {label: math.log(v) - centre for label, v in by_label.items() if _usable(v)}
    moves: dict[str, list[float]] = {}
    for by_label in centred.values():
        for label, d in by_label.items():
            moves.setdefault(label, []).append(d)
    shifts = {label: float(np.median(d)) for label, d in moves.items() if len(d) >= min_suite}
    if not shifts:
        return None
    fitted = [shifts[h] for h in {h for series in centred for h in history.get(series, ())} if h in shifts]
    usual = float(np.median(fitted)) if fitted else 0.0
    offsets, sensitivity = {}, {}
    for series, by_label in centred.items():
        labels = [h for h in history.get(series, ()) if h in by_label and h in shifts]
        sensitivity[series] = _sensitivity(by_label, labels, shifts)
        offsets[series] = _offsets(by_label, labels, shifts, usual, sensitivity[series])
    return SuiteFrames(shifts, offsets, sensitivity, usual)


def _offsets(centred: Mapping[str, float], labels: list[str], shifts: Mapping[str, float], usual: float,
             sensitivity: float) -> dict[str, float]:
    """One series' offset in each run it has a value in: 0 on the usual runner; the median of its own moves
    in the history's runs of about that shift (the same runner type), given two visits (the run itself
    counts when it is in the history); else its sensitivity times the run's shift."""
    shift = np.array([shifts[h] for h in labels])
    own = np.array([centred[h] for h in labels])
    usual_runs = np.abs(shift - usual) < RUN_SETTLED
    home = float(np.median(own[usual_runs])) if usual_runs.sum() >= 3 else 0.0
    in_history = set(labels)
    out: dict[str, float] = {}
    for label in centred:
        s = shifts.get(label)
        if s is None:
            continue
        if abs(s - usual) < RUN_SETTLED:
            out[label] = 0.0
            continue
        peers = np.abs(shift - s) < RUN_SETTLED
        visits = int(peers.sum()) + (label not in in_history)
        out[label] = float(np.median(own[peers])) - home if visits >= 2 else sensitivity * (s - usual)
    return out


def _usable(v: float | None) -> bool:
    return v is not None and v > 0 and math.isfinite(v)


def _sensitivity(centred: Mapping[str, float], labels: list[str], shifts: Mapping[str, float]) -> float:
    """Least-squares slope of one series' moves on its runs' shifts over its history, within [0, BETA_MAX]."""
    pairs = [(shifts[h], centred[h]) for h in labels if h in shifts]
    if len(pairs) < 3:
        return 1.0
    x, y = np.array(pairs).T
    x = x - x.mean()
    spread = float(np.sqrt(np.mean(x * x)))
    if spread < MIN_SHIFT_SPREAD:  # the history never changed runner: nothing to fit, little to adjust
        return 1.0
    return float(np.clip(np.dot(x, y - y.mean()) / np.dot(x, x), 0.0, BETA_MAX))


__all__ = ["RUN_SETTLED", "BETA_MAX", "SuiteFrames", "fit_frames"]
