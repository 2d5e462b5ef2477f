"""asv's subfolder layout (numpy's, scipy's, networkx's): the suite and its own asv.conf.json in `benchmarks/`, with
`"repo": ".."`. asv changes into the config's folder and reads every path from there; mmtrack does the same, with
`--config benchmarks/asv.conf.json` from the root or from the config's folder. Links and odd files in the suite
(networkx's `benchmarks/pyproject.toml` points nowhere) are copied or skipped as asv sees them, with one note.

The README's and the guide's subfolder block (README.md, docs/guide/own-project.md) runs as written here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from doccheck import REPO, command_blocks
from test_readme_own_project import PYPROJECT, commit, git, run_as_written, user_shell, user_venv
from test_run_acceptance import asv_env

README = REPO / "README.md"
GUIDE = REPO / "docs" / "guide" / "own-project.md"
MARKER = "run by tests/test_subfolder_layout.py"

#: networkx's benchmarks/asv.conf.json, less its matrix: every path relative to benchmarks/.
SUBFOLDER_CONF = {
    "version": 1,
    "project": "tinylib",
    "repo": "..",
    "branches": ["main"],
    "environment_type": "existing",
    "benchmark_dir": "benchmarks",
    "env_dir": "env",
    "results_dir": "results",
    "html_dir": "html",
}
LIBRARY = "def total(n):\n    return sum(range(n))\n"
SLOWER = "def total(n):\n    return sum(sum(range(n)) for _ in range(4))\n"
SUITE = '''\
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


def subfolder_blocks(page: Path) -> list[list[str]]:
    return [[c.line for c in block.commands()] for block in command_blocks(page) if block.marker == MARKER]


def make_networkx_layout(root: Path, env: dict[str, str]) -> Path:
    """tinylib at the top; benchmarks/asv.conf.json with "repo": ".."; the suite in benchmarks/benchmarks/; a
    dangling link beside the config and one in the suite, as networkx has."""
    project = root / "tinylib-project"
    (project / "tinylib").mkdir(parents=True)
    suite = project / "benchmarks" / "benchmarks"
    suite.mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "tinylib" / "__init__.py").write_text(LIBRARY)
    (project / "benchmarks" / "asv.conf.json").write_text(json.dumps(SUBFOLDER_CONF, indent=2))
    (suite / "__init__.py").write_text("")
    (suite / "bench_total.py").write_text(SUITE)
    (project / "benchmarks" / "pyproject.toml").symlink_to("../nowhere/pyproject.toml")
    (suite / "pyproject.toml").symlink_to("../../nowhere/pyproject.toml")
    (project / ".gitignore").write_text(
        ".asv/\n.mmtrack/\nsite/\n__pycache__/\n*.egg-info/\nbuild/\nbenchmarks/results/\nbenchmarks/env/\n"
    )
    git(project, env, "init", "-q", "-b", "main")
    commit(project, env, "tinylib")
    return project


# -- the suite's copy: links and odd files ---------------------------------------------------------------------
def test_the_suite_copy_skips_dangling_links_fifos_and_loops_with_one_note(tmp_path):
    from mmtrack.asvbridge.suite_check import copy_suite

    suite = tmp_path / "benchmarks"
    (suite / "sub").mkdir(parents=True)
    (suite / "bench_a.py").write_text("def time_a():\n    pass\n")
    (tmp_path / "shared.py").write_text("X = 1\n")
    (suite / "shared.py").symlink_to(tmp_path / "shared.py")  # resolves outside the suite: copied
    (suite / "pyproject.toml").symlink_to("../nowhere/pyproject.toml")  # networkx's
    (suite / "sub" / "loop").symlink_to("..")  # back into the suite: would copy forever
    os.mkfifo(suite / "pipe")  # a copy would block on it
    notes = copy_suite(suite, tmp_path / "copy")
    assert (tmp_path / "copy" / "bench_a.py").is_file() and (tmp_path / "copy" / "shared.py").read_text() == "X = 1\n"
    assert not any((tmp_path / "copy" / n).exists() for n in ("pyproject.toml", "pipe", "sub/loop"))
    (note,) = notes
    assert "\n" not in note and "left 3 entries out" in note and "pipe" in note and "[" not in note, note


def test_a_clean_suite_copies_without_a_note(tmp_path):
    from mmtrack.asvbridge.suite_check import copy_suite

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_a.py").write_text("")
    assert copy_suite(tmp_path / "benchmarks", tmp_path / "copy") == []


# -- paths from the config's own folder ------------------------------------------------------------------------
@pytest.fixture
def layout(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = asv_env(home, MMTRACK_DB=f"sqlite:///{tmp_path / 'store.db'}")
    project = make_networkx_layout(tmp_path, {**os.environ, **env})
    return project, env


@pytest.mark.parametrize("where", ["root", "config folder"])
def test_the_config_paths_are_read_from_the_config_folder(layout, where, monkeypatch):
    from mmtrack.asvbridge.asvrun import AsvInvocation, prepare

    project, env = layout
    monkeypatch.setenv("ASV_PYTHONPATH", os.pathsep.join([str(project), env["ASV_PYTHONPATH"]]))  # tinylib installed
    cwd, config = (project, Path("benchmarks/asv.conf.json")) if where == "root" else (project / "benchmarks", None)
    prepared = prepare(AsvInvocation(project=cwd, config=config))
    try:
        derived = json.loads(prepared.derived_config.read_text())
        assert prepared.results_dir == project / "benchmarks" / "results"
        assert derived["benchmark_dir"] == str(project / "benchmarks" / "benchmarks")
        assert derived["repo"] == str(project) and derived["env_dir"] == str(project / "benchmarks" / "env")
        assert prepared.commit.sha == subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True,
                                                     text=True).stdout.strip()
    finally:
        prepared.cleanup()


def test_without_config_at_the_root_the_error_names_the_subfolder_config(layout):
    project, env = layout
    proc = run_cli("run", "--quick", cwd=project, env=env)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "--config benchmarks/asv.conf.json" in line, line


@pytest.mark.slow
def test_a_broken_suite_file_beside_a_dangling_link_is_one_note_not_a_copy_error(layout):
    """A suite file that does not import makes mmtrack copy the suite without it: the dangling links stay out."""
    project, env = layout
    (project / "benchmarks" / "benchmarks" / "bench_broken.py").write_text("import not_installed_anywhere\n")
    commit(project, {**os.environ, **env}, "a suite file that does not import")
    installed = {**env, "ASV_PYTHONPATH": os.pathsep.join([str(project), env["ASV_PYTHONPATH"]])}
    proc = run_cli("run", "--quick", "--config", "benchmarks/asv.conf.json", cwd=project, env=installed, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]  # the broken file is a failed case
    assert "Traceback" not in out and "copytree" not in out and "free space" not in out, out[-3000:]
    assert "left 1 entry out of the suite's copy" in out and "a link to nowhere" in out, out[-3000:]
    assert "time_total" in out


# -- the README's commands, as written ---------------------------------------------------------------------------
def test_the_readme_and_the_guide_show_the_subfolder_layout():
    (readme,) = subfolder_blocks(README)
    assert subfolder_blocks(GUIDE) == [readme]
    assert readme[0].startswith("mmtrack run --config benchmarks/asv.conf.json")
    assert {line.split()[1] for line in readme} >= {"run", "compare", "continuous", "publish"}


@pytest.mark.slow
def test_the_readme_subfolder_commands_run_as_written(tmp_path):
    (lines,) = subfolder_blocks(README)
    env_dir = user_venv(tmp_path)
    env = user_shell(tmp_path, env_dir)
    project = make_networkx_layout(tmp_path, env)
    run_as_written("pip install -e .", project, env)  # the three commands' second line

    first = run_as_written(lines[0], project, env)  # the first commit
    assert "nothing to compare with yet" in first and "2 ok" in first, first[-2000:]
    assert (project / "benchmarks" / "results").is_dir() and not (project / "results").exists()

    (project / "tinylib" / "__init__.py").write_text(SLOWER)  # four times the work
    commit(project, env, "tinylib: total does four times the work")
    outputs = dict(zip(lines, (run_as_written(line, project, env) for line in lines)))
    verbs = {line.split()[1]: out for line, out in outputs.items()}
    assert "compared with the previous commit" in verbs["run"] and "regressed" in verbs["run"]
    assert "bench_total.Total.track_total" in verbs["compare"] and "regressed" in verbs["compare"]
    assert "regressed" in verbs["continuous"], verbs["continuous"][-3000:]
    assert (project / "site" / "index.html").exists()
    assert "Traceback" not in "".join(outputs.values())
    text = (project / "site" / "data" / "regressions.js").read_text()
    rows = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    ab = [r.get("ab") or {} for r in rows if r["kind"] == "regression"]
    assert any(v.get("state") == "regressed" for v in ab), rows  # continuous's verdict, on the page
