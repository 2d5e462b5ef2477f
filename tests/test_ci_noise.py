"""The CI-runner noise model (scripts/ci_noise.py) and the harness's CI scenario (scripts/eval_detect.py)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    return importlib.import_module(f"scripts.{name}")


def test_population_statistics_are_near_the_real_ci_figures():
    N = _load("ci_noise")
    rng = np.random.default_rng(5)
    rows = [N.series_stats(*N.ci_series(rng, 120)) for _ in range(300)]
    med = {k: float(np.median([r[k] for r in rows])) for k in N.TARGETS}
    p90 = {k: float(np.percentile([r[k] for r in rows], 90)) for k in N.TARGETS}
    # wide bands around the targets (median 2.2% / 21% / 1.4% / 1.6 / 0.15; p90 10% / 51%)
    assert 0.015 < med["robust_cv"] < 0.035 and 0.06 < p90["robust_cv"] < 0.18
    assert 0.10 < med["pairs_over_10pct"] < 0.32 and 0.35 < p90["pairs_over_10pct"] < 0.70
    assert 0.010 < med["within_cv"] < 0.020
    assert 1.0 < med["between_over_within"] < 2.8
    assert 0.03 < med["lag1_autocorr"] < 0.30
    assert any(r["ties"] > 0 for r in rows)  # coarse timers make some medians tie


def test_tiers_order_by_noise_and_bad_tier_is_refused():
    N = _load("ci_noise")
    rng = np.random.default_rng(6)
    cv = {t: np.median([N.robust_cv(N.ci_series(rng, 100, t)[0]) for _ in range(40)]) for t in N.TIERS}
    assert cv["quiet"] < 0.03 <= cv["mid"] < 0.10 <= cv["noisy"]
    with pytest.raises(ValueError, match="unknown tier"):
        N.ci_series(rng, 10, "loud")


def test_step_and_creep_land_where_they_were_put():
    N = _load("ci_noise")
    rng = np.random.default_rng(7)
    values, samples = N.ci_series(rng, 60, "quiet", samples_per_commit=10, base=2e-3)
    assert len(samples) == 60 and all(s.size == 10 for s in samples)
    assert np.allclose(values, [np.median(s) for s in samples])
    v2, s2 = N.inject_step(values, samples, 30, 0.5)
    assert np.allclose(v2[:30], values[:30]) and np.allclose(v2[30:], values[30:] * 1.5)
    assert np.allclose(samples[40], s2[40] / 1.5)  # the input is left alone
    v3, _ = N.inject_creep(values, samples, 10, 0.01, 20)
    assert np.allclose(v3[:10], values[:10])
    assert np.allclose(v3[29:], values[29:] * 1.01**20)
    assert np.allclose(v3[14], values[14] * 1.01**5)


def test_ci_scenario_runs_beside_asv_and_writes_figures(tmp_path):
    out = tmp_path / "ci.json"
    proc = subprocess.run(
        [sys.executable, "-m", "scripts.eval_detect", "--ci-only", "--ci-series", "3",
         "--ci-length", "50", "--methods", "rankseg", "--json", str(out), "--seed", "4"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0, proc.stderr
    assert "CI-runner noise" in proc.stdout and "asv.step_detect" in proc.stdout
    table = json.loads(out.read_text())["ci"]["detect"]
    assert set(table) == {"rankseg", "asv.step_detect"}
    for name in table:
        rows = table[name]
        assert {"F1 at 5%", "F1 at 50%", "F1 quiet", "F1 noisy", "F1 all steps", "A/A false per 100 commits",
                "creep found", "newest 3 found", "ms per series"} <= set(rows)
        assert 0.0 <= rows["F1 all steps"]["f1"] <= 1.0 and rows["ms per series"]["value"] > 0
    assert table["rankseg"]["F1 at 50%"]["f1"] >= 0.6  # big steps are found even in a tiny run


def test_series_of_one_suite_change_runner_together():
    """Series given one suite's runners jump at the same commits, the same way, by their own amounts."""
    N = _load("ci_noise")
    rng = np.random.default_rng(5)
    suite = None
    while suite is None or len(set(suite.runners[:80])) < 2:  # a suite that does change runner
        suite = N.suite_runners(rng, 80)
    a, _ = N.ci_series(rng, 80, "quiet", suite=suite)
    b, _ = N.ci_series(rng, 80, "quiet", suite=suite)
    off = suite.runners != 0
    da, db = np.log(a) - np.median(np.log(a[~off])), np.log(b) - np.median(np.log(b[~off]))
    level = suite.offsets[suite.runners[off]]
    assert np.mean(np.sign(da[off]) == np.sign(level)) > 0.9 and np.mean(np.sign(db[off]) == np.sign(level)) > 0.9
    assert np.corrcoef(da, db)[0, 1] > 0.5  # shared runners: the two series move together (drifts apart)
    assert not np.allclose(da[off], db[off], atol=0.01)  # ... each by its own amount


