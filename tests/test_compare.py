"""compare_measurements: verdicts, direction, significance, thresholds, history, renderers."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest
from rich.console import Console

from mmtrack.analysis.compare import (
    MARKS,
    ComparePolicy,
    compare_measurements,
    compare_pair,
    decided_by_last,
    decided_in_run,
    series_history,
    series_later,
    significance,
)
from mmtrack.analysis.detect import find_steps
from mmtrack.analysis.gate import failing_rows
from mmtrack.analysis.noise import follow_up, phase_noise, segment_noise, young_level
from mmtrack.analysis.render import render_json, render_markdown, render_table, summary_line, verdict_text
from mmtrack.measure.metrics import Direction, MetricFormat, MetricSummary, default_direction
from mmtrack.results import Measurement, MetricKey


def meas(
    values,
    *,
    name="time_per_op",
    unit="s",
    section="timing",
    bench="suite.Bench.time_x",
    params=None,
    direction=None,
    version="v1",
    fmt=MetricFormat.NUMBER,
) -> Measurement:
    summ = MetricSummary.from_values(section, name, unit, list(values), fmt=fmt, direction=direction)
    return Measurement.from_summary(bench, params or {}, summ, version=version)


def noisy(level, n=20, cv=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return level * (1 + rng.normal(0, cv, n))


def test_regression_and_improvement_follow_direction():
    # A duration that grows 30% regressed; a throughput that grows 30% improved.
    before = [meas(noisy(1.0, seed=1)), meas(noisy(100.0, seed=2), name="throughput", unit="GiB/s")]
    after = [meas(noisy(1.3, seed=3)), meas(noisy(130.0, seed=4), name="throughput", unit="GiB/s")]
    c = compare_measurements(before, after)
    by_metric = {r.metric.name: r for r in c.rows}
    assert by_metric["time_per_op"].verdict == "regressed"
    assert by_metric["time_per_op"].mark == "+"
    assert by_metric["time_per_op"].test == "mann-whitney"
    assert by_metric["time_per_op"].ratio == pytest.approx(1.3, rel=0.02)
    assert by_metric["throughput"].verdict == "improved"
    assert by_metric["throughput"].mark == "-"
    # and the other way round
    c2 = compare_measurements(after, before)
    assert {r.metric.name: r.verdict for r in c2.rows} == {"time_per_op": "improved", "throughput": "regressed"}


def test_neutral_metric_is_never_flagged():
    assert default_direction("id", MetricFormat.INTEGER) is Direction.NEUTRAL
    b = meas([3] * 10, name="algo", unit="id", section="custom", fmt=MetricFormat.INTEGER)
    a = meas([7] * 10, name="algo", unit="id", section="custom", fmt=MetricFormat.INTEGER)
    row = compare_measurements([b], [a]).rows[0]
    assert row.direction is Direction.NEUTRAL
    assert row.verdict == "unchanged"
    assert "neutral" in row.note
    assert not failing_rows(compare_measurements([b], [a]))


def test_small_change_is_unchanged():
    small = compare_pair(meas(noisy(1.0, seed=1)), meas(noisy(1.05, seed=2)))
    assert small.verdict == "unchanged" and small.mark == " "
    assert small.ratio == pytest.approx(1.05, rel=0.02)


def test_ambiguous_when_beyond_threshold_but_not_significant():
    before = meas([1.0, 1.4, 0.7, 1.2, 0.9, 1.3, 0.8, 1.1, 1.0, 1.05])
    after = meas([1.25, 1.45, 0.75, 1.3, 0.95, 1.35, 0.85, 1.2, 1.15, 1.3])
    row = compare_pair(before, after)
    assert max(row.ratio, 1 / row.ratio) > 1.1
    assert row.verdict == "ambiguous"
    assert row.mark == "~"
    assert row.p_value is not None and row.p_value >= ComparePolicy().alpha
    assert row.note.startswith("not significant, p=")


def test_failed_fixed_new_removed_not_comparable():
    ok = meas(noisy(1.0))
    failed = dataclasses.replace(ok, status="failed", median=None, samples=())
    other_bench = meas(noisy(1.0), bench="suite.Other.time_y")
    gone = meas(noisy(1.0), bench="suite.Gone.time_z")
    changed_code = meas(noisy(1.0), bench="suite.Code.time_c", version="v2")
    before = [ok, gone, meas(noisy(1.0), bench="suite.Code.time_c", version="v1"), dataclasses.replace(ok, benchmark="b.fixed", status="failed", median=None)]
    after = [failed, other_bench, changed_code, dataclasses.replace(ok, benchmark="b.fixed")]
    c = compare_measurements(before, after)
    verdicts = {r.benchmark: r.verdict for r in c.rows}
    assert verdicts == {
        "suite.Bench.time_x": "failed",
        "suite.Other.time_y": "new",
        "suite.Gone.time_z": "removed",
        "suite.Code.time_c": "not comparable",
        "b.fixed": "fixed",
    }
    marks = {r.benchmark: r.mark for r in c.rows}
    assert marks["suite.Bench.time_x"] == "!" and marks["suite.Code.time_c"] == "x" and marks["b.fixed"] == "*"
    # a newly failing benchmark gates --fail-on regression; a still failing one does not
    assert [r.benchmark for r in failing_rows(c)] == ["suite.Bench.time_x"]
    still = compare_measurements([failed], [failed])
    assert still.rows[0].verdict == "failed" and not failing_rows(still)


def test_a_metric_not_measured_is_neither_failing_nor_fixed():
    """n/a (a counter this machine lacks) in both runs is no failure, and a value after n/a fixed nothing: both are
    not comparable; a benchmark that failed still reads failed."""
    counter = dict(name="cycles", unit="cycles/op", section="counters")
    na = dataclasses.replace(meas([1.0], **counter), median=None, samples=())
    valued = meas(noisy(1000.0), **counter)
    both = compare_pair(na, na)
    assert both.verdict == "not comparable" and both.note == "not measured in either run"
    then = compare_pair(na, valued)
    assert then.verdict == "not comparable" and then.note == "not measured before"
    now = compare_pair(valued, na)
    assert now.verdict == "not comparable" and now.note == "not measured in this run"
    assert not failing_rows(compare_measurements([valued], [na]), ("regression", "failed"))
    failed = dataclasses.replace(valued, status="failed", median=None, samples=())
    assert compare_pair(failed, valued).verdict == "fixed"


def test_counters_use_a_much_smaller_threshold():
    b = meas([1000.0] * 10, name="instructions", unit="instructions/op", section="counters")
    a = meas([1030.0] * 10, name="instructions", unit="instructions/op", section="counters")
    row = compare_pair(b, a)
    assert row.threshold == 0.01
    assert row.verdict == "regressed"  # 3% more instructions per op
    # the same 3% on a timing is below the 10% default
    assert compare_pair(meas(noisy(1.0)), meas(noisy(1.0) * 1.03)).verdict == "unchanged"


def test_per_metric_and_per_benchmark_overrides():
    pol = ComparePolicy(thresholds={"suite.Strict.*": 0.02, "throughput": 0.5})
    assert pol.threshold_for("suite.Strict.time_a", MetricKey("timing", "time_per_op", "s")) == 0.02
    assert pol.threshold_for("suite.Other.time_a", MetricKey("timing", "throughput", "GiB/s")) == 0.5
    assert pol.threshold_for("suite.Other.time_a", MetricKey("timing", "time_per_op", "s")) == 0.10
    assert pol.threshold_for("x", MetricKey("counters", "instructions", "instructions/op")) == 0.01
    # counters that vary with timing keep the default
    assert pol.threshold_for("x", MetricKey("counters", "cycles", "cycles/op")) == 0.10
    assert pol.threshold_for("x", MetricKey("counters", "task-clock", "task-clock/op")) == 0.10
    before, after = meas(noisy(1.0, seed=1), bench="suite.Strict.time_a"), meas(noisy(1.05, seed=2), bench="suite.Strict.time_a")
    assert compare_pair(before, after, pol).verdict == "regressed"
    assert compare_pair(before, after).verdict == "unchanged"


def test_ci_overlap_fallback_and_effect_only():
    # two samples per side: Mann-Whitney cannot reach alpha, so the CIs decide
    b = dataclasses.replace(meas([1.0, 1.01]), ci_low=0.95, ci_high=1.05)
    a = dataclasses.replace(meas([1.5, 1.51]), ci_low=1.45, ci_high=1.55)
    sig, p, test = significance(b, a, 0.002)
    assert (sig, p, test) == (True, None, "ci-overlap")
    a_wide = dataclasses.replace(a, ci_low=1.0, ci_high=2.0)
    assert compare_pair(b, a_wide).verdict == "ambiguous"
    # one value per side, no interval: the effect alone decides (as asv does)
    one_b = dataclasses.replace(meas([1.0]), samples=())
    one_a = dataclasses.replace(meas([2.0]), samples=())
    row = compare_pair(one_b, one_a)
    assert row.test == "effect-only" and row.verdict == "regressed"


def _as_asv_file(samples) -> Measurement:
    """A commit as asv records it without --record-samples: median, quartiles, count and asv's own 99% interval."""
    from asv_runner.statistics import compute_stats

    m = meas(samples)
    _, st = compute_stats(list(samples), 1)
    return dataclasses.replace(m, samples=(), ci_low=st["ci_99_a"], ci_high=st["ci_99_b"], q1=st["q_25"],
                               q3=st["q_75"])


