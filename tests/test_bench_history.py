"""Every ``mmtrack bench`` run saved and compared with the latest compatible run (issue 9)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import cli_env, run_cli
from mmtrack.benchruns.report import schema
from mmtrack.store import reads
from mmtrack.store.db import open_store

SUITE = '''
import os
import time

import mmtrack

# Read at import: module constants are not part of asv's code version, so changing the
# environment slows the benchmark without making the runs incomparable.
SLOWDOWN = float(os.environ.get("TEST_SLOWDOWN", "1"))


class Timed:
    @mmtrack.bench(chunk_size=2, backend=mmtrack.WallClockBackend)
    def track_sleepy(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            time.sleep(0.002 * SLOWDOWN)

    @mmtrack.bench(chunk_size=2, backend=mmtrack.WallClockBackend)
    def track_steady(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            time.sleep(0.002)
'''


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A real git repository holding an asv-style suite, committed."""
    root = tmp_path / "proj"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "timed.py").write_text(SUITE)
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "suite")
    return root


def bench(project: Path, *args: str, **env: str):
    opts = ["--quick", "--min-samples", "20", "--max-samples", "25", "--no-pin"]
    return run_cli("bench", "benchmarks", *opts, *args, cwd=project, env=cli_env(**env))


def test_second_run_is_compared_with_the_first(project):
    first = bench(project)
    assert first.returncode == 0, first.stderr
    assert "saved as run #1" in first.stdout
    assert "no earlier run of this suite on this host" in first.stdout
    second = bench(project)
    assert second.returncode == 0, second.stderr
    assert "regression analysis against run #1" in second.stdout
    db = project / ".mmtrack" / "mmtrack.db"
    with open_store(f"sqlite:///{db}") as store:
        runs = reads.runs(store, kind="bench")
        assert [r.id for r in runs] == [2, 1]
        assert not runs[0].commit.dirty and runs[0].commit.sha == git(project, "rev-parse", "HEAD").strip()


def test_twice_as_slow_is_regressed_and_unchanged_is_not_reported(project):
    assert bench(project).returncode == 0
    slow = bench(project, TEST_SLOWDOWN="2")
    assert slow.returncode == 0, slow.stderr
    out = slow.stdout
    assert re.search(r"regression analysis against run #1 .*: 1 regressed, 0 improved, 1 unchanged benchmarks", out)
    changed = out.split("regression analysis", 1)[1]
    assert "timed.Timed.track_sleepy" in changed and "regressed" in changed
    assert "timed.Timed.track_steady" not in changed  # unchanged rows are not listed


def test_renamed_benchmark_makes_the_previous_run_incompatible(project):
    assert bench(project).returncode == 0
    suite = project / "benchmarks" / "timed.py"
    suite.write_text(suite.read_text().replace("track_steady", "track_steady_renamed"))
    after = bench(project)
    assert after.returncode == 0
    assert re.search(r"not compared with run #1 \(\w+\+dirty|not compared with run #1", after.stdout)
    assert "its benchmarks differ" in after.stdout and "track_steady_renamed" in after.stdout
    assert "regression analysis" not in after.stdout
    with open_store(f"sqlite:///{project / '.mmtrack' / 'mmtrack.db'}") as store:
        assert reads.runs(store, kind="bench")[0].commit.dirty  # an edited tree never poses as the commit


def test_changed_code_makes_the_previous_run_incompatible(project):
    assert bench(project).returncode == 0
    suite = project / "benchmarks" / "timed.py"
    suite.write_text(suite.read_text().replace("time.sleep(0.002)\n", "time.sleep(0.0021)\n"))
    after = bench(project)
    assert "changed its benchmark code version" in after.stdout


def test_bench_dot_at_the_top_level_is_keyed_by_its_own_repository(project):
    """`mmtrack bench .` in the repository's top folder looked for git in the folder above it and refused to save
    ("not a git repository")."""
    opts = ["--quick", "--min-samples", "20", "--max-samples", "25", "--no-pin"]
    proc = run_cli("bench", ".", *opts, cwd=project, env=cli_env())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "saved as run #1" in proc.stdout
    with open_store(f"sqlite:///{project / '.mmtrack' / 'mmtrack.db'}") as store:
        (run,) = reads.runs(store, kind="bench")
        assert run.commit.sha == git(project, "rev-parse", "HEAD").strip()


