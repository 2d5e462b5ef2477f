"""A `-b` re-run of one parameter of a benchmark reports that parameter alone: asv keeps the other parameters'
earlier values in the commit's results file and stamps the benchmark as run, so they once passed for this run's."""

from __future__ import annotations

import pytest

from conftest import run_cli
from test_run_acceptance import ASV_CONF, BENCH, asv_env, commit_all, make_repo


def test_selected_params_follow_asv_rule():
    from mmtrack.asvbridge.asvrun import selected_params

    meta = {"version": 2, "b.W.track_loop": {"name": "b.W.track_loop", "params": [["1", "2"]]},
            "b.W.time_x": {"name": "b.W.time_x", "params": []}}
    assert selected_params(meta, r"track_loop\(2\)") == {"b.W.track_loop": {1}}
    assert selected_params(meta, "track_loop") == {"b.W.track_loop": {0, 1}}
    assert selected_params(meta, None) == {}


@pytest.mark.slow
def test_a_b_rerun_reports_only_the_parameter_it_ran(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = f"sqlite:///{tmp_path / 'store.db'}"
    env = asv_env(home, MMTRACK_DB=db)
    repo = make_repo(tmp_path, env, ASV_CONF)
    (repo / "benchmarks" / "bench_work.py").write_text(BENCH.format(work=2000))
    commit_all(repo, env, "work", 1)
    first = run_cli("run", "--quick", cwd=repo, env=env, timeout=600)
    assert first.returncode == 0 and "2 benchmark cases: 2 ok" in first.stdout, first.stdout[-2000:] + first.stderr
    again = run_cli("run", "--quick", "-b", r"track_loop\(2\)", cwd=repo, env=env, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "1 benchmark cases: 1 ok" in again.stdout, again.stdout[-2000:]
