"""`mmtrack run --fail-on`: the per-commit gate, under the real asv, commit after commit.

A `track_` benchmark returns a size fixed by the code (no timing, so no machine load can move it): 100 at
two commits, then 200 from the third to the eighth. History suspects the third commit; `--fail-on regression` passes
until the next 4 commits have held the new level, then fails on the commit that confirms it, naming the
commit it began at. `--fail-on suspected` fails at once.
"""

from __future__ import annotations

import pytest

from conftest import run_cli
from test_run_acceptance import asv_env, commit_all, make_repo

BENCH = '''\
SIZE = {size}


class Sizes:
    def track_size(self):
        return SIZE
'''


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    (root / "home").mkdir()
    env = asv_env(root / "home", MMTRACK_DB=f"sqlite:///{root / 'store.db'}")
    repo = make_repo(root, env)
    shas, runs = [], []
    for day, size in enumerate([100, 100, 200, 200, 200, 200, 200, 200], 1):
        (repo / "benchmarks" / "bench_size.py").write_text(BENCH.format(size=size) + "\n" * day)  # source differs
        shas.append(commit_all(repo, env, f"size {size}", day))
        fail_on = ["--fail-on", "suspected"] if day == 3 else ["--fail-on", "regression"]
        runs.append(run_cli("run", "--quick", *fail_on, cwd=repo, env=env, timeout=600))
    return shas, runs


def test_the_gate_fails_on_the_commit_that_confirms_a_regression(gated):
    shas, runs = gated
    for proc in runs:
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    # 3rd commit, --fail-on suspected: history suspects it and that fails at once.
    assert runs[2].returncode == 1, runs[2].stdout[-2000:]
    assert "--fail-on suspected: 1 row(s) fail this commit: bench_size.Sizes.track_size" in runs[2].stdout
    assert "regressed (suspected)" in runs[2].stdout
    # --fail-on regression: nothing before the 4 commits after it held the new level; then the 7th fails, once.
    assert [p.returncode for p in runs[:2] + runs[3:]] == [0, 0, 0, 0, 0, 1, 0], [p.stdout[-1500:] for p in runs]
    last = runs[6].stdout
    assert ("--fail-on regression: 1 row(s) fail this commit: bench_size.Sizes.track_size value [unit] "
            f"regressed (confirmed): at {shas[2][:8]}") in last, last[-2000:]
