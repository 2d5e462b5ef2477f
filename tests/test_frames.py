"""Run frames (:mod:`mmtrack.analysis.frames`): the runner levels a suite shares, out of each series' history.

A suite of twelve quiet series measured run by run on CI: now and then a run lands on a slower runner type,
and every series of that run is slower by its own amount. Alone, a series cannot tell a 20% step from a
visit to that runner; across the suite the runner shows itself.
"""

from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np
import pytest

from mmtrack.analysis.compare import ComparePolicy, RunLabels, compare_measurements, decided_in_run
from mmtrack.analysis.frames import RUN_SETTLED, fit_frames
from mmtrack.analysis.gate import failing_rows
from mmtrack.measure.metrics import MetricSummary
from mmtrack.results import Measurement

SLOW_RUNS = {5, 12, 19, 26, 33, 40, 47, 54}  # the runs that landed on the slower runner type
SLOWER = 1.2
SERIES = 12


def sensitivity(i: int) -> float:
    """How far series i follows the runner: 0.8 to 1.25 of the run's move."""
    return 0.8 + 0.45 * i / (SERIES - 1)


def meas(bench: str, level: float, rng: np.random.Generator) -> Measurement:
    values = list(level * (1 + rng.normal(0, 0.005, 10)))
    return Measurement.from_summary(bench, {}, MetricSummary.from_values("timing", "time_per_op", "s", values), version="v1")


def suite(commits: int, *, step_from: int | None = None, slow: set[int] = SLOW_RUNS,
          follow: Callable[[int], float] = sensitivity) -> dict:
    """Each series' measurements at commits c0..c{commits-1}; from ``step_from`` on, series 0 is slower by
    as much as the slow runner makes it (16%): a step onto the level of its slow runs. ``follow``: how far
    each series follows the slow runner."""
    out = {}
    for i in range(SERIES):
        rng = np.random.default_rng(300 + i)
        points = []
        for k in range(commits):
            level = SLOWER ** follow(i) if k in slow else 1.0
            if i == 0 and step_from is not None and k >= step_from:
                level *= SLOWER ** sensitivity(0)
            points.append(meas(f"suite.time_{i:02d}", level, rng))
        out[points[0].case] = points
    return out


def judge(series: dict, at: int, policy: ComparePolicy | None = None, labelled: bool = True):
    """``mmtrack compare`` of commit ``at`` against ``at - 1`` with every earlier commit as history."""
    history = {k: [m.median for m in pts[:at]] for k, pts in series.items()}
    labels = RunLabels(f"c{at - 1}", f"c{at}", {k: [f"c{j}" for j in range(at)] for k in series}) if labelled else None
    c = compare_measurements([pts[at - 1] for pts in series.values()], [pts[at] for pts in series.values()], policy,
                             history=history, labels=labels)
    return {r.benchmark: r for r in c.rows}


def test_fit_finds_each_runs_shift_and_each_series_sensitivity():
    series = suite(60)
    values = {k: {f"c{j}": m.median for j, m in enumerate(pts)} for k, pts in series.items()}
    frames = fit_frames(values, {k: list(v) for k, v in values.items()}, min_suite=10)
    assert frames is not None
    median_sensitivity = float(np.median([sensitivity(i) for i in range(SERIES)]))
    for j in range(60):
        expected = median_sensitivity * math.log(SLOWER) if j in SLOW_RUNS else 0.0
        assert frames.shifts[f"c{j}"] == pytest.approx(expected, abs=0.01)
    assert frames.usual == pytest.approx(0.0, abs=0.005)
    assert frames.settled("c4") and not frames.settled("c5")
    for i, key in enumerate(series):
        assert frames.sensitivity[key] == pytest.approx(sensitivity(i) / median_sensitivity, abs=0.1)
    # A slow run's value put in a usual run's frame lands back on the usual level.
    first = next(iter(series))
    assert values[first]["c5"] * frames.factor(first, "c5", "c6") == pytest.approx(values[first]["c6"], rel=0.03)
    assert frames.factor(first, "c5", "unknown run") == 1.0


def test_no_frames_without_enough_series():
    series = suite(30)
    values = {k: {f"c{j}": m.median for j, m in enumerate(pts)} for k, pts in series.items()}
    history = {k: list(v) for k, v in values.items()}
    assert fit_frames(values, history, min_suite=SERIES + 1) is None
    assert fit_frames(values, history, min_suite=0) is None


