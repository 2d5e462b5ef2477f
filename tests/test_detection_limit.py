"""The smallest step a series can see (analysis/detection_limit.py), on series of known noise, and in
``mmtrack list benchmarks``."""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_env, run_cli
from test_store_support import store_url  # noqa: F401

from benchmarks.synthetic_history import synthetic_model, write_asv_results
from mmtrack.analysis.detection_limit import (STATE_EVERY, USEFUL_STEP, detection_limit, state_offset,
                                              stated_count)
from mmtrack.analysis.series import detect_values
from mmtrack.measure.metrics import Direction
from mmtrack.results import MetricKey, SeriesKey


def gaussian(sd: float, n: int = 100, seed: int = 0) -> list[float]:
    return list(np.exp(np.random.default_rng(seed).normal(0.0, sd, n)))


def runner_levels(n: int = 100, seed: int = 0) -> list[float]:
    """A CI series that alternates between a fast and a slow runner (x1.25) in bursts, with 1% noise on each."""
    rng = np.random.default_rng(seed)
    level, out = 0.0, []
    for _ in range(n):
        if rng.random() < 0.25:
            level = math.log(1.25) - level
        out.append(math.exp(level + rng.normal(0.0, 0.01)))
    return out


def test_the_limit_grows_with_the_noise():
    quiet, mid, noisy = (detection_limit(gaussian(sd)) for sd in (0.005, 0.03, 0.15))
    assert quiet.confirmed < mid.confirmed < noisy.confirmed
    assert quiet.one_commit < mid.one_commit < noisy.one_commit
    # Wide bands: a quiet series confirms a 2-5% step, and sees 10% (the gate's threshold) at one commit.
    assert 0.02 <= quiet.confirmed < 0.05 and 0.09 < quiet.one_commit < 0.15
    assert not quiet.too_noisy and noisy.too_noisy


def test_runner_levels_raise_the_limit_that_their_small_robust_spread_alone_would_state():
    levels = detection_limit(runner_levels())
    alike = detection_limit(gaussian(0.01))  # the spread of each runner's own level
    assert levels.confirmed > 2 * alike.confirmed
    assert levels.one_commit > 0.25  # a step must clear the slow runner's level as well


def test_a_longer_segment_lowers_the_confirmed_limit_and_a_short_one_states_none_under_the_budget():
    short, long = detection_limit(gaussian(0.03, 30)), detection_limit(gaussian(0.03, 200))
    assert math.isinf(short.confirmed)  # 5 commits against 30 cannot reach 0.001 / 500 whatever the step
    assert long.confirmed < 0.2 and short.too_noisy
    assert math.isfinite(detection_limit(gaussian(0.03, 30), series=1).confirmed)  # a suite of one series can


def test_too_short_a_history_has_no_limit():
    assert detection_limit(gaussian(0.01, 6)) is None
    assert detection_limit([]) is None


@pytest.mark.parametrize("sd", [0.01, 0.05])
def test_detect_confirms_twice_the_stated_limit_and_rarely_half_of_it(sd):
    """The calibration on Gaussian noise (the real histories: scripts/eval_detection_limit.py)."""
    key = SeriesKey("m", "e", "b", "", MetricKey("timing", "t", "s"))
    found = {0.5: 0, 2.0: 0}
    for seed in range(12):
        values = np.log(gaussian(sd, 105, seed))
        limit = detection_limit(list(np.exp(values[:100])), series=1)
        for m in found:
            v = np.exp(values + np.where(np.arange(105) >= 100, math.log1p(m * limit.confirmed), 0.0))
            shas = [f"{i:040x}" for i in range(105)]
            report = detect_values(key, shas, list(v), [None] * 105, Direction.LOWER)
            found[m] += any(c.kind == "regression" and abs(shas.index(c.after_sha) - 100) <= 1
                            and c.extra.get("state") != "suspected" for c in report.changes)
    assert found[2.0] >= 9 and found[0.5] <= 3


