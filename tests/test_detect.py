"""detect: change points per series on constructed data."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from mmtrack.analysis.detect import DetectPolicy, find_steps, is_worse, segment_levels
from mmtrack.analysis.series import detect_all, detect_series
from mmtrack.measure.metrics import Direction
from mmtrack.results import CommitInfo, Measurement, MetricKey, SeriesKey, SeriesPoint

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def series(values, *, unit="s", direction=Direction.LOWER, versions=None, statuses=None):
    key = SeriesKey("m1", "py3.12", "suite.Bench.time_x", "{}", MetricKey("timing", "time_per_op", unit))
    pts = []
    for i, v in enumerate(values):
        m = Measurement(
            benchmark=key.benchmark,
            params={},
            metric=key.metric,
            direction=direction,
            status=(statuses[i] if statuses else "ok"),
            median=v,
            count=10,
            version=(versions[i] if versions else "v1"),
        )
        pts.append(SeriesPoint(CommitInfo(f"{i:040x}", T0 + timedelta(hours=i)), run_id=i, measurement=m))
    return key, pts


def noisy_level(levels, cv=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return list(np.asarray(levels, dtype=float) * np.exp(rng.normal(0, cv, len(levels))))


@pytest.mark.parametrize("method", ["edivisive", "pelt"])
def test_single_step_found_at_its_position(method):
    vals = noisy_level([1.0] * 25 + [1.2] * 25, seed=1)
    steps = find_steps(vals, DetectPolicy(method=method))
    assert [s.index for s in steps] == [25]
    assert steps[0].ratio == pytest.approx(1.2, rel=0.03)
    assert steps[0].p_value < 1e-3


def test_flat_series_has_no_step():
    for seed in range(5):
        assert find_steps(noisy_level([1.0] * 60, cv=0.02, seed=seed)) == []


def test_one_outlier_commit_is_not_a_change():
    vals = noisy_level([1.0] * 40, seed=2)
    vals[20] *= 1.8  # one noisy runner
    assert find_steps(vals) == []


def test_small_step_below_min_effect_ignored():
    vals = noisy_level([1.0] * 30 + [1.015] * 30, cv=0.002, seed=3)  # below the 2% default
    assert find_steps(vals) == []
    assert [s.index for s in find_steps(vals, DetectPolicy(min_effect=0.01))] == [30]


def test_up_then_down():
    vals = noisy_level([1.0] * 20 + [1.3] * 15 + [1.0] * 20, seed=4)
    assert [s.index for s in find_steps(vals)] == [20, 35]
    assert segment_levels(vals) == [(0, 20), (20, 35), (35, 55)]


def test_deterministic_values():
    vals = [1000.0] * 10 + [1100.0] * 10
    assert [s.index for s in find_steps(vals)] == [10]


def test_non_positive_values_are_handled_without_logs():
    vals = noisy_level([1.0] * 20 + [2.0] * 20, seed=5)
    shifted = [v - 1.5 for v in vals]  # crosses zero
    assert [s.index for s in find_steps(shifted)] == [20]


def test_is_worse():
    assert is_worse(Direction.LOWER, 1.0, 2.0) is True
    assert is_worse(Direction.HIGHER, 1.0, 2.0) is False
    assert is_worse(Direction.NEUTRAL, 1.0, 2.0) is None


def test_regression_range_size_and_persistence():
    vals = noisy_level([1.0] * 20 + [1.5] * 20, seed=6)
    key, pts = series(vals)
    rep = detect_series(key, pts)
    assert rep.status == "ok" and rep.points == 40
    (cp,) = rep.changes
    assert cp.kind == "regression" and cp in rep.regressions
    assert cp.before_sha == pts[19].commit.sha and cp.after_sha == pts[20].commit.sha
    assert cp.ratio == pytest.approx(1.5, rel=0.03)
    assert cp.persists
    assert cp.series == key and cp.method == DetectPolicy().name
    assert cp.extra["index"] == 20


def test_fixed_regression_does_not_persist():
    vals = noisy_level([1.0] * 20 + [1.5] * 12 + [1.0] * 20, seed=7)
    key, pts = series(vals)
    rep = detect_series(key, pts)
    kinds = [(c.kind, c.persists) for c in rep.changes]
    # the regression was undone; the improvement that undid it holds to the latest commit
    assert kinds == [("regression", False), ("improvement", True)]


@pytest.mark.parametrize("low, high", [(0.0, 5.0), (-2.0, 3.0), (-4.0, -1.0)])
def test_a_change_at_or_below_zero_persists_the_way_it_went(low, high):
    """track_ values may be 0 or negative: a step up from exactly 0 read as "does not persist" (its ratio to 0 was
    taken as no move), and a level below 0 read the latest value's move the wrong way round."""
    rng = np.random.default_rng(3)
    for before, after, kind in ((low, high, "regression"), (high, low, "improvement")):
        vals = [before] * 20 + [after] * 20
        vals = [v + 0.01 * rng.standard_normal() for v in vals]
        key, pts = series(vals, unit="unit")
        (cp,) = detect_series(key, pts).changes
        assert (cp.kind, cp.persists) == (kind, True)
        key, pts = series(vals + [before] * 20, unit="unit")  # ... and went back: it no longer persists
        assert [(c.kind, c.persists) for c in detect_series(key, pts).changes][0] == (kind, False)


