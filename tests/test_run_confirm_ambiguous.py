"""`mmtrack run --confirm --confirm-ambiguous`: what history cannot decide, an A/B run on this machine decides.

`sizepkg.SIZE` is 100 at every commit but the 6th and the 9th, where it is 125; a `track_` benchmark returns it, so
no machine load can move it. Judged as the newest commit, the 9th moves +25% to a level one earlier commit
visited: history leaves it `ambiguous` ("within the series' own noise"), and `--confirm` alone re-measures
nothing. `--confirm-ambiguous` builds the 8th and 9th commits into their own environments, measures them A/B under
the real asv, and the A/B run finds +25%: the row is confirmed, stored in `ab_verdict`, and `--fail-on regression`
fails the commit on it. `sizepkg.COUNT` makes the same visit by +15%: with `--confirm-max 1` only the larger move is
re-measured, and the run says which benchmark it left out.
"""

from __future__ import annotations

import re

import sqlite3

import pytest

from conftest import run_cli
from test_ab import commit, package_project
from test_run_acceptance import asv_env, git

BENCH = ("import sizepkg\n\n\nclass Sizes:\n    def track_size(self):\n        return sizepkg.SIZE\n\n"
         "    def track_count(self):\n        return sizepkg.COUNT\n")
SIZES = [100, 100, 100, 100, 100, 125, 100, 100, 125]
COUNTS = [100, 100, 100, 100, 100, 115, 100, 100, 115]  # the same visit, a smaller move


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """The first 8 commits run and stored; the 9th committed, checked out, not yet run."""
    root = tmp_path_factory.mktemp("ambiguous")
    (root / "home").mkdir()
    db = root / "store.db"
    env = asv_env(root / "home", MMTRACK_DB=f"sqlite:///{db}")
    repo = package_project(root, env, "sizepkg", {"bench_size.py": BENCH})
    env["ASV_PYTHONPATH"] = env["ASV_PYTHONPATH"] + ":" + str(repo)  # `mmtrack run` imports the checked-out tree
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # same-second checkouts of same-size sources: no stale .pyc
    shas = []
    for day, (size, count) in enumerate(zip(SIZES, COUNTS), 1):
        source = f"SIZE = {size}\nCOUNT = {count}\n" + "\n" * day  # each source differs
        (repo / "sizepkg" / "__init__.py").write_text(source)
        shas.append(commit(repo, env, f"size {size}", day))
    for sha in shas[:-1]:
        git(repo, env, "checkout", "-q", sha)
        proc = run_cli("run", "--quick", cwd=repo, env=env, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    git(repo, env, "checkout", "-q", shas[-1])
    return {"repo": repo, "env": env, "db": db, "shas": shas}


def test_history_leaves_it_ambiguous_and_confirm_alone_re_measures_nothing(history):
    proc = run_cli("run", "--quick", "--confirm", "--fail-on", "regression", cwd=history["repo"], env=history["env"],
                   timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out[-2000:] + proc.stderr[-2000:]
    assert "2 metrics; 2 ambiguous" in out and "series' own noise" in out, out[-2000:]  # the table wraps the note
    assert "--confirm: no suspected change to re-measure" in out
    with sqlite3.connect(history["db"]) as con:
        assert con.execute("select count(*) from ab_verdict").fetchone() == (0,)


def test_confirm_ambiguous_measures_the_larger_move_a_b_and_the_gate_fails_on_what_a_b_confirmed(history):
    proc = run_cli("run", "--quick", "--confirm", "--confirm-ambiguous", "--confirm-max", "1", "--fail-on",
                   "regression", cwd=history["repo"], env=history["env"], timeout=900)
    out = proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert ("--confirm-max 1: 1 ambiguous row(s) of 1 benchmark(s), bench_size.Sizes.track_count, not re-measured"
            in out), out[-3000:]
    assert "--confirm: re-measuring 0 suspected and 1 ambiguous row(s) A/B" in out, out[-3000:]
    assert ("confirmed: bench_size.Sizes.track_size value [unit]: A/B ×1.250" in out
            and "the A/B run measured it regressed; history left it ambiguous (within the series' own noise)" in out), \
        out[-3000:]
    assert proc.returncode == 1, out[-2000:]
    # The failing line gives the same A/B evidence as the confirmed line: ratio, p-value, rounds.
    evidence = re.search(r"confirmed: bench_size\.Sizes\.track_size value \[unit\]: (A/B ×1\.250, p=\S+, \d+ rounds)", out)
    assert evidence, out[-3000:]
    assert ("--fail-on regression: 1 row(s) fail this commit: bench_size.Sizes.track_size value [unit] regressed "
            f"(confirmed): {evidence.group(1)}") in out, out[-3000:]
    with sqlite3.connect(history["db"]) as con:
        rows = con.execute("select benchmark, state, ratio, before_sha, after_sha from ab_verdict").fetchall()
    shas = history["shas"]
    assert rows == [("bench_size.Sizes.track_size", "confirmed", pytest.approx(1.25), shas[-2], shas[-1])]