def test_a_run_in_which_nothing_ran_is_not_saved(project):
    """Every file failing to import saved a run of 0 results, which each later run then reported as not
    comparable ("its benchmarks differ") on its way back to the real baseline."""
    assert bench(project).returncode == 0
    timed = project / "benchmarks" / "timed.py"
    good = timed.read_text()
    timed.write_text(good + "\nraise RuntimeError('broken')\n")
    broken = bench(project)
    assert broken.returncode == 2 and "not saved: no benchmark case ran" in broken.stdout, broken.stdout[-2000:]
    timed.write_text(good)
    again = bench(project)
    assert "regression analysis against run #1" in again.stdout and "not compared" not in again.stdout, \
        again.stdout[-2000:]
    with open_store(f"sqlite:///{project / '.mmtrack' / 'mmtrack.db'}") as store:
        assert [r.id for r in reads.runs(store, kind="bench")] == [2, 1]


def test_no_save_and_compare_none(project):
    proc = bench(project, "--no-save", "--compare", "none")
    assert proc.returncode == 0 and "saved as run" not in proc.stdout
    assert not (project / ".mmtrack" / "mmtrack.db").exists()


def test_compare_with_an_explicit_commit(project):
    assert bench(project).returncode == 0
    sha = git(project, "rev-parse", "HEAD").strip()
    proc = bench(project, "--compare", sha[:10])
    assert proc.returncode == 0 and "regression analysis against run #1" in proc.stdout
    proc = bench(project, "--compare", "deadbeef")
    assert proc.returncode == 2 and "deadbeef" in proc.stderr and "Traceback" not in proc.stderr


def test_compare_with_a_commit_whose_prefix_is_all_digits(project):
    """A sha prefix of digits alone ("0512763887", about 1 commit in 100 at 10 digits) was read as a run id and
    refused: 'no run with that id'. Git knows it as a commit, so it is one; run:N and short numbers are run ids."""
    import hashlib

    first = git(project, "rev-parse", "HEAD").strip()
    tree = git(project, "rev-parse", "HEAD^{tree}").strip()
    for attempt in range(100_000):  # a child commit (same tree) whose sha starts with 10 digits: ~110 tries
        body = (f"tree {tree}\nparent {first}\nauthor t <t@t> 1700000000 +0000\n"
                f"committer t <t@t> 1700000000 +0000\n\ntry {attempt}\n").encode()
        digits = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        if digits[:10].isdigit():
            break
    written = subprocess.run(["git", "hash-object", "-w", "-t", "commit", "--stdin"], cwd=project, input=body,
                             capture_output=True, check=True).stdout.decode().strip()
    assert written == digits
    assert bench(project).returncode == 0  # run #1, at the fixture's commit
    git(project, "checkout", "-q", digits)
    assert bench(project).returncode == 0  # run #2, at the all-digits commit
    git(project, "checkout", "-q", first)
    proc = bench(project, "--compare", digits[:10])
    assert proc.returncode == 0 and "regression analysis against run #2" in proc.stdout, proc.stdout[-1500:] + proc.stderr
    proc = bench(project, "--compare", "run:1")
    assert proc.returncode == 0 and "regression analysis against run #1" in proc.stdout, proc.stdout[-1500:] + proc.stderr
    proc = bench(project, "--compare", "999")
    assert proc.returncode == 2 and "no run with that id" in proc.stderr


def test_compare_with_an_explicit_run_id(project):
    assert bench(project).returncode == 0
    assert bench(project).returncode == 0
    proc = bench(project, "--compare", "1")
    assert proc.returncode == 0 and "regression analysis against run #1" in proc.stdout
    proc = bench(project, "--compare", "99")
    assert proc.returncode == 2 and "--compare 99: no run with that id" in proc.stderr


def test_json_report_to_a_new_nested_folder_validates(project, tmp_path):
    out = tmp_path / "reports" / "nested" / "deeper" / "run.json"
    assert bench(project).returncode == 0
    proc = bench(project, MMTRACK_OUTPUT=str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    jsonschema.validate(report, schema())
    assert report["schema_version"] == 1 and report["run_id"] == 2
    assert {r["name"] for r in report["results"]} == {"timed.Timed.track_sleepy", "timed.Timed.track_steady"}
    assert report["comparison"] is not None and report["commit"]["dirty"] is False
    assert not list(out.parent.glob(".*.tmp"))  # the atomic write left no temporary file


def test_unwritable_report_and_unwritable_store_are_fatal(project, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = bench(project, MMTRACK_OUTPUT=str(blocker / "run.json"))
    assert proc.returncode == 2 and "MMTRACK_OUTPUT" in proc.stderr and "Traceback" not in proc.stderr
    proc = bench(project, "--db", f"sqlite:///{blocker}/store.db")
    assert proc.returncode == 2  # the history is the product: an unsaved run is not a pass (issue 15)
    assert "error: run not saved" in proc.stdout and "kept in" in proc.stdout
    assert "2 benchmark cases: 2 ok" in proc.stdout  # the measurements were still reported


def test_schema_itself_is_valid():
    jsonschema.Draft202012Validator.check_schema(schema())
