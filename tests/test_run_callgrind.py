"""`mmtrack run --instrument callgrind`: asv's own time_ benchmarks counted under real Valgrind, commit after
commit, and the gate reads the deterministic count: a 1% slowdown fails its commit at once, confirmed, and the
functions that moved are named."""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import run_cli
from test_run_acceptance import asv_env, commit_all, make_repo

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

LIBRARY = '''\
def work(n={n}):
    return sorted(range(n, 0, -1), key=lambda x: x % 7)
'''

BENCH = '''\
import mylib


class Suite:
    def time_work(self):
        mylib.work()

    def time_other(self):
        sorted(range(300, 0, -1))
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cgrun")
    (root / "home").mkdir()
    env = asv_env(root / "home", MMTRACK_DB=f"sqlite:///{root / 'store.db'}")
    repo = make_repo(root, env)
    # mylib is not installed: asv's benchmark processes import it through ASV_PYTHONPATH, as run's pre-check asks.
    env["ASV_PYTHONPATH"] = os.pathsep.join([env["ASV_PYTHONPATH"], str(repo)])
    (repo / "benchmarks" / "bench_lib.py").write_text(BENCH)
    done = []
    for day, n in enumerate([200, 200, 202], 1):  # 2 more items in 200: about 1% more work
        (repo / "mylib.py").write_text(LIBRARY.format(n=n))
        commit_all(repo, env, f"n={n}", day)
        done.append(run_cli("run", "--instrument", "callgrind", "--fail-on", "regression", cwd=repo, env=env,
                            timeout=600))
    return done


def test_a_one_percent_slowdown_fails_its_commit_confirmed(runs):
    for proc in runs:
        assert "Traceback" not in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [p.returncode for p in runs] == [0, 0, 1], [p.stdout[-2000:] + p.stderr[-2000:] for p in runs]
    last = runs[2].stdout
    assert "bench_lib.Suite.time_work" in last and "regressed (confirmed)" in last, last[-3000:]
    failing = [line for line in last.splitlines() if "--fail-on regression" in line]
    assert failing and "time_other" not in failing[0], failing
    # Why: the functions whose instructions per op moved, from both commits' kept profiles.
    why = last.split("why bench_lib.Suite.time_work changed", 1)
    assert len(why) == 2 and "->" in why[1], last[-3000:]
