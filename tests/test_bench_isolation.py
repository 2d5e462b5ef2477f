"""Benchmarks that crash, hang or exit never take ``mmtrack bench`` with them (issue 15).

Each faulty benchmark sits between good ones in one real suite, in a real git repository, run by the
real CLI with a real SQLite store: the good cases are saved, each faulty one is named with its cause,
and the exit status is 2.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from conftest import cli_env, run_cli
from mmtrack.store.db import open_store

FAST = ["--quick", "--min-samples", "5", "--max-samples", "8", "--no-pin", "--compare", "none"]

GOOD = """
class {name}:
    @mmtrack.bench(chunk_size=50, backend=mmtrack.WallClockBackend)
    def track_good(self, ctx, chunk_size, chunk_num):
        sum(range(chunk_size))
"""

FAULTS = {
    "Exit0": """
    @mmtrack.bench(chunk_size=1)
    def track_fault(self, ctx, chunk_size, chunk_num):
        sys.exit(0)
""",
    "Exit3": """
    @mmtrack.bench(chunk_size=1)
    def track_fault(self, ctx, chunk_size, chunk_num):
        os._exit(3)
""",
    "Segv": """
    @mmtrack.bench(chunk_size=1)
    def track_fault(self, ctx, chunk_size, chunk_num):
        ctypes.string_at(0)
""",
    "Hang": """
    timeout = 2  # asv's attribute: this case's limit

    @mmtrack.bench(chunk_size=1)
    def track_fault(self, ctx, chunk_size, chunk_num):
        while True:
            pass
""",
    "Overflow": """
    @mmtrack.bench_sample(chunk_size=1)
    def track_fault(self, ctx, chunk_size, chunk_num):
        return mmtrack.BenchSampleResult(1).push_metric(mmtrack.MetricValue("huge", 1e308, "B"))
""",
    "NaNBackend": """
    @mmtrack.bench(chunk_size=1, backend=NaNDuration)
    def track_fault(self, ctx, chunk_size, chunk_num):
        pass
""",
    "Fork": """
    @mmtrack.bench(chunk_size=1)
    def track_fault(self, ctx, chunk_size, chunk_num):
        if not Fork.forked:
            Fork.forked = True
            os.fork()  # the child returns into the runner
