"""scripts/eval_histories.py: the evaluation on real histories, on MetPy's real results kept in tests/data and on
series the tests make, where the right figure is known."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import METPY_DIR, REPO

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
                           f"metpy={METPY_DIR}", "--cache", str(tmp_path / "cache"), "--json", str(out)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got["mmtrack"] == str(REPO)
    (row,) = got["histories"]
    assert row["series"] > 50 and row["series_matched_to_files"] == row["series"]
    assert row["commits"] > 20 and row["change_points"] >= 0
    assert "| metpy |" in proc.stdout
    assert list((tmp_path / "cache").iterdir())[0].name.startswith("metpy-")
