"""Stores stay where they belong (issue 45): no empty store from a command with nothing to store, and no
mmtrack tables added to another application's SQLite database, by writers and readers alike."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from conftest import METPY_RESULTS, run_cli


def test_update_on_an_empty_results_folder_creates_no_store(tmp_path):
    (tmp_path / "results").mkdir()
    db = tmp_path / "store.db"
    proc = run_cli("update", str(tmp_path / "results"), "-o", str(tmp_path / "site"), "--db", str(db), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "holds no asv results" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not db.exists() and not (tmp_path / "site").exists()


@pytest.fixture
def other_app(tmp_path):
    """Another application's SQLite database: one table of its own, no mmtrack schema."""
    path = tmp_path / "other-app.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("create table customers (id integer primary key, name text)")
        con.execute("insert into customers (name) values ('ada')")
    con.close()
    return path


@pytest.mark.parametrize("args", [
    ("import-asv", "{results}"),
    ("update", "{results}", "-o", "{tmp}/site"),
    ("db", "upgrade"),
    ("db", "current"),
    ("list", "runs"),
    ("detect",),
    ("compare", "HEAD~1", "HEAD"),
    ("publish", "-o", "{tmp}/site"),
], ids=lambda a: "-".join(a[:2]))
def test_another_applications_sqlite_file_is_refused_in_one_line(tmp_path, other_app, args):
    results = tmp_path / "results"
    shutil.copytree(METPY_RESULTS, results)
    before = other_app.read_bytes()
    argv = [a.format(results=results, tmp=tmp_path) for a in args]
    proc = run_cli(*argv, "--db", str(other_app), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "another application's database (tables customers)" in lines[0], proc.stderr
    with sqlite3.connect(other_app) as con:
        assert [r[0] for r in con.execute("select name from sqlite_master where type='table'")] == ["customers"]
    con.close()
    assert other_app.read_bytes() == before
