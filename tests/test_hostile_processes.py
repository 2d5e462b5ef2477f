"""Hostile attacks on mmtrack's commands as processes (issue 60): `run` on a `track_` that returns a list,
`continuous` interrupted or hung by a suite's thread, and the messages the verbs give. Real asv, real git."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli
from test_run_acceptance import asv_env, commit_all, make_repo

LIST_SUITE = '''\
def track_small_list():
    return [1, 2, 3]


def track_huge_list():
    return list(range(2_000_000))


def track_number():
    return 42
'''


@pytest.fixture(scope="module")
def list_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lists")
    home = root / "home"
    home.mkdir()
    env = asv_env(home)
    repo = make_repo(root, env)
    (repo / "benchmarks" / "lists.py").write_text(LIST_SUITE)
    sha = commit_all(repo, env, "track_ benchmarks that return lists", 1)
    proc = run_cli("run", "--quick", cwd=repo, env=env)
    return {"repo": repo, "env": env, "sha": sha, "proc": proc}


@pytest.mark.slow
def test_run_with_list_returning_track_fails_that_case_alone_and_saves_the_run(list_run):
    proc = list_run["proc"]
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == 2, out[-3000:]  # a failed benchmark (house rule); the run itself is saved
    assert len(out) < 200_000, len(out)  # asv's 10 MB progress line never reaches the terminal whole
    failed = [line for line in out.splitlines() if line.startswith("failed ")]
    assert any("track_small_list" in line and "list of 3" in line for line in failed), failed
    assert any("track_huge_list" in line and "list of 2000000" in line for line in failed), failed
    from test_run_acceptance import engine_cases

    cases = engine_cases(list_run["repo"], list_run["sha"])
    statuses = {name.rsplit(".", 1)[-1]: case["status"] for (name, _), case in cases.items()}
    assert statuses["track_number"] == "ok", cases
    # never stored as a number: the import leaves a list value out (or fails it)
    assert statuses.get("track_small_list") in (None, "failed") and statuses.get("track_huge_list") in (None, "failed")


def test_list_without_argument_names_its_choices_on_one_line(tmp_path):
    proc = run_cli("list", cwd=tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "\\n" not in err and "\\t" not in err, err
    assert "Choose from: runs, commits, machines, benchmarks" in err, err


def test_a_failed_case_of_an_ab_round_advises_a_command_that_runs():
    """continuous and bisect take no asv options: their advice is asv's own command, not `-- -e`."""
    from mmtrack.asvbridge.asvrun import RUN_ERROR_ADVICE, asv_error_advice

    advice = asv_error_advice("a" * 40)("bench.Suite.time_x")
    assert "-- -e" not in advice and "asv run --quick -e -b '^bench\\.Suite\\.time_x$' aaaaaaaaaaaa^!" in advice
    assert "-- -e" in RUN_ERROR_ADVICE  # mmtrack run passes what follows -- to asv run
