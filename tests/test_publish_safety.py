"""Publish stays inside its folder and survives a kill (issue 20, defects 1-3).

The kills are real SIGKILLs of a forked child, sent by the child itself at the
n-th file it creates or the n-th rename it makes, so each test reaches the same
point on every run.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mmtrack.errors import UserError
from mmtrack.publish import SiteConfig, SiteModel, build_site
from mmtrack.publish import writer as site_writer
from benchmarks.synthetic_history import synthetic_commits, synthetic_model
from mmtrack.publish.writer import JOURNAL, MANIFEST


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` with its bytes (links would fail the tests: there are none to follow)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def outside_state(root: Path, site: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree(root).items() if not k.startswith(site.name + "/")}


def models() -> tuple[SiteModel, SiteModel]:
    """A history and the same history one commit (and one new chunk) later."""
    commits = synthetic_commits(21, seed=5)
    full = synthetic_model(4, 21, 2, seed=5, config=SiteConfig(chunk_size=10))
    keep = {c.sha for c in commits[:20]}
    before = dataclasses.replace(
        full, commits=commits[:20], series={k: [p for p in v if p.commit.sha in keep] for k, v in full.series.items()},
        change_points=[cp for cp in full.change_points if cp.after_sha in keep],
    )
    return before, full


# -- defect 1 and 2: planted links ----------------------------------------------------------------


def test_planted_temp_name_links_change_nothing(tmp_path: Path) -> None:
    before, after = models()
    site, victim = tmp_path / "site", tmp_path / "victim"
    victim.write_text("precious")
    build_site(before, site)
    for pid in range(1, 400):  # the old writer's predictable names, for every likely pid
        (site / f".{MANIFEST}.tmp-{pid}").symlink_to(victim)
        (site / "data" / f".site.js.tmp-{pid}").symlink_to(victim)
    snapshot = tree(tmp_path)
    with pytest.raises(UserError, match="symbolic link") as err:
        build_site(after, site)
    assert "\n" not in str(err.value)
    assert victim.read_text() == "precious" and not (site / MANIFEST).is_symlink()
    assert tree(tmp_path) == snapshot  # refused before writing anything, inside or out


def test_symlinked_subfolder_gets_no_folder_created_outside(tmp_path: Path) -> None:
    before, after = models()
    site, outside = tmp_path / "site", tmp_path / "outside"
    outside.mkdir()
    build_site(before, site)
    (site / "data" / "b").rename(tmp_path / "moved")
    (site / "data" / "b").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError, match="symbolic link"):
        build_site(after, site)
    assert list(outside.iterdir()) == []


def mmtrack(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MMTRACK_DB"}
    return subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_cli_refuses_a_planted_link_in_one_line(tmp_path: Path) -> None:
    from benchmarks.synthetic_history import write_asv_results

    url = f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(tmp_path / "results", models()[0])
    assert mmtrack("import-asv", str(tmp_path / "results"), "--db", url, cwd=tmp_path).returncode == 0
    site = tmp_path / "site"
    assert mmtrack("publish", "-o", str(site), "--db", url, cwd=tmp_path).returncode == 0
    (site / "index.html").unlink()
    (site / "index.html").symlink_to(tmp_path / "victim")
    snapshot = tree(site)
    result = mmtrack("publish", "-o", str(site), "--db", url, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "symbolic link" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and not (tmp_path / "victim").exists() and tree(site) == snapshot


def test_new_files_never_open_an_existing_name(tmp_path: Path) -> None:
    """Every file is created O_EXCL|O_NOFOLLOW inside a fresh private staging folder."""
    created: list[str] = []
    real = site_writer._write_new

    def spy(dir_fd: int, name: str, data: bytes) -> None:
        created.append(os.readlink(f"/proc/self/fd/{dir_fd}"))
        real(dir_fd, name, data)

    site_writer._write_new = spy
    try:
        build_site(models()[0], tmp_path / "site")
    finally:
        site_writer._write_new = real
    site = str((tmp_path / "site").resolve())
    assert created and all(d.startswith(site + "/" + site_writer.STAGING_PREFIX) for d in created)
    assert not any(p.name.startswith(site_writer.STAGING_PREFIX) for p in (tmp_path / "site").iterdir())


# -- defect 3: a killed build ---------------------------------------------------------------------


def _killed_build(model: SiteModel, site: Path, what: str, n: int) -> int:
    """Build in a forked child that SIGKILLs itself at its n-th file creation or rename."""

    def child() -> None:
        count = [0]

        def at_nth(fn):  # noqa: ANN001, ANN202
            def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
                count[0] += 1
                if count[0] == n:
                    os.kill(os.getpid(), signal.SIGKILL)
                return fn(*args, **kwargs)

            return wrapped

        if what == "create":
            site_writer._write_new = at_nth(site_writer._write_new)
        else:
            site_writer.os.rename = at_nth(os.rename)  # type: ignore[attr-defined]
            site_writer.swap_dirs = at_nth(site_writer.swap_dirs)
        build_site(model, site)
        os._exit(0)

    proc = multiprocessing.get_context("fork").Process(target=child)
    proc.start()
    proc.join(60)
    return proc.exitcode if proc.exitcode is not None else 0


@pytest.mark.parametrize("what,n", [("create", 1), ("create", 2), ("create", 9), ("create", 40),
                                    ("rename", 1), ("rename", 2), ("rename", 3), ("rename", 5), ("rename", 12)])
def test_a_killed_first_build_is_completed_by_the_next(tmp_path: Path, what: str, n: int) -> None:
    _, model = models()
    clean, site = tmp_path / "clean", tmp_path / "site"
    build_site(model, clean)
    code = _killed_build(model, site, what, n)
    assert code in (-signal.SIGKILL, 0)
    build_site(model, site)
    assert tree(site) == tree(clean)


@pytest.mark.parametrize("what,n", [("create", 1), ("create", 3), ("create", 12),
                                    ("rename", 1), ("rename", 2), ("rename", 3)])
def test_a_killed_republish_serves_one_build_and_is_completed(tmp_path: Path, what: str, n: int) -> None:
    before, after = models()
    old, new, site = tmp_path / "old", tmp_path / "new", tmp_path / "site"
    build_site(before, old)
    build_site(after, new)
    build_site(before, site)
    code = _killed_build(after, site, what, n)
    assert code == -signal.SIGKILL  # a republish writes > 12 files; renames: journal, data swap, manifest
    # Served meanwhile: the data of one build or the other, never a mix.
    data = {k: v for k, v in tree(site).items() if k.startswith("data/")}
    assert data in ({k: v for k, v in tree(old).items() if k.startswith("data/")},
                    {k: v for k, v in tree(new).items() if k.startswith("data/")})
    build_site(after, site)
    assert tree(site) == tree(new)
    assert not (site / JOURNAL).exists()


def test_leftovers_of_a_kill_go_user_files_stay(tmp_path: Path) -> None:
    before, after = models()
    site = tmp_path / "site"
    build_site(before, site)
    (site / "CNAME").write_text("perf.example.org")
    (site / "data" / "notes.txt").write_text("mine")
    (site / ".mmtrack-build-mine").mkdir()  # our prefix, but not marked as our staging folder
    (site / ".mmtrack-build-mine" / "keep.txt").write_text("mine")
    assert _killed_build(after, site, "rename", 3) == -signal.SIGKILL
    build_site(after, site)
    assert (site / "CNAME").read_text() == "perf.example.org"
    assert (site / "data" / "notes.txt").read_text() == "mine"
    assert (site / ".mmtrack-build-mine" / "keep.txt").read_text() == "mine"
    staged = [p for p in site.iterdir() if p.name.startswith(".mmtrack-build-") and p.name != ".mmtrack-build-mine"]
    assert staged == []


def test_republish_with_nothing_new_writes_nothing(tmp_path: Path) -> None:
    model = models()[1]
    site = tmp_path / "site"
    build_site(model, site)
    before = {p: p.stat().st_mtime_ns for p in site.rglob("*")}
    inodes = {p: p.stat().st_ino for p in site.rglob("*")}
    report = build_site(model, site)
    assert report.written == [] and report.removed == []
    assert {p: p.stat().st_mtime_ns for p in site.rglob("*")} == before
    assert {p: p.stat().st_ino for p in site.rglob("*")} == inodes


def test_a_sigkilled_cli_publish_is_completed(tmp_path: Path) -> None:
    """The whole CLI killed from outside at an arbitrary moment, then run again: a complete site."""
    from benchmarks.synthetic_history import synthetic_model as _  # noqa: F401 - same model in the child

    site, clean = tmp_path / "site", tmp_path / "clean"
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r});"
        "from mmtrack.publish import build_site, SiteConfig;"
        "from benchmarks.synthetic_history import synthetic_model;"
        "build_site(synthetic_model(30, 60, 3, seed=2, config=SiteConfig(chunk_size=10)), sys.argv[1])"
    )
    subprocess.run([sys.executable, "-c", script, str(clean)], check=True)
    proc = subprocess.Popen([sys.executable, "-c", script, str(site)])
    try:
        proc.wait(timeout=1.5)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    subprocess.run([sys.executable, "-c", script, str(site)], check=True)
    assert tree(site) == tree(clean)