def test_without_samples_the_history_gate_tests_the_medians_on_their_quartiles():
    # Ten samples, one of them an outlier: asv's 99% interval of the before commit's median reaches it (x1.35),
    # so the interval hides a 20% step; the quartiles do not.
    rng = np.random.default_rng(5)
    before = _as_asv_file(np.append(rng.normal(1.0, 0.01, 9), 1.35))
    after = _as_asv_file(rng.normal(1.2, 0.01, 10))
    assert before.ci_high > after.median  # the intervals overlap
    assert significance(before, after, 0.01)[::2] == (False, "ci-overlap")  # two sample sets alone: as asv
    sig, p, test = significance(before, after, 0.01, quartiles=True)
    assert sig and test == "quartiles" and p < 1e-6

    def scaled(m, k):
        return dataclasses.replace(m, median=m.median * k, q1=m.q1 * k, q3=m.q3 * k)

    assert significance(scaled(before, 1e-80), scaled(after, 1e-80), 0.01, quartiles=True)[1] == pytest.approx(p)
    history = _quiet_history(100)
    row = compare_pair(before, after, history=history)
    assert (row.verdict, row.state, row.test) == ("regressed", "suspected", "quartiles")
    assert compare_pair(before, after).verdict == "ambiguous"  # without history, asv's rule: the CIs overlap
    # unchanged code: the medians' difference is within their quartiles' error
    same = _as_asv_file(rng.normal(1.0, 0.01, 10))
    assert not significance(before, same, 0.01, quartiles=True)[0]
    # too few samples to trust quartiles: the intervals decide, as before
    few = dataclasses.replace(after, count=2)
    assert significance(before, few, 0.01, quartiles=True)[2] == "ci-overlap"
    # a coarse timer: every sample tied on both sides, so any difference of the medians is real
    tied_a = dataclasses.replace(_as_asv_file([1.0] * 10), count=10)
    tied_b = dataclasses.replace(_as_asv_file([1.2] * 10), count=10)
    assert significance(tied_a, tied_b, 0.01, quartiles=True) == (True, 0.0, "quartiles")
    assert significance(tied_a, tied_a, 0.01, quartiles=True) == (False, 1.0, "quartiles")


def test_history_turns_a_normal_jump_into_ambiguous():
    # The series flips between two runner levels, 1.0 and 1.15: a 15% jump is its normal noise.
    history = [1.0, 1.15, 1.0, 1.0, 1.15, 1.15, 1.0, 1.15, 1.0, 1.0, 1.15, 1.0, 1.15, 1.0, 1.0, 1.0]
    before = meas(noisy(1.0, cv=0.005, seed=1))
    after = meas(noisy(1.15, cv=0.005, seed=2))
    assert compare_pair(before, after).verdict == "regressed"  # two sample sets alone: overconfident
    row = compare_pair(before, after, history=history)
    assert row.verdict == "ambiguous" and row.note == "within the series' own noise"
    # On a quiet history the same jump stands out.
    quiet = list(1.0 + 0.004 * np.sin(np.arange(20)))
    row = compare_pair(before, after, history=quiet)
    assert row.verdict == "regressed" and row.history_z is not None and row.history_z > 3
    # history is passed per case through compare_measurements
    c = compare_measurements([before], [after], history={before.case: history})
    assert c.rows[0].verdict == "ambiguous"


def test_segment_noise_uses_the_current_level_and_keeps_the_tail():
    # An old level at 2.0 then the current level at 1.0: the deviation is measured from 1.0.
    hist = [2.0] * 12 + [1.0 + 0.01 * ((-1) ** i) for i in range(12)]
    noise = segment_noise(hist)
    assert noise is not None and noise.points == 12
    assert noise.deviation(1.3) / noise.sd > 10  # 1.3 vs a level of 1.0 +- 1%
    assert noise.near(1.3, 0.1) == 0
    assert noise.near(1.0, 0.1) == 24  # the segment's 12, and the old level's 12 on their own level
    assert segment_noise([1.0, 1.0], 5) is None  # too short
    # a runner level the series visited before is near commits of the segment
    runners = [1.0] * 20 + [1.5] + [1.2] * 3
    noise = segment_noise(runners)
    assert noise is not None and noise.points == 24
    assert noise.near(1.21, 0.02) == 3 and noise.near(1.49, 0.02) == 1 and noise.near(1.35, 0.02) == 0
    # ... in the order they came: the 1.2 level was held 3 commits in a row, the 1.5 one visited once
    assert noise.longest_run_near(1.21, 0.02) == 3 and noise.longest_run_near(1.49, 0.02) == 1
    assert noise.longest_run_near(1.35, 0.02) == 0


def test_a_step_keeps_the_runner_levels_the_series_visited_before_it():
    """Before a step to 1.2 the series visited a runner 30% slower now and then; the level since has not. A
    visit now lands at 1.2 × 1.3: near the earlier visits, each read from the level of its time, so it is the
    runner again, not a second step."""
    before = [1.0 + 0.005 * ((-1) ** i) for i in range(40)]
    for i in (5, 14, 23, 32):
        before[i] *= 1.3
    after = [1.2 + 0.006 * ((-1) ** i) for i in range(12)]
    noise = segment_noise(before + after)
    assert noise is not None and noise.points == 12  # the level since the step
    assert noise.near(1.2 * 1.3, 2.25 * noise.sd) == 4
    assert noise.longest_run_near(1.2 * 1.3, 2.25 * noise.sd) == 1  # each earlier visit read from its own level
    assert len(noise.in_order) == 52 and sorted(noise.in_order) == list(noise.seen)
    row = compare_pair(meas(noisy(1.2, cv=0.005, seed=1)), meas(noisy(1.2 * 1.3, cv=0.005, seed=2)),
                       history=before + after)
    assert row.verdict == "ambiguous" and row.note == "within the series' own noise"


def _quiet_history(n=30, seed=3, level=1.0, cv=0.01):
    return list(level * np.exp(np.random.default_rng(seed).normal(0, cv, n)))