def test_a_step_beyond_the_float_range_is_found_without_an_overflow():
    key, pts = series([1e-300] * 15 + [1e300] * 15, unit="unit")
    (cp,) = detect_series(key, pts).changes
    assert cp.kind == "regression" and cp.persists


def test_direction_higher_is_better():
    vals = noisy_level([100.0] * 20 + [70.0] * 20, seed=8)
    key, pts = series(vals, unit="GiB/s", direction=Direction.HIGHER)
    (cp,) = detect_series(key, pts).changes
    assert cp.kind == "regression" and cp.direction is Direction.HIGHER


def test_neutral_metric_reports_change_not_regression():
    key, pts = series([1.0] * 15 + [3.0] * 15, unit="id", direction=Direction.NEUTRAL)
    rep = detect_series(key, pts)
    assert [c.kind for c in rep.changes] == ["change"] and rep.regressions == ()


def test_too_short_series_is_reported_as_such():
    key, pts = series([1.0, 1.0, 5.0, 5.0, 5.0])
    rep = detect_series(key, pts)
    assert rep.status == "too_short" and rep.changes == () and rep.points == 5
    assert "needs 8 commits" in rep.notes[0]


def test_failed_points_skipped_and_version_change_splits():
    vals = noisy_level([1.0] * 20 + [2.0] * 20, seed=9)
    # the jump coincides with a benchmark code change: not a regression
    key, pts = series(vals, versions=["v1"] * 20 + ["v2"] * 20)
    rep = detect_series(key, pts)
    assert rep.changes == () and "code changed" in rep.notes[0]
    # failed commits are left out of the levels
    statuses = ["ok"] * 40
    statuses[5] = "failed"
    key, pts = series(vals, statuses=statuses)
    pts[5] = dataclasses.replace(pts[5], measurement=dataclasses.replace(pts[5].measurement, median=None))
    rep = detect_series(key, pts)
    assert rep.points == 39 and [c.after_sha for c in rep.changes] == [pts[20].commit.sha]


def test_detect_all_over_many_series():
    a = series(noisy_level([1.0] * 30 + [1.4] * 30, seed=10))
    key_b, pts_b = series([1.0] * 4)
    seen = []
    reports = detect_all({a[0]: a[1], dataclasses.replace(key_b, machine="m2"): pts_b}, progress=seen.append)
    assert [r.status for r in reports] == ["ok", "too_short"]
    assert len(seen) == 2
    assert len(reports[0].regressions) == 1


@pytest.mark.parametrize("bad", [{"alpha": -1}, {"alpha": 1.0}, {"min_effect": -0.1}, {"min_effect": float("nan")},
                                 {"min_segment": 1}, {"min_points": 4}, {"try_z": 4.0}, {"tail_commits": 2}])
def test_policy_refuses_nonsense_knobs(bad):
    with pytest.raises(ValueError):
        DetectPolicy(**bad)