def test_the_model_that_drew_a_series_forecasts_it():
    """``ci_series_with_model`` draws what ``ci_series`` draws (same stream) and keeps the model: its
    forecast of each commit is a density that puts the observed value above one 20% away."""
    N = _load("ci_noise")
    values, _, model = N.ci_series_with_model(np.random.default_rng(5), 200, "quiet")
    assert np.array_equal(values, N.ci_series(np.random.default_rng(5), 200, "quiet")[0])
    x = np.log(values)
    here = np.array([model.predictive_logpdf(t, x[t])[0] for t in range(1, 200)])
    away = np.array([model.predictive_logpdf(t, x[t] + np.log(1.2))[0] for t in range(1, 200)])
    assert np.mean(here > away) > 0.9
    grid = np.linspace(x[50] - 1.5, x[50] + 1.5, 6001)
    density = np.exp(model.predictive_logpdf(50, grid))
    assert float(np.sum(density[1:] + density[:-1]) / 2 * (grid[1] - grid[0])) == pytest.approx(1.0, abs=0.02)
    suite = N.suite_runners(np.random.default_rng(1), 50)
    assert N.ci_series_with_model(np.random.default_rng(2), 50, suite=suite)[2] is None


def test_the_oracle_bound_of_the_gate_harness():
    """scripts/eval_gate.py's oracle: knowing the step's size is worth more than not, and at a bar that lets
    more A/A commits through, more steps pass."""
    G = _load("eval_gate")
    rng = np.random.default_rng(11)
    aa = G.ci_population(rng, 20, G.WINDOW + 12, None)
    steps = G.ci_population(rng, 60, G.WINDOW + 12, 0.20)
    bound = G.oracle_bound(aa, steps, [0.5, 5.0], 0.20)
    known, blind = bound["step size known"], bound["any step size"]
    for rates in (known, blind):
        assert 0.0 <= rates["0.50"]["all"] <= rates["5.00"]["all"] <= 1.0
    assert known["0.50"]["all"] >= blind["0.50"]["all"] - 0.05
    assert known["5.00"]["all"] > 0.5  # a +20% step is, mostly, far outside a series' forecast
    # The window's own density knows less than the model that drew the series: it does not beat it by much.
    window = bound["window density (no model)"]
    assert 0.0 <= window["0.50"]["all"] <= window["5.00"]["all"] <= 1.0
    assert window["5.00"]["all"] <= known["5.00"]["all"] + 0.1


def test_the_gate_harness_scores_results_without_samples_and_the_settled_reading(tmp_path):
    """``eval_gate.py --no-samples`` judges commits that keep only what asv's files hold without
    ``--record-samples``; its JSON has the settled reading (suspected or confirmed once the next commits are in) beside
    the newest-commit one, and settling only adds: a confirmed flag was flagged in some state."""
    G = _load("eval_gate")
    out = tmp_path / "gate.json"
    try:
        assert G.main(["--series", "8", "--seed", "3", "--scenarios", "ci", "--baseline", "", "--no-samples",
                       "--json", str(out)]) == 0
    finally:
        G.RECORD_SAMPLES = True
    figures = json.loads(out.read_text())["ci"]["mmtrack"]
    fa, rec = figures["false_alarms_per_100"], figures["recall_20pct"]["all"]
    assert fa["settled"] >= fa["confirmed"] >= 0 and rec["settled"] >= rec["confirmed"] >= 0
    assert rec["steps"] == 8
    rng = np.random.default_rng(1)
    G.RECORD_SAMPLES = False
    try:
        series = G.ci_population(rng, 1, G.WINDOW + 12, None)[0]
        m = series.measurements[0]
    finally:
        G.RECORD_SAMPLES = True
    assert m.samples == () and m.count == 10 and m.q1 < m.median < m.q3 and m.ci_low <= m.median <= m.ci_high


