"""A/B runs never make compare, detect or the pages ask for an environment the user never named (issue 45).

`mmtrack continuous` / `run --confirm` / `bisect` store their two sides in an environment of their own
(``ab-py3.X``), beside the per-commit history that `mmtrack run` keeps in asv's environment. A plain
`compare A B` used to ask for `--env <asv's generated name>` once both held the same commits.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from conftest import run_cli
from test_store_support import commit_info, engine_stats

from mmtrack.ab.record import ab_environment
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run
from mmtrack.store.schema import AB_RUN_KIND

HISTORY_ENV = "existing-py_tmp_nc_venv_bin_python3"  # asv's name for the environment `mmtrack run` ran in
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def store_with_ab(tmp_path_factory):
    """Ten commits of per-commit history, and the last two measured again A/B (as `continuous` stores them)."""
    from mmtrack.store.db import open_store

    path = tmp_path_factory.mktemp("abenv") / "store.db"
    stats = engine_stats()
    with open_store(f"sqlite:///{path}") as store:
        for i in range(1, 11):
            run = RunRecord("box", HISTORY_ENV, commit_info(i), T0 + timedelta(hours=i), kind="asv", suite="benchmarks")
            record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, version="v1", stats=stats)])
        for i in (9, 10):
            run = RunRecord("box", ab_environment(), commit_info(i), T0 + timedelta(days=1), kind=AB_RUN_KIND,
                            suite="benchmarks")
            record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, version="v1", stats=stats)])
    return path


def test_plain_compare_reads_the_per_commit_history(store_with_ab, tmp_path):
    a, b = commit_info(9).sha, commit_info(10).sha
    proc = run_cli("compare", a, b, "--db", str(store_with_ab), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    sides = data["sides"]
    assert {sides["before"]["environment"], sides["after"]["environment"]} == {HISTORY_ENV}, sides


def test_compare_reads_the_ab_runs_when_asked_by_name(store_with_ab, tmp_path):
    a, b = commit_info(9).sha, commit_info(10).sha
    proc = run_cli("compare", a, b, "--db", str(store_with_ab), "--env", ab_environment(),
                   "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sides"]["after"]["environment"] == ab_environment()


def test_a_commit_measured_only_a_b_is_still_compared(tmp_path):
    from mmtrack.store.db import open_store

    stats = engine_stats()
    path = tmp_path / "store.db"
    with open_store(f"sqlite:///{path}") as store:
        run = RunRecord("box", HISTORY_ENV, commit_info(1), T0, kind="asv", suite="benchmarks")
        record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, version="v1", stats=stats)])
        for i in (2, 3):  # `continuous` on two commits `mmtrack run` never measured
            run = RunRecord("box", ab_environment(), commit_info(i), T0, kind=AB_RUN_KIND, suite="benchmarks")
            record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, version="v1", stats=stats)])
    proc = run_cli("compare", commit_info(2).sha, commit_info(3).sha, "--db", str(path), "--format", "json",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sides"]["before"]["environment"] == ab_environment()


def test_detect_and_the_pages_read_the_per_commit_history(store_with_ab, tmp_path):
    proc = run_cli("detect", "--db", str(store_with_ab), "--dry-run", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "series" in proc.stdout and ab_environment() not in proc.stdout
    site = tmp_path / "site"
    proc = run_cli("publish", "-o", str(site), "--db", str(store_with_ab), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    metas = "".join(p.read_text() for p in (site / "data" / "b").glob("*.meta.js"))
    assert HISTORY_ENV in metas and ab_environment() not in metas
