"""Backfill: `mmtrack run` on an older commit compares it with its neighbours in git's order, not with the last commit
stored, and stores the verdicts the pages read (the next commit's, re-judged against the backfilled one)."""

from __future__ import annotations

import pytest

from conftest import run_cli
from test_run_acceptance import ASV_CONF, MACHINE, asv_env, commit_all, git, make_repo

SUITE = '''\
WORK = {work}


class Work:
    def time_work(self):
        sum(range(WORK))
'''


def run_verdicts(db: str) -> dict[tuple[str, str], str]:
    """(before, after) short shas of every stored run verdict, to its verdict."""
    from mmtrack.store.db import open_store
    from mmtrack.store.reads.verdicts import load_run_verdicts

    store = open_store(db)
    try:
        return {(v.before_sha[:8], v.after_sha[:8]): v.verdict for v in load_run_verdicts(store, machine=MACHINE)}
    finally:
        store.close()


@pytest.mark.slow
def test_older_commits_compare_with_their_neighbours_in_git_order(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = f"sqlite:///{tmp_path / 'store.db'}"
    env = asv_env(home, MMTRACK_DB=db)
    repo = make_repo(tmp_path, env, ASV_CONF)
    shas = []
    for day, work in ((1, 20_000), (2, 20_000), (3, 200_000)):  # ten times the work at the third
        (repo / "benchmarks" / "bench_work.py").write_text(SUITE.format(work=work))
        shas.append(commit_all(repo, env, f"work {work}", day))
    first, middle, last = (s[:8] for s in shas)

    def run_at(sha: str) -> str:
        git(repo, env, "checkout", "-q", sha)
        proc = run_cli("run", cwd=repo, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return " ".join(proc.stdout.split())  # lines wrap at the terminal's width

    assert "nothing to compare with yet" in run_at(shas[2])
    out = run_at(shas[0])  # backfilled: older than everything measured
    assert "nothing to compare with yet" not in out, out[-2000:]
    assert f"older than every commit measured on {MACHINE}" in out and f"mmtrack compare {first} {last}" in out
    assert run_verdicts(db).get((first, last)) == "regressed"

    out = run_at(shas[1])  # between the two: compared with the first, and the last re-judged against it
    assert f"mmtrack compare {first} {middle}" in out and f"mmtrack compare {middle} {last}" in out, out[-2000:]
    verdicts = run_verdicts(db)
    assert verdicts.get((middle, last)) == "regressed" and (first, last) not in verdicts