def test_history_verdict_is_suspected_until_later_commits_settle_it():
    history = _quiet_history()
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.25, cv=0.005, seed=2))
    row = compare_pair(before, after, history=history)
    assert (row.verdict, row.state) == ("regressed", "suspected")
    assert compare_pair(before, after).state is None  # two samples alone: no state
    # a history too short for a noise model: suspected on the samples, settled by later commits alike
    short = compare_pair(before, after, history=history[:3])
    assert (short.verdict, short.state, short.history_z) == ("regressed", "suspected", None)
    assert compare_pair(before, after, history=history[:3], later=[1.25, 1.26, 1.24, 1.25]).state == "confirmed"
    # later commits that stay at the new level confirm; ones back at the old level refute
    assert compare_pair(before, after, history=history, later=[1.24, 1.26, 1.25, 1.25]).state == "confirmed"
    assert compare_pair(before, after, history=history, later=[1.0, 1.01, 0.99]).state == "refuted"
    assert compare_pair(before, after, history=history, later=[1.25, 1.24, 1.26]).state == "suspected"  # not yet 4
    # One commit back is not yet a refutal: the level the next four hold may still confirm it (held_level).
    # 1.10 (a faster runner) is nearer the old level than the new one; detect still proves the level.
    long = _quiet_history(100)
    assert compare_pair(before, after, history=long, later=[1.0]).state == "suspected"
    assert compare_pair(before, after, history=long, later=[1.25, 1.10, 1.24]).state == "suspected"
    assert compare_pair(before, after, history=long, later=[1.25, 1.10, 1.24, 1.25]).state == "confirmed"
    # ... one commit all the way back keeps detect from starting the level (its tail rule asks every commit to lie
    # out; its rank test gives p 8e-4 among 100); a level none of the 100 commits came near, held by 4 of the 5,
    # confirms it all the same. A young window of 30 has not shown enough for that: only detect confirms there.
    assert compare_pair(before, after, history=long, later=[1.25, 1.0, 1.24, 1.25]).state == "confirmed"
    assert compare_pair(before, after, history=history, later=[1.25, 1.0, 1.24, 1.25]).state == "refuted"
    visited = [*long[:40], 1.25, *long[41:]]  # ... nor a level one commit of the window reached
    assert compare_pair(before, after, history=visited, later=[1.25, 1.0, 1.24, 1.25]).verdict == "ambiguous"
    assert compare_pair(before, after, history=visited, later=[1.25, 1.25, 1.24, 1.25]).state == "confirmed"
    assert compare_pair(before, after, history=history, later=[1.25, 1.10, 1.24, 1.25]).state == "confirmed"
    assert compare_pair(before, after, history=long, later=[1.25, 1.0, 1.01]).state == "suspected"
    assert compare_pair(before, after, history=long, later=[1.25, 1.0, 1.01, 1.24]).state == "refuted"
    assert compare_pair(before, after, history=long, later=[1.25, float("nan"), 1.24]).state == "suspected"
    noise = segment_noise(history)
    assert noise is not None
    assert follow_up(noise, 0.8, [0.81, 0.8, 0.79, 0.8]) == "confirmed"  # improvements too, the other way
    # 2 of 3 is a policy away; a failed run (nan) counts as neither
    loose = ComparePolicy(confirm_window=3, confirm_agree=2)
    assert follow_up(noise, 1.25, [1.25, 1.0, 1.24], loose) == "confirmed"
    assert follow_up(noise, 1.25, [1.25, 1.0, 1.01], loose) == "refuted"
    assert follow_up(noise, 1.25, [float("nan"), 1.25], loose) == "suspected"


def test_gate_fails_on_confirmed_regressions_and_opts_in_to_suspected():
    history = _quiet_history()
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.25, cv=0.005, seed=2))
    suspected = compare_measurements([before], [after], history={before.case: history})
    assert suspected.states() == {"suspected": 1}
    assert not failing_rows(suspected, ["regression"]) and failing_rows(suspected, ["suspected"])
    confirmed = compare_measurements(
        [before], [after], history={before.case: history}, later={before.case: [1.25, 1.26, 1.24, 1.25]}
    )
    assert failing_rows(confirmed, ["regression"])
    refuted = compare_measurements([before], [after], history={before.case: history}, later={before.case: [1.0] * 3})
    assert not failing_rows(refuted, ["regression"]) and not failing_rows(refuted, ["suspected"])


def test_summary_line_shows_each_verdicts_states_beside_it():
    """Each verdict's states beside it: a suspicion the next commits refuted is counted with the unchanged rows
    and says so there (as an A/B run that refutes one reads), not with the regressions."""
    history = _quiet_history()
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.25, cv=0.005, seed=2))
    faster = meas(noisy(0.8, cv=0.005, seed=3), bench="suite.Bench.time_y")
    c = compare_measurements(
        [before, meas(noisy(1.0, cv=0.005, seed=4), bench="suite.Bench.time_y")], [after, faster],
        history={before.case: history, faster.case: history}, later={before.case: [1.0] * 3},
    )
    assert [(r.verdict, r.state) for r in c.rows] == [("unchanged", "refuted"), ("improved", "suspected")]
    assert c.rows[0].note == "suspected regressed; the next commits did not hold the level"
    assert "2 metrics; 1 improved (1 suspected), 1 unchanged (1 refuted)" in summary_line(c)
    assert c.states() == {"suspected": 1, "refuted": 1} and c.states("regressed") == {}
    assert verdict_text(c.rows[0]) == (
        "unchanged (refuted): suspected regressed; the next commits did not hold the level")


def test_one_old_spike_does_not_hide_a_real_step():
    # A quiet series with one +40% spike: today's "beyond every excursion" rule hid a 34% step.
    history = _quiet_history()
    history[10] = 1.4
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.34, cv=0.005, seed=2))
    assert compare_pair(before, after, history=history).verdict == "regressed"
    # A level one earlier commit visited: ambiguous until the next commits stay there.
    history[20] = 1.345
    row = compare_pair(before, after, history=history)
    assert (row.verdict, row.state, row.note) == ("ambiguous", None, "within the series' own noise")
    row = compare_pair(before, after, history=history, later=[1.33, 1.35, 1.34, 1.34])
    assert (row.verdict, row.state) == ("regressed", "confirmed")
    # A runner level visited twice in 30 commits (over NEW_LEVEL_SEEN of them), both tightly there, is the series'
    # own noise, whatever follows.
    history[25] = 1.338
    row = compare_pair(before, after, history=history, later=[1.33, 1.35, 1.34, 1.34])
    assert (row.verdict, row.state) == ("ambiguous", None)


def test_strays_of_the_tail_one_at_a_time_do_not_stop_a_held_level_from_confirming():
    """A mid-noise series (±2.5% from commit to commit) whose tail strayed six times, one commit at a time, anywhere
    from +11% to +26%: five of them lie within a deviation of +20%, more than NEW_LEVEL_SEEN, and as the newest commit
    a +20% step is within the series' own noise. But strays spread evenly and come alone, where a runner type the
    series visits comes often, tightly or in runs: five commits holding +20% confirm the step. Two of those strays in
    a row are a level the series held once already: ambiguous, whatever follows."""
    history = [1.0 + 0.025 * (-1) ** i for i in range(100)]
    for i, v in zip(range(5, 100, 13), [1.14, 1.17, 1.20, 1.23, 1.26, 1.11]):
        history[i] = v
    noise = segment_noise(history)
    assert noise.near(1.2, noise.usual_sd) == 5 and noise.longest_run_near(1.2, noise.usual_sd) == 1
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.2, cv=0.005, seed=2))
    held = [1.21, 1.19, 1.2, 1.22]
    row = compare_pair(before, after, history=history)
    assert (row.verdict, row.note) == ("ambiguous", "within the series' own noise")
    row = compare_pair(before, after, history=history, later=held)
    assert (row.verdict, row.state) == ("regressed", "confirmed")
    in_a_row = list(history)
    in_a_row[6], in_a_row[18] = history[18], history[17]  # the +17% stray next to the +14% one
    assert segment_noise(in_a_row).longest_run_near(1.2, noise.usual_sd) == 2
    assert compare_pair(before, after, history=in_a_row, later=held).verdict == "ambiguous"


