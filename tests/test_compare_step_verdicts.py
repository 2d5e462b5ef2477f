"""series_step_verdicts (the pages' verdicts) against series_steps' rows: a pair settled at once must read as judged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mmtrack.analysis import code_part, compare
from mmtrack.analysis.compare import ComparePolicy, InRun, series_step_verdicts, series_steps, suite_runs
from mmtrack.measure.metrics import Direction, MetricSummary
from mmtrack.results import Measurement

N_COMMITS = 40


def _measurement(value: float, rng, *, bench: str = "s.B.time_x", name: str = "time_per_op", section: str = "timing", unit: str = "s",
                 direction: Direction | None = None, version: str = "v1", status: str = "ok") -> Measurement:
    samples = [value * (1 + rng.normal(0, 0.01)) for _ in range(5)] if value > 0 else [value] * 5
    summ = MetricSummary.from_values(section, name, unit, samples, direction=direction)
    m = Measurement.from_summary(bench, {}, summ, version=version)
    return m if status == "ok" else Measurement(m.benchmark, {}, m.metric, m.direction, status=status,
                                                version=version)


def _series(k: int, runners: np.ndarray, rng) -> list[Measurement]:
    """One series of a suite that shares its runners: its own step, noise, and now and then an odd point."""
    level = 10.0 ** rng.uniform(-4, 1) * np.exp(runners * rng.uniform(0.3, 1.5))
    start = int(rng.integers(5, N_COMMITS))
    level[start:] *= rng.choice([1.0, 1.02, 1.04, 1.08, 0.9, 1.3])
    level *= np.exp(rng.normal(0, rng.choice([0.002, 0.01, 0.04]), N_COMMITS))
    kind, bench = k % 7, f"s.B.time_{k}"
    out = []
    for i, v in enumerate(level):
        if kind == 1 and i == N_COMMITS - 3:
            out.append(_measurement(v, rng, bench=bench, status="failed"))
        elif kind == 2:  # a rate: higher is better
            out.append(_measurement(v, rng, bench=bench, name="bandwidth", unit="GiB/s"))
        elif kind == 3:  # the benchmark's code changed among the newest commits
            out.append(_measurement(v, rng, bench=bench, version="v1" if i < N_COMMITS - 4 else "v2"))
        elif kind == 4:  # a track_ value that reaches 0
            out.append(_measurement(0.0 if i in (N_COMMITS - 2, N_COMMITS - 7) else v, rng, bench=bench,
                                    name="track_x", unit="n"))
        elif kind == 5:
            out.append(_measurement(v, rng, bench=bench, name="rss", unit="B", direction=Direction.NEUTRAL))
        else:
            out.append(_measurement(v, rng, bench=bench))
    return out


def _suite(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    runners = np.where(rng.random(N_COMMITS) < 0.25, rng.choice([0.1, 0.25, -0.15], N_COMMITS), 0.0)
    shas = [f"c{i:03d}" for i in range(N_COMMITS)]
    return {(points := _series(k, runners, rng))[0].case: (shas, points) for k in range(14)}


def _judged_both_ways(suite: dict, window: int = 30, judged: list | None = None) -> tuple[list, list, int]:
    """Each series' verdicts by series_step_verdicts and by series_steps' rows, and how many pairs the first judged
    through the rules (``judged``: the calls of judge_in_run so far)."""
    judged = judged if judged is not None else []
    columns = {}
    for case, (shas, points) in suite.items():
        medians, versions = compare.history_columns(points)
        columns[case] = (shas, medians, versions, points[-1].direction)
    runs = suite_runs(columns, {case: shas[-10:] for case, (shas, _) in suite.items()}, window=window)
    fast, rows, through_rules = [], [], 0
    for case, (shas, points) in suite.items():
        in_run = [runs.get(case, {}).get(sha) for sha in shas]
        calls = len(judged)
        fast.append(series_step_verdicts(points, window=window, runs=in_run))
        through_rules += len(judged) - calls
        rows.append([(j, r.verdict, r.state, r.ratio)
                     for j, r in series_steps(points, window=window, p_value=False, runs=in_run)])
    return fast, rows, through_rules


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("seed", range(6))
def test_every_verdict_settled_at_once_is_the_judged_one(seed: int, monkeypatch) -> None:
    judged = []
    real = code_part.judge_in_run
    monkeypatch.setattr(code_part, "judge_in_run", lambda *a, **k: judged.append(1) or real(*a, **k))
    fast, rows, through_rules = _judged_both_ways(_suite(seed), judged=judged)
    total = sum(len(r) for r in rows)
    assert [len(f) for f in fast] == [len(r) for r in rows]
    for got, want in zip(fast, rows):
        assert all(all(map(_same, g, w)) for g, w in zip(got, want)), (got, want)
    # both paths taken: most pairs settle at once, the rest through the rules
    assert total - through_rules >= total // 4
    assert through_rules > 0


def test_a_pair_quiet_in_its_frame_but_a_step_as_measured_is_judged_plainly_off_the_usual_runner() -> None:
    rng = np.random.default_rng(3)
    points = [_measurement(1.0 * (1 + 0.003 * math.sin(i)), rng) for i in range(N_COMMITS)]
    points[-1] = _measurement(1.3, rng)
    history = [float(p.median) for p in points[-31:-1]]
    # in its frame the before commit moved with the runner: no step there; measured, the pair is a 30% step
    off_usual = InRun(framed=(history, [], 1.3), usual=False)
    on_usual = InRun(framed=(history, [], 1.3), usual=True)
    for run in (off_usual, on_usual):
        in_run = [None] * (N_COMMITS - 1) + [run]
        got = series_step_verdicts(points, window=30, last=1, runs=in_run)
        want = [(j, r.verdict, r.state, r.ratio) for j, r in series_steps(points, window=30, last=1, p_value=False,
                                                                          runs=in_run)]
        assert got == want
    assert series_step_verdicts(points, window=30, last=1, runs=[None] * (N_COMMITS - 1) + [on_usual])[0][1] == \
        "unchanged"
    assert series_step_verdicts(points, window=30, last=1, runs=[None] * (N_COMMITS - 1) + [off_usual])[0][1] != \
        "unchanged"
