"""The project's own asv.conf.json and benchmarks/ (mmtrack's own suite; the user examples are in examples/)
run under `mmtrack run`.

The suite is copied into a fresh git repo (the developer's tree may be dirty,
and a dirty tree is refused), with the project's config unchanged.
"""

from __future__ import annotations

import shutil

from conftest import REPO, run_cli
from test_run_acceptance import asv_env, commit_all, engine_cases, git, results_of


def test_project_suite_runs_under_mmtrack_run(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = asv_env(home)
    repo = tmp_path / "mmtrack-copy"
    repo.mkdir()
    shutil.copy(REPO / "asv.conf.json", repo / "asv.conf.json")
    shutil.copytree(REPO / "benchmarks", repo / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".gitignore").write_text(".asv/\n.mmtrack/\n__pycache__/\n")
    git(repo, env, "init", "-q", "-b", "main")
    sha = commit_all(repo, env, "copy of the project's suite", 1)
    proc = run_cli("run", "--quick", "-b", "import_mmtrack|Tiny.track_tiny", cwd=repo, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 benchmark cases: 2 ok" in proc.stdout
    rows = results_of(repo, sha)["results"]
    assert set(rows) == {"bench_import.ImportTime.track_import_mmtrack", "bench_worker.Tiny.track_tiny"}
    imp = engine_cases(repo, sha)[("bench_import.ImportTime.track_import_mmtrack", "{}")]
    assert imp["status"] == "ok"
    assert imp["metrics"]["import_ms"] > 0 and imp["metrics"]["modules_loaded"] >= 1