def test_too_short_series_is_never_a_regression():
    key, pts = series([1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0])  # 7 commits: below min_points
    rep = detect_series(key, pts)
    assert rep.status == "too_short" and rep.changes == () and rep.regressions == ()


def test_tied_medians_from_a_coarse_timer_still_show_a_step():
    vals = [1.0, 1.0, 1.1, 1.0, 1.0, 1.1, 1.0, 1.0, 1.0, 1.1] * 3 + [1.3, 1.3, 1.4, 1.3, 1.3, 1.4, 1.3, 1.3, 1.3, 1.3] * 2
    assert [s.index for s in find_steps(vals)] == [30]
    assert find_steps([1.0, 1.1] * 25) == []  # two timer ticks, alternating: no change


def test_a_step_among_runner_levels_is_placed_on_its_commit():
    """A second runner type 15% slower visits now and then, in runs; the code gets 10% slower at commit 61.

    Before, the runner's visits sit where the new level will be; after, they sit 10% above it. Only the
    split at 61 leaves both sides on the same two levels (main and main + 15%): the L1 fit put it at 51,
    where a run of that runner begins."""
    runner = np.zeros(90)
    for a, b in ((12, 14), (30, 33), (51, 55), (57, 58), (60, 61), (61, 62), (63, 64), (67, 69), (70, 73), (84, 86)):
        runner[a:b] = 1
    code = np.where(np.arange(90) >= 61, 1.10, 1.0)
    vals = noisy_level(code * np.where(runner == 1, 1.15, 1.0), cv=0.008, seed=3)
    steps = find_steps(vals)
    assert [s.index for s in steps if s.after > s.before] == [61]


def test_a_step_halfway_through_twenty_commits_is_placed_on_its_commit():
    """Ten commits against ten, fully apart: the rank test reads 1.8e-4, above alpha, so the tail rule reports the
    step; it named the first of the newest five commits (15 of 20, 16 of 21), not where the new level began."""
    for n in (20, 21, 22):
        for seed in range(5):
            vals = noisy_level([1.0] * 10 + [2.0] * (n - 10), seed=seed)
            assert [(s.index, round(s.ratio, 1)) for s in find_steps(vals, settle=True)] == [(10, 2.0)], (n, seed)


def test_exact_rank_test_with_ties_is_the_permutation_distribution():
    """The short side's exact p, conditional on tied values, equals enumerating every subset."""
    import itertools

    from mmtrack.analysis.detect import _exact_rank_sum_p

    rng = np.random.default_rng(4)
    for _ in range(60):
        a = np.round(rng.normal(rng.normal(0, 1.5), 1, int(rng.integers(2, 5))))
        b = np.round(rng.normal(0, 1, int(rng.integers(3, 10))))
        both = np.concatenate([a, b])
        ranks = np.array([np.sum(both < v) + (np.sum(both == v) + 1) / 2 for v in both])
        sums = np.array([ranks[list(c)].sum() for c in itertools.combinations(range(both.size), a.size)])
        seen = ranks[: a.size].sum()
        brute = min(1.0, 2 * min(np.mean(sums <= seen + 1e-9), np.mean(sums >= seen - 1e-9)))
        assert _exact_rank_sum_p(a, b) == pytest.approx(brute, abs=1e-12)


def test_a_step_in_the_newest_commits_on_a_coarse_timer_is_found():
    """A timer coarse enough that each commit's median lands on one of two ticks (4% either side of the
    level), so the spread's MAD is that tick. Four commits 20% up at the end are beyond every commit before
    them. The normal approximation gives that 8e-4 (ties shrink no tail), the exact test 1/C(74, 4)."""
    ticks = [0.96, 1.04, 1.04, 0.96, 0.96, 1.04, 0.96, 1.04, 0.96, 0.96] * 7
    steps = find_steps(ticks + [1.2, 1.2, 1.2, 1.2])
    assert [(s.index, round(s.ratio, 2)) for s in steps] == [(70, 1.25)]  # from the lower tick, the median
    assert find_steps(ticks + [1.04, 1.04, 1.04, 1.04]) == []  # four on the upper tick: no change