""",
}

CAUSES = {
    "Exit0": "the benchmark called sys.exit(0)",  # issue 47: an exit fails the case, in a worker or in-process
    "Exit3": "worker exited with status 3",
    "Segv": "worker killed by SIGSEGV",
    "Hang": "worker timed out after 2 s",
    "Overflow": "metric 'huge': value 1e+308 would overflow the statistics",
    "NaNBackend": "backend NaNDuration returned a duration of nan",
    "Fork": "a forked child process returned into the benchmark runner",
}

HEADER = '''
import ctypes
import os
import sys

import mmtrack


class NaNDuration(mmtrack.MeasurementBackend):
    def collect(self, host_elapsed, ops, chunk_index, results, metrics):
        results.duration = float("nan")
'''


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_project(root: Path, source: str) -> Path:
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "suite.py").write_text(source)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "suite")
    return root


def faulty_suite() -> str:
    """G0, Exit0, G1, Exit3, G2, ...: every fault between two good benchmarks."""
    parts = [HEADER, GOOD.format(name="G0")]
    for i, (name, body) in enumerate(FAULTS.items(), start=1):
        extra = "    forked = False\n" if name == "Fork" else ""
        parts.append(f"\nclass {name}:\n{extra}{textwrap.dedent(body).replace(chr(10), chr(10) + '    ')}\n")
        parts.append(GOOD.format(name=f"G{i}"))
    return "\n".join(parts)


def stored(project: Path) -> dict[str, tuple[str, str | None]]:
    """(status, message) of every stored case, by benchmark name."""
    with open_store(f"sqlite:///{project / '.mmtrack' / 'mmtrack.db'}") as store, store.engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT b.name, r.status, r.message FROM result r JOIN benchmark b ON b.id = r.benchmark_id"
        )).all()
    return {name: (status, message) for name, status, message in rows}


def test_each_fault_fails_its_case_alone_and_the_good_ones_are_saved(tmp_path):
    project = make_project(tmp_path / "proj", faulty_suite())
    proc = run_cli("bench", "benchmarks", *FAST, cwd=project, timeout=240)
    out = proc.stdout
    assert proc.returncode == 2, out + proc.stderr
    for name, cause in CAUSES.items():
        line = next((ln for ln in out.splitlines() if ln.startswith(f"failed suite.{name}.track_fault: ")), None)
        assert line is not None and cause in line, (name, out[-3000:])
    n_good = len(FAULTS) + 1
    assert f"{n_good + len(FAULTS)} benchmark cases: {n_good} ok, {len(FAULTS)} failed, 0 skipped" in out
    assert out.count("saved as run #") == 1  # the forked child neither reported nor saved
    cases = stored(project)
    good = {f"suite.G{i}.track_good" for i in range(n_good)}
    assert {n for n, (status, _) in cases.items() if status == "ok"} == good
    for name, cause in CAUSES.items():
        status, message = cases[f"suite.{name}.track_fault"]
        assert status == "failed" and cause in (message or "")
    assert not list((project / ".mmtrack" / "journal").glob("*"))  # saved: the journal is gone


SLOW_SUITE = HEADER + "".join(GOOD.format(name=f"G{i}") for i in range(2)) + '''
class H_Slow:
    @mmtrack.bench(chunk_size=1, backend=mmtrack.WallClockBackend)
    def track_slow(self, ctx, chunk_size, chunk_num):
        import time
        time.sleep(0.5)
'''

STUCK_SUITE = HEADER + GOOD.format(name="G0") + '''
class H_Stuck:
    @mmtrack.bench(chunk_size=1, backend=mmtrack.WallClockBackend)
    def track_stuck(self, ctx, chunk_size, chunk_num):
        import time
        time.sleep(120)
'''


def _ctrl_c_as_from_a_terminal() -> None:
    """SIGINT back to its default in the child: a test run started in the background (``pytest &`` from a
    script, nohup) inherits it ignored, and Python then never turns Ctrl-C into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("signum", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_sigterm_or_ctrl_c_halfway_keeps_the_finished_cases(tmp_path, signum, name):
    project = make_project(tmp_path / "proj", SLOW_SUITE)
    # The slow case needs 5 samples of 0.5 s, plus warm-up: SIGTERM lands while it runs.
    proc = subprocess.Popen(
        [sys.executable, "-m", "mmtrack", "bench", "benchmarks", *FAST, "--duration", "5"],
        cwd=project, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_ctrl_c_as_from_a_terminal,
    )
    journal = project / ".mmtrack" / "journal"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(journal.glob("*/*.json"))) < 3:  # run.json + 2 cases
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == (130 if name == "Ctrl-C" else 143), out + err  # 130 and 143, as every verb (issue 60)
    assert f"interrupted by {name}: 2 of 3 benchmark cases finished" in out
    cases = stored(project)
    assert cases == {"suite.G0.track_good": ("ok", None), "suite.G1.track_good": ("ok", None)}


