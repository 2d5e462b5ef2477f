"""Run frames: the part of each run's move that every series of a suite shares, taken out of its history.

On CI each run lands on one runner, and a runner of another type moves every benchmark of the run at
once, each by its own amount. A lone series cannot tell a commit on such a runner from a change: both
are a value off its usual level, and the runner levels it has visited hide real steps of the same size
(many of the per-commit gate's misses on CI noise, docs/design/analysis.md). Across a suite the runner shows
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

import contextlib
import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Hashable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .policy import BETA_MAX, KNOWN_VISITS, MIN_SHIFT_SPREAD, RUN_SETTLED


@dataclass(frozen=True, slots=True)
class SuiteFrames:
    """Each run's shift (log, by commit label) and each series' offset in each of its runs.

    ``offsets`` holds a row per series and a column per run (NaN where the series has no value in that
    run); ``rows`` and ``columns`` index it."""

    shifts: Mapping[str, float]
    offsets: np.ndarray
    rows: Mapping[Hashable, int]
    columns: Mapping[str, int]
    sensitivity: Mapping[Hashable, float]
    usual: float  # the median shift over the history's runs
    visited: tuple[float, ...] = ()  # the shift of each of the history's runs

    def factor(self, series: Hashable, label: str, target: str) -> float:
        """What multiplies a value of ``series`` measured in run ``label`` to put it in run ``target``'s frame
        (1 where either run or the series is unknown)."""
        return self.factors(series, (label,), target)[0]

    def factors(self, series: Hashable, labels: Sequence[str], target: str) -> list[float]:
        """:meth:`factor` of each of ``labels``, at once."""
        return self.factor_array(series, labels, target).tolist()

    def factor_array(self, series: Hashable, labels: Sequence[str], target: str) -> np.ndarray:
        """:meth:`factors` as an array (to multiply a series' values with, in C)."""
        row, to = self.rows.get(series), self.columns.get(target)
        if row is None or to is None or not math.isfinite(self.offsets[row, to]):
            return np.ones(len(labels))
        # map in C: the pages look up about a hundred labels for each of 500 series in each of ten runs
        cols = np.fromiter(map(self.columns.get, labels, itertools.repeat(-1)), dtype=np.intp, count=len(labels))
        own = np.where(cols >= 0, self.offsets[row, cols], np.nan)
        out = np.exp(self.offsets[row, to] - own)
        return np.where(np.isfinite(out), out, 1.0)

    def settled(self, label: str) -> bool:
        """Whether run ``label`` ran on the usual runner (its shift near the history's median)."""
        shift = self.shifts.get(label)
        return shift is not None and abs(shift - self.usual) < RUN_SETTLED

    def known(self, label: str) -> bool:
        """Whether run ``label`` ran on the usual runner, or on a runner type the history visited at least
        :data:`KNOWN_VISITS` times (each series' offset there is then its own measured move)."""
        shift = self.shifts.get(label)
        if shift is None:
            return False
        return self.settled(label) or sum(abs(v - shift) < RUN_SETTLED for v in self.visited) >= KNOWN_VISITS


def fit_frames(
    values: Mapping[Hashable, Mapping[str, float]],
    history: Mapping[Hashable, Iterable[str]],
    min_suite: int,
) -> SuiteFrames | None:
    """The frames of a suite: ``values`` maps each series to its values by commit label; ``history`` to the
    labels of its history (its level, offsets and sensitivity come from them, never from the commits judged).

    A run's shift is the median, over the series measured in it, of their log values against their history's
    median; a run with fewer than ``min_suite`` such series has no shift. None when no run has one.
    A series needs two usable values in its history to take part.
    """
    if min_suite <= 0 or not values:
        return None
    names = list(values)
    # every label once, in order of first appearance (dict.fromkeys keeps it, at C speed)
    columns = {label: c for c, label in enumerate(dict.fromkeys(itertools.chain.from_iterable(values.values())))}
    raw, in_history = _table(values, history, names, columns)
    with _quiet_nans():  # NaN rows and columns are expected: a series missing from a run
        logs = np.where(raw > 0, np.log(raw), np.nan)
        logs[~np.isfinite(logs)] = np.nan
        in_history &= np.isfinite(logs)
        taking = in_history.sum(axis=1) >= 2
        centre = nan_median(np.where(in_history, logs, np.nan), axis=1)
        moves = np.where(taking[:, None], logs - centre[:, None], np.nan)
        measured = np.isfinite(moves).sum(axis=0)
        run_shift = nan_median(moves, axis=0)
    has_shift = measured >= max(min_suite, 1)
    if not has_shift.any():
        return None
    fit = in_history & has_shift[None, :] & taking[:, None]  # the history's runs each series is fitted on
    visited = run_shift[fit.any(axis=0)]
    usual = float(np.median(visited)) if visited.size else 0.0
    sensitivity = _sensitivity(moves, fit, run_shift)
    offsets = _offsets(moves, fit, run_shift, has_shift, usual, sensitivity)
    labels = list(columns)
    return SuiteFrames(
        {labels[c]: float(run_shift[c]) for c in np.flatnonzero(has_shift)}, offsets,
        {name: r for r, name in enumerate(names) if taking[r]}, columns,
        {name: float(sensitivity[r]) for r, name in enumerate(names) if taking[r]}, usual,
        tuple(float(v) for v in visited))


def _table(values: Mapping[Hashable, Mapping[str, float]], history: Mapping[Hashable, Iterable[str]],
           names: Sequence[Hashable], columns: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """The suite's values as a series x run table (NaN where none) and which cells are each series' history: every
    series' cells in one assignment (a suite's rows one by one cost more than the fit itself)."""
    rows = np.arange(len(names))
    by_row = [values[name] for name in names]
    sizes = np.fromiter(map(len, by_row), dtype=np.intp, count=len(by_row))
    cells = np.fromiter(map(columns.__getitem__, itertools.chain.from_iterable(by_row)), dtype=np.intp,
                        count=int(sizes.sum()))
    raw = np.full((len(names), len(columns)), np.nan)
    raw[np.repeat(rows, sizes), cells] = [
        np.nan if v is None else v for v in itertools.chain.from_iterable(d.values() for d in by_row)]
    own = [list(history.get(name, ())) for name in names]
    sizes = np.fromiter(map(len, own), dtype=np.intp, count=len(own))
    cells = np.fromiter(map(columns.get, itertools.chain.from_iterable(own), itertools.repeat(-1)), dtype=np.intp,
                        count=int(sizes.sum()))
    known = cells >= 0  # a history label no value carries is no column
    in_history = np.zeros(raw.shape, dtype=bool)
    in_history[np.repeat(rows, sizes)[known], cells[known]] = True
    return raw, in_history


def nan_median(a: np.ndarray, axis: int) -> np.ndarray:
    """``np.nanmedian(a, axis)`` of a 2-D float array, bit for bit, from one sort (numpy's takes a masked array's
    path for short lines, several times slower): each line's median with NaN left out, NaN where it has no value.
    Equal values share their bits but for a zero's sign, so where no -0.0 is present the order the sort leaves
    ties in cannot matter; with one, numpy's own."""
    if a.ndim != 2 or a.size == 0 or np.any(np.signbit(a) & (a == 0)):
        return np.nanmedian(a, axis=axis)
    ordered = np.sort(a, axis=axis)  # NaN last
    n = np.count_nonzero(~np.isnan(a), axis=axis)
    high = np.minimum(n // 2, a.shape[axis] - 1)
    low = np.maximum(np.where(n % 2 == 1, n // 2, n // 2 - 1), 0)

    def at(i: np.ndarray) -> np.ndarray:
        return np.take_along_axis(ordered, np.expand_dims(i, axis), axis).squeeze(axis)

    out = (at(low) + at(high)) / 2.0  # numpy's too: the two middle values' mean, the middle one twice when odd
    out[n == 0] = np.nan
    return out


@contextlib.contextmanager
def _quiet_nans() -> Iterator[None]:
    """No warnings for the medians and means of all-NaN rows and columns: they are NaN, as meant."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _sensitivity(moves: np.ndarray, fit: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Each series' least-squares slope of its moves on its runs' shifts over its history, within
    [0, BETA_MAX]; 1 with fewer than 3 runs, or where the history never changed runner."""
    n = fit.sum(axis=1)
    with _quiet_nans():
        x = np.where(fit, shift[None, :], np.nan)
        y = np.where(fit, moves, np.nan)
        xc = np.where(fit, x - np.nanmean(x, axis=1, keepdims=True), 0.0)
        yc = np.where(fit, y - np.nanmean(y, axis=1, keepdims=True), 0.0)
        sxx, sxy = (xc * xc).sum(axis=1), (xc * yc).sum(axis=1)
        slope = np.clip(sxy / sxx, 0.0, BETA_MAX)
        spread = np.sqrt(sxx / np.maximum(n, 1))
    return np.where((n >= 3) & (spread >= MIN_SHIFT_SPREAD) & np.isfinite(slope), slope, 1.0)


def _offsets(moves: np.ndarray, fit: np.ndarray, shift: np.ndarray, has_shift: np.ndarray, usual: float,
             sensitivity: np.ndarray) -> np.ndarray:
    """Each series' offset in each run it has a value in (NaN elsewhere): 0 on the usual runner; the median
    of its own moves in the history's runs of about that shift (the same runner type), given two visits to
    that type, the run itself included; else its sensitivity times the run's shift."""
    valued = np.isfinite(moves) & has_shift[None, :]
    out = np.where(valued, 0.0, np.nan)
    with _quiet_nans():
        on_usual = fit & (np.abs(shift - usual) < RUN_SETTLED)[None, :]
        home = np.where(on_usual.sum(axis=1) >= 3, nan_median(np.where(on_usual, moves, np.nan), axis=1), 0.0)
        for run in np.flatnonzero(has_shift & (np.abs(shift - usual) >= RUN_SETTLED)):
            peers = fit & (np.abs(shift - shift[run]) < RUN_SETTLED)[None, :]
            visits = peers.sum(axis=1) + ~fit[:, run]
            level = nan_median(np.where(peers, moves, np.nan), axis=1) - home
            out[:, run] = np.where(valued[:, run], np.where(visits >= 2, level, sensitivity * (shift[run] - usual)), np.nan)
    return out


__all__ = ["RUN_SETTLED", "KNOWN_VISITS", "BETA_MAX", "SuiteFrames", "fit_frames"]
