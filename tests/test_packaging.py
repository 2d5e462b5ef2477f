"""The distribution: its name, what the wheel carries, and the import-name clash with an unrelated package."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

EXPECTED_IN_WHEEL = [
    "mmtrack_perf.py",
    "mmtrack/store/migrations/env.py",
    "mmtrack/store/migrations/script.py.mako",
    "mmtrack/store/migrations/versions/0001_core_tables.py",
    "mmtrack/store/migrations/versions/0005_series_clustered.py",
    "mmtrack/publish/assets/site.js",  # the pages' script and style: a data folder without __init__.py
    "mmtrack/publish/assets/site.css",
]
#: Development code outside the product: the generated histories of tests and benchmarks, the tests themselves.
NOT_IN_WHEEL = ("benchmarks/", "tests/", "mmtrack/publish/synthetic.py")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MMTRACK_DB")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> Path:
    """The wheel built from this checkout, unpacked as pip installs it, in a folder of its own."""
    tmp = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"),
         str(REPO)], capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = (tmp / "dist").glob("mmtrack_perf-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert all(n in names for n in EXPECTED_IN_WHEEL), sorted(n for n in names if "migrations" in n or "assets" in n)
    assert not [n for n in names if n.startswith(NOT_IN_WHEEL)]
    target = tmp / "site"
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr
    return target


@pytest.mark.slow
def test_an_installed_wheel_upgrades_a_store_from_its_own_migrations(installed_wheel, tmp_path):
    env = _clean_env(PYTHONPATH=str(installed_wheel))
    where = subprocess.run([sys.executable, "-c", "import mmtrack.store.db as d; print(d.MIGRATIONS)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert Path(where.stdout.strip()).is_relative_to(installed_wheel), where.stdout + where.stderr
    db = tmp_path / "store.db"
    up = subprocess.run([sys.executable, "-m", "mmtrack", "db", "upgrade", "--db", str(db)],
                        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    assert "(head)" in up.stdout or "head" in up.stdout, up.stdout
    current = subprocess.run([sys.executable, "-m", "mmtrack", "db", "current", "--db", str(db)],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "(head)" in current.stdout, current.stdout + current.stderr


def test_version_names_the_distribution():
    out = subprocess.run([sys.executable, "-m", "mmtrack", "--version"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0
    assert "mmtrack-perf" in out.stdout and "imports as mmtrack" in out.stdout


def test_launcher_names_the_clash_when_another_mmtrack_shadows_ours(tmp_path):
    # The unrelated PyPI package "mmtrack" has the same import name and needs packages we do not install.
    other = tmp_path / "other" / "mmtrack"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("import mmcv  # noqa\n")
    env = _clean_env(PYTHONPATH=os.pathsep.join([str(tmp_path / "other"), str(REPO)]))
    out = subprocess.run([sys.executable, "-c", "import mmtrack_perf; mmtrack_perf.main()", "--version"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "mmtrack-perf" in lines[0] and "pip uninstall mmtrack" in lines[0], out.stderr
    # ...and when the other package imports fine but is not ours
    (other / "__init__.py").write_text("")
    out = subprocess.run([sys.executable, "-c", "import mmtrack_perf; mmtrack_perf.main()"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_alembic_from_the_repository_root_upgrades_a_store(tmp_path):
    db = tmp_path / "dev.db"
    out = subprocess.run([sys.executable, "-m", "alembic", "-c", str(REPO / "alembic.ini"), "upgrade", "head"],
                         cwd=REPO, env=_clean_env(MMTRACK_DB=str(db)), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    from mmtrack.commands.db import db_current

    report = db_current(f"sqlite:///{db}")
    assert report.up_to_date and report.current is not None
