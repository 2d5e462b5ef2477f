"""README.md's "Your own project in three commands", run as written on a fresh project.

A tiny package with an asv suite in a temporary git repository, a fresh HOME and a virtual environment of
its own (the user's): the README's commands run there unchanged, with real asv. The guide's page
(docs/guide/own-project.md) shows the same commands, and a test here holds it to them; the A/B guide's
commands (docs/guide/ab.md) run on the two commits this leaves.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from doccheck import REPO, command_blocks

README = REPO / "README.md"
GUIDE = REPO / "docs" / "guide" / "own-project.md"
AB_GUIDE = REPO / "docs" / "guide" / "ab.md"
MARKER = "run by tests/test_readme_own_project.py"

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tinylib"
version = "0.1"
"""
LIBRARY = "def total(n):\n    return sum(range(n))\n"
SLOWER = "def total(n):\n    return sum(sum(range(n)) for _ in range(4))\n"
BENCHMARKS = '''\
import mmtrack
import tinylib


class Total:
    def time_total(self):
        tinylib.total(10_000)

    @mmtrack.bench
    def track_total(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            tinylib.total(1_000)
'''


def own_project_blocks(page: Path) -> list[list[str]]:
    return [[c.line for c in block.commands()] for block in command_blocks(page) if block.marker == MARKER]


def make_project(root: Path, env: dict[str, str]) -> Path:
    """A git repository with a package and an asv suite in benchmarks/, and no asv.conf.json yet."""
    project = root / "tinylib-project"
    (project / "tinylib").mkdir(parents=True)
    (project / "benchmarks").mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "tinylib" / "__init__.py").write_text(LIBRARY)
    (project / "benchmarks" / "__init__.py").write_text("")
    (project / "benchmarks" / "bench_total.py").write_text(BENCHMARKS)
    (project / ".gitignore").write_text(".asv/\n.mmtrack/\nsite/\n__pycache__/\n*.egg-info/\nbuild/\n")
    git(project, env, "init", "-q", "-b", "main")
    commit(project, env, "tinylib")
    return project


def git(project: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)


def commit(project: Path, env: dict[str, str], message: str) -> None:
    git(project, env, "add", "-A")
    git(project, env, "commit", "-q", "-m", message)


def user_venv(root: Path) -> Path:
    """The user's virtual environment. It sees the packages of the one running the tests (mmtrack's
    dependencies, installed for the tests) instead of downloading them; `pip`, `asv` and `mmtrack` are
    its own interpreter's."""
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = Path(subprocess.run([env_dir / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    outer = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]  # a venv's and the system's
    (site / "_tests_outer.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in outer))
    for tool in ("pip", "asv", "mmtrack"):
        script = env_dir / "bin" / tool
        script.write_text(f'#!/bin/sh\nexec "{env_dir / "bin" / "python"}" -m {tool} "$@"\n')
        script.chmod(0o755)
    return env_dir


def user_shell(root: Path, env_dir: Path) -> dict[str, str]:
    """A user's shell in that environment: fresh HOME, no store or machine named, no network for pip."""
    home = root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MMTRACK_", "PIP_", "GIT_")) and k != "CI"}
    env.update(HOME=str(home), VIRTUAL_ENV=str(env_dir), PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}",
               PYTHONPATH=str(REPO),  # `mmtrack` is this checkout
               PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0",  # everything it needs is installed already
               GIT_AUTHOR_NAME="user", GIT_AUTHOR_EMAIL="user@example.invalid",
               GIT_COMMITTER_NAME="user", GIT_COMMITTER_EMAIL="user@example.invalid", COLUMNS="160")
    return env


def run_as_written(line: str, project: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(["bash", "-c", line], cwd=project, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"$ {line}\n{proc.stdout[-4000:]}"
    return proc.stdout


def test_the_readme_shows_three_commands_then_the_next_commit():
    start, after_a_commit = own_project_blocks(README)
    assert len(start) == 3 and start[-1] == "mmtrack run"
    assert after_a_commit[0] == "mmtrack run" and any(line.startswith("mmtrack compare") for line in after_a_commit)


def test_the_guide_shows_the_readme_commands():
    assert own_project_blocks(GUIDE) == own_project_blocks(README)


@pytest.mark.slow
def test_readme_own_project_commands_run_as_written(tmp_path):
    start, after_a_commit = own_project_blocks(README)
    env_dir = user_venv(tmp_path)
    env = user_shell(tmp_path, env_dir)
    project = make_project(tmp_path, env)

    first = "".join(run_as_written(line, project, env) for line in start)
    assert (project / "asv.conf.json").exists()
    assert "2 benchmark cases: 2 ok" in first and "nothing to compare with yet" in first
    config = (project / "asv.conf.json").read_bytes()
    run_as_written(start[0], project, env)
    assert (project / "asv.conf.json").read_bytes() == config, "an existing asv.conf.json is kept as it is"

    (project / "tinylib" / "__init__.py").write_text(SLOWER)  # four times the work
    commit(project, env, "tinylib: total does four times the work")
    outputs = [run_as_written(line, project, env) for line in after_a_commit]
    run_output, compare_output = outputs[0], outputs[after_a_commit.index("mmtrack compare HEAD~1 HEAD")]
    assert "compared with the previous commit" in run_output and "regressed" in run_output
    assert "bench_total.Total.track_total" in compare_output and "regressed" in compare_output
    assert (project / "site" / "index.html").exists()

    (continuous, bisect), = own_project_blocks(AB_GUIDE)  # the A/B guide: the same two commits, on this machine
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, env=env, capture_output=True, text=True, check=True).stdout
    assert "regressed" in run_as_written(continuous, project, env)
    assert head[:8] in run_as_written(bisect, project, env)