def test_a_level_held_for_five_commits_on_a_noisy_series_is_left_to_detect(monkeypatch):
    """On a series whose commits stray 15% from its level, five commits holding ×2.2 are a phase as often as a
    step: real CI runners held such levels for 4-6 commits and left them (scripts/real_ci_noise.py). The next commits
    no longer confirm it (ambiguous, with why); as the newest commit it is still suspected, and on a quiet series the
    same five commits confirm it."""
    from mmtrack.analysis import history_evidence as compare_module  # where the rule reads it

    history = list(np.exp(np.random.default_rng(5).normal(0, 0.15, 100)))
    before, after, held = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(2.2, cv=0.005, seed=2)), [2.1, 2.3, 2.2, 2.25]
    row = compare_pair(before, after, history=history, later=held)
    assert (row.verdict, row.state) == ("ambiguous", None)
    assert "on a series this noisy (its commits stray 15%)" in row.note and "detect decides" in row.note
    assert (compare_pair(before, after, history=history).verdict,
            compare_pair(before, after, history=history).state) == ("regressed", "suspected")
    monkeypatch.setattr(compare_module, "PHASE_SPREAD", math.inf)  # the rule off: the gate before it confirmed
    assert compare_pair(before, after, history=history, later=held).state == "confirmed"
    monkeypatch.undo()
    quiet = _quiet_history(100, cv=0.01)
    row = compare_pair(before, meas(noisy(1.25, cv=0.005, seed=2)), history=quiet, later=[1.25, 1.24, 1.26, 1.25])
    assert (row.verdict, row.state) == ("regressed", "confirmed")


def test_a_young_history_needs_a_larger_deviation_to_suspect_a_change():
    """30 commits measure a series' spread, and hardly its tail: a +12% commit 4.5 deviations out is
    ambiguous there (5.7 needed, ``history_points``), and suspected against the 100 commits it came from.
    The next commits holding it still confirm it; a larger step is suspected at once."""
    history = _quiet_history(100, seed=4, cv=0.02)
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.12, cv=0.005, seed=2))
    row = compare_pair(before, after, history=history[-30:])
    assert (row.verdict, row.state) == ("ambiguous", None)
    assert row.note == "a young history (30 commits) needs 5.7 deviations, 4.5 here"
    row = compare_pair(before, after, history=history)
    assert (row.verdict, row.state) == ("regressed", "suspected")
    held = [1.12, 1.11, 1.12, 1.13]
    assert compare_pair(before, after, history=history[-30:], later=held).state == "confirmed"
    step = compare_pair(before, meas(noisy(1.25, cv=0.005, seed=2)), history=history[-30:])
    assert (step.verdict, step.state) == ("regressed", "suspected")


def test_a_level_few_commits_reached_is_confirmed_once_the_next_commits_hold_it():
    """Two one-off spikes in 100 commits reached +25%: one commit there is no evidence (ambiguous), but that
    commit and the next four holding the level are (``held_level``); a level 10 of the 100 reached is a
    runner type the series visits, and stays ambiguous."""
    history = _quiet_history(100)
    history[20], history[60] = 1.25, 1.26
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.25, cv=0.005, seed=2))
    held = [1.25, 1.24, 1.26, 1.25]
    row = compare_pair(before, after, history=history)
    assert (row.verdict, row.state) == ("ambiguous", None)
    assert compare_pair(before, after, history=history, later=held[:3]).state is None  # not yet: four must hold
    row = compare_pair(before, after, history=history, later=held)
    assert (row.verdict, row.state) == ("regressed", "confirmed")
    # one of the four only partly back (a faster runner): still a held level; two all the way back: never
    assert compare_pair(before, after, history=history, later=[1.25, 1.12, 1.26, 1.25]).state == "confirmed"
    assert compare_pair(before, after, history=history, later=[1.25, 1.0, 1.01, 1.25]).state is None
    # the per-commit gate reports it once, on the commit that confirms it
    values = [*history, 1.0, 1.25, *held]
    points = [meas(noisy(v, n=10, cv=0.005, seed=i)) for i, v in enumerate(values)]
    labels = [f"c{i}" for i in range(len(values))]
    assert decided_by_last(points[:-1], labels[:-1]) == []
    rows = decided_by_last(points, labels)
    assert [(r.verdict, r.state, r.note) for r in rows] == [("regressed", "confirmed", "at c101")]
    # a runner level 10 of the 100 commits visited (over NEW_LEVEL_OFTEN), even one at a time: a runner type drawn
    # afresh each time, the series' own noise, whatever follows
    visited = list(history)
    for i in range(5, 100, 10):
        visited[i] = 1.25
    assert compare_pair(before, after, history=visited, later=held).verdict == "ambiguous"


def test_a_held_level_on_a_series_that_flips_between_two_runners_is_read_against_its_usual_runner():
    """A quiet series that runs on a faster runner type (0.72x) a third of the time: the IQR spans both levels, a
    spread of about 24% that a +20% step lies within, so the commit is ambiguous. Five commits at +20%, a level
    no commit ever reached, are a new level on the usual runner's spread (2%): confirmed. The faster type's own
    level, held as long, is still the series' noise."""
    history = _quiet_history(100)
    for i in range(0, 100, 3):
        history[i] *= 0.72
    noise = segment_noise(history)
    assert noise.sd > 0.2 and noise.usual_sd < 0.03
    before, after = meas(noisy(1.0, cv=0.005, seed=1)), meas(noisy(1.2, cv=0.005, seed=2))
    assert compare_pair(before, after, history=history).verdict == "ambiguous"
    row = compare_pair(before, after, history=history, later=[1.21, 1.19, 1.2, 1.2])
    assert (row.verdict, row.state) == ("regressed", "confirmed")
    faster = meas(noisy(0.72, cv=0.005, seed=2))
    row = compare_pair(before, faster, history=history, later=[0.72, 0.71, 0.72, 0.73])
    assert row.verdict != "improved"


def test_a_step_beyond_every_runner_level_a_full_window_visited_is_suspected_at_once():
    """A quiet series on a slower runner type (+25%) a third of the time, two commits at a time: the IQR spans both
    levels (a spread of about 16%), so z reads a +45% commit as 2.2 deviations. The window's density reads the two
    levels and nothing near +45%: a step from where its commits lie, suspected as the newest commit. The slower
    runner's own level is not; nor is the same commit with 50 commits of history, or just after the slower runner."""
    history = _quiet_history(100)
    for i in range(100):
        if i % 6 in (4, 5):
            history[i] *= 1.25
    noise = segment_noise(history)
    assert noise.sd > 0.12 and noise.commit_sd < 0.03
    before, step = meas(noisy(history[-1], cv=0.005, seed=1)), meas(noisy(1.45, cv=0.005, seed=2))
    row = compare_pair(before, step, history=history)
    assert (row.verdict, row.state) == ("regressed", "suspected") and row.history_z < 4
    assert "beyond every level the last 100 commits visited" in row.note
    assert compare_pair(before, step, history=history, later=[1.45] * 4).state == "confirmed"
    assert compare_pair(before, meas(noisy(0.8, cv=0.005, seed=2)), history=history).verdict == "improved"
    assert compare_pair(before, meas(noisy(1.25, cv=0.005, seed=2)), history=history).verdict == "ambiguous"
    assert compare_pair(before, step, history=history[-50:]).verdict == "ambiguous"
    after_slower = [*history[:-1], 1.26]
    assert compare_pair(meas(noisy(1.26, cv=0.005, seed=1)), step, history=after_slower).verdict == "ambiguous"


