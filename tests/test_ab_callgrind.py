"""continuous and bisect --instrument callgrind: each commit built and counted under real Valgrind, once.

abpkg does 1% more work from the fifth of eight commits. A count needs no rounds: continuous flags the 1%
at once, confirmed, and reads the A/A pair as unchanged; bisect finds the fifth commit counting GOOD and
three midpoints."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import run_cli
from test_ab import commit, package_project
from test_run_acceptance import asv_env

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

PKG = "WORK = {work}\n\n\ndef crunch():\n    return sum(i * i for i in range(WORK))\n"
SUITE = '''\
import abpkg


class Crunch:
    def time_crunch(self):
        abpkg.crunch()

    def time_other(self):
        sorted(range(200, 0, -1))
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("abcg")
    (root / "home").mkdir()
    env = asv_env(root / "home", MMTRACK_DB=f"sqlite:///{root / 'store.db'}")
    repo = package_project(root, env, "abpkg", {"bench_ab.py": SUITE})
    shas = []
    for day in range(1, 9):
        work = 3000 if day < 5 else 3030  # 1% more from the fifth commit
        (repo / "abpkg" / "__init__.py").write_text(PKG.format(work=work) + "#" * day)
        shas.append(commit(repo, env, f"day {day}", day=day))
    return {"repo": repo, "env": env, "shas": shas}


def _rows(proc) -> dict:
    return {(r["benchmark"].rsplit(".", 1)[-1], r["metric"]["name"]): r for r in json.loads(proc.stdout)["rows"]}


def test_continuous_flags_one_percent_at_once_and_an_a_a_pair_not_at_all(project):
    repo, shas, env = project["repo"], project["shas"], project["env"]
    slower = run_cli("continuous", shas[3], shas[4], "--instrument", "callgrind", "--format", "json",
                     "--fail-on", "regression", "--no-save", cwd=repo, env=env, timeout=900)
    assert slower.returncode == 1, slower.stdout[-3000:] + slower.stderr[-3000:]
    rows = _rows(slower)
    work = rows[("time_crunch", "instructions")]
    assert work["verdict"] == "regressed" and work["state"] == "confirmed", work
    assert 1.003 < work["ratio"] < 1.02
    flagged = {k for k, r in rows.items() if r["verdict"] in ("regressed", "improved", "ambiguous")}
    assert all(name == "time_crunch" for name, _ in flagged), flagged
    for sha in shas[3:5]:  # both sides' profiles kept per commit, in Valgrind's format: why the count changed
        (kept,) = (repo / ".mmtrack" / "profiles" / sha).glob("bench_ab.Crunch.time_crunch.*ops.callgrind.out")
        assert kept.read_text().startswith("# callgrind format")
    same = run_cli("continuous", shas[0], shas[1], "--instrument", "callgrind", "--format", "json",
                   "--fail-on", "regression", "--no-save", cwd=repo, env=env, timeout=900)
    assert same.returncode == 0, same.stdout[-3000:] + same.stderr[-3000:]
    assert _rows(same)[("time_crunch", "instructions")]["verdict"] == "unchanged"


def test_bisect_counts_each_commit_once(project):
    repo, shas, env = project["repo"], project["shas"], project["env"]
    proc = run_cli("bisect", shas[0], shas[7], "-b", "time_crunch", "--instrument", "callgrind", "--format", "json",
                   cwd=repo, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    assert found["culprit"] == shas[4]
    assert len(found["path"]) == 3 and found["path"][0]["rounds"] == 1
    assert proc.stderr.count("counting ") == 4  # GOOD and three midpoints