def test_a_small_step_among_scattered_runner_visits_is_found_on_the_main_level():
    """30% of commits run on a runner type 15% slower, scattered; the code gets 6% slower at commit 85 of 100.

    The runner's visits rank above the new level on both sides and dilute the rank test of the whole sides;
    the test of each side's main level (those visits left out) sees the step. Over 60 such series."""
    found = {True: 0, False: 0}
    for seed in range(60):
        rng = np.random.default_rng(seed)
        runner = np.where(rng.random(100) < 0.3, 1.15, 1.0)
        vals = np.exp(rng.normal(0, 0.015, 100)) * runner * np.where(np.arange(100) >= 85, 1.06, 1.0)
        for main_level in found:
            ups = [s.index for s in find_steps(vals, DetectPolicy(main_level=main_level)) if s.after > s.before]
            found[main_level] += any(82 <= i <= 88 for i in ups)
    assert found[True] >= 30 and found[False] <= 20, found


def test_scattered_runner_visits_alone_are_no_step():
    """The same runner visits without a code change: no step in 58 of 60 series. The two reported are the newest
    3-5 commits landing mostly on the slow runner by chance (one of them the tail rule's, with or without the
    main-level test): a lone series cannot tell that from a change, so the bound is a guard, not zero."""
    false = 0
    for seed in range(60):
        rng = np.random.default_rng(1000 + seed)
        vals = np.exp(rng.normal(0, 0.015, 100)) * np.where(rng.random(100) < 0.3, 1.15, 1.0)
        false += len(find_steps(vals))
    assert false <= 3


def test_refinement_carries_a_point_further_than_one_reach():
    """Binary segmentation can split a long segment 15 commits before a small step; each refinement pass
    moves a point at most 10 commits, so the passes repeat until it settles on the step."""
    from mmtrack.analysis.detect import _refine, _refine_pass

    x = np.log(noisy_level([1.0] * 43 + [1.05] * 57, cv=0.005, seed=8))
    assert _refine_pass(x, [28], DetectPolicy()) == [38]  # one pass: as far as it reaches
    assert _refine(x, [28], DetectPolicy()) == [43]


# --------------------------------------------------------------------------- the newest commits (analysis/newest.py)


def _state(change):
    from mmtrack.commands.detect import state_of

    return state_of(change)


def test_a_step_in_the_newest_two_commits_is_suspected_at_once():
    """Two commits 30% up after 95 quiet ones: the rank test cannot prove it yet, the gate's rules suspect it."""
    key, pts = series(noisy_level([1.0] * 95 + [1.3] * 2, seed=4))
    (cp,) = detect_series(key, pts).changes
    assert (cp.kind, _state(cp), cp.persists, cp.extra["index"]) == ("regression", "suspected", True, 95)
    assert cp.ratio == pytest.approx(1.3, rel=0.05) and cp.p_value is None
    assert detect_series(key, pts, DetectPolicy(newest=False)).changes == ()  # what detect said before


def test_a_newest_step_the_budget_holds_back_is_judged_by_the_gates_rules_instead():
    """Three commits 20% up after 117 quiet ones: detect's rank test names the step (p about 7e-6, its floor for 3
    against 117), which a suite of 500 series holds back (a lone step needs 2e-6). Its step kept the gate's rules off
    those commits; held back, the step they flag takes its place, suspected. A step the budget keeps stays as it is."""
    from mmtrack.analysis.budget import budgeted_reports

    key, pts = series(noisy_level([1.0] * 117 + [1.2] * 3, seed=3))
    report = detect_series(key, pts)
    (own,) = report.changes
    assert own.p_value is not None and 2e-6 < own.p_value < 1e-4 and own.extra["index"] == 117
    family = {pt.commit.sha: 500 for pt in pts}
    (held,), outcome = budgeted_reports([report], family, 0.001)
    (cp,) = held.changes
    assert outcome.held_back == [own] and held.if_last_held_back is None
    assert (cp.kind, _state(cp), cp.extra["index"], cp.p_value) == ("regression", "suspected", 117, None)
    assert budgeted_reports([report], family, None)[0][0].changes == (own,)  # no budget: detect's own step
    assert budgeted_reports([report], {sha: 1 for sha in family}, 0.001)[0][0].changes == (own,)  # kept alone