def test_a_step_that_landed_on_a_slower_runner_is_confirmed_by_the_level_held_after_it():
    """The step commit ran on a slower runner (+60%); the next four hold +21%. No later commit is past half
    the commit's own deviation, so they do not agree with it one by one, and detect sets the +60% commit apart,
    starting the level one commit later: the held level still confirms the change at this commit."""
    history = _quiet_history(100, seed=4, cv=0.03)
    before, after = meas(noisy(history[-1], cv=0.005, seed=1)), meas(noisy(1.6, cv=0.005, seed=2))
    held = [1.23, 1.21, 1.22, 1.19]
    assert [s.index for s in find_steps([*history, 1.6, *held]) if s.index >= 90] == [101]
    assert (compare_pair(before, after, history=history, later=held[:3]).state) == "suspected"
    row = compare_pair(before, after, history=history, later=held)
    assert (row.verdict, row.state) == ("regressed", "confirmed")
    # two of the four back at the old level: no level held
    assert compare_pair(before, after, history=history, later=[1.23, 1.0, 1.01, 1.19]).state == "refuted"


def _phase_history(visits=(2, 4, 8, 11, 14, 17)):
    """24 commits on the usual runner, then a phase of 6 on a 20% faster runner type; ``visits``: the commits of
    the 24 that ran on that faster type already (the series alternates between the two), none: it never did."""
    usual = _quiet_history(24)
    for i in visits:
        usual[i] *= 0.8
    return usual + _quiet_history(6, seed=4, level=0.8)


def test_back_to_the_level_before_a_runner_phase_is_not_a_change():
    """Six commits ran on a 20% faster runner type, which the series had visited before; the newest is back on the
    usual one. Against the current segment (the phase) it is 25% slower, yet it is where the series has always been."""
    history = _phase_history()
    assert segment_noise(history).points in (5, 6) and segment_noise(history).alternates(2.5)
    before, back = meas(noisy(0.8, cv=0.005, seed=1)), meas(noisy(1.0, cv=0.005, seed=2))
    row = compare_pair(before, back, history=history, later=[1.0, 1.01, 0.99, 1.0])
    assert (row.verdict, row.state) == ("ambiguous", None)
    assert re.match(r"back to the level of (?:1[5-9]|2[0-5]) commits before the last ([56]); the series visits both levels "
                    r"\([67] earlier commits were at the last \1' level\): a runner phase ended", row.note)
    # A level neither the phase nor the commits before it saw is still this commit's change.
    beyond = compare_pair(before, meas(noisy(1.25, cv=0.005, seed=2)), history=history)
    assert (beyond.verdict, beyond.state) == ("regressed", "suspected")


def test_a_return_to_the_level_a_series_left_by_a_step_is_a_change_reverted():
    """The same phase on a series that had never been at its level: it stepped there (an optimisation), and the
    step back is a change, a revert that the gate flags as it flags a first step, and the next commits confirm."""
    history = _phase_history(visits=())
    assert segment_noise(history).points == 6 and not segment_noise(history).alternates(2.5)
    before, back = meas(noisy(0.8, cv=0.005, seed=1)), meas(noisy(1.0, cv=0.005, seed=2))
    now = compare_pair(before, back, history=history)
    assert (now.verdict, now.state) == ("regressed", "suspected")
    assert re.search(r"back to the level of 2[0-4] commits before the last 6, which the series left 6 commits before "
                     r"by a step the gate confirmed \(read with the spread of the commits before it\): a change reverted",
                     now.note)
    settled = compare_pair(before, back, history=history, later=[1.0, 1.01, 0.99, 1.0])
    assert (settled.verdict, settled.state) == ("regressed", "confirmed") and "a change reverted" in settled.note
    assert failing_rows(compare_measurements([before], [back], history={before.case: history},
                                            later={before.case: [1.0, 1.01, 0.99, 1.0]}))
    # ... and a revert the next commits leave again is refuted, as a first step would be
    left = compare_pair(before, back, history=history, later=[0.8, 0.81, 0.79, 0.8])
    assert (left.verdict, left.state) == ("unchanged", "refuted")


def test_a_series_whose_phases_repeat_reads_the_second_return_as_a_phase_ended():
    """A series that spent 8 commits on a 20% faster runner type, came back, and now spent 6 more there: it has shown
    it alternates between the two levels, so its return is read as the phase's end, and the row says so; the first
    return, with no phase before it, was a change reverted."""
    first_phase = _quiet_history(24) + _quiet_history(8, seed=5, level=0.8)
    second_phase = first_phase + _quiet_history(20, seed=6) + _quiet_history(6, seed=4, level=0.8)
    before, back = meas(noisy(0.8, cv=0.005, seed=1)), meas(noisy(1.0, cv=0.005, seed=2))
    first = compare_pair(before, back, history=first_phase)
    assert first.verdict == "regressed" and "a change reverted" in first.note
    assert segment_noise(second_phase).alternates(2.5)
    second = compare_pair(before, back, history=second_phase, later=[1.0, 1.01, 0.99, 1.0])
    assert second.verdict == "ambiguous" and "the series visits both levels" in second.note


def test_a_quiet_series_reverting_an_optimisation_after_5_commits_is_flagged_as_a_revert():
    """An optimisation held 5 commits (one of them on a slower runner), then reverted: detect splits no phase that
    short, so against the whole window the return was no move ("below the threshold"). The gate had confirmed the
    optimisation's commit, so the return is judged as a step from the phase, with the spread of the commits before
    it, and the row says which reading applied."""
    quiet = _quiet_history(60, cv=0.015)
    history = quiet + [0.83, 0.84, 0.83, 1.1, 0.835]
    assert segment_noise(history).points == len(history)  # no phase split off
    before, back = meas(noisy(0.835, cv=0.005, seed=1)), meas(noisy(1.0, cv=0.005, seed=2))
    now = compare_pair(before, back, history=history)
    assert (now.verdict, now.state) == ("regressed", "suspected")
    assert re.search(r"back to the level of 5\d commits before the last 5, which the series left 5 commits before by a "
                     r"step the gate confirmed .*: a change reverted", now.note)
    settled = compare_pair(before, back, history=history, later=[1.0, 1.01, 0.99, 1.0])
    assert (settled.verdict, settled.state) == ("regressed", "confirmed")
    # Four commits could not have been confirmed (the gate asks the next 4): no revert reading.
    four = compare_pair(before, back, history=quiet + [0.83, 0.84, 0.83, 0.835])
    assert four.verdict != "regressed"


def test_a_revert_on_a_series_with_a_runner_type_a_third_of_its_commits_visit_is_a_change_reverted():
    """A third of the commits ran on a runner type 10% faster, so the spread (the IQR's) spans the 17% optimisation:
    every earlier commit lay within 2.5 of those deviations of the phase's level, and the series read as one that
    visits both levels. Only commits nearer the phase than their own level, within the usual runner's spread, visited
    it: none here, and the revert is a change reverted, as the same step on a series without that runner type."""
    usual = _quiet_history(60, cv=0.01)
    for i in range(0, 60, 3):
        usual[i] *= 0.9
    history = usual + [0.83, 0.75, 0.84, 0.76, 0.835]
    phase = phase_noise(history, 5)
    assert phase.sd > 0.07 and phase.visited_before(2.5) == 0 and not phase.alternates(2.5)
    before, back = meas(noisy(0.835, cv=0.005, seed=1)), meas(noisy(1.0, cv=0.005, seed=2))
    row = compare_pair(before, back, history=history, later=[1.0, 0.9, 1.01, 1.0])
    assert (row.verdict, row.state) == ("regressed", "confirmed") and "a change reverted" in row.note