def test_a_step_onto_a_runner_level_stands_out_in_the_runs_frame():
    """Series 0 steps 16% at c60, on the usual runner, onto the level its slow runs visited eight times:
    alone it is within the series' own noise; in the run's frame it is a suspected regression."""
    series = suite(61, step_from=60)
    alone = judge(series, 60, labelled=False)["suite.time_00"]
    assert alone.verdict == "ambiguous" and alone.note == "within the series' own noise"
    framed = judge(series, 60)
    assert (framed["suite.time_00"].verdict, framed["suite.time_00"].state) == ("regressed", "suspected")
    assert {framed[f"suite.time_{i:02d}"].verdict for i in range(1, SERIES)} == {"unchanged"}
    # The policy knob turns it off.
    assert judge(series, 60, ComparePolicy(run_frames=False))["suite.time_00"].verdict == "ambiguous"


def test_a_step_right_after_a_slow_run_is_measured_in_this_runs_frame():
    """The before commit ran on the slow runner: as measured, the step does not move from it (ratio about 1);
    in this run's frame the before commit sits on the usual level and the step is 16%."""
    series = suite(61, step_from=60, slow=SLOW_RUNS | {59})
    row = judge(series, 60)["suite.time_00"]
    assert (row.verdict, row.state) == ("regressed", "suspected")
    assert row.ratio == pytest.approx(1.0, abs=0.03)  # the ratio as measured
    assert "with the before commit put in this run's frame" in row.note


def test_a_run_on_the_slow_runner_is_no_regression_in_any_frame():
    """Every series slower at c60 (the slow runner again): frames do not apply to a run off the usual runner
    (in its frame every series would sit on its usual level), and the twelve moves stay ambiguous."""
    series = suite(61, slow=SLOW_RUNS | {60})
    rows = judge(series, 60)
    assert {r.verdict for r in rows.values()} == {"ambiguous"}
    assert not any("frame" in r.note for r in rows.values())


def test_a_step_in_a_run_on_a_known_slow_runner_is_the_series_own():
    """Series 0 steps at c60, a run on the slow runner type the history visited eight times. Alone, the run's
    shift explains half its move (ambiguous); in that runner's frame it moved 16% beyond its own slow level."""
    series = suite(61, step_from=60, slow=SLOW_RUNS | {60})
    plain = judge(series, 60, ComparePolicy(run_frames=False))["suite.time_00"]
    assert plain.verdict == "ambiguous" and "the whole run moved" in plain.note
    rows = judge(series, 60)
    assert (rows["suite.time_00"].verdict, rows["suite.time_00"].state) == ("regressed", "suspected")
    assert {rows[f"suite.time_{i:02d}"].verdict for i in range(1, SERIES)} == {"ambiguous"}


def twice_as_sensitive(i: int) -> float:
    """Series 0 follows the slow runner twice as far as the rest's median (a benchmark bound by what that runner
    type lacks, its memory bandwidth say)."""
    return 2.0 if i == 0 else sensitivity(i)


def test_a_series_that_stepped_earlier_is_not_flagged_again_on_a_known_slow_runner():
    """Series 0 stepped at c57 (its own change, flagged there); c60 runs on the slow runner type the history
    visited eight times. Three commits are too young a level for detect to split there, and the slow runner on
    top of the step is a level the series never reached. Read from the level those three commits reached
    (``young_level``), the series alone sees its own slow-runner move: within its own noise. In that runner's
    frame (its own moves on the eight visits) it is no regression either: ambiguous, as every other series.
    (Before ``young_level``, alone it was a regression again, and only the frame's rule kept it ambiguous with
    the whole run.)"""
    series = suite(61, step_from=57, slow=SLOW_RUNS | {60}, follow=twice_as_sensitive)
    alone = judge(series, 60, ComparePolicy(run_frames=False))["suite.time_00"]
    assert (alone.verdict, alone.note) == ("ambiguous", "within the series' own noise")
    rows = judge(series, 60)
    assert {r.verdict for r in rows.values()} == {"ambiguous"}
    assert rows["suite.time_00"].note == "within the series' own noise"


