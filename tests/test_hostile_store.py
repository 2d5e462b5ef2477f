"""Hostile attacks on the store's side of `mmtrack update`, `detect`, `compare` and `publish` (issue 60): a kill at
any step, a damaged SQLite file, a full disk, PostgreSQL backends terminated, two updates at once. Each runs on
SQLite and, with MMTRACK_TEST_PG, on PostgreSQL where the store is involved."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmtrack.publish import SiteConfig
from benchmarks.synthetic_history import synthetic_model, write_asv_results
from test_store_support import BACKENDS, ROOT, require_postgres, reset_postgres, subprocess_env


def _url(backend: str, tmp: Path, name: str = "store.db") -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp / name}"
    url = require_postgres()
    reset_postgres(url)
    return url


def mmtrack(*args: str, cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    e = subprocess_env(**env)
    e.pop("MMTRACK_DB", None)
    return subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=cwd, env=e, capture_output=True, text=True,
                          timeout=timeout)


def change_points(url: str) -> list[str]:
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store

    store = open_store(url)
    try:
        return sorted(repr(dataclasses.asdict(c)) for c in q.load_change_points(store))
    finally:
        store.close()


def tree(root: Path) -> dict[str, bytes]:
    """The site's pages and data (its manifest names the store it came from: left out)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".mmtrack-site.json"}


def _model():
    return synthetic_model(4, 40, 1, seed=11, step_every=2, config=SiteConfig())


