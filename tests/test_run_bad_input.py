"""`mmtrack run` on bad input: broken files, raising benchmarks, crashed runs, CI checkouts.

Real asv, real git; one small suite that exercises asv's semantics (parameter
grid, setup_cache, skips) beside the failures.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import run_cli
from mmtrack.asvbridge import spool
from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark
from test_run_acceptance import ASV_CONF, MACHINE, asv_env, commit_all, engine_cases, git, make_repo, results_of

SUITE = '''\
import mmtrack
from mmtrack import BenchSampleResult, MetricValue


class Grid:
    params = [[1, 2], ["a", "b"]]
    param_names = ["n", "s"]

    def setup_cache(self):
        return {"base": 200}

    def setup(self, cache, n, s):
        if (n, s) == (2, "b"):
            raise NotImplementedError("not this one")
        self.count = cache["base"] * n

    @mmtrack.bench_sample(chunk_size=lambda self, n, s: 3)
    def track_sum(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            sum(range(self.count))
        return BenchSampleResult(chunk_size).push_metric(MetricValue.integer("count", self.count, "count"))

    @mmtrack.bench()
    def track_raises(self, ctx, chunk_size, chunk_num):
        raise ValueError("this benchmark is broken on purpose")


def track_plain():
    return 42


@mmtrack.bench()
def track_skips_itself(ctx, chunk_size, chunk_num):
    from asv_runner.benchmarks.mark import SkipNotImplemented

    raise SkipNotImplemented("no such hardware here")
'''


@pytest.fixture(scope="module")
def bad_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    home = root / "home"
    home.mkdir()
    env = asv_env(home)
    repo = make_repo(root, env)
    (repo / "benchmarks" / "suite.py").write_text(SUITE)
    (repo / "benchmarks" / "broken.py").write_text("def track_nope(:\n")
    sha = commit_all(repo, env, "suite with a broken file", 1)
    # A crashed earlier run of this commit left a complete spool record (of a case this run
    # does not have) and a half-written file.
    spool_dir = repo / ".mmtrack" / "spool"
    leftover = crashed_run_record(sha)
    leftover_path = spool.write(leftover, spool_dir)
    # ... and a plain `asv run` in an existing environment left one that names no commit.
    unattributed = crashed_run_record(sha)
    unattributed.commit, unattributed.run_id, unattributed.benchmark = None, None, "plain.Plain.track_x"
    spool.write(unattributed, spool_dir)
    (spool_dir / ".suite.json.abc.tmp").write_text('{"format": "mmtrack-sp')
    proc = run_cli("run", "--quick", cwd=repo, env=env)
    return {"repo": repo, "env": env, "sha": sha, "proc": proc, "leftover": leftover, "leftover_path": leftover_path}


def crashed_run_record(sha: str) -> spool.SpoolRecord:
    """What entry.py writes for one case, as a run that died before ingesting left it."""
    spec = BenchSpec(name="old.Old.track_gone", fn=lambda ctx, n, i: None, chunk_size=10)
    stats = run_benchmark(spec, RunOptions.quick())
    return spool.SpoolRecord(
        benchmark="old.Old.track_gone", params={}, status="ok", machine=MACHINE, commit=sha,
        run_id="crashed-run", created=spool.now_iso(), metrics=stats.tracked_metrics(), stats=stats,
    )


def test_failures_give_exit_2_and_are_named(bad_run):
    proc = bad_run["proc"]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = proc.stdout
    assert "could not import" in out and "broken.py" in out and "SyntaxError" in out
    assert "failed suite.Grid.track_raises(1, 'a'): ValueError: this benchmark is broken on purpose" in out
    # 4 grid cases x 2 benchmarks + track_plain + track_skips_itself + the broken file
    assert "11 benchmark cases: 4 ok, 4 failed, 3 skipped" in out


def test_the_other_benchmarks_still_ran(bad_run):
    data = results_of(bad_run["repo"], bad_run["sha"])
    cols = data["result_columns"]
    rows = {name: dict(zip(cols, row)) for name, row in data["results"].items()}
    assert rows["suite.track_plain"]["result"] == [42]
    sums = rows["suite.Grid.track_sum"]
    assert [v is not None and v == v for v in sums["result"]] == [True, True, True, False]  # (2,'b') skipped: NaN
    assert rows["suite.Grid.track_raises"]["result"][:3] == [None, None, None]
    skipped = rows["suite.track_skips_itself"]["result"][0]
    assert skipped != skipped  # NaN: asv's skip, not a failure


def test_engine_cases_follow_asv_semantics(bad_run):
    cases = engine_cases(bad_run["repo"], bad_run["sha"])
    # setup_cache's value went to setup only; the parameters reached the engine unchanged.
    for n, s in (("1", "'a'"), ("1", "'b'"), ("2", "'a'")):
        params = json.dumps({"n": n, "s": s}, separators=(",", ":"))
        ok = cases[("suite.Grid.track_sum", params)]
        assert ok["status"] == "ok" and ok["metrics"]["count"] == 200 * int(n)
        assert cases[("suite.Grid.track_raises", params)]["status"] == "failed"
    # The broken file is a failed case of the run, named after its module.
    assert cases[("broken", "{}")]["status"] == "failed"


def test_a_run_reports_only_the_cases_it_started(bad_run):
    """asv's file of a commit keeps the cases of earlier runs; a run's own are those asv started after it began,
    however soon after the earlier run ended (a second of slack once took an earlier run's cases as this one's)."""
    from datetime import datetime, timezone

    from mmtrack.asvbridge.asvrun import _iter_asv_cases

    (path,) = (bad_run["repo"] / ".asv" / "results" / MACHINE).glob(f"{bad_run['sha'][:8]}-*.json")
    data = json.loads(path.read_text())
    column = data["result_columns"].index("started_at")
    started = {name: row[column] for name, row in data["results"].items()}
    last = max(started, key=started.get)

    def reported(since_ms: float) -> set[str]:
        since = datetime.fromtimestamp(since_ms / 1000, timezone.utc)
        return {case.benchmark for case in _iter_asv_cases(path, {}, since)}

    assert reported(started[last] + 300) == set()
    assert reported(started[last]) == {last}
    assert reported(min(started.values())) == set(started)


def test_leftovers_of_a_crashed_run_are_ingested_once_or_reported(bad_run):
    repo, env, sha, out = bad_run["repo"], bad_run["env"], bad_run["sha"], bad_run["proc"].stdout
    assert "half-written spool file" in out
    assert not list((repo / ".mmtrack" / "spool").glob(".*.tmp"))
    assert "ingested 1 spool file(s) left by an earlier run" in out
    assert "plain.Plain.track_x, commit unknown" in out and "no commit recorded" in out
    assert [p.name.split("-")[0] for p in (repo / ".mmtrack" / "spool" / "orphaned").iterdir()] == [
        "plain.Plain.track_x"
    ]
    assert not bad_run["leftover_path"].exists()
    gone = engine_cases(repo, sha)[("old.Old.track_gone", "{}")]
    assert gone["status"] == "ok" and gone["metrics"]["time_per_op"] > 0

    # The crash came after the store's commit but before the file was removed: the same
    # record is there again at the next run. It must not be recorded twice.
    from mmtrack.store import reads
    from mmtrack.store.db import open_store

    def engine_runs() -> int:
        store = open_store(f"sqlite:///{repo / '.mmtrack' / 'mmtrack.db'}")
        try:
            return len(reads.runs(store, commit=sha, kind="asv-engine"))
        finally:
            store.close()

    before = engine_runs()
    spool.write(bad_run["leftover"], repo / ".mmtrack" / "spool")
    again = run_cli("run", "--quick", "-b", "track_plain", cwd=repo, env=env)
    assert again.returncode == 2  # broken.py is still broken
    # asv's file of this commit still holds the first run's cases; only this run's are reported.
    assert "2 benchmark cases: 1 ok, 1 failed, 0 skipped" in again.stdout, again.stdout
    assert engine_runs() == before + 1  # this run's own (the broken file), not the leftover again


def test_dirty_tree_never_poses_as_the_commit(bad_run):
    repo, env = bad_run["repo"], bad_run["env"]
    (repo / "benchmarks" / "suite.py").write_text(SUITE + "\n# edited\n")
    try:
        proc = run_cli("run", "--quick", cwd=repo, env=env)
    finally:
        git(repo, env, "checkout", "--", "benchmarks/suite.py")
    assert proc.returncode == 2
    assert "uncommitted changes (1 files, e.g. benchmarks/suite.py)" in proc.stderr and "commit or stash" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_not_a_checked_out_commit(bad_run):
    repo, env = bad_run["repo"], bad_run["env"]
    other = git(repo, env, "commit-tree", "HEAD^{tree}", "-m", "elsewhere")
    proc = run_cli("run", "--commit", other, cwd=repo, env=env)
    assert proc.returncode == 2 and "asv benchmarks the working tree, so check out" in proc.stderr
    proc = run_cli("run", "--commit", "nonexistent-rev", cwd=bad_run["repo"], env=bad_run["env"])
    assert proc.returncode == 2 and "does not know the commit 'nonexistent-rev'" in proc.stderr


def test_no_git_repo(tmp_path):
    (tmp_path / "asv.conf.json").write_text(json.dumps(ASV_CONF))
    (tmp_path / "benchmarks").mkdir()
    proc = run_cli("run", cwd=tmp_path, env=asv_env(tmp_path))
    assert proc.returncode == 2 and "not a git repository" in proc.stderr


def test_detached_shallow_ci_checkout_works_with_a_note(bad_run, tmp_path):
    src, env = bad_run["repo"], bad_run["env"]
    # What actions/checkout gives: depth 1, detached HEAD, no local branch 'main'.
    clone = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{src}", str(clone)], check=True, env=env)
    git(clone, env, "checkout", "-q", "--detach")
    git(clone, env, "branch", "-q", "-D", "main")
    (clone / "benchmarks" / "broken.py").unlink()  # keep this run about the checkout
    git(clone, env, "commit", "-q", "-am", "fix")
    sha = git(clone, env, "rev-parse", "HEAD")
    proc = run_cli("run", "--quick", "-b", "track_plain", cwd=clone, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "branch 'main' from asv.conf.json does not exist in this shallow checkout" in proc.stdout
    assert "fetch-depth: 0" in proc.stdout
    assert results_of(clone, sha)["results"]["suite.track_plain"][0] == [42]


def test_a_selection_that_matches_nothing(bad_run):
    proc = run_cli("run", "--quick", "-b", "no_such_benchmark", cwd=bad_run["repo"], env=bad_run["env"])
    assert proc.returncode == 2
    assert "wrote no result" in proc.stderr and "-b 'no_such_benchmark' may match no benchmark" in proc.stderr


def test_a_store_that_cannot_be_opened_is_refused_before_asv_runs(bad_run, tmp_path):
    """A --db that is not a database is one line, before the suite runs: it was found only at the ingest, after it."""
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database\n")
    proc = run_cli("run", "--quick", "--db", str(not_a_db), cwd=bad_run["repo"], env=bad_run["env"])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: cannot open the store at sqlite:///{not_a_db}: file is not a database; check --db / MMTRACK_DB"]
    assert "Discovering benchmarks" not in proc.stdout + proc.stderr  # asv never started


@pytest.mark.parametrize("verb", [["run", "--quick"], ["continuous", "HEAD"]])
@pytest.mark.parametrize("name", ["../evil", "a/b", " padded"])
def test_a_machine_name_that_is_not_a_folder_name_is_refused(bad_run, verb, name):
    """The machine names a folder of asv's results: '../evil' wrote them outside it."""
    proc = run_cli(*verb, "--machine", name, cwd=bad_run["repo"], env=bad_run["env"])
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: machine name {name!r} (--machine or MMTRACK_MACHINE) is not a plain folder name; give one without "
        "'/', '..', control characters or spaces at either end, e.g. 'ci-linux-x64-1'"]
    assert not (bad_run["repo"] / ".asv" / "evil").exists()
