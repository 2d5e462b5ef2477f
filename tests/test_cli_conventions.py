"""CLI conventions a new user meets in the first hour (issue 45): a bare group prints its help, options that
cannot apply are refused before any work, and every option of `list` does what its help says."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import METPY_RESULTS, cli_env, run_cli


@pytest.mark.parametrize("group", [[], ["db"]], ids=["mmtrack", "mmtrack-db"])
def test_a_bare_group_prints_its_help_and_exits_0(tmp_path, group):
    proc = run_cli(*group, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Usage:") and "Commands:" in proc.stdout and "\\n" not in proc.stdout
    assert proc.stderr == ""


# -- list: each option, driven ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The MetPy history, plus one bench-like run of another machine and environment, for the filters."""
    from datetime import datetime, timezone

    from test_store_support import commit_info, engine_stats

    from mmtrack.store.db import open_store
    from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run

    root = tmp_path_factory.mktemp("list")
    shutil.copytree(METPY_RESULTS, root / "results")
    db = root / "store.db"
    assert run_cli("import-asv", str(root / "results"), "--db", str(db), "--no-progress", cwd=root).returncode == 0
    stats = engine_stats()
    with open_store(f"sqlite:///{db}") as s:
        run = RunRecord("laptop", "py3.11", commit_info(1, base=datetime(2030, 1, 1, tzinfo=timezone.utc)),
                        datetime(2030, 1, 1, tzinfo=timezone.utc), suite="benchmarks")
        record_engine_run(s, run, [EngineCaseRecord(stats.name, stats.params, version="v1", stats=stats)])
    return root, db


def listed(store, *args: str):
    root, db = store
    proc = run_cli("list", *args, "--db", str(db), "--format", "json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_list_limit_keeps_the_latest_n_of_every_listing(store):
    every = {what: listed(store, what) for what in ("runs", "commits", "machines", "benchmarks")}
    assert len(every["runs"]) == 60 and len(every["commits"]) == 60
    assert listed(store, "runs", "--limit", "3") == every["runs"][:3]  # latest first
    assert listed(store, "commits", "--limit", "3") == every["commits"][-3:]  # oldest first: the latest 3
    assert listed(store, "machines", "--limit", "1") == every["machines"][:1]
    assert listed(store, "benchmarks", "--limit", "5") == every["benchmarks"][:5]


def test_list_machine_and_env_filter_every_listing(store):
    assert {r["machine"] for r in listed(store, "runs", "--machine", "laptop")} == {"laptop"}
    assert len(listed(store, "commits", "--machine", "laptop")) == 1
    assert [m["name"] for m in listed(store, "machines", "--env", "py3.11")] == ["laptop"]
    assert [m["environments"] for m in listed(store, "machines", "--env", "py3.11")] == [["py3.11"]]
    assert [b["name"] for b in listed(store, "benchmarks", "--machine", "laptop")] == ["bench.Suite.track_sum"]
    assert [b["name"] for b in listed(store, "benchmarks", "--env", "py3.11")] == ["bench.Suite.track_sum"]
    assert len(listed(store, "runs", "--env", "py3.11")) == 1


def test_list_benchmark_regex_selects_benchmarks_and_is_refused_elsewhere(store):
    names = [b["name"] for b in listed(store, "benchmarks", "-b", "smoothing")]
    assert names and all("smoothing" in n for n in names)
    root, db = store
    for what in ("runs", "commits", "machines"):
        proc = run_cli("list", what, "-b", "smoothing", "--db", str(db), cwd=root)
        assert proc.returncode == 2 and "does not apply to `list " + what in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_list_table_format_shows_what_json_lists(store):
    root, db = store
    proc = run_cli("list", "commits", "--limit", "2", "--db", str(db), "--format", "table", cwd=root)
    assert proc.returncode == 0 and proc.stdout.startswith("2 commits")
    for c in listed(store, "commits", "--limit", "2"):
        assert c["sha"][:8] in proc.stdout


# -- bench: refused before the suite runs ----------------------------------------------------------

MARKING_SUITE = '''
import os

import mmtrack


class Marks:
    @mmtrack.bench(chunk_size=1, backend=mmtrack.WallClockBackend)
    def track_marks(self, ctx, chunk_size, chunk_num):
        open(os.environ["MARK"], "a").close()
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    from test_bench_isolation import make_project

    root = make_project(tmp_path / "proj", MARKING_SUITE)
    assert run_cli("db", "upgrade", cwd=root).returncode == 0
    return root


@pytest.mark.parametrize(("args", "says"), [
    (["--compare", "deadbeef"], "'deadbeef' is not in the store"),
    (["--compare", "run:99"], "no run with that id"),
    (["--seed", "3"], "--seed 3 shuffles --order random only"),
    (["--compare", "none", "--fail-on", "regression"], "--compare none turns off"),
], ids=["unknown-commit", "unknown-run", "seed-without-random", "fail-on-without-compare"])
def test_bench_refuses_what_cannot_apply_before_the_suite_runs(project, args, says):
    mark = project / "ran"
    proc = run_cli("bench", "benchmarks", "--quick", "--min-samples", "3", "--max-samples", "3", *args,
                   cwd=project, env=cli_env(MARK=str(mark)))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not mark.exists() and "track_marks" not in proc.stdout


@pytest.mark.parametrize(("args", "says"), [
    (["compare", "HEAD~1", "HEAD", "--only-changed", "--format", "json"], "--only-changed leaves unchanged rows out"),
    (["compare", "HEAD~1", "HEAD", "--only-changed", "--format", "markdown"], "--format markdown lists every row"),
    (["detect", "--all", "--format", "json"], "--all adds improvements to the table"),
], ids=["compare-json", "compare-markdown", "detect-json"])
def test_table_only_options_are_refused_with_another_format_before_any_work(store, args, says):
    root, db = store
    before = db.stat().st_mtime_ns
    proc = run_cli(*args, "--db", str(db), cwd=root)
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert db.stat().st_mtime_ns == before  # detect stored nothing


def _ctrl_c_as_from_a_terminal() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a test started in the background inherits SIGINT ignored


def test_ctrl_c_during_an_import_exits_130_and_keeps_what_was_imported(tmp_path):
    """As `bench` (tests/test_bench_isolation.py) and `run`: Ctrl-C is exit 130, and the finished part stays."""
    import signal
    import sqlite3
    import sys
    import time

    from conftest import CONDA_RESULTS

    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(CONDA_RESULTS / "benchmarks.json", results)
    for i in range(6):  # 2,076 files: several seconds of import to interrupt
        shutil.copytree(CONDA_RESULTS / "benchmarkers-MacBook-Pro.local", results / f"machine{i}")
    db = tmp_path / "store.db"
    proc = subprocess.Popen([sys.executable, "-m", "mmtrack", "import-asv", str(results), "--db", str(db),
                             "--no-progress"], cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_as_from_a_terminal)

    def runs() -> int:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2) as con:
                return con.execute("select count(*) from run").fetchone()[0]
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and runs() == 0 and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    kept = runs()
    assert 0 < kept < 2076
    again = run_cli("import-asv", str(results), "--db", str(db), "--no-progress", cwd=tmp_path)
    assert again.returncode == 0 and f"skipped {kept} already imported" in again.stdout, again.stdout
