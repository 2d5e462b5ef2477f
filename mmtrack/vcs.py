"""Reading the commit a run belongs to from git: full sha, date, dirty flag."""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path

from .results import CommitInfo


class GitError(RuntimeError):
    pass


def _git(cwd: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise GitError("git is not installed; install git or pass the commit explicitly") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitError(f"git {' '.join(args)}: {exc}") from None
    if proc.returncode != 0:
        raise GitError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"git {' '.join(args)} failed")
    return proc.stdout.strip()


def git_output(cwd: Path, *args: str) -> str:
    """git's output, or "" when git fails: for questions whose failure means "no"."""
    try:
        return _git(cwd, *args)
    except GitError:
        return ""


def refs(cwd: Path) -> list[str]:
    """Branch and tag names, for "did you mean" lists."""
    return git_output(cwd, "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags").split()


def project_root(start: Path | None = None) -> Path:
    """The git top level above ``start`` (default: cwd), or ``start`` outside git."""
    start = (start or Path.cwd()).resolve()
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel"))
    except GitError:
        return start


def is_dirty(cwd: Path) -> bool:
    """Tracked files modified or staged (untracked files do not change the build)."""
    return bool(_git(cwd, "status", "--porcelain", "--untracked-files=no"))


def commit_info(cwd: Path, rev: str = "HEAD", *, check_dirty: bool = True) -> CommitInfo:
    """Full sha, commit date and message of ``rev``; dirty only describes the working tree."""
    sha, date, message = _git(cwd, "show", "-s", "--format=%H%x00%cI%x00%s", rev).split("\x00", 2)
    branches = tuple(
        b.strip() for b in _git(cwd, "branch", "--format=%(refname:short)", "--points-at", sha).splitlines()
        if b.strip()
    )
    dirty = check_dirty and rev == "HEAD" and is_dirty(cwd)
    return CommitInfo(sha=sha, date=datetime.fromisoformat(date), message=message, dirty=dirty, branches=branches)


def resolve_rev(cwd: Path, rev: str) -> str | None:
    """Full sha of a sha, prefix, branch or tag, or None when git does not know it."""
    try:
        return _git(cwd, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except GitError:
        return None


def is_repository(path: Path) -> bool:
    """Whether ``path`` is inside a git work tree (or is a bare repository)."""
    return bool(git_output(path, "rev-parse", "--git-dir"))


def history(repo: Path) -> list[str]:
    """Every commit of the repository's branches, tags and HEAD, parents before children, a merged branch's commits
    kept together (``git rev-list --topo-order --reverse --all``): the order the code was written in, whatever the
    commit dates say."""
    return _git(repo, "rev-list", "--topo-order", "--reverse", "--all", "HEAD").split()
