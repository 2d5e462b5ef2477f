"""detect orders commits by git's history where a repository is at hand, by their recorded dates otherwise, and says
which. Real git repositories whose commit dates disagree with their history, real asv results, the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import cli_env, run_cli
from test_user_errors import write_result

N = 24
NEW = 12  # the first commit of the slower code, in the history
# The commit dates put the first four slow commits before commits 8-11: a rebased branch keeps its author's dates.
BY_DATE = [*range(8), *range(NEW, NEW + 4), *range(8, NEW), *range(NEW + 4, N)]
DAY_MS = 86_400_000


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", **({"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {})}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """A repository of N commits in a line whose dates disagree with its order, and a store of their results: one
    benchmark twice as slow from commit NEW on, and one commit the repository lacks (the newest by date)."""
    root = tmp_path_factory.mktemp("order")
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    day_of = {c: d for d, c in enumerate(BY_DATE)}
    shas = []
    for c in range(N):
        (repo / "code.py").write_text(f"VERSION = {c}\n")
        _git(repo, "add", "code.py")
        _git(repo, "commit", "-q", "-m", f"c{c}", date=f"2026-01-{1 + day_of[c]:02d}T12:00:00+00:00")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    results = root / "results"
    base = 1767225600000  # 2026-01-01
    for c, sha in enumerate(shas):
        value = (2e-3 if c >= NEW else 1e-3) * (1 + 0.002 * ((c * 7) % 5))
        write_result(results, sha, {"suite.T.time_a": value}, date=base + day_of[c] * DAY_MS)
    write_result(results, "f" * 40, {"suite.T.time_a": 2e-3}, date=base + N * DAY_MS)
    db = root / "store.db"
    proc = run_cli("import-asv", str(results), "--db", str(db), "--no-progress", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return repo, db, shas


def _detect(db: Path, *args: str, cwd: Path) -> dict:
    proc = run_cli("detect", "--db", str(db), "--dry-run", "--format", "json", "--no-progress", *args, cwd=cwd,
                   env=cli_env(HOME=str(cwd)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _steps(data: dict) -> list[tuple[str, str]]:
    return [(c["before_sha"], c["after_sha"]) for s in data["series"] for c in s["changes"]]


def test_a_step_sits_between_the_commits_git_puts_side_by_side(history):
    repo, db, shas = history
    data = _detect(db, "--repo", str(repo), cwd=db.parent)
    assert _steps(data) == [(shas[NEW - 1], shas[NEW])]
    assert data["commit_order"].startswith(f"git history of {repo.resolve()}")
    assert "1 commit not in it by their recorded dates" in data["commit_order"]


def test_without_a_repository_the_dates_order_the_commits_and_the_output_says_so(history):
    _, db, shas = history
    data = _detect(db, cwd=db.parent)  # the store's folder is no git repository
    assert data["commit_order"] == "commit dates recorded in the results"
    assert _steps(data) != [(shas[NEW - 1], shas[NEW])]  # by date, the slow commits 12-15 come before 8-11


def test_the_current_directorys_repository_is_at_hand(history):
    repo, db, shas = history
    data = _detect(db, cwd=repo)
    assert _steps(data) == [(shas[NEW - 1], shas[NEW])] and data["commit_order"].startswith("git history of")
    proc = run_cli("detect", "--db", str(db), "--dry-run", "--no-progress", cwd=repo, env=cli_env(HOME=str(repo)))
    assert proc.returncode == 0 and "commit order: git history of" in proc.stdout, proc.stdout + proc.stderr


def test_a_repo_that_is_no_repository_is_one_line_exit_2(history):
    _, db, _ = history
    proc = run_cli("detect", "--db", str(db), "--dry-run", "--repo", str(db.parent), "--no-progress",
                   cwd=db.parent, env=cli_env(HOME=str(db.parent)))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "not a git repository" in proc.stderr


def test_a_repo_that_knows_none_of_the_commits_leaves_the_dates_and_says_why(history, tmp_path):
    _, db, _ = history
    _git(tmp_path, "init", "-q")
    (tmp_path / "x").write_text("x")
    _git(tmp_path, "add", "x")
    _git(tmp_path, "commit", "-q", "-m", "x")
    data = _detect(db, "--repo", str(tmp_path), cwd=db.parent)
    assert data["commit_order"].startswith("commit dates recorded in the results (--repo")