def test_a_revert_on_a_series_that_visited_the_phases_level_one_commit_at_a_time_is_a_change_reverted():
    """7 of 90 commits ran on a runner type 17% faster, never two in a row: strays, not a level the series held, so
    5 commits in a row there (an optimisation) and a return are a change reverted; the row says what it had seen.
    The same visits a quarter of the time still read as alternation (test_back_to_the_level_before_a_runner_phase)."""
    usual = _quiet_history(90, cv=0.01)
    for i in (5, 17, 30, 44, 58, 71, 83):
        usual[i] *= 0.83
    history = usual + [0.83, 0.84, 0.83, 0.82, 0.835]
    noise = segment_noise(history)
    assert noise.points == 5 and noise.visited_before(2.5) == 7 and not noise.alternates(2.5)
    before, back = meas(noisy(0.835, cv=0.005, seed=1)), meas(noisy(1.0, cv=0.005, seed=2))
    row = compare_pair(before, back, history=history, later=[1.0, 0.99, 1.01, 1.0])
    assert (row.verdict, row.state) == ("regressed", "confirmed")
    assert "left by a step and had visited only now and then (7 earlier commits): a change reverted" in row.note


def test_a_short_phase_on_a_series_that_alternates_still_reads_as_a_runner_phase():
    """The series held the faster level 8 commits before, then 20 back, then 5 there again. The gate confirms the
    second step down (a level of its own, long gone from the window's earlier segments), yet the series has shown it
    visits both levels: the return is a runner phase that ended, not a change reverted."""
    pre = _quiet_history(24) + _quiet_history(8, seed=5, level=0.8) + _quiet_history(20, seed=6)
    phase = _quiet_history(5, seed=4, level=0.8)
    down = compare_pair(meas(noisy(pre[-1], cv=0.005, seed=1)), meas(noisy(phase[0], cv=0.005, seed=3)),
                        history=pre, later=phase[1:])
    assert (down.verdict, down.state) == ("improved", "confirmed")
    before, back = meas(noisy(0.8, cv=0.005, seed=1)), meas(noisy(1.0, cv=0.005, seed=2))
    row = compare_pair(before, back, history=pre + phase, later=[1.0, 1.01, 0.99, 1.0])
    assert row.verdict == "ambiguous" and "the series visits both levels" in row.note
    assert "a runner phase ended" in row.note


def test_a_phase_that_ends_through_another_runner_type_is_not_confirmed_as_a_change():
    """The phase on a 20% faster runner type ends through one commit on a third type (10% faster), then the
    series is back where it always was. Against the phase, that commit is 12% slower, and the next commits,
    slower still, agreed: a confirmed regression that failed the gate on unchanged code (suites on the CI model).
    Back at the level before the phase, which the series visits, they refute it."""
    history = _phase_history()
    before, between = meas(noisy(0.8, cv=0.005, seed=1)), meas(noisy(0.9, cv=0.005, seed=2))
    assert compare_pair(before, between, history=history).state == "suspected"  # not back, on its own
    row = compare_pair(before, between, history=history, later=[1.0, 1.01, 0.99, 1.0])
    assert (row.verdict, row.state) == ("unchanged", "refuted")
    assert re.match(r"suspected regressed; the next commits did not hold the level; the next commits went back "
                    r"to the level of (?:1[5-9]|2[0-5]) commits before the last [56]", row.note)
    assert not failing_rows(compare_measurements([before], [between], history={before.case: history},
                                                later={before.case: [1.0, 1.01, 0.99, 1.0]}), ["suspected"])
    # mmtrack run reports it settled once, at the commit that went back, as refuted
    points = [meas(noisy(v, cv=0.005, seed=i)) for i, v in enumerate([*history, 0.9, 1.0, 1.01, 0.99, 1.0])]
    labels = [f"c{i}" for i in range(len(points))]
    assert decided_by_last(points[:-1], labels[:-1]) == []
    [settled] = decided_by_last(points, labels)
    assert (settled.verdict, settled.state) == ("unchanged", "refuted")
    assert re.fullmatch(r"at c30: suspected regressed; the next commits did not hold the level; "
                        r"the next commits went back to the level of (?:1[5-9]|2[0-5]) commits before the last [56]: "
                        r"a runner phase ended", settled.note)
    # Held beyond where it was before the phase: still this commit's change, confirmed.
    held = compare_pair(before, meas(noisy(1.3, cv=0.005, seed=2)), history=history, later=[1.3, 1.31, 1.29, 1.3])
    assert (held.verdict, held.state) == ("regressed", "confirmed")


def test_a_step_is_not_flagged_again_by_a_commit_just_after_it():
    """A quiet series steps +20%; the next commit moves 6% further (past half the threshold: a wiggle). The segment keeps
    the old level until detect can split there, so that commit was a new +27% step: flagged, and confirmed by the
    commits after it, a second gate failure for one change (about 1 per 100 commits after a step, CI model)."""
    history = _quiet_history(100, cv=0.01) + [1.2]
    before, wiggle = meas(noisy(1.2, cv=0.005, seed=1)), meas(noisy(1.27, cv=0.005, seed=2))
    row = compare_pair(before, wiggle, history=history, later=[1.21, 1.2, 1.22, 1.19])
    assert (row.verdict, row.state) == ("ambiguous", None)
    assert row.note == "the before commit already reached this level: the change came with it"
    two = compare_pair(before, wiggle, history=[*history, 1.21])
    assert two.verdict == "ambiguous" and two.note.startswith("the last 2 commits already reached this level")
    # A level the series visited before is a runner type's, not a young level: the usual rules judge it.
    visited = _quiet_history(90, cv=0.01) + [1.2, 1.19, 1.21, 1.2] + _quiet_history(6, seed=5, cv=0.01) + [1.2]
    assert young_level(segment_noise(visited), visited, 0.10, 2.25) is None
    assert compare_pair(before, wiggle, history=visited).verdict == "regressed"
    # Beyond the threshold from that young level: its own change, flagged.
    beyond = compare_pair(before, meas(noisy(1.45, cv=0.005, seed=2)), history=history)
    assert (beyond.verdict, beyond.state) == ("regressed", "suspected")
    # A faster runner type the series visits (0.7x), now on top of the step: from the old level alone a 16%
    # improvement; from the young level, that runner's move as before.
    fast = [v * (0.7 if i % 10 == 3 else 1.0) for i, v in enumerate(_quiet_history(100, cv=0.01))] + [1.2]
    runner = compare_pair(before, meas(noisy(0.84, cv=0.005, seed=2)), history=fast)
    assert (runner.verdict, runner.note) == ("ambiguous", "within the series' own noise")
    assert compare_pair(before, meas(noisy(0.84, cv=0.005, seed=2)), history=fast[:-1] + [1.0]).verdict == "improved"


