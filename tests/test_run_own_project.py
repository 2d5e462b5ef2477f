"""The first `mmtrack run` on a user's own project (issue 45): asv imports the project from the environment it
runs in, never from the project folder. The pre-check imports the suite the same way and says, in one line, to
install the project, before asv's traceback."""

from __future__ import annotations

import os

import pytest
from conftest import REPO, run_cli
from test_run_acceptance import ASV_CONF, asv_env, commit_all, make_repo

SUITE = "import tinylib\n\n\nclass Tiny:\n    def time_work(self):\n        tinylib.work()\n"


@pytest.fixture
def project(tmp_path):
    """tinylib: a package at the project's top level, not installed; a suite that imports it."""
    (tmp_path / "home").mkdir()
    env = asv_env(tmp_path / "home", MMTRACK_DB=f"sqlite:///{tmp_path / 'store.db'}")
    repo = make_repo(tmp_path, env, ASV_CONF)
    (repo / "tinylib").mkdir()
    (repo / "tinylib" / "__init__.py").write_text("def work(n=2000):\n    return sum(range(n))\n")
    (repo / "benchmarks" / "bench_tiny.py").write_text(SUITE)
    commit_all(repo, env, "tinylib and its suite", 1)
    return repo, env


def test_a_project_that_is_not_installed_is_one_line_naming_the_install(project):
    repo, env = project
    proc = run_cli("run", "--quick", cwd=repo, env=env, timeout=600)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "tinylib" in lines[0] and "pip install -e" in lines[0] and str(repo) in lines[0], lines[0]
    assert not (repo / ".asv" / "results").exists()  # asv never ran


def test_the_pre_check_imports_the_suite_as_asv_does(project):
    """The project folder is not on the suite's import path, in the pre-check as in asv; what asv's environment
    can import (here: through ASV_PYTHONPATH, as an installed project would be) the pre-check imports too."""
    from mmtrack.asvbridge.suite_check import preflight

    repo, env = project
    (failure,) = preflight(repo / "benchmarks", env)
    assert failure.module == "bench_tiny" and failure.missing == "tinylib"
    installed = {**env, "ASV_PYTHONPATH": os.pathsep.join([str(repo), str(REPO)])}
    assert preflight(repo / "benchmarks", installed) == []


def test_once_asv_can_import_the_project_the_run_succeeds(project):
    repo, env = project
    installed = {**env, "ASV_PYTHONPATH": os.pathsep.join([str(repo), str(REPO)])}
    proc = run_cli("run", "--quick", cwd=repo, env=installed, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "time_work" in proc.stdout