def test_the_gate_harness_reverts_a_step_after_k_commits_in_the_tier_asked_for():
    """``eval_gate.py --scenarios reverts``: each series lies in its tier by the measured commit-to-commit CV; a
    revert series held a ×0.833 level for k commits before its judged commit, which steps back up +20%; and the
    gate's revert recall on quiet series rises above what the phase reading gave (none)."""
    G, N = _load("eval_gate"), _load("ci_noise")
    pops = G.revert_populations(np.random.default_rng(4), 6, G.WINDOW + 12, "quiet", [10], 0.20)
    assert {len(v) for v in pops.values()} == {6}
    assert all(N.tier_of(s.medians) == "quiet" for kind in pops.values() for s in kind)
    for s in pops["revert 10"]:
        at, m = s.step_at, np.log(s.medians)
        held, before, after = np.median(m[at - 10 : at]), np.median(m[at - 30 : at - 10]), m[at]
        assert held < before - 0.1 and after > held + 0.1  # the phase sits ~18% below, the revert steps back up
    gate = G.mmtrack_gate(G.gate_now, later=True)
    flagged = [gate(s.measurements, s.medians, s.step_at)[0] for s in pops["revert 10"]]
    assert flagged.count("regressed") >= 2


def test_the_gate_harness_pairs_each_revert_with_a_first_step_on_the_same_series():
    """``--revert-paired``: "step k" is the "revert k" series itself with a first +20% step at the judged commit
    instead, and the reverts are drawn as without it."""
    G = _load("eval_gate")
    plain = G.revert_populations(np.random.default_rng(4), 3, G.WINDOW + 12, "quiet", [5], 0.20)
    pops = G.revert_populations(np.random.default_rng(4), 3, G.WINDOW + 12, "quiet", [5], 0.20, paired=True)
    assert "step 5" not in plain and len(pops["step 5"]) == 3
    for r, p, s in zip(plain["revert 5"], pops["revert 5"], pops["step 5"]):
        at = s.step_at
        assert r.step_at == p.step_at == at and np.allclose(r.medians, p.medians)
        gap = np.log(p.medians / s.medians)
        assert np.allclose(gap[: at - 5], 0) and np.allclose(gap[at - 5 :], math.log(1 / 1.2))


def test_the_gate_harness_splits_paired_reverts_by_whether_the_series_visits_the_phases_level():
    """``--revert-paired`` also prints the revert against the first step on the same series, split by the gate's own
    reading of the phase: a series that ran on a 17% faster runner type for 2-4 commits at a time (it visits the
    phase's level) lands in the second group, a series that never left its level in the first; every pair is counted."""
    G = _load("eval_gate")
    rng = np.random.default_rng(8)

    def series(medians: np.ndarray, at: int):
        samples = [m * (1 + 0.003 * rng.standard_normal(10)) for m in medians]
        return G.Series(np.array([float(np.median(s)) for s in samples]), samples, "quiet", at)

    n, at = G.WINDOW + 12, G.WINDOW + 4
    base = 1 + 0.005 * rng.standard_normal(n)
    visits = base.copy()
    for start in range(8, at - 10, 12):
        visits[start : start + 3] *= 0.833  # a faster runner type, three commits at a time
    reverts, steps = [], []
    for level in (base, visits):
        revert, step = level.copy(), level.copy()
        revert[at - 5 : at] *= 0.833
        step[at:] *= 1.2
        reverts.append(series(revert, at))
        steps.append(series(step, at))
    split = G.paired_by_runner_phase(reverts, steps, G.mmtrack_gate(G.gate_now, later=True))
    assert split["never visited"]["series"] == 1 and split["visits the phase's level"]["series"] == 1
    assert split["visits the phase's level"]["revert"] == 0.0  # the phase's end reads as a runner's
    assert split["never visited"]["step"] == 1.0  # a +20% step on a quiet series is confirmed
