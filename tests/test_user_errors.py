"""Every bad input a user can give gets one line on stderr, no traceback, and the documented exit code.

Issue 14 (stores, publish folders, import folders, options) and issue 20 items 4-7 (import edge
cases, read-only stores, untrusted names in terminal and markdown output). Real CLI, real SQLite.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, cli_env

OLD_STORE = REPO / "tests" / "data" / "store-r0004.db"  # an old schema (revision 0004)
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def mmtrack(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=cwd, env=env or cli_env(HOME=str(cwd)),
                          capture_output=True, text=True, timeout=300)


def assert_one_line(proc: subprocess.CompletedProcess, code: int, *needles: str) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def write_result(folder: Path, sha: str, benchmarks: dict[str, float], machine: str = "m1", env: str = "e1",
                 date: int = 1753724236000) -> Path:
    """One asv results file (format 2) with one ok result per benchmark (``date``: the commit's, in ms)."""
    rows = {name: [[v], [], "v1", 1753844943275, 0.4, [v * 0.9], [v * 1.1], [v * 0.95], [v * 1.05], [2], [10]]
            for name, v in benchmarks.items()}
    data = {"version": 2, "commit_hash": sha, "env_name": env, "date": date,
            "params": {"machine": machine, "python": "3.12"}, "python": "3.12", "requirements": {},
            "env_vars": {}, "result_columns": COLUMNS, "results": rows, "durations": {}}
    path = folder / machine / f"{sha[:8]}-{env}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def store(tmp_path) -> Path:
    """A store with two commits of two benchmarks."""
    results = tmp_path / "results"
    write_result(results, "a" * 40, {"suite.T.time_a": 1e-3, "suite.T.time_b": 2e-3})
    write_result(results, "b" * 40, {"suite.T.time_a": 1e-3, "suite.T.time_b": 2e-3})
    db = tmp_path / "store.db"
    proc = mmtrack("import-asv", str(results), "--db", str(db), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return db


def read_only_runner(folder: Path):
    """Run the CLI with ``folder`` read-only: chmod for a normal user, a read-only bind mount for root."""
    if os.geteuid() != 0:
        def run(*args: str) -> subprocess.CompletedProcess:
            mode = folder.stat().st_mode
            files = {p: p.stat().st_mode for p in folder.iterdir()}
            for p in files:
                p.chmod(0o444)
            folder.chmod(0o555)
            try:
                return mmtrack(*args, cwd=folder.parent)
            finally:
                folder.chmod(mode)
                for p, m in files.items():
                    p.chmod(m)
        return run
    if shutil.which("unshare") is None:
        pytest.skip("root without unshare: no way to make a folder read-only")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {folder} {folder} && "
                            f"mount -o remount,bind,ro {folder}"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot bind-mount read-only here")

    def run(*args: str) -> subprocess.CompletedProcess:
        cmd = " ".join(["exec", sys.executable, "-m", "mmtrack", *(f"'{a}'" for a in args)])
        script = f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && {cmd}"
        return subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=folder.parent,
                              env=cli_env(HOME=str(folder.parent)), capture_output=True, text=True, timeout=300)
    return run


# --------------------------------------------------------------------------- stores


@pytest.mark.parametrize("verb", [["detect"], ["compare", "a", "b"], ["publish", "-o", "site"], ["list", "runs"]])
def test_not_a_database(tmp_path, verb):
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    assert_one_line(mmtrack(*verb, "--db", "notes.txt", cwd=tmp_path), 2, "not a database", "--db")


@pytest.mark.parametrize("verb", [["detect"], ["import-asv", "results"], ["list", "runs"]])
def test_db_under_a_file(tmp_path, verb):
    (tmp_path / "file").write_text("x")
    write_result(tmp_path / "results", "a" * 40, {"suite.T.time_a": 1e-3})
    assert_one_line(mmtrack(*verb, "--db", "file/store.db", cwd=tmp_path), 2, "is a file, not a folder")


@pytest.mark.parametrize("verb", [["detect"], ["compare", "a", "b"], ["publish", "-o", "site"], ["list", "commits"]])
def test_mistyped_db_is_refused_not_created(tmp_path, verb):
    proc = mmtrack(*verb, "--db", "typo/stroe.db", cwd=tmp_path)
    assert_one_line(proc, 2, "no store at", "typo/stroe.db")
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite+pysqlite://"])
def test_an_in_memory_store_is_refused(tmp_path, url):
    """import-asv into one said `imported 59 new run(s) into sqlite:///` and kept nothing."""
    write_result(tmp_path / "results", "a" * 40, {"suite.T.time_a": 1e-3})
    assert_one_line(mmtrack("import-asv", "results", "--db", url, cwd=tmp_path), 2, "in-memory store", url)
    env = cli_env(HOME=str(tmp_path), MMTRACK_DB=url)
    assert_one_line(mmtrack("list", "runs", cwd=tmp_path, env=env), 2, "MMTRACK_DB", "in-memory")


def test_in_memory_urls_are_told_from_files():
    from mmtrack.store.url import is_in_memory

    assert not any(map(is_in_memory, ["sqlite:///s.db", "sqlite:////tmp/s.db", "sqlite:///memory.db",
                                      "postgresql+psycopg://u@h/db", "s.db"]))
    assert is_in_memory("sqlite:///:memory:?cache=shared")


def test_empty_store_is_refused(tmp_path):
    (tmp_path / "empty.db").touch()
    assert_one_line(mmtrack("publish", "-o", "site", "--db", "empty.db", cwd=tmp_path), 2, "holds no mmtrack store")
    assert not (tmp_path / "site").exists()


def test_old_store_is_upgraded_and_published(tmp_path):
    shutil.copy(OLD_STORE, tmp_path / "old.db")
    proc = mmtrack("publish", "-o", "site", "--db", "old.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def test_newer_schema_is_refused_by_publish_too(store, tmp_path):
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    for verb in (["publish", "-o", "site"], ["detect"], ["list", "runs"]):
        assert_one_line(mmtrack(*verb, "--db", str(store), cwd=tmp_path), 2, "9999_from_the_future", "upgrade mmtrack")
    assert not (tmp_path / "site").exists()


def test_read_only_store_reads_and_refuses_writes(store, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    shutil.move(store, folder / "store.db")
    for leftover in tmp_path.glob("store.db-*"):
        leftover.unlink()
    run = read_only_runner(folder)
    detect = run("detect", "--db", str(folder / "store.db"))
    assert detect.returncode == 0 and "Traceback" not in detect.stderr, detect.stderr
    assert "read-only" in detect.stdout
    listed = run("list", "commits", "--db", str(folder / "store.db"), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert {c["sha"] for c in json.loads(listed.stdout)} == {"a" * 40, "b" * 40}
    results = tmp_path / "more"
    write_result(results, "c" * 40, {"suite.T.time_a": 1e-3})
    assert_one_line(run("import-asv", str(results), "--db", str(folder / "store.db")), 2, "read-only")


# --------------------------------------------------------------------------- options and folders


def test_detect_alpha_out_of_range(store, tmp_path):
    for alpha in ("-1", "0", "1.5", "nan"):
        assert_one_line(mmtrack("detect", "--db", str(store), "--alpha", alpha, cwd=tmp_path), 2, "--alpha")


def test_publish_output_under_a_file(store, tmp_path):
    (tmp_path / "file").write_text("x")
    assert_one_line(mmtrack("publish", "--db", str(store), "-o", "file/site", cwd=tmp_path), 2, "is a file")


def test_publish_output_in_a_read_only_folder(store, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    run = read_only_runner(folder)
    assert_one_line(run("publish", "--db", str(store), "-o", str(folder / "site")), 2, "not writable")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_publish_output_the_folder_checks_cannot_foresee(store, tmp_path):
    """/proc passes every check made before the store is read (no file in the way, writable for root) and then
    refuses the folder: one line naming the output folder, not a traceback."""
    assert_one_line(mmtrack("publish", "--db", str(store), "-o", "/proc/mmtrack-site", cwd=tmp_path), 2,
                    "output folder /proc/mmtrack-site")


def test_an_os_error_no_check_foresaw_is_one_line():
    from mmtrack.cli import os_error_line

    line = os_error_line(FileNotFoundError(2, "No such file or directory", "/proc/x", None))
    assert line == ("No such file or directory: /proc/x; check that path, its permissions and the free space on "
                    "its disk")
    assert os_error_line(OSError(28, "No space left on device")).startswith("No space left on device; check")


def test_import_asv_on_a_project_root_names_the_results_folder(tmp_path):
    project = tmp_path / "project"
    write_result(project / ".asv" / "results", "a" * 40, {"suite.T.time_a": 1e-3})
    (project / "asv.conf.json").write_text('{"version": 1, "results_dir": ".asv/results"}')
    line = assert_one_line(mmtrack("import-asv", "project", "--db", "s.db", cwd=tmp_path), 2, "project")
    assert line.endswith(str(Path("project") / ".asv" / "results"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line(mmtrack("import-asv", "empty", "--db", "s.db", cwd=tmp_path), 2, "holds no asv results")
    # A root whose results/ holds benchmarks.json (as MetPy's does): that file is not the results of a
    # machine called "results"; the root is refused the same way, nothing imported.
    rooted = tmp_path / "rooted"
    write_result(rooted / "results", "b" * 40, {"suite.T.time_a": 1e-3})
    (rooted / "results" / "benchmarks.json").write_text('{"version": 2}')
    line = assert_one_line(mmtrack("import-asv", "rooted", "--db", "r.db", cwd=tmp_path), 2, "project")
    assert line.endswith(str(Path("rooted") / "results"))


def test_import_unreadable_entries_each_fail_in_one_line(tmp_path):
    results = tmp_path / "results"
    write_result(results, "a" * 40, {"suite.T.time_a": 1e-3})
    bad = write_result(results, "b" * 40, {"suite.T.time_a": 1e-3})
    data = json.loads(bad.read_text())
    data["commit_hash"] = "a"
    bad.write_text(json.dumps(data))
    machine = results / "m1"
    (machine / "loop.json").symlink_to("loop.json")
    (machine / "dangling.json").symlink_to("nowhere.json")
    (machine / "folder.json").mkdir()
    os.mkfifo(machine / "fifo.json")
    proc = mmtrack("import-asv", str(results), "--db", "s.db", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 5, proc.stderr
    for name, why in (("loop.json", "loop"), ("dangling.json", "dangling"), ("folder.json", "folder"),
                      ("fifo.json", "FIFO"), (bad.name, "not a git sha")):
        assert any(name in line and why in line for line in lines), (name, proc.stderr)
    assert "imported 1 new run(s)" in proc.stdout and "5 file(s) failed, of 6" in proc.stdout


# --------------------------------------------------------------------------- untrusted names, end to end

EVIL = {
    "suite.T.time_newline\n## All clear\n<!--": 1e-3,
    "suite.T.time_`tick`": 1e-3,
    "suite.T.time_erase\x1b[2K": 1e-3,
    "suite.T.time_osc\x1b]0;pwned\x07": 1e-3,
}


def test_evil_names_in_compare_and_detect(tmp_path):
    results = tmp_path / "results"
    write_result(results, "a" * 40, EVIL)
    write_result(results, "b" * 40, {k: v * 3 for k, v in EVIL.items()})
    assert mmtrack("import-asv", str(results), "--db", "s.db", "--no-progress", cwd=tmp_path).returncode == 0
    table = mmtrack("compare", "aaaaaaa", "bbbbbbb", "--db", "s.db", "--history", "0", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\\x1b[2K" in table.stdout.replace("\n", "").replace(" ", "")
    md = mmtrack("compare", "aaaaaaa", "bbbbbbb", "--db", "s.db", "--format", "markdown", cwd=tmp_path).stdout
    assert "\x1b" not in md and not any(line.startswith("## All clear") for line in md.splitlines())
    rows = [line for line in md.splitlines() if line.startswith("| ") and "time_" in line]
    assert len(rows) == len(EVIL)
    raw = json.loads(mmtrack("compare", "aaaaaaa", "bbbbbbb", "--db", "s.db", "--format", "json", cwd=tmp_path).stdout)
    assert {r["benchmark"] for r in raw["rows"]} == set(EVIL)  # JSON carries the names unchanged
    listed = mmtrack("list", "benchmarks", "--db", "s.db", cwd=tmp_path)
    assert listed.returncode == 0 and "\x1b" not in listed.stdout


# --------------------------------------------------------------------------- mmtrack bench --fail-on


def test_bench_fail_on_regression_exits_1(tmp_path):
    from test_bench_history import SUITE, bench, git

    root = tmp_path / "proj"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "timed.py").write_text(SUITE)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "suite")
    assert bench(root, "--fail-on", "regression").returncode == 0  # nothing to compare with yet
    slow = bench(root, "--fail-on", "regression", TEST_SLOWDOWN="3")
    assert "1 regressed" in slow.stdout, slow.stdout[-3000:]
    assert slow.returncode == 1, slow.stderr


# --------------------------------------------------------------------------- mmtrack run's overall progress


def test_run_progress_from_asv_percentages():
    from mmtrack.asvbridge.asvrun import AsvProgress

    now = [0.0]
    progress = AsvProgress(clock=lambda: now[0], every_s=30.0)
    assert progress.update("· Creating environments") is None
    now[0] = 10.0
    assert progress.update("[ 5.00%] ··· suite.time_a   1.00ms") is None  # too soon, too little
    now[0] = 40.0
    note = progress.update("[20.00%] ··· suite.time_b   2.00ms")
    assert note is not None and "20%" in note and "2 min 40 s left" in note  # 40 s for 20%: 160 s to go
    assert progress.update("[20.00%] ···· (its second line)") is None
    now[0] = 45.0
    assert "50%" in (progress.update("[50.00%] ··· suite.time_c   1.00ms") or "")  # a quarter more: at once


def test_db_current_reads_and_db_upgrade_refuses_a_read_only_store(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    shutil.copy(OLD_STORE, folder / "old.db")
    run = read_only_runner(folder)
    current = run("db", "current", "--db", str(folder / "old.db"))
    assert current.returncode == 0 and "revision 0004" in current.stdout, current.stderr
    assert_one_line(run("db", "upgrade", "--db", str(folder / "old.db")), 2, "read-only")
    assert_one_line(run("publish", "-o", str(tmp_path / "site"), "--db", str(folder / "old.db")), 2,
                    "older than this mmtrack", "read-only")


@pytest.mark.parametrize("option, needle", [(("--confirm-rounds", "0"), "--confirm-rounds 0"),
                                            (("--confirm-budget", "-5"), "--confirm-budget -5"),
                                            (("--confirm-budget", "nan"), "--confirm-budget nan"),
                                            (("--confirm-max", "0"), "--confirm-max 0"),
                                            (("--round-alpha", "1.5"), "--round-alpha 1.5")])
def test_a_bad_confirm_knob_is_refused_before_anything_runs(tmp_path, option, needle):
    """Refused up front (no asv config is even looked for), not after the whole suite has run."""
    proc = mmtrack("run", "--confirm", *option, cwd=tmp_path)
    assert_one_line(proc, 2, needle)


@pytest.mark.parametrize("option", [("--round-alpha", "0.005"), ("--confirm-rounds", "3"), ("--confirm-budget", "10"),
                                    ("--confirm-max", "5"), ("--confirm-ambiguous",)])
def test_a_confirm_knob_without_confirm_is_refused(tmp_path, option):
    """They set what the --confirm rounds do: without --confirm they would do nothing (--confirm-rounds and
    --confirm-budget were taken silently)."""
    assert_one_line(mmtrack("run", *option, cwd=tmp_path), 2, " ".join(option), "add --confirm")


@pytest.mark.parametrize("option, needle", [(("--warm-up", "-1"), "warm_up must be a finite number of seconds above 0"),
                                            (("--duration", "inf"), "duration must be a finite number of seconds above 0"),
                                            (("--warm-up", "nan"), "got nan"),
                                            (("--cooldown", "-1"), "cooldown must be a finite number of seconds, 0 or more"),
                                            (("--min-samples", "50", "--max-samples", "10"), "got 50 and 10")])
def test_a_bad_bench_knob_is_refused_before_anything_runs(tmp_path, option, needle):
    """One line, exit 2, before any case runs: an infinite duration failed every case with an OverflowError, and a
    negative cooldown was taken silently."""
    from test_bench_history import SUITE

    (tmp_path / "timed.py").write_text(SUITE)
    proc = mmtrack("bench", str(tmp_path / "timed.py"), "--no-save", *option, cwd=tmp_path)
    assert_one_line(proc, 2, "bad run option", needle)
    assert not proc.stdout.strip()  # no case ran


def test_continuous_max_rounds_is_refused_before_the_project_is_read(tmp_path):
    """The knobs first: from a folder without asv.conf.json, --max-rounds is the error, not the missing config."""
    assert_one_line(mmtrack("continuous", "HEAD~1", "--max-rounds", "-1", cwd=tmp_path), 2,
                    "--max-rounds -1: below --rounds 6")


@pytest.mark.parametrize("args, needle", [(["bench", "--processes", "0"], "'--processes': 0 is not in the range"),
                                          (["compare"], "Missing argument 'A'"),
                                          (["detect", "--method", "foo"], "'foo' is not one of 'rankseg'"),
                                          (["nosuch"], "No such command 'nosuch'")])
def test_a_usage_mistake_that_click_catches_is_one_line_too(tmp_path, args, needle):
    """click's own checks (ranges, choices, arguments) answer as ours do: one line naming the help to read."""
    line = assert_one_line(mmtrack(*args, cwd=tmp_path), 2, needle)
    assert line.endswith(" --help") and "; see " in line


@pytest.mark.parametrize("args", [["bench", "timed.py", "-b", "("], ["run", "-b", "("], ["continuous", "HEAD~1", "-b", "("],
                                  ["bisect", "a", "b", "-b", "("], ["detect", "-b", "("], ["list", "benchmarks", "-b", "("],
                                  ["publish", "-o", "site", "-b", "("]])
def test_a_bad_regex_is_one_line_in_every_verb(store, tmp_path, args):
    """The same line wherever a regex is taken; `bench -k (` was a traceback, and `run -b (` reached asv."""
    from test_bench_history import SUITE

    (tmp_path / "timed.py").write_text(SUITE)
    line = assert_one_line(mmtrack(*args, cwd=tmp_path, env=cli_env(HOME=str(tmp_path), MMTRACK_DB=str(store))), 2,
                           "'(' is not a regular expression")
    assert line.endswith("give a Python regex, e.g. 'time_.*'")