def test_a_step_is_confirmed_once_not_again_by_a_slower_runner_just_after_it():
    """A step to +20% at c100, then one commit on a slower runner (+45%) and the level held. Against a segment that
    still holds the old level, c101 was the step again: confirmed, and the gate failed a second time, a run later.
    The level c101 and the next commits hold began one commit before it, confirmed there: c101 is ambiguous."""
    values = [*_quiet_history(100), 1.2, 1.45, 1.21, 1.19, 1.2, 1.2, 1.21]
    points = [meas(noisy(v, n=10, cv=0.005, seed=i)) for i, v in enumerate(values)]
    labels = [f"c{i}" for i in range(len(values))]

    def settled(t):
        return compare_pair(points[t - 1], points[t], history=values[t - 100 : t], later=values[t + 1 : t + 5])

    assert (settled(100).verdict, settled(100).state) == ("regressed", "confirmed")
    row = settled(101)
    assert row.verdict == "ambiguous" and row.note.startswith("the level the next commits hold began 1 commit before")
    # as the newest commit, before the next ones are in, it is still suspected: nothing says yet where the level began
    assert compare_pair(points[100], points[101], history=values[1:101]).state == "suspected"
    failed = [(last, r.note) for last in range(104, len(values))
              for r in decided_by_last(points[: last + 1], labels[: last + 1])]
    assert failed == [(104, "at c100")]


def test_decided_by_last_reports_each_settled_suspicion_once():
    rng = np.random.default_rng(5)
    levels = [1.0] * 30 + [1.3] * 6  # a step at index 30, then five commits at the new level
    points = [meas(lv * (1 + rng.normal(0, 0.005, 10))) for lv in levels]
    labels = [f"c{i}" for i in range(len(points))]
    assert decided_by_last(points[:31], labels[:31]) == []  # the step commit itself is not "earlier"
    assert decided_by_last(points[:34], labels[:34]) == []  # three later commits: still suspected
    rows = decided_by_last(points[:35], labels[:35])  # the fourth later commit confirms it
    assert [(r.verdict, r.state) for r in rows] == [("regressed", "confirmed")]
    assert rows[0].note == "at c30"
    assert decided_by_last(points, labels) == []  # already settled by c34: not reported again
    c = compare_measurements([points[33]], [points[34]], history={points[33].case: [p.median for p in points[4:34]]},
                             decided=rows)
    assert failing_rows(c, ["regression"])


def test_change_at_the_threshold_edge_is_ambiguous_not_unchanged():
    # A tight 9.5% change under a 10% threshold: ambiguous, and counted near the threshold.
    before, after = meas(noisy(1.0, cv=0.002, seed=1)), meas(noisy(1.095, cv=0.002, seed=2))
    row = compare_pair(before, after)
    assert row.verdict == "ambiguous" and row.near_threshold and "threshold edge" in row.note
    c = compare_measurements([before], [after])
    assert c.near_threshold() == 1 and "1 within ±1% of the threshold" in summary_line(c)
    # clearly below the edge stays unchanged; just beyond it with tight samples regressed
    assert compare_pair(before, meas(noisy(1.05, cv=0.002, seed=2))).verdict == "unchanged"
    over = compare_pair(before, meas(noisy(1.105, cv=0.002, seed=2)))
    assert over.verdict == "regressed" and over.near_threshold
    # near the edge but not significant: unchanged (noise, not a near miss)
    wide = compare_pair(meas(noisy(1.0, cv=0.2, seed=1)), meas(noisy(1.095, cv=0.2, seed=2)))
    assert wide.verdict == "unchanged"


def test_fail_on_values():
    c = compare_measurements([meas(noisy(1.0, seed=1))], [meas(noisy(1.5, seed=2))])
    assert failing_rows(c, ["regression"])
    assert not failing_rows(c, ["failed"])
    with pytest.raises(ValueError, match="unknown --fail-on"):
        failing_rows(c, ["bogus"])
    improved = compare_measurements([meas(noisy(1.5, seed=1))], [meas(noisy(1.0, seed=2))])
    assert not failing_rows(improved)


def test_params_distinguish_cases():
    before = [meas(noisy(1.0, seed=i), params={"n": str(n)}) for i, n in enumerate((10, 100))]
    after = [meas(noisy(1.0, seed=5), params={"n": "10"}), meas(noisy(2.0, seed=6), params={"n": "100"})]
    c = compare_measurements(before, after)
    assert [(r.name, r.verdict) for r in c.rows] == [("suite.Bench.time_x(10)", "unchanged"), ("suite.Bench.time_x(100)", "regressed")]


def _sample_comparison():
    before = [meas(noisy(1e-3, seed=1)), meas(noisy(5.0, seed=2), name="bw", unit="GiB/s", section="custom")]
    after = [meas(noisy(2e-3, seed=3)), meas(noisy(5.0, seed=4), name="bw", unit="GiB/s", section="custom")]
    return compare_measurements(before, after, before_label="abc123", after_label="def456")


def test_renderers():
    c = _sample_comparison()
    console = Console(width=200, record=True)
    console.print(render_table(c))
    text = console.export_text()
    assert "abc123" in text and "def456" in text
    assert "regressed" in text and " ms " in text and "GiB/s" in text
    assert "time_per_op [s]" in text  # brackets are text, not rich markup
    md = render_markdown(c)
    assert md.startswith("### :red_circle: Performance regressed")
    assert "| `+` |" in md and "<details><summary>1 unchanged</summary>" in md
    data = json.loads(render_json(c))
    assert data["counts"] == {"regressed": 1, "unchanged": 1}
    row = next(r for r in data["rows"] if r["verdict"] == "regressed")
    assert row["mark"] == MARKS["regressed"] and row["direction"] == "lower" and row["test"] == "mann-whitney"
    assert row["ratio"] == pytest.approx(2.0, rel=0.05)


def _suite(moves, *, later_moves=(), n=12):
    """``n`` quiet series of one suite: their before and after measurements, histories and later values.

    ``moves[i]``: the factor series i moved by at the after commit (1.0 for the rest);
    ``later_moves``: per later commit, the factors every series sits at then."""
    before, after, history, later = [], [], {}, {}
    for i in range(n):
        move = moves[i] if i < len(moves) else 1.0
        b = meas(noisy(1.0, cv=0.005, seed=10 + i), bench=f"suite.time_{i:02d}")
        a = meas(noisy(move, cv=0.005, seed=50 + i), bench=f"suite.time_{i:02d}")
        before.append(b)
        after.append(a)
        history[b.case] = _quiet_history(seed=100 + i)
        later[b.case] = [lm[i] if i < len(lm) else 1.0 for lm in later_moves]
    return before, after, history, later


def test_a_whole_run_that_moved_is_a_runner_change_not_twelve_regressions():
    """Every series of the run 20% slower (another runner type): each would be a suspected regression
    alone; together they are one ambiguous run, and later commits decide."""
    before, after, history, _ = _suite([1.2] * 12)
    alone = compare_measurements(before, after, ComparePolicy(min_suite=0), history=history)
    assert {(r.verdict, r.state) for r in alone.rows} == {("regressed", "suspected")}
    together = compare_measurements(before, after, history=history)
    assert {r.verdict for r in together.rows} == {"ambiguous"}
    assert all("the whole run moved ×1.2" in r.note and "median of 12 series" in r.note for r in together.rows)
    # Too few series with history to read a run's shift from: each stands alone.
    few = compare_measurements(before[:5], after[:5], history=history)
    assert {r.verdict for r in few.rows} == {"regressed"}


def test_a_whole_run_that_moved_and_came_back_is_unchanged_once_the_next_commits_are_in():
    """Read again once the next commits are stored (``compare`` of an older pair, the pages): the run that moved
    as a whole and the next runs that went back were a runner: every series reads ``unchanged``, and says so. A
    series' own move, refuted by its next commits, reads ``unchanged (refuted)``."""
    back = [[1.0] * 12] * 4
    before, after, history, later = _suite([1.2] * 12, later_moves=back)
    alone = compare_measurements(before, after, ComparePolicy(min_suite=0), history=history, later=later)
    assert {(r.verdict, r.state) for r in alone.rows} == {("unchanged", "refuted")}
    rows = compare_measurements(before, after, history=history, later=later).rows
    assert {(r.verdict, r.state) for r in rows} == {("unchanged", None)}
    assert all(r.note.startswith("the whole run moved ×1.2") and r.note.endswith("which the next commits left")
               for r in rows)
    before, after, history, later = _suite([1.25], later_moves=back)
    row = compare_measurements(before, after, history=history, later=later).rows[0]
    assert (row.verdict, row.state) == ("unchanged", "refuted")