def test_a_quiet_series_has_nothing_to_hand_to_the_gates_rules():
    key, pts = series(noisy_level([1.0] * 120, seed=3))
    assert detect_series(key, pts).if_last_held_back is None


def test_two_newest_commits_at_a_level_two_stray_commits_had_reached_are_suspected_together():
    """A quiet series that strayed 20% up twice, then two commits there: each lies within the series' own noise (a
    commit came near), together they are a level no runner showed (the window's density over both); a runner level
    the series visits often is not, nor one commit alone."""
    levels = [1.0] * 97 + [1.2] * 2
    levels[30] = levels[70] = 1.2
    for seed in range(3):
        key, pts = series(noisy_level(levels, cv=0.02, seed=seed))
        (cp,) = detect_series(key, pts).changes
        assert (cp.kind, _state(cp), cp.extra["index"]) == ("regression", "suspected", 97)
        key, pts = series(noisy_level([*levels[:-2], 1.0, 1.2], cv=0.02, seed=seed))
        assert detect_series(key, pts).changes == ()
        visits = [1.2 if i % 6 == 3 else 1.0 for i in range(97)] + [1.2] * 2  # a runner type, one commit in six
        key, pts = series(noisy_level(visits, cv=0.02, seed=seed))
        assert detect_series(key, pts).changes == ()


def _tail_regressions(levels, cv, seeds):
    """Per seed, how many regressions detect reports in the newest 5 commits of ``levels`` (noise ``cv``)."""
    out = []
    for seed in seeds:
        key, pts = series(noisy_level(levels, cv=cv, seed=seed))
        out.append(sum(c.kind == "regression" and c.extra["index"] >= len(levels) - 5 for c in detect_series(key, pts).changes))
    return out


def test_a_newest_step_onto_a_level_the_series_strayed_to_is_suspected_once_each_commit_holds_it():
    """A mid-noise series (5%) that strays 20% up one commit in 16, then 3 commits 20% up: each lies within the
    series' own noise and at a level it strayed to, all three beyond the threshold together are a step (the window's
    density over them). Before, "a level the series visits" vetoed it: 7 of 12 seeds found. The same tail with its
    newest commit back is no level, nor are the stray commits alone, nor 2 commits at a level visited one commit in 4."""
    strays = [1.2 if i % 16 == 7 else 1.0 for i in range(100)]
    assert sum(_tail_regressions(strays[:97] + [1.2] * 3, 0.05, range(12))) >= 10
    assert sum(_tail_regressions(strays, 0.05, range(12))) == 0
    assert sum(_tail_regressions(strays[:97] + [1.2, 1.2, 1.0], 0.05, range(12))) <= 1
    often = [1.2 if i % 4 == 3 else 1.0 for i in range(100)]
    assert sum(_tail_regressions(often[:98] + [1.2, 1.2], 0.05, range(12))) == 0


def test_a_newest_step_whose_next_commits_ran_on_a_faster_runner_is_suspected():
    """A quiet series that runs 30% faster one commit in 8, then a 20% step 3 commits before the newest whose next
    two commits ran on the faster runner: no single commit holds the step (two of three lie below the level before),
    together they lie beyond every level the window visited (the gate's bar for an unseen commit, read over all
    three). The same tail without the step, or with the step's commit alone, is no level."""
    runner = [0.7 if i % 8 == 5 else 1.0 for i in range(97)]
    found = [detect_series(*series(noisy_level(runner + [1.2, 0.84, 0.84], cv=0.01, seed=seed))).changes
             for seed in range(8)]
    assert sum(len(c) == 1 and c[0].kind == "regression" and c[0].extra["index"] == 97 for c in found) >= 7
    assert all(_state(c[0]) == "suspected" for c in found if c)
    for tail in ([1.0, 0.7, 0.7], [1.2, 0.7, 0.7]):
        assert sum(_tail_regressions(runner + tail, 0.01, range(8))) == 0


