"""Nothing a benchmark file does can take ``mmtrack bench`` with it (issue 47).

Real suites in real git repositories, run by the real CLI against real SQLite files and, with
MMTRACK_TEST_PG, a real PostgreSQL server: a file that exits, crashes or hangs at import; a case
that calls ``sys.exit`` in-process; a killed ``mmtrack bench``; values the schema cannot hold; a
megabyte-sized message. Each fails alone, in one line, and the rest is saved.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import text

from conftest import cli_env, run_cli
from mmtrack.store.db import open_store
from test_bench_isolation import FAST, GOOD, HEADER, git
from test_store_support import BACKENDS, require_postgres, reset_postgres


def make_suite(root: Path, files: dict[str, str]) -> Path:
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    for name, source in files.items():
        (root / "benchmarks" / name).write_text(source)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "suite")
    return root


def stored(url: str) -> dict[str, tuple[str, str | None]]:
    with open_store(url) as store, store.engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT b.name, r.status, r.message FROM result r JOIN benchmark b ON b.id = r.benchmark_id"
        )).all()
    return {name: (status, message) for name, status, message in rows}


def sqlite_url(project: Path) -> str:
    return f"sqlite:///{project / '.mmtrack' / 'mmtrack.db'}"


IMPORT_FAULTS = {
    "exit0.py": ("import os\nos._exit(0)\n", "worker exited with status 0 while importing it"),
    "exit3.py": ("import os\nos._exit(3)\n", "worker exited with status 3 while importing it"),
    "segv.py": ("import ctypes\nctypes.string_at(0)\n", "worker killed by SIGSEGV while importing it"),
    "selfkill.py": ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                    "worker killed by SIGKILL while importing it"),
    "hang.py": ("while True:\n    pass\n", "worker timed out after 4 s while importing it"),
    "sysexit.py": ("import sys\nsys.exit(0)\n", "SystemExit: 0"),
}


def test_a_file_that_exits_crashes_or_hangs_at_import_fails_alone(tmp_path):
    files = {"a_good.py": HEADER + GOOD.format(name="A"), "z_good.py": HEADER + GOOD.format(name="Z")}
    files.update({name: source for name, (source, _) in IMPORT_FAULTS.items()})
    project = make_suite(tmp_path / "proj", files)
    proc = run_cli("bench", "benchmarks", *FAST, "--timeout", "4", cwd=project, timeout=240)
    out = proc.stdout
    assert proc.returncode == 2, out + proc.stderr
    for name, (_, cause) in IMPORT_FAULTS.items():
        lines = [ln for ln in out.splitlines() if ln.startswith("error: could not import") and ln.find(name) > 0]
        assert len(lines) == 1 and cause in lines[0], (name, out[-3000:])
    assert f"2 benchmark cases: 2 ok, 0 failed, 0 skipped; {len(IMPORT_FAULTS)} files failed to import" in out
    assert set(stored(sqlite_url(project))) == {"a_good.A.track_good", "z_good.Z.track_good"}


IN_PROCESS_EXIT = HEADER + GOOD.format(name="A") + '''
class B_Exit:
    @mmtrack.bench(chunk_size=1)
    def track_exit(self, ctx, chunk_size, chunk_num):
        sys.exit(0)
''' + GOOD.format(name="C")


def test_in_process_sys_exit_fails_the_case_and_the_run_goes_on(tmp_path):
    project = make_suite(tmp_path / "proj", {"suite.py": IN_PROCESS_EXIT})
    proc = run_cli("bench", "benchmarks", *FAST, "--in-process", cwd=project)
    out = proc.stdout
    assert proc.returncode == 2, out + proc.stderr
    assert "failed suite.B_Exit.track_exit: the benchmark called sys.exit(0)" in out
    assert "3 benchmark cases: 2 ok, 1 failed, 0 skipped" in out
    cases = stored(sqlite_url(project))
    assert cases["suite.A.track_good"][0] == cases["suite.C.track_good"][0] == "ok"
    assert cases["suite.B_Exit.track_exit"][0] == "failed"


BUSY = HEADER + '''
class Busy:
    @mmtrack.bench(chunk_size=1)
    def track_busy(self, ctx, chunk_size, chunk_num):
        while True:
            pass
'''


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("phase", ["case", "import"])
def test_a_killed_bench_leaves_no_worker_behind(tmp_path, phase):
    source = BUSY if phase == "case" else "while True:\n    pass\n"
    project = make_suite(tmp_path / "proj", {"suite.py": source})
    proc = subprocess.Popen([sys.executable, "-m", "mmtrack", "bench", "benchmarks", *FAST, "--timeout", "60"],
                            cwd=project, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    family: set[int] = set()
    while time.monotonic() < deadline and len(family) < 3:  # resource tracker, fork server, worker
        time.sleep(0.2)
        family = _descendants(proc.pid)
    assert len(family) >= 3, family
    time.sleep(1.0)  # the worker is busy in the benchmark (or its import) now
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in family):
        time.sleep(0.2)
    left = [p for p in family if _alive(p)]
    for p in left:  # leave nothing running whatever the outcome
        os.kill(p, signal.SIGKILL)
    assert not left, f"still running after mmtrack bench was killed: {left}"


LONG_METRIC = HEADER + GOOD.format(name="A") + '''
class B_LongName:
    @mmtrack.bench_sample(chunk_size=1)
    def track_long(self, ctx, chunk_size, chunk_num):
        return mmtrack.BenchSampleResult(1).push_metric(mmtrack.MetricValue("m" * 900, 1.0, "B"))


class C_LongUnit:
    @mmtrack.bench_sample(chunk_size=1)
    def track_unit(self, ctx, chunk_size, chunk_num):
        return mmtrack.BenchSampleResult(1).push_metric(mmtrack.MetricValue("m", 1.0, "u" * 1000))


class D_Nul:
    @mmtrack.bench_sample(chunk_size=1)
    def track_nul(self, ctx, chunk_size, chunk_num):
        return mmtrack.BenchSampleResult(1).push_metric(mmtrack.MetricValue("a\\x00b", 1.0, "B"))
''' + GOOD.format(name="E")


@pytest.mark.parametrize("backend", BACKENDS)
def test_values_the_schema_cannot_hold_fail_their_case_alone_on_both_backends(tmp_path, backend):
    project = make_suite(tmp_path / "proj", {"suite.py": LONG_METRIC})
    if backend == "sqlite":
        url = sqlite_url(project)
    else:
        url = require_postgres()
        reset_postgres(url)
    proc = run_cli("bench", "benchmarks", *FAST, "--db", url, cwd=project)
    out = proc.stdout
    assert proc.returncode == 2, out + proc.stderr
    assert "saved as run #1" in out and "not saved" not in out
    expected = {
        "suite.B_LongName.track_long": "metric 'mmmm",
        "suite.C_LongUnit.track_unit": "unit is 1,000 characters long; the store keeps at most 800",
        "suite.D_Nul.track_nul": "name holds a NUL character",
    }
    cases = stored(url)
    assert cases["suite.A.track_good"][0] == cases["suite.E.track_good"][0] == "ok"
    for name, why in expected.items():
        line = next(ln for ln in out.splitlines() if ln.startswith(f"failed {name}: not storable: "))
        assert why in line, line
        status, message = cases[name]
        assert status == "failed" and why in (message or "")
    assert "name is 900 characters long; the store keeps at most 800" in cases["suite.B_LongName.track_long"][1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_too_many_metrics_in_one_case_fail_that_case_on_both_backends(tmp_path, backend):
    from mmtrack.asvbridge.session import Outcome, Status
    from mmtrack.benchruns.history import save_run
    from mmtrack.asvbridge.host import host_info
    from mmtrack.measure.metrics import MetricSummary
    from mmtrack.results import BenchContext, CommitInfo
    from test_store_support import engine_stats

    url = f"sqlite:///{tmp_path / 'store.db'}" if backend == "sqlite" else require_postgres()
    if backend != "sqlite":
        reset_postgres(url)
    good = engine_stats("s.T.track_good")
    many = engine_stats("s.T.track_many")
    extra = [MetricSummary.from_values("custom", f"m{i}", "B", [1.0]) for i in range(2**15)]
    many = dataclasses.replace(many, metrics=extra)  # with time per op and throughput: one too many
    ctx = BenchContext("s", host_info(), CommitInfo("a" * 40, datetime.now(timezone.utc)), datetime.now(timezone.utc),
                       {})
    outcomes = [Outcome("s.T.track_good", {}, Status.OK, stats=good), Outcome("s.T.track_many", {}, Status.OK, stats=many)]
    with open_store(url) as store:
        save_run(store, ctx, outcomes)
    cases = stored(url)
    assert cases["s.T.track_good"][0] == "ok"
    status, message = cases["s.T.track_many"]
    assert status == "failed" and "metrics; the store keeps at most 32,768 per case" in message


HUGE_MESSAGE = HEADER + '''
class Huge:
    @mmtrack.bench(chunk_size=1)
    def track_huge(self, ctx, chunk_size, chunk_num):
        raise ValueError("x" * 5_000_000)
''' + GOOD.format(name="Z")


def test_a_huge_message_is_capped_with_the_size_cut(tmp_path):
    project = make_suite(tmp_path / "proj", {"suite.py": HUGE_MESSAGE})
    proc = run_cli("bench", "benchmarks", *FAST, cwd=project)
    assert proc.returncode == 2
    assert len(proc.stdout) < 20_000, len(proc.stdout)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("failed suite.Huge.track_huge: "))
    assert re.search(r"ValueError: x+\.\.\. \[4,99\d,\d{3} more characters\]$", line), line[-200:]
    message = stored(sqlite_url(project))["suite.Huge.track_huge"][1]
    assert message is not None and len(message) < 1100 and "more characters]" in message


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_asv_import_of_names_the_schema_cannot_hold_fails_them_alone_on_both_backends(tmp_path, backend):
    from test_user_errors import write_result

    url = f"sqlite:///{tmp_path / 'store.db'}" if backend == "sqlite" else require_postgres()
    if backend != "sqlite":
        reset_postgres(url)
    results = tmp_path / "results"
    long_name = "suite.T.time_" + "x" * 900
    write_result(results, "a" * 40, {"suite.T.time_a": 1e-3, long_name: 1e-3})
    long_machine = write_result(results, "b" * 40, {"suite.T.time_a": 1e-3})
    data = json.loads(long_machine.read_text())
    data["params"]["machine"] = "m" * 2100
    long_machine.write_text(json.dumps(data))
    proc = run_cli("import-asv", str(results), "--db", url, "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == 2, proc.stderr
    assert any("its benchmark is 913 characters long; the store keeps at most 800" in e for e in errors)
    assert any("params.machine" in e and "the store keeps at most 2000" in e for e in errors)
    assert set(stored(url)) == {"suite.T.time_a"}
