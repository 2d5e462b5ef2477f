"""The store's URL, opening, schema revisions (SQLite and, with MMTRACK_TEST_PG, PostgreSQL)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlalchemy import text

from mmtrack.errors import UserError
from mmtrack.store.db import DEFAULT_RELATIVE, head_revision, open_store, resolve_url
from test_store_support import mmtrack_cmd, store, store_url, subprocess_env  # noqa: F401


def test_resolve_url_prefers_cli_then_env_then_project_root(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo / "sub")
    monkeypatch.delenv("MMTRACK_DB", raising=False)
    assert resolve_url(None) == f"sqlite:///{repo / DEFAULT_RELATIVE}"
    monkeypatch.setenv("MMTRACK_DB", "postgresql://u@h/db")
    assert resolve_url(None) == "postgresql+psycopg://u@h/db"
    assert resolve_url("sqlite:///x.db") == "sqlite:///x.db"
    assert resolve_url("rel/path.db") == f"sqlite:///{repo / 'sub' / 'rel' / 'path.db'}"


def test_resolve_url_outside_git_uses_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MMTRACK_DB", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert resolve_url(None) == f"sqlite:///{tmp_path / DEFAULT_RELATIVE}"


def test_open_creates_schema_at_head_and_reopens(store_url):
    s = open_store(store_url)
    assert s.current_revision() == head_revision()
    s.close()
    s = open_store(store_url)  # already at head: nothing to do
    assert s.current_revision() == head_revision()
    with s.read() as conn:
        n = conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one()
    assert n == 1
    s.close()


def test_sqlite_is_wal_with_busy_timeout(tmp_path):
    s = open_store(f"sqlite:///{tmp_path / 'a' / 'b.db'}")  # parent folders are created
    with s.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() >= 10_000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
    s.close()


def test_bad_urls_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="not valid"):
        open_store("nonsense://")
    with pytest.raises(UserError, match="is not a file"):
        open_store(f"sqlite:///{tmp_path}")  # a directory, not a file


def test_cli_db_upgrade_and_current(tmp_path):
    db = tmp_path / "cli.db"
    env = subprocess_env()
    run = lambda *a: subprocess.run(mmtrack_cmd(*a), capture_output=True, text=True, env=env, cwd=tmp_path)  # noqa: E731
    cur = run("db", "current", "--db", str(db))  # no file: said so, and nothing is created
    assert cur.returncode == 0 and "no store there" in cur.stdout and "mmtrack db upgrade" in cur.stdout
    assert not db.exists()
    db.touch()  # an empty file: a store with no schema yet
    cur = run("db", "current", "--db", str(db))
    assert cur.returncode == 0 and "revision <empty>" in cur.stdout and "mmtrack db upgrade" in cur.stdout
    up = run("db", "upgrade", "--db", str(db))
    assert up.returncode == 0 and f"-> {head_revision()} (head)" in up.stdout
    again = run("db", "upgrade", "--db", str(db))
    assert f"already at revision {head_revision()}" in again.stdout
    cur = run("db", "current", "--db", str(db))
    assert f"revision {head_revision()} (head)" in cur.stdout
    # MMTRACK_DB is honoured when --db is absent
    env["MMTRACK_DB"] = f"sqlite:///{tmp_path / 'env.db'}"
    assert run("db", "upgrade").returncode == 0
    assert (tmp_path / "env.db").is_file()


def test_unreachable_server_is_one_line_user_error(tmp_path):
    with pytest.raises(UserError, match=r"cannot open the store at postgresql\+psycopg://u:\*\*\*@127.0.0.1:1/x: .*refused"):
        open_store("postgresql://u:secret@127.0.0.1:1/x")
    try:
        open_store("postgresql://u:secret@127.0.0.1:1/x")
    except UserError as exc:
        assert "secret" not in str(exc) and "\n" not in str(exc)


def test_db_current_does_not_create_a_store(tmp_path):
    from mmtrack.commands.db import db_current

    r = db_current(f"sqlite:///{tmp_path / 'none' / 'x.db'}")
    assert r.current is None and not r.up_to_date and not r.exists and not (tmp_path / "none").exists()


def test_sqlite_reads_through_a_memory_map(tmp_path):
    from mmtrack.store.db import MMAP_BYTES

    s = open_store(f"sqlite:///{tmp_path / 'm.db'}")
    with s.read() as conn:
        assert conn.exec_driver_sql("PRAGMA mmap_size").scalar_one() == MMAP_BYTES
    s.close()


HOLD_LOCK = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO alembic_version SELECT version_num FROM alembic_version WHERE 0")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


def test_a_write_that_sqlite_refuses_at_once_waits_for_the_lock(tmp_path):
    """Some SQLite paths answer "database is locked" without waiting out the busy timeout; a write retries
    until the lock is free. Here the connections' own busy timeout is 0, so every conflict answers at once."""
    from sqlalchemy import event
    from sqlalchemy.exc import OperationalError

    from mmtrack.store.db import retry_locked

    path = tmp_path / "s.db"
    store = open_store(f"sqlite:///{path}")
    event.listen(store.engine, "connect", lambda c, _r: c.execute("PRAGMA busy_timeout = 0"))
    store.engine.dispose()  # new connections, with the listener

    def take_the_lock() -> None:
        with store.engine.execution_options(mmtrack_begin="IMMEDIATE").begin():
            pass

    def hold_lock(seconds: float) -> subprocess.Popen:
        holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path), str(seconds)], stdout=subprocess.PIPE,
                                  text=True)
        assert holder.stdout.readline().strip() == "held"
        return holder

    holder = hold_lock(1.0)
    with pytest.raises(OperationalError, match="locked"):  # what an unretried write sees
        take_the_lock()
    with store.write() as conn:  # waits for the holder's commit
        conn.execute(text("CREATE TABLE written (x INTEGER)"))
    assert holder.wait(timeout=30) == 0
    holder = hold_lock(3.0)
    with pytest.raises(OperationalError, match="locked"):  # a lock still held at the deadline is raised
        retry_locked(take_the_lock, timeout_s=0.3)
    assert holder.wait(timeout=30) == 0
    with store.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM written")).scalar_one() == 0
    store.close()