def test_a_killed_run_is_saved_by_the_next_one(tmp_path):
    project = make_project(tmp_path / "proj", SLOW_SUITE)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mmtrack", "bench", "benchmarks", *FAST, "--duration", "5"],
        cwd=project, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    journal = project / ".mmtrack" / "journal"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(journal.glob("*/*.json"))) < 3:
        time.sleep(0.1)
    proc.kill()  # no chance to save: the journal is all that is left
    proc.communicate(timeout=60)
    again = run_cli("bench", "benchmarks", *FAST, "-b", "G0", cwd=project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert re.search(r"saved 2 finished cases of an earlier, unfinished run .* as run #1", again.stdout)
    assert "saved as run #2" in again.stdout
    assert not list(journal.glob("*"))


def test_timeout_option_and_in_process_mode(tmp_path):
    project = make_project(tmp_path / "proj", STUCK_SUITE)
    # A case stuck far past a timeout several seconds long: a loaded machine's slow import cannot reach it.
    proc = run_cli("bench", "benchmarks", *FAST, "--no-save", "-b", "Stuck", "--timeout", "8", cwd=project)
    assert proc.returncode == 2
    assert "failed suite.H_Stuck.track_stuck: worker timed out after 8 s" in proc.stdout
    proc = run_cli("bench", "benchmarks", *FAST, "--no-save", "-b", "G0", "--in-process", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 benchmark cases: 1 ok" in proc.stdout


def test_no_git_commit_means_no_save_unless_no_save(tmp_path):
    root = tmp_path / "plain"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "suite.py").write_text(HEADER + GOOD.format(name="G0"))
    proc = run_cli("bench", "benchmarks", *FAST, cwd=root, env=cli_env(GIT_CEILING_DIRECTORIES=str(tmp_path)))
    assert proc.returncode == 2 and "cannot save the run: no git commit" in proc.stderr
    assert "--no-save" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("bench", "benchmarks", *FAST, "--no-save", cwd=root,
                   env=cli_env(GIT_CEILING_DIRECTORIES=str(tmp_path)))
    assert proc.returncode == 0, proc.stdout + proc.stderr



@pytest.fixture
def forget_imported_suites(monkeypatch):
    """An in-process run imports this test's ``benchmarks`` package: no other test's may be cached, and
    later tests must not find this one."""

    def suites() -> dict:
        return {n: m for n, m in sys.modules.items() if n == "benchmarks" or n.startswith("benchmarks.")}

    earlier = suites()
    for name in earlier:
        del sys.modules[name]
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in suites():
        del sys.modules[name]
    sys.modules.update(earlier)


def test_a_locked_store_is_waited_for_then_the_journal_is_kept(tmp_path, monkeypatch, forget_imported_suites):
    import io
    import sqlite3

    from rich.console import Console

    from mmtrack.cli_events import bench_events
    from mmtrack.commands import bench as bench_command
    from mmtrack.commands import bench_save
    from mmtrack.store import db

    project = make_project(tmp_path / "proj", HEADER + GOOD.format(name="G0"))
    url = f"sqlite:///{project / '.mmtrack' / 'mmtrack.db'}"
    with open_store(url):
        pass  # the schema exists: only the run's own write has to wait
    monkeypatch.setattr(db, "BUSY_TIMEOUT_S", 1.0)
    monkeypatch.setattr(bench_save, "LOCK_NOTICE_S", 0.2)
    monkeypatch.chdir(project)
    request = bench_command.BenchRequest(
        path=project / "benchmarks", quick=True, compare="none", db=url,
        overrides={"min_samples": 5, "max_samples": 8, "pin_cpu": False},
    )
    holder = sqlite3.connect(project / ".mmtrack" / "mmtrack.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        out = io.StringIO()
        code = bench_command.run_bench(request, bench_events(Console(file=out, width=200))).exit_code
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    text_out = out.getvalue()
    assert code == 2
    assert "waiting for the write lock of" in text_out
    assert "run not saved" in text_out and "database is locked" in text_out
    assert "1 finished cases are kept in" in text_out
    assert len(list((project / ".mmtrack" / "journal").glob("*/*.json"))) == 2  # run.json + the case
    out = io.StringIO()
    assert bench_command.run_bench(request, bench_events(Console(file=out, width=200))).exit_code == 0
    assert "saved 1 finished cases of an earlier, unfinished run" in out.getvalue()
    assert set(stored(project)) == {"suite.G0.track_good"}
    assert not list((project / ".mmtrack" / "journal").glob("*"))



# -- bad numbers, in-process (no worker needed) -----------------------------------------------------
def _run_spec(**kwargs):
    from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark

    options = RunOptions(warm_up=0.001, duration=0.002, min_samples=3, max_samples=3, pin_cpu=False)
    return run_benchmark(BenchSpec("t", lambda ctx, n, i: None, chunk_size=1, **kwargs), options)


def _backend(duration):
    import mmtrack

    class Custom(mmtrack.MeasurementBackend):
        def collect(self, host_elapsed, ops, chunk_index, results, metrics):
            results.duration = duration

    return Custom


@pytest.mark.parametrize("duration", [float("nan"), float("inf"), 0.0, -1.0])
def test_a_custom_backend_duration_that_is_not_finite_and_positive_fails_naming_the_backend(duration):
    from mmtrack.measure.runner import BenchmarkDefinitionError

    with pytest.raises(BenchmarkDefinitionError, match=r"backend Custom returned a duration of .* at sample 0"):
        _run_spec(backend=_backend(duration))


def test_zero_from_a_built_in_backend_still_means_host_time():
    import mmtrack

    class Zero(mmtrack.WallClockBackend):  # inherits the built-in promise: zero means host time

        def collect(self, host_elapsed, ops, chunk_index, results, metrics):
            results.duration = 0.0

    stats = _run_spec(backend=Zero)
    assert stats.durations == stats.host_durations and all(d > 0 for d in stats.durations)


@pytest.mark.parametrize("value", [1e308, -1e200, 2e150])
def test_metric_values_whose_statistics_would_overflow_are_rejected_naming_the_metric(value):
    from mmtrack import MetricValue
    from mmtrack.measure.metrics import InvalidMetricError

    with pytest.raises(InvalidMetricError, match=r"metric 'huge': value .* would overflow the statistics"):
        MetricValue("huge", value, "B").validate("bench")
    MetricValue("big", 1e149, "B").validate("bench")  # large but safe: accepted
