"""scripts/eval_histories.py: the evaluation on real histories, on MetPy's real results kept in tests/data and on
series the tests make, where the right figure is known."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
from conftest import METPY_DIR, REPO

from mmtrack.analysis.policy import ComparePolicy
from scripts import eval_histories as ev


def _run(commit: str, date: float, ran: float, value: float) -> ev.Run:
    return ev.Run(commit, date, ran, value)


DAY = 24 * 3600 * 1000.0


def _stepped(rerun_value: float) -> tuple[dict, ev.Raw]:
    """A series of commits c0..c5 measured on days 0..5 with a x1.5 step at c3, and c1 re-measured on day 10 at
    ``rerun_value``; detect's answer naming the step as the code's."""
    raw = ev.Raw()
    for i in range(6):
        raw.commit_dates[f"c{i}"] = i * DAY
    key = ("m", "env", "bench.time_x", ())
    raw.series[key] = [_run(f"c{i}", i * DAY, i * DAY, 1.0 if i < 3 else 1.5) for i in range(6)]
    raw.series[key].append(_run("c1", DAY, 10 * DAY, rerun_value))
    change = {"kind": "regression", "before_sha": "c2", "after_sha": "c3", "before_value": 1.0, "after_value": 1.5,
              "cause": "code", "event": None}
    detect = {"events": [], "series": [{"machine": "m", "environment": "env", "benchmark": "bench.time_x",
                                         "params": {}, "status": "ok", "points": 6, "changes": [change]}]}
    return detect, raw


def test_a_rerun_of_an_old_commit_at_the_new_level_marks_the_step_as_following_the_run_date():
    detect, raw = _stepped(rerun_value=1.5)
    got = ev.run_date_evidence(detect, raw)
    assert (got["code_big_regressions"], got["code_testable"], got["code_follow_run_date"]) == (1, 1, 1)


def test_a_rerun_at_the_old_level_leaves_the_code_step_standing():
    detect, raw = _stepped(rerun_value=1.02)
    got = ev.run_date_evidence(detect, raw)
    assert (got["code_testable"], got["code_follow_run_date"]) == (1, 0)


def test_an_event_step_contradicted_by_a_rerun_at_the_before_level():
    detect, raw = _stepped(rerun_value=1.0)
    change = detect["series"][0]["changes"][0]
    change.update(cause="environment", event="m@day3#1")
    detect["events"] = [{"id": "m@day3#1", "first_run_date": "1970-01-04"}]
    got = ev.run_date_evidence(detect, raw)
    assert (got["event_big_regressions"], got["event_testable"], got["event_contradicted"]) == (1, 1, 1)
    assert got["code_big_regressions"] == 0


def test_another_machine_moving_the_same_way_agrees():
    detect, raw = _stepped(rerun_value=1.5)
    other = ("m2", "env", "bench.time_x", ())
    raw.series[other] = [_run(f"c{i}", i * DAY, i * DAY, 2.0 if i < 3 else 2.9) for i in range(6)]
    assert ev.machine_agreement(detect, raw)["agree"] == 1
    raw.series[other] = [_run(f"c{i}", i * DAY, i * DAY, 2.0) for i in range(6)]
    got = ev.machine_agreement(detect, raw)
    assert (got["comparable"], got["agree"]) == (1, 0)


def test_the_cli_judges_the_mmtrack_on_pythonpath_on_real_results(tmp_path):
    out = tmp_path / "eval.json"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "eval_histories.py"), "--histories",
                           f"metpy={METPY_DIR}", "--quick", "--inject", "0", "--cache", str(tmp_path / "cache"),
                           "--json", str(out)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got["mmtrack"] == str(REPO)
    (row,) = got["histories"]
    assert row["benchmarks_sampled"] and 10 < row["series"] <= ev.QUICK_BENCHMARKS
    assert row["series_matched_to_files"] == row["series"]
    assert row["commits"] > 20 and row["change_points"] >= 0
    assert sum(row["gate"][t]["judged"] for t in ("quiet", "mid", "noisy")) > 100
    (cut,) = row["stability"]["cuts"]
    assert cut["kept"] + cut["vanished"] + cut["appeared"] >= 0 and "error" not in cut
    assert "| metpy |" in proc.stdout
    assert any(p.name.startswith("metpy-") for p in (tmp_path / "cache" / "imports").iterdir())


def _noise_history(folder, seed: int, spread: float) -> None:
    """An asv results folder of 12 series of 60 commits of log-normal noise, written as the injection writes."""
    rng = np.random.default_rng(seed)
    suite = [ev.Synthetic(f"made.Suite.time_{i}", "made", math.log(1e-3) + spread * rng.standard_normal(60),
                          np.tile([-0.01, 0.01, -0.03, 0.03], (60, 1))) for i in range(12)]
    ev.write_suite(suite, folder / "results")


def test_injected_steps_in_noise_are_found_and_aa_noise_raises_few_alarms(tmp_path):
    noise = {}
    for i, spread in enumerate((0.005, 0.01, 0.02)):
        _noise_history(tmp_path / f"h{i}", seed=i, spread=spread)
        noise[f"h{i}"] = tmp_path / f"h{i}"
    got = ev.injection(tmp_path / "cache", ev.code_of(REPO), noise, n=24, length=50, seed=3)
    assert "error" not in got, got
    assert got["histories"] == {"h0": 12, "h1": 12, "h2": 12}
    everything = got["all"]
    assert everything["aa_series"] == 24 and everything["steps"] == 24
    assert everything["recall_newest_20%"] >= 0.5  # a 20% step in 0.5-2% noise
    assert everything["aa_false_per_100"] < 2 and got["suite_false_alerts_per_commit"] < 0.5
    assert got["gate_aa"]["all"]["judged"] > 100
    assert "| all | 24 |" in ev.injection_markdown(got)


def test_the_import_key_ignores_the_analysis_and_the_code_key_does_not(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    for f in ("mmtrack/analysis/detect.py", "mmtrack/store/db.py"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("x = 1\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "code")
    before = ev.code_of(tmp_path)
    (tmp_path / "mmtrack/analysis/detect.py").write_text("x = 2\n")
    after_analysis = ev.code_of(tmp_path)
    assert after_analysis.import_key == before.import_key and after_analysis.key != before.key
    (tmp_path / "mmtrack/store/new.py").write_text("y = 1\n")  # untracked
    assert ev.code_of(tmp_path).import_key != before.import_key


def test_the_stepped_suite_places_newest_steps_at_each_of_2_to_5_commits_before_the_newest():
    rng = np.random.default_rng(1)
    source = ev.NoiseSource("h/s", rng.normal(0.0, 0.01, 60), np.zeros((60, 4)))
    suite = ev.make_suite(rng, {"h": [source]}, 64, 40, stepped=True)
    assert {40 - s.step_at for s in suite if s.step_at >= 40 - max(ev.NEWEST_STEPS)} == set(ev.NEWEST_STEPS)


def test_the_gaussian_bound_is_near_one_far_above_the_noise_and_near_zero_within_it():
    rng = np.random.default_rng(3)

    def stepped(spread: float, step: float) -> ev.Synthetic:
        s = ev.Synthetic("s", "gauss", rng.normal(0.0, spread, 60), np.zeros((60, 4)), step_at=57, step=step)
        s.logv[57:] += step
        return s

    assert ev.gaussian_bound(stepped(0.01, math.log(1.2))) > 0.99
    assert ev.gaussian_bound(stepped(0.2, math.log(1.1))) < 0.05
    # Past the threshold: a step far above the noise but on the threshold is found about half the time.
    assert ev.gaussian_bound(stepped(0.01, math.log(1.2)), ComparePolicy().threshold) > 0.99
    assert 0.3 < ev.gaussian_bound(stepped(0.01, math.log(1.1)), ComparePolicy().threshold) < 0.7
    assert ev.gaussian_bound(stepped(0.2, math.log(1.1)), ComparePolicy().threshold) < 0.05


def test_the_bound_past_the_threshold_reads_the_gates_own_threshold():
    assert ev.gate_threshold() == ComparePolicy().threshold
