"""examples/github-actions.yml: its shell steps, run for real on two pushes.

The GitHub-specific actions (checkout, setup-python, pages) are not run; the
steps that keep the history (restore, `mmtrack run`, save) are executed with
bash exactly as written, in fresh clones of a bare "origin", twice.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

from conftest import REPO
from test_run_acceptance import asv_env, commit_all, git, make_repo

WORKFLOW = REPO / "examples" / "github-actions.yml"

SUITE = '''\
import mmtrack


class Tiny:
    @mmtrack.bench(chunk_size=8)
    def track_sum(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            sum(range(300))


def track_answer():
    return 42
'''


def steps() -> dict[str, str]:
    data = yaml.safe_load(WORKFLOW.read_text())
    return {s["name"]: s["run"] for s in data["jobs"]["benchmark"]["steps"] if "name" in s and "run" in s}


def workflow_env() -> dict[str, str]:
    env = dict(yaml.safe_load(WORKFLOW.read_text())["env"])
    # ${{ secrets.MMTRACK_DB || 'default' }}: no secret here, so the default.
    env["MMTRACK_DB"] = env["MMTRACK_DB"].split("'")[1]
    return env


def test_workflow_declares_what_the_docs_say():
    data = yaml.safe_load(WORKFLOW.read_text())
    on = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert on["push"]["branches"] == ["main"]
    names = list(steps())
    assert names == [
        "Install the project and mmtrack",
        "Restore the history",
        "Run the benchmarks of this commit",
        "Save the history",
        "Build the pages",
    ]
    assert steps()["Run the benchmarks of this commit"].strip() == "mmtrack run --fail-on regression"
    assert steps()["Build the pages"].strip() == "mmtrack publish -o site"
    assert data["env"]["MMTRACK_MACHINE"]  # one machine name across hosted runners


@pytest.fixture
def shim(tmp_path):
    """`mmtrack` on PATH, as `pip install` would put it, running this checkout."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "mmtrack"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m mmtrack \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bindir


def test_history_steps_keep_results_across_pushes(tmp_path, shim):
    home = tmp_path / "home"
    home.mkdir()
    env = asv_env(home, **workflow_env(), MMTRACK_QUICK="1")
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True, env=env)
    dev = make_repo(tmp_path / "dev", env)
    (dev / "benchmarks" / "tiny.py").write_text(SUITE)
    git(dev, env, "remote", "add", "origin", str(origin))
    run = steps()
    shas = []
    for push in (1, 2):
        shas.append(commit_all(dev, env, f"push {push}", push))
        git(dev, env, "push", "-q", "origin", "main")
        ci = tmp_path / f"ci{push}"  # a fresh runner: actions/checkout with fetch-depth: 0
        git(tmp_path, env, "clone", "-q", str(origin), str(ci))
        job_env = {**env, "GITHUB_SHA": shas[-1]}
        for name in ("Restore the history", "Run the benchmarks of this commit", "Save the history"):
            proc = subprocess.run(["bash", "-e", "-c", run[name]], cwd=ci, env=job_env, capture_output=True, text=True)
            assert proc.returncode == 0, f"{name}: {proc.stdout}{proc.stderr}"
    listing = git(origin, env, "ls-tree", "-r", "--name-only", "perf-history")
    files = listing.splitlines()
    machine = workflow_env()["MMTRACK_MACHINE"]
    for sha in shas:
        assert any(f.startswith(f"asv-results/{machine}/{sha[:8]}-") for f in files), listing
    log = git(origin, env, "log", "--format=%s", "perf-history").splitlines()
    assert log[:2] == [f"benchmarks of {shas[1][:12]}", f"benchmarks of {shas[0][:12]}"]
    result = json.loads(
        git(origin, env, "show", f"perf-history:{next(f for f in files if shas[1][:8] in f)}")
    )
    assert result["results"]["tiny.track_answer"][0] == [42]
    # The store travelled with the history: both pushes' commits, with the engine metrics.
    assert "mmtrack.db" in files
    db = tmp_path / "restored.db"
    db.write_bytes(subprocess.run(["git", "show", "perf-history:mmtrack.db"], cwd=origin, env=env,
                                  capture_output=True, check=True).stdout)
    from mmtrack.store import reads
    from mmtrack.store.db import open_store

    store = open_store(f"sqlite:///{db}")
    try:
        assert [c.sha for c in reads.commits(store, machine=machine)] == shas
        names = {m.metric.name for m in reads.measurements_for_commit(store, shas[1], machine)}
        assert {"time_per_op", "throughput"} <= names
    finally:
        store.close()