def test_a_newest_step_whose_first_commit_ran_on_a_faster_runner_is_suspected_there():
    """The same quiet series, its step 2 commits before the newest: the step's commit ran on the faster runner (30%
    below, moved 20% up: within no threshold of either level), the newest on the usual one. The window's density reads
    the two as one step up, and the first as the faster runner moved by it, so the step is suspected at its commit.
    The faster runner unmoved before a commit 20% up, or that commit's level not held, is no level."""
    runner = [0.7 if i % 8 == 5 else 1.0 for i in range(98)]
    found = [detect_series(*series(noisy_level(runner + [0.84, 1.2], cv=0.01, seed=seed))).changes
             for seed in range(8)]
    assert sum(len(c) == 1 and c[0].kind == "regression" and c[0].extra["index"] == 98 for c in found) >= 7
    assert all(_state(c[0]) == "suspected" for c in found if c)
    for tail in ([0.7, 1.2], [0.84, 1.0]):
        assert sum(_tail_regressions(runner + tail, 0.01, range(8))) == 0


def test_a_newest_step_after_a_faster_runner_visit_is_not_read_as_an_improvement():
    """A series that runs 35% faster two commits in five, then a faster commit, a 20% step 2 commits before the newest,
    and the newest on the faster runner moved by it: read from the faster commits on, they look like a step down
    (two of three below), but the window's density reads them better as that runner unmoved, then the step up.
    Before, 6 of 8 seeds reported an improvement at the faster commits and no regression. The same tail without the
    step, or the faster runner twice after a usual commit, is no level either way."""
    runner = [0.65 if i % 5 in (1, 2) else 1.0 for i in range(97)]
    found = [detect_series(*series(noisy_level(runner + [0.65, 1.2, 0.78], cv=0.01, seed=seed))).changes
             for seed in range(8)]
    assert sum(len(c) == 1 and c[0].kind == "regression" and c[0].extra["index"] == 98 for c in found) >= 7
    assert all(_state(c[0]) == "suspected" for c in found if c)
    for tail in ([0.65, 1.0, 0.65], [1.0, 0.65, 0.65]):
        assert all(not detect_series(*series(noisy_level(runner + tail, cv=0.01, seed=seed))).changes
                   for seed in range(8))


def test_a_newest_step_most_of_whose_commits_ran_on_a_faster_runner_is_not_read_as_an_improvement():
    """The same series, a 20% step 4 commits before the newest, three of its four commits on the faster runner moved
    by it (22% below the usual level, one 20% above): the gate reads the first as a step down, the window's density
    reads the four far better as one step up. Before, every seed reported an improvement there. Four commits 22% below
    with none above are either reading, and no regression is reported."""
    runner = [0.65 if i % 5 in (1, 2) else 1.0 for i in range(96)]
    found = [detect_series(*series(noisy_level(runner + [0.78, 1.2, 0.78, 0.78], cv=0.01, seed=seed))).changes
             for seed in range(8)]
    assert sum(len(c) == 1 and c[0].kind == "regression" and c[0].extra["index"] == 96 for c in found) >= 7
    assert all(_state(c[0]) == "suspected" for c in found if c)
    assert sum(_tail_regressions(runner + [0.78] * 4, 0.01, range(8))) == 0


def test_the_tail_of_a_step_detect_just_found_is_not_read_against_the_density():
    """The same 3 newest commits 20% up read as a step when detect's last change point lies 30 commits back or more,
    and not when it lies nearer: after a step the window has not yet shown the new level's runners (a quiet series
    whose step detect had found 7 commits before got a second, false point there)."""
    from mmtrack.analysis.newest import _beyond_the_density
    from mmtrack.analysis.policy import ComparePolicy

    strays = [1.2 if i % 16 == 7 else 1.0 for i in range(97)]
    values = noisy_level(strays + [1.2] * 3, cv=0.05, seed=3)
    assert _beyond_the_density(values, 97, 0, ComparePolicy())
    assert not _beyond_the_density(values, 97, 80, ComparePolicy())
    assert not _beyond_the_density([*values[:-1], values[96]], 97, 0, ComparePolicy())  # its newest commit went back