def test_list_benchmarks_shows_each_metrics_limits_and_the_benchmarks_too_noisy_for_10_percent(tmp_path, store_url):  # noqa: F811
    model = synthetic_model(3, 70, 3, seed=3, step_every=99)  # the first benchmark steps, the others do not
    rng = np.random.default_rng(5)
    noisy_bench, quiet_bench = (next(k.benchmark for k in model.series if k.benchmark.endswith(f"_00{b}"))
                                for b in (1, 2))
    for key, points in model.series.items():
        if key.benchmark == noisy_bench and key.metric.name == "time_per_op":  # 30% runner swings on its time
            model.series[key] = [replace(p, measurement=replace(p.measurement, median=p.measurement.median * float(
                np.exp(rng.choice([0.0, 0.0, 0.3]) + rng.normal(0.0, 0.08))))) for p in points]
    write_asv_results(tmp_path / "results", model)
    db = store_url  # SQLite and PostgreSQL
    assert run_cli("import-asv", "--db", db, "--no-progress", str(tmp_path / "results"), cwd=tmp_path).returncode == 0
    listed = run_cli("list", "benchmarks", "--db", db, "--format", "json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    cases = {c["name"]: c for c in json.loads(listed.stdout)}
    limits = {(name, r["metric"].split(" [")[0]): r for name, c in cases.items() for r in c["detection_limits"]}
    noisy, quiet = limits[noisy_bench, "timing/time_per_op"], limits[quiet_bench, "timing/time_per_op"]
    assert noisy["too_noisy"] and not quiet["too_noisy"]
    assert quiet["confirmed"] < USEFUL_STEP < (noisy["confirmed"] or math.inf)
    instructions = [r for (name, metric), r in limits.items() if noisy_bench.rsplit(".", 1)[1] in name
                    and "instructions" in name]  # asv's own track_ benchmark beside the time
    assert len(instructions) == 1 and instructions[0]["confirmed"] < quiet["confirmed"]
    table = run_cli("list", "benchmarks", "--db", db, cwd=tmp_path, env={**cli_env(), "COLUMNS": "200"})
    assert table.returncode == 0, table.stderr
    assert "can see: 1 commit / confirmed" in table.stdout and "too noisy for 10%" in table.stdout
    assert "too noisy to confirm a 10% change" in table.stdout
    assert "time_per_op:" in table.stdout


def test_list_benchmarks_and_the_pages_state_the_same_limits_between_their_restatements(tmp_path):
    """73 commits: both state the limits as of the benchmark's last restatement (the pages restate them once every
    STATE_EVERY commits; ``list benchmarks`` read all 73 and disagreed with the page beside it)."""
    write_asv_results(tmp_path / "results", synthetic_model(2, 73, 1, seed=3, step_every=99))
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert run_cli("import-asv", "--db", db, "--no-progress", str(tmp_path / "results"), cwd=tmp_path).returncode == 0
    assert run_cli("publish", "--db", db, "-o", str(tmp_path / "site"), "--title", "t", cwd=tmp_path).returncode == 0
    listed = run_cli("list", "benchmarks", "--db", db, "--format", "json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    fields = ("one_commit", "confirmed", "commits", "too_noisy")
    in_list = {(c["name"], r["metric"]): tuple(r[f] for f in fields)
               for c in json.loads(listed.stdout) for r in c["detection_limits"]}
    metas = [json.loads(p.read_text().split(",", 1)[1].rsplit(");", 1)[0])
             for p in (tmp_path / "site" / "data" / "b").glob("*.meta.js")]
    on_pages = {(m["name"], s["metric"]): tuple(s["limit"][f] for f in fields) for m in metas for s in m["series"]}
    assert len(in_list) == 2 and in_list == on_pages
    assert all(v[2] == stated_count(73, state_offset(name)) for (name, _), v in in_list.items())


def test_a_suites_restatements_are_spread_over_its_commits():
    """Each commit restates about a tenth of a suite's benchmarks, not all of them at every tenth commit (an update
    that restated 500 series cost 0.4 s of CPU on the 2 s nightly budget)."""
    names = [f"bench_{i:03d}.Suite.time_case" for i in range(500)]
    per_commit = [sum(stated_count(n, state_offset(b)) != stated_count(n - 1, state_offset(b)) for b in names)
                  for n in range(100, 110)]
    assert sum(per_commit) == 500 and max(per_commit) < 100
    assert all(n - STATE_EVERY < stated_count(n, 3) <= n for n in range(3, 200))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists() and not os.environ.get("CI"),
                    reason="needs Debian's chromium (apt-get install chromium; .ci/run does)")
def test_chromium_shows_the_time_and_instructions_limits_of_a_benchmark_under_their_charts(tmp_path):
    from playwright.sync_api import sync_playwright

    from mmtrack.publish import build_site

    model = synthetic_model(1, 70, 3, seed=4, step_every=99)  # time, bandwidth and instructions of one benchmark
    build_site(model, tmp_path / "site")
    page_file = next((tmp_path / "site" / "b").glob("*.html"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
        page = browser.new_page()
        page.goto(page_file.as_uri())
        page.wait_for_selector(".detection-limit")
        texts = page.eval_on_selector_all(".detection-limit", "ps => ps.map(p => p.textContent)")
        browser.close()
    assert len(texts) == 3 and all("at one commit" in t and "confirmed" in t for t in texts)
    instructions, time = (next(t for t in texts if t.startswith(name)) for name in ("instructions", "time"))
    assert instructions != time  # each metric its own limit, the deterministic one beside the time
