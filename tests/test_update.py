"""`mmtrack update`: import the new asv results, detect on the touched series, republish (issue 19)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mmtrack.publish import SiteConfig
from benchmarks.synthetic_history import synthetic_model, write_asv_results


def mmtrack(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MMTRACK_DB"}
    return subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_update_imports_detects_touched_series_and_republishes(tmp_path: Path) -> None:
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store

    model = synthetic_model(4, 40, 1, seed=11, step_every=2, config=SiteConfig())
    results, site, url = tmp_path / "results", tmp_path / "site", f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(results, model, commits=list(model.commits[:-1]))
    args = ("update", str(results), "-o", str(site), "--db", url, "--title", "t")
    cold = mmtrack(*args, cwd=tmp_path)
    assert cold.returncode == 0, cold.stderr
    assert "imported 39 new run(s)" in cold.stdout and "detect on 4 touched series" in cold.stdout, cold.stdout
    store = open_store(url)
    try:
        stored = q.load_change_points(store)
    finally:
        store.close()
    # Injected steps are found and stored for the pages.
    assert {cp.series.benchmark for cp in stored} & {cp.series.benchmark for cp in model.change_points}

    same = mmtrack(*args, cwd=tmp_path)
    assert same.returncode == 0 and "skipped 39 already imported" in same.stdout, same.stdout
    assert "detect on 0 touched series" in same.stdout and "publish: 0 files written" in same.stdout, same.stdout

    write_asv_results(results, model, commits=[model.commits[-1]])
    warm = mmtrack(*args, cwd=tmp_path)
    assert warm.returncode == 0, warm.stderr
    assert re.search(r"imported 1 new run\(s\).*skipped 39 already imported", warm.stdout), warm.stdout
    assert "detect on 4 touched series" in warm.stdout, warm.stdout
    fresh = mmtrack("publish", "-o", str(tmp_path / "fresh"), "--db", url, "--title", "t", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert tree(site) == tree(tmp_path / "fresh")


# Modules the nightly update must not load: the ORM (the store's reads and writes are Core, over store.schema), plotly (its file is read, not imported).
NOT_ON_UPDATE_PATH = ("sqlalchemy.orm", "mmtrack.store.models", "plotly")


def test_update_of_one_new_commit_loads_no_orm(tmp_path: Path) -> None:
    """Every command pays its imports: the update's reads and writes go through the Core tables alone."""
    model = synthetic_model(3, 12, 1, seed=5, config=SiteConfig())
    results, site, url = tmp_path / "results", tmp_path / "site", f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(results, model, commits=list(model.commits[:-1]))
    args = ("update", str(results), "-o", str(site), "--db", url, "--title", "t")
    assert mmtrack(*args, cwd=tmp_path).returncode == 0
    write_asv_results(results, model, commits=[model.commits[-1]])
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "mmtrack", *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)  # importtime: every module loaded, on stderr
    assert out.returncode == 0 and "detect on 3 touched series" in out.stdout, out.stdout + out.stderr
    loaded = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert {"sqlalchemy", "mmtrack.store.schema", "mmtrack.commands.update"} <= loaded
    assert not loaded & set(NOT_ON_UPDATE_PATH)


def test_update_bad_input_is_one_line(tmp_path: Path) -> None:
    r = mmtrack("update", str(tmp_path / "missing"), "-o", str(tmp_path / "site"), "--db",
                f"sqlite:///{tmp_path / 's.db'}", cwd=tmp_path)
    assert r.returncode == 2 and "not a directory" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def updates_then_full_detect(tmp_path: Path, model: Any, first: int) -> tuple[str, str]:
    """`mmtrack update` of the model's first ``first`` commits, then of each later one; a copy of that store after a
    full `mmtrack detect`: (the updated store's URL, the copy's)."""
    import shutil

    results, site, url = tmp_path / "results", tmp_path / "site", f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(results, model, commits=list(model.commits[:first]))
    args = ("update", str(results), "-o", str(site), "--db", url, "--title", "t")
    assert mmtrack(*args, cwd=tmp_path).returncode == 0
    for commit in model.commits[first:]:
        write_asv_results(results, model, commits=[commit])
        assert mmtrack(*args, cwd=tmp_path).returncode == 0
    shutil.copyfile(tmp_path / "store.db", tmp_path / "full.db")
    full_url = f"sqlite:///{tmp_path / 'full.db'}"
    assert mmtrack("detect", "--db", full_url, "--format", "json", cwd=tmp_path).returncode in (0, 1)
    return url, full_url


def stored_fields(url: str, *extra: str) -> list[tuple]:
    """Every stored change point's fields (and the ``extra`` entries named), sorted."""
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store

    store = open_store(url)
    try:
        return sorted((str(c.series), c.kind, c.before_sha, c.after_sha, c.before_value, c.after_value, c.ratio,
                       c.p_value, c.persists, c.method, *(c.extra.get(k) for k in extra))
                      for c in q.load_change_points(store))
    finally:
        store.close()


def test_updates_commit_by_commit_store_what_a_full_detect_run_stores(tmp_path: Path) -> None:
    """The incremental path (update after each new commit, detect on the touched series) and one full `detect`
    over the same store: the same change points, field by field."""
    model = synthetic_model(3, 36, 2, seed=5, step_every=2, config=SiteConfig())
    url, full_url = updates_then_full_detect(tmp_path, model, 33)

    incremental = stored_fields(url)
    assert incremental and incremental == stored_fields(full_url)