def test_a_move_that_began_before_the_held_commits_is_told_from_a_runner_visit():
    """One commit of the 3 before on a slower runner is a visit; the one just before, or two of three, is a move that
    began before; 4 of the 10 before at that level is a level reached before (a step detect has not split yet)."""
    from mmtrack.analysis.newest import _moved_before, _reached_before
    from mmtrack.analysis.noise import segment_noise

    flat = noisy_level([1.0] * 90, cv=0.01, seed=1)
    noise = segment_noise(flat)
    bar = np.log(1.1)

    def moved(tail):
        return _moved_before(noise, [*flat, *tail], 1.0, bar)

    assert not moved([1.0] * 7 + [1.2, 1.0, 1.0])
    assert moved([1.0] * 9 + [1.2])
    assert moved([1.0] * 7 + [1.2, 1.2, 1.0])
    assert not moved([1.0] * 7 + [0.8, 0.8, 0.8])  # the other way
    reached = [1.2, 1.0, 1.2, 1.2, 1.0, 1.2, 1.0, 1.0, 1.0, 1.0]
    assert not moved(reached) and _reached_before(noise, [*flat, *reached], 1.0, bar)
    assert not _reached_before(noise, [*flat, *reached[1:], 1.0], 1.0, bar)  # 3 of 10: runner visits


def test_the_next_commits_settle_a_suspected_step():
    """Held by the next commits: no longer suspected (confirmed, or proved by the rank test); left by them: withdrawn."""
    held = noisy_level([1.0] * 95 + [1.3] * 6, seed=4)
    key, pts = series(held)
    (cp,) = detect_series(key, pts).changes
    assert (cp.kind, _state(cp), cp.extra["index"]) == ("regression", "confirmed", 95)
    back = noisy_level([1.0] * 95 + [1.3] + [1.0] * 4, seed=4)
    key, pts = series(back)
    assert detect_series(key, pts).changes == ()


def test_a_quiet_flat_tail_and_a_runner_level_the_series_visits_are_never_suspected():
    for seed in range(5):
        key, pts = series(noisy_level([1.0] * 100, cv=0.02, seed=seed))
        assert detect_series(key, pts).changes == ()
    # every tenth commit on a runner 30% slower: two such commits at the end are that runner, not a step
    levels = [1.3 if i % 10 == 9 else 1.0 for i in range(98)] + [1.3, 1.3]
    key, pts = series(noisy_level(levels, seed=5))
    assert [c for c in detect_series(key, pts).changes if c.extra["index"] >= 95] == []


def test_detect_fails_on_a_suspected_regression_only_when_asked():
    import json

    from mmtrack.cli_results import detect_json as to_json
    from mmtrack.commands.detect import DetectOutcome

    key, pts = series(noisy_level([1.0] * 95 + [1.3] * 2, seed=4))
    report = detect_series(key, pts)
    for fail_on, code in ((("regression",), 0), (("suspected",), 1), ((), 0)):
        outcome = DetectOutcome([report], None, DetectPolicy(), fail_on)
        assert outcome.exit_code == code and len(outcome.suspected_regressions) == 1 and not outcome.open_regressions
    (change,) = json.loads(to_json(outcome))["series"][0]["changes"]
    assert change["state"] == "suspected" and change["kind"] == "regression"


def test_ranks_are_numpys_unique_ranks_bit_for_bit() -> None:
    """detect's ranks from one sort give what np.unique's inverse and counts give, ties and NaN included."""
    from mmtrack.analysis.detect import _ranks

    rng = np.random.default_rng(11)
    cases = [rng.normal(size=n) for n in (1, 2, 7, 300)] + [np.round(rng.normal(size=200), 1), np.ones(9),
                                                              np.array([0.0, -0.0, 1.0]), np.array([0.0, -0.0, 1.0, np.nan, np.nan, 2.0])]
    for x in cases:
        _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
        ranks, got_counts = _ranks(x)
        assert ranks.tobytes() == (np.cumsum(counts) - (counts - 1) / 2.0)[inverse].tobytes()
        assert got_counts.tolist() == counts.tolist()