def _update(results: Path, site: Path, url: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return mmtrack("update", str(results), "-o", str(site), "--db", url, "--title", "t", cwd=cwd, **env)


# -- 1. a killed update loses no change point ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kill_after", ["import", "detect"])
def test_update_killed_after_a_step_is_repaired_by_the_next_update(tmp_path: Path, backend: str,
                                                                   kill_after: str) -> None:
    """SIGKILL after the import commits (or after detect): the next update detects what was imported and not yet
    judged, and ends with the change points and site of an uninterrupted run, for a cold store and for one commit."""
    model = _model()
    results = tmp_path / "results"
    write_asv_results(results, model, commits=list(model.commits[:-1]))
    reference: list[list[str]] = []
    url = _url(backend, tmp_path, "ref.db")
    for step in range(2):
        if step:
            write_asv_results(results, model, commits=[model.commits[-1]])
            os.utime(results / "benchmarks.json")
        assert _update(results, tmp_path / "ref-site", url, tmp_path).returncode == 0
        reference.append(change_points(url))
    assert reference[0] and reference[0] != reference[1]

    results = tmp_path / "results2"
    write_asv_results(results, model, commits=list(model.commits[:-1]))
    url = _url(backend, tmp_path, "killed.db")
    for step in range(2):
        if step:
            write_asv_results(results, model, commits=[model.commits[-1]])
        killed = _update(results, tmp_path / "site", url, tmp_path, MMTRACK_TEST_KILL_AFTER=kill_after)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        again = _update(results, tmp_path / "site", url, tmp_path)
        assert again.returncode == 0, again.stderr
        if kill_after == "import":
            assert "detect on 0 touched series" not in again.stdout, again.stdout
        assert change_points(url) == reference[step]
        later = _update(results, tmp_path / "site", url, tmp_path)  # the marks are cleared: nothing left to judge
        assert "detect on 0 touched series" in later.stdout, later.stdout
    assert tree(tmp_path / "site") == tree(tmp_path / "ref-site")


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_update_killed_at_any_moment_ends_like_an_uninterrupted_one(tmp_path: Path, backend: str) -> None:
    """SIGKILL by the clock at several moments of a cold update (import batches, detect, publish): the next update
    always ends with an uninterrupted run's change points."""
    model = synthetic_model(6, 150, 1, seed=3, step_every=2, config=SiteConfig())
    results = tmp_path / "results"
    write_asv_results(results, model)
    url = _url(backend, tmp_path, "ref.db")
    started = time.monotonic()
    assert _update(results, tmp_path / "ref-site", url, tmp_path).returncode == 0
    whole = time.monotonic() - started
    reference = change_points(url)
    for n, fraction in enumerate((0.35, 0.55, 0.75, 0.9)):
        url = _url(backend, tmp_path, f"killed-{n}.db")
        e = subprocess_env()
        e.pop("MMTRACK_DB", None)
        p = subprocess.Popen([sys.executable, "-m", "mmtrack", "update", str(results), "-o", str(tmp_path / f"s{n}"),
                              "--db", url, "--title", "t"], cwd=tmp_path, env=e, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            p.wait(timeout=whole * fraction)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        again = _update(results, tmp_path / f"s{n}", url, tmp_path)
        assert again.returncode == 0, again.stderr
        assert change_points(url) == reference, fraction


# -- 5. store and database faults are one line, exit 2, and lose nothing stored -----------------------------------


def _one_line_fault(proc: subprocess.CompletedProcess, *words: str) -> str:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == 2, out[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr[-3000:]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _imported(tmp_path: Path, url: str, model=None) -> tuple[Path, list]:
    model = model or _model()
    results = tmp_path / "results"
    write_asv_results(results, model)
    assert mmtrack("import-asv", str(results), "--db", url, cwd=tmp_path).returncode == 0
    return results, model.commits


def _damage(path: Path, seed: int) -> None:
    """Overwrite a quarter of the second half's pages (the schema's pages stay: the file still opens)."""
    import random

    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    pages = len(data) // 4096
    for page in rng.sample(range(pages // 2, pages), max(1, pages // 8)):
        data[page * 4096 + 100 : (page + 1) * 4096 - 100] = rng.randbytes(4096 - 200)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("verb", ["compare", "publish", "detect", "list"])
def test_a_damaged_sqlite_store_is_one_line_naming_the_file(tmp_path: Path, verb: str) -> None:
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}"
    _, commits = _imported(tmp_path, url)
    from mmtrack.store.db import open_store

    open_store(url).close()  # checkpointed: the WAL's pages are in the file
    _damage(db, seed=len(verb))
    args = {"compare": ("compare", commits[0].sha[:10], commits[-1].sha[:10]),
            "publish": ("publish", "-o", str(tmp_path / "site"), "--title", "t"),
            "detect": ("detect",), "list": ("list", "runs")}[verb]
    proc = mmtrack(*args, "--db", url, cwd=tmp_path)
    if proc.returncode == 0:  # the damage missed every page this verb reads: still no traceback
        assert "Traceback" not in proc.stderr
        return
    _one_line_fault(proc, str(db))


def _with_file_size_limit(limit: int):
    def limit_files() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit_files


def test_a_full_disk_during_detect_is_one_line_and_keeps_the_store(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}"
    _imported(tmp_path, url, synthetic_model(40, 200, 1, seed=5, step_every=2, config=SiteConfig()))
    from mmtrack.store.db import open_store

    open_store(url).close()
    e = subprocess_env()
    e.pop("MMTRACK_DB", None)
    # no file of the store may grow past its size now: the WAL that detect's writes need cannot be written
    proc = subprocess.run([sys.executable, "-m", "mmtrack", "detect", "--db", url], cwd=tmp_path, env=e,
                          capture_output=True, text=True, timeout=300, preexec_fn=_with_file_size_limit(65536))
    _one_line_fault(proc, str(db), "run the command again")
    again = mmtrack("detect", "--db", url, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert change_points(url)


@pytest.mark.slow
def test_postgresql_backends_terminated_during_update_are_one_line_and_the_next_update_completes(tmp_path: Path
                                                                                               ) -> None:
    from sqlalchemy import create_engine, text

    from mmtrack.store.db import normalize_url

    url = _url("postgresql", tmp_path)
    model = synthetic_model(6, 150, 1, seed=3, step_every=2, config=SiteConfig())
    results = tmp_path / "results"
    write_asv_results(results, model)
    assert _update(results, tmp_path / "ref-site", url, tmp_path).returncode == 0
    reference = change_points(url)
    outcomes = []
    killer = create_engine(normalize_url(url))
    for delay in (0.8, 1.6, 2.4):
        reset_postgres(url)
        e = subprocess_env()
        e.pop("MMTRACK_DB", None)
        p = subprocess.Popen([sys.executable, "-m", "mmtrack", "update", str(results), "-o", str(tmp_path / "site"),
                              "--db", url, "--title", "t"], cwd=tmp_path, env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        with killer.begin() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = current_database() AND pid <> pg_backend_pid()"))
        out, err = p.communicate(timeout=300)
        proc = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if p.returncode != 0:
            outcomes.append(_one_line_fault(proc, "postgresql", "run the command again"))
        else:
            assert "Traceback" not in out + err
        again = _update(results, tmp_path / "site", url, tmp_path)
        assert again.returncode == 0, again.stderr
        assert change_points(url) == reference
    killer.dispose()


# -- 6. two updates at once -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_concurrent_updates_both_succeed_and_leave_the_site_a_fresh_publish_would_write(tmp_path: Path,
                                                                                           backend: str) -> None:
    model = _model()
    results = tmp_path / "results"
    url = _url(backend, tmp_path)
    site = tmp_path / "site"
    e = subprocess_env()
    e.pop("MMTRACK_DB", None)
    for n, commits in enumerate((model.commits[:30], model.commits[30:35], model.commits[35:])):
        write_asv_results(results, model, commits=list(commits))
        procs = [subprocess.Popen([sys.executable, "-m", "mmtrack", "update", str(results), "-o", str(site), "--db",
                                   url, "--title", "t"], cwd=tmp_path, env=e, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=300) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0, (n, out, err)
            assert "Traceback" not in err, err
    fresh = mmtrack("publish", "-o", str(tmp_path / "fresh"), "--db", url, "--title", "t", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert tree(site) == tree(tmp_path / "fresh")
    assert not [p for p in site.iterdir() if p.name.startswith(".mmtrack-build-")]


def test_an_alert_refresh_waits_for_another_processes_refresh_on_postgresql(tmp_path: Path) -> None:
    """Two updates at once on PostgreSQL: each reads the stored alert ids, then inserts those it lacks, in separate
    READ COMMITTED transactions, so both inserted one id (a duplicate ``pk_alert``, one update failing). A refresh
    waits while another process holds the alert queue's lock, and then stores the alerts of every change point."""
    import threading

    from mmtrack.analysis.alert_queue import refresh_alerts
    from mmtrack.store.db import ALERTS_LOCK_ID, open_store

    url = _url("postgresql", tmp_path)
    results, site = tmp_path / "results", tmp_path / "site"
    write_asv_results(results, _model())
    assert _update(results, site, url, tmp_path).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                               "from mmtrack.store.db import ALERTS_LOCK_ID, open_store\n"
                               "store = open_store(sys.argv[1])\n"
                               "with store.one_at_a_time(ALERTS_LOCK_ID):\n"
                               "    print('held', flush=True)\n"
                               "    sys.stdin.readline()\n", url],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=subprocess_env())
    store = open_store(url)
    try:
        assert holder.stdout.readline().strip() == "held"
        done: list[int] = []
        refresh = threading.Thread(target=lambda: done.append(len(refresh_alerts(store))))
        refresh.start()
        refresh.join(1.0)
        assert refresh.is_alive() and not done  # waiting for the holder
        holder.stdin.write("\n")
        holder.stdin.flush()
        refresh.join(60)
        assert done and done[0] > 0  # the model's steps form alerts
        with store.one_at_a_time(ALERTS_LOCK_ID):  # released: taken at once
            pass
    finally:
        holder.kill()
        holder.wait()
        store.close()


def test_a_site_held_by_another_build_is_waited_for_then_given_up_in_one_line(tmp_path: Path, capfd) -> None:
    """Another process holds the site (a build switching its folders): a build waits, says so once, and gives up
    after its wait in one line."""
    from mmtrack.errors import UserError
    from mmtrack.publish.writer import lock_site

    site = tmp_path / "site"
    site.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n", str(site)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match="another mmtrack is still writing this site"):
            lock_site(site, wait_s=0.3)
        assert capfd.readouterr().err.count("waiting for another mmtrack") == 1
    finally:
        holder.kill()
        holder.wait()
    os.close(lock_site(site, wait_s=5))  # free again once the holder is gone


# -- attacks of this pass's own on the detect marks, the fault lines and the site lock --------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_import_asv_or_update_no_detect_leaves_the_series_to_the_next_update(tmp_path: Path, backend: str) -> None:
    """What `import-asv` or `update --no-detect` imported is judged by the next update (it said 0 before); a manual
    `detect` of the whole store clears the marks, so the update after it has nothing left."""
    model = _model()
    results = tmp_path / "results"
    write_asv_results(results, model, commits=list(model.commits[:-1]))
    url = _url(backend, tmp_path)
    assert mmtrack("import-asv", str(results), "--db", url, cwd=tmp_path).returncode == 0
    first = _update(results, tmp_path / "site", url, tmp_path)
    assert "detect on 4 touched series" in first.stdout, first.stdout
    write_asv_results(results, model, commits=[model.commits[-1]])
    skipped = mmtrack("update", str(results), "-o", str(tmp_path / "site"), "--db", url, "--title", "t",
                      "--no-detect", cwd=tmp_path)
    assert skipped.returncode == 0, skipped.stderr
    assert mmtrack("detect", "--db", url, cwd=tmp_path).returncode == 0
    after = _update(results, tmp_path / "site", url, tmp_path)
    assert "detect on 0 touched series" in after.stdout, after.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mark_made_again_after_detect_read_it_survives_that_detect(tmp_path: Path, backend: str) -> None:
    """An import that lands between detect's read of the marks and its write marks its series again: that detect
    clears only the marks it read, so the new point is judged by the next update."""
    from sqlalchemy import select

    from mmtrack.store import schema as m
    from mmtrack.store.db import open_store
    from mmtrack.store.writes import mark_detect_due, read_detect_due, save_change_points

    url = _url(backend, tmp_path)
    _imported(tmp_path, url)
    store = open_store(url)
    try:
        with store.read() as conn:
            ids = [r[0] for r in conn.execute(select(m.Series.id))]
        due = read_detect_due(store)
        assert set(due.series) == set(ids) and due.commits  # the import marked all it wrote
        with store.write() as conn:  # another import, after detect read the marks
            mark_detect_due(conn, ids[:1], {"f" * 40})
        save_change_points(store, [], replace=[], clear_due=due)
        left = read_detect_due(store)
        assert set(left.series) == set(ids[:1]) and set(left.commits) == {"f" * 40}
    finally:
        store.close()


def test_a_fault_line_masks_the_password_and_says_what_to_do() -> None:
    from sqlalchemy.exc import OperationalError

    from mmtrack.store import db

    before = db._opened_url
    try:
        db._opened_url = "postgresql+psycopg://ci:hunter2@db.example:5432/perf"
        lost = db.store_fault_line(OperationalError("SELECT 1", {}, Exception(
            "terminating connection due to administrator command")))
        full = db.store_fault_line(OperationalError("INSERT", {}, Exception("database or disk is full")))
        other = db.store_fault_line(ValueError("not a store fault"))
    finally:
        db._opened_url = before
    assert lost is not None and "hunter2" not in lost and "***" in lost and "run the command again" in lost
    assert full is not None and "free space" in full and "\n" not in full
    assert other is None


def test_a_build_that_fails_before_finishing_lets_the_next_one_in(tmp_path: Path) -> None:
    from mmtrack.errors import UserError
    from mmtrack.publish.writer import SiteWriter, lock_site

    site = tmp_path / "site"
    site.mkdir()
    (site / "someone-elses.txt").write_text("x")
    with pytest.raises(UserError, match="not empty"):
        SiteWriter(site)
    os.close(lock_site(site, wait_s=0.5))  # the refused build holds no lock


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_update_interrupted_by_a_signal_is_one_line_and_the_next_update_completes(tmp_path: Path,
                                                                                   signum: int) -> None:
    model = synthetic_model(6, 150, 1, seed=3, step_every=2, config=SiteConfig())
    results = tmp_path / "results"
    write_asv_results(results, model)
    url = _url("sqlite", tmp_path, "ref.db")
    assert _update(results, tmp_path / "ref-site", url, tmp_path).returncode == 0
    reference = change_points(url)
    url = _url("sqlite", tmp_path)
    e = subprocess_env()
    e.pop("MMTRACK_DB", None)
    p = subprocess.Popen([sys.executable, "-m", "mmtrack", "update", str(results), "-o", str(tmp_path / "site"),
                          "--db", url, "--title", "t"], cwd=tmp_path, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(1.5)
    p.send_signal(signum)
    out, err = p.communicate(timeout=300)
    assert "Traceback" not in out + err, err[-3000:]
    if p.returncode != 0:  # it may have finished first on a fast machine
        assert p.returncode == (130 if signum == signal.SIGINT else 143), err[-3000:]
        assert len([line for line in err.splitlines() if line.strip()]) <= 2, err  # click's newline and one line
    again = _update(results, tmp_path / "site", url, tmp_path)
    assert again.returncode == 0, again.stderr
    assert change_points(url) == reference