def test_a_change_of_a_few_series_is_theirs_whatever_the_run():
    """Two series of twelve move: the run did not, so theirs are suspected regressions; a run 3% slower
    does not explain a 25% move either."""
    before, after, history, _ = _suite([1.25, 1.25])
    rows = {r.benchmark: r for r in compare_measurements(before, after, history=history).rows}
    assert (rows["suite.time_00"].verdict, rows["suite.time_00"].state) == ("regressed", "suspected")
    assert (rows["suite.time_01"].verdict, rows["suite.time_01"].state) == ("regressed", "suspected")
    assert {rows[f"suite.time_{i:02d}"].verdict for i in range(2, 12)} == {"unchanged"}
    before, after, history, _ = _suite([1.25] + [1.03] * 11)
    row = compare_measurements(before, after, history=history).rows[0]
    assert (row.verdict, row.state) == ("regressed", "suspected")


def test_a_run_wide_move_that_persists_is_ambiguous_and_a_series_own_is_confirmed():
    """Confirmation by later commits counts only what the later runs did not all do too."""
    everyone = [[1.2] * 12] * 4
    before, after, history, later = _suite([1.2] * 12, later_moves=everyone)
    alone = compare_measurements(before, after, ComparePolicy(min_suite=0), history=history, later=later)
    assert {(r.verdict, r.state) for r in alone.rows} == {("regressed", "confirmed")}
    rows = compare_measurements(before, after, history=history, later=later).rows
    assert {r.verdict for r in rows} == {"ambiguous"} and "and the next 4 runs too" in rows[0].note
    own = [[1.2] + [1.0] * 11] * 4
    before, after, history, later = _suite([1.2], later_moves=own)
    row = compare_measurements(before, after, history=history, later=later).rows[0]
    assert (row.verdict, row.state) == ("regressed", "confirmed")


def test_a_run_wide_move_is_not_confirmed_four_commits_later_either():
    """The per-commit gate fails on an earlier commit's regression once the next commits confirm it
    (``decided``): read across the run, a runner change every series made is ambiguous there too."""
    def tails(movers):
        out = {}
        for i in range(12):
            rng = np.random.default_rng(200 + i)
            levels = [1.0] * 30 + [1.2 if i < movers else 1.0] * 5  # from c30 on, for the first `movers`
            points = [meas(lv * (1 + rng.normal(0, 0.005, 10)), bench=f"suite.time_{i:02d}") for lv in levels]
            out[points[0].case] = (points, [f"c{k}" for k in range(len(points))])
        return out

    everyone = tails(12)
    alone = [r for points, labels in everyone.values() for r in decided_by_last(points, labels)]
    assert len(alone) == 12 and {(r.verdict, r.state) for r in alone} == {("regressed", "confirmed")}
    rows = decided_in_run(everyone)
    assert len(rows) == 12 and {(r.verdict, r.state) for r in rows} == {("ambiguous", None)}
    assert rows[0].note.startswith("at c30: the whole run moved ×1.2") and "and the next 4 runs too" in rows[0].note
    c = compare_measurements([], [], decided=rows)
    assert not failing_rows(c, ["regression"])
    # Two series of twelve: their own regressions, confirmed whatever the run did.
    rows = decided_in_run(tails(2))
    assert [(r.benchmark, r.verdict, r.state, r.note) for r in rows] == [
        ("suite.time_00", "regressed", "confirmed", "at c30"), ("suite.time_01", "regressed", "confirmed", "at c30")]


@pytest.mark.parametrize("before, after", [(2.0, 0.0), (2.0, -1.0), (0.0, 2.0), (-1.0, 2.0), (-1.0, 1.0), (1.0, -1.0)])
def test_a_value_at_or_below_zero_is_judged_without_the_log_space_model(before, after):
    """A track_ benchmark may return 0 or a negative number. With a history too short for a noise model, a 2 -> 0
    step went to follow_up's log and crashed compare (math domain error), and with it publish's compare page. A sign
    flip read as a ratio of -1.00, "unchanged". With no log space, the next commits never confirmed such a step."""
    for direction, worse in ((Direction.HIGHER, after < before), (Direction.LOWER, after > before)):
        b = meas([before] * 10, name="value", unit="unit", direction=direction)
        a = meas([after + 0.01 * i for i in range(10)], name="value", unit="unit", direction=direction)
        for history in (None, [before], [before] * 3, [before] * 30):
            row = compare_pair(b, a, None, history, [after] * 2)
            assert row.verdict == ("regressed" if worse else "improved"), (history, row)
            assert row.state == (None if history is None else "suspected")
            if history is not None:  # the next commits settle it as they do any other: held, or back
                assert compare_pair(b, a, None, history, [after] * 4).state == "confirmed"
                assert compare_pair(b, a, None, history, [before, after, after, after]).state == "refuted"


def test_values_whose_ratio_leaves_the_float_range_are_judged_without_a_crash():
    """1e-300 against 1e300 (asv results may hold any float): the ratio underflowed to 0, and compare died in a
    logarithm or a division by zero; a young level 1e300 times away overflowed exp()."""
    for before, after in ((1e300, 1e-300), (1e-300, 1e300)):
        b, a = meas([before] * 10, name="value", unit="unit"), meas([after] * 10, name="value", unit="unit")
        for history in (None, [before] * 30, [1.0] * 28 + [1e300, before]):
            row = compare_pair(b, a, None, history, [after] * 4)
            assert row.verdict == ("regressed" if after > before else "improved"), (history, row)


def test_a_value_that_stays_at_zero_is_unchanged():
    b, a = meas([0.0] * 10, name="value", unit="unit"), meas([0.0] * 10, name="value", unit="unit")
    assert compare_pair(b, a, None, [0.0] * 30).verdict == "unchanged"


def test_later_commits_at_zero_read_from_a_series_confirm_a_drop_to_zero():
    """A count that drops to 0 and stays there: the store's later commits (``series_later``) are zeros, not
    failed runs, so they confirm it as the same values given directly do."""
    rng = np.random.default_rng(4)
    points = [meas(5 + rng.normal(0, 0.05, 10), name="errors", unit="count") for _ in range(40)]
    points += [meas([0.0] * 10, name="errors", unit="count") for _ in range(5)]
    later = series_later(points, 40, ComparePolicy())
    assert later == [0.0, 0.0, 0.0, 0.0]
    row = compare_pair(points[39], points[40], None, series_history(points, 39, 100), later)
    assert (row.verdict, row.state) == ("improved", "confirmed")
    failed = dataclasses.replace(points[41], status="failed", median=None)
    assert math.isnan(series_later([*points[:41], failed, *points[42:]], 40, ComparePolicy())[0])  # a failed run: NaN


def test_a_later_commit_that_failed_does_not_crash_the_earlier_start_check():
    """A flat history, a doubling, and a later commit without a level (NaN: it failed) reached detect's refinement
    with a zero scale and raised ZeroDivisionError; the failed commit is left out of the levels the next commits hold."""
    key = MetricKey("timing", "time_per_op", "s")

    def at(value: float) -> Measurement:
        return Measurement("b", {}, key, Direction.LOWER, median=value)

    row = compare_pair(at(1.0), at(2.0), history=[1.0] * 12, later=[2.0017, 1.9998, 1.9987, 1.9998, 2.0005, math.nan],
                       frame=1.005)
    assert row.verdict == "regressed" and row.ratio > 1.9