def test_a_phase_on_a_known_slow_runner_fails_no_gate_for_a_series_that_follows_it_further():
    """Five runs in a row on the slow runner type (c60-c64), after series 0's own step at c50: detect places that
    step on its commit (the tail rule names where the run of shifted commits begins), so c60's move is the runner's
    and fails no gate: read alone, wholly alone, or in the runs' frames."""
    from mmtrack.analysis.detect import find_steps

    series = suite(65, step_from=50, slow=SLOW_RUNS | set(range(60, 65)), follow=twice_as_sensitive)
    own = [m.median for j, m in enumerate(next(iter(series.values()))) if j < 60]
    assert [s.index for s in find_steps(own, settle=True)] == [50]
    tails = {k: (pts, [f"c{j}" for j in range(len(pts))]) for k, pts in series.items()}
    for policy in (ComparePolicy(run_frames=False), ComparePolicy(min_suite=0), ComparePolicy()):
        rows = decided_in_run(tails, policy)
        assert not failing_rows(compare_measurements([], [], decided=rows), ["regression"]), policy
        assert not any(r.state == "confirmed" and r.verdict == "regressed" for r in rows), policy


def test_the_gate_fails_once_later_runs_confirm_the_step_in_their_frames():
    """Four commits later the per-commit gate settles c60 (``decided_in_run``): confirmed in the runs' frames,
    while the series alone never gets past "within its own noise"."""
    series = suite(65, step_from=60, slow=SLOW_RUNS | {62})
    tails = {k: (pts, [f"c{j}" for j in range(len(pts))]) for k, pts in series.items()}
    rows = decided_in_run(tails)
    assert [(r.benchmark, r.verdict, r.state, r.note) for r in rows] == [
        ("suite.time_00", "regressed", "confirmed", "at c60")]
    assert failing_rows(compare_measurements([], [], decided=rows), ["regression"])
    assert decided_in_run(tails, ComparePolicy(run_frames=False)) == []


def test_measurement_scaled_moves_every_value():
    m = meas("suite.time_00", 2.0, np.random.default_rng(0))
    s = m.scaled(0.5)
    assert s.median == pytest.approx(m.median * 0.5) and s.samples == pytest.approx([v * 0.5 for v in m.samples])
    assert s.q1 == pytest.approx(m.q1 * 0.5) and s.max == pytest.approx(m.max * 0.5)
    assert m.scaled(1.0) is m


def test_run_settled_is_a_small_band():
    assert 0 < RUN_SETTLED < math.log(1.1) / 2  # narrower than half the default 10% threshold


def test_a_step_right_after_a_slow_run_is_confirmed_in_its_frame_too():
    """The step at c60 follows a run on the slow runner (c59): as measured it barely moves from it, so only
    in the run's frame is it a step. Four commits later the gate confirms it there too, as compare judged it."""
    series = suite(65, step_from=60, slow=SLOW_RUNS | {59})
    tails = {k: (pts, [f"c{j}" for j in range(len(pts))]) for k, pts in series.items()}
    rows = decided_in_run(tails)
    assert [(r.benchmark, r.verdict, r.state) for r in rows] == [("suite.time_00", "regressed", "confirmed")]
    # where it was suspected, and why so small a measured move is a step
    assert re.fullmatch(r"at c60: ×1\.\d+ with the before commit put in this run's frame \(×0\.\d+\)", rows[0].note)


def test_nan_median_is_numpys_bit_for_bit() -> None:
    """The fits' row and column medians from one sort give np.nanmedian's, ties, empty lines, infinities and a
    negative zero (numpy's own path then) included."""
    import warnings

    from mmtrack.analysis.frames import nan_median

    rng = np.random.default_rng(5)
    for shape in [(40, 105), (7, 3), (1, 1), (3, 700)]:
        for trial in range(30):
            a = rng.normal(size=shape)
            if trial % 3 == 0:
                a = np.round(a, 1) + 0.0  # ties, and +0.0 only
            a[rng.random(shape) < [0.0, 0.1, 0.6, 1.0][trial % 4]] = np.nan
            if trial % 7 == 0:
                a.flat[0], a.flat[-1] = np.inf, -np.inf
            if trial % 11 == 0:
                a.flat[a.size // 2] = -0.0
            for axis in (0, 1):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    want = np.nanmedian(a, axis=axis)
                assert nan_median(a, axis).tobytes() == want.tobytes()
