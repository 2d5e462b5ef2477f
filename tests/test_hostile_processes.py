"""Hostile attacks on mmtrack's commands as processes (issue 60): `run` on a `track_` that returns a list,
`continuous` interrupted or hung by a suite's thread, and the messages the verbs give. Real asv, real git."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli
from test_run_acceptance import asv_env, commit_all, make_repo

LIST_SUITE = '''\
def track_small_list():
    return [1, 2, 3]


def track_huge_list():
    return list(range(2_000_000))


def track_number():
    return 42
'''


@pytest.fixture(scope="module")
def list_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lists")
    home = root / "home"
    home.mkdir()
    env = asv_env(home)
    repo = make_repo(root, env)
    (repo / "benchmarks" / "lists.py").write_text(LIST_SUITE)
    sha = commit_all(repo, env, "track_ benchmarks that return lists", 1)
    proc = run_cli("run", "--quick", cwd=repo, env=env)
    return {"repo": repo, "env": env, "sha": sha, "proc": proc}


@pytest.mark.slow
def test_run_with_list_returning_track_fails_that_case_alone_and_saves_the_run(list_run):
    proc = list_run["proc"]
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == 2, out[-3000:]  # a failed benchmark (house rule); the run itself is saved
    assert len(out) < 200_000, len(out)  # asv's 10 MB progress line never reaches the terminal whole
    failed = [line for line in out.splitlines() if line.startswith("failed ")]
    assert any("track_small_list" in line and "list of 3" in line for line in failed), failed
    assert any("track_huge_list" in line and "list of 2000000" in line for line in failed), failed
    from test_run_acceptance import engine_cases

    cases = engine_cases(list_run["repo"], list_run["sha"])
    statuses = {name.rsplit(".", 1)[-1]: case["status"] for (name, _), case in cases.items()}
    assert statuses["track_number"] == "ok", cases
    # never stored as a number: the import leaves a list value out (or fails it)
    assert statuses.get("track_small_list") in (None, "failed") and statuses.get("track_huge_list") in (None, "failed")


def test_list_without_argument_names_its_choices_on_one_line(tmp_path):
    proc = run_cli("list", cwd=tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "\\n" not in err and "\\t" not in err, err
    assert "Choose from: runs, commits, machines, benchmarks" in err, err


def test_a_failed_case_of_an_ab_round_advises_a_command_that_runs():
    """continuous and bisect take no asv options: their advice is asv's own command, not `-- -e`."""
    from mmtrack.asvbridge.asvrun import RUN_ERROR_ADVICE, asv_error_advice

    advice = asv_error_advice("a" * 40)("bench.Suite.time_x")
    assert "-- -e" not in advice and "asv run --quick -e -b '^bench\\.Suite\\.time_x$' aaaaaaaaaaaa^!" in advice
    assert "-- -e" in RUN_ERROR_ADVICE  # mmtrack run passes what follows -- to asv run


# -- continuous interrupted, and a suite whose import starts a thread ------------------------------------------------

AB_SUITE = "import abpkg\n\n\ndef time_crunch():\n    abpkg.crunch()\n"
THREAD_SUITE = ("import threading\nimport time\n\n"
                "threading.Thread(target=time.sleep, args=(3600,), name='suite-thread').start()  # not a daemon\n\n\n"
                "def time_nothing():\n    pass\n")


def _ab_project(root: Path, suite: dict[str, str]) -> dict:
    from test_ab import PKG, commit, package_project

    (root / "home").mkdir(parents=True)
    (root / "tmp").mkdir()
    env = asv_env(root / "home", MMTRACK_DB=f"sqlite:///{root / 'store.db'}", TMPDIR=str(root / "tmp"))
    repo = package_project(root, env, "abpkg", suite)
    shas = []
    for work in (20000, 20001):
        (repo / "abpkg" / "__init__.py").write_text(PKG.format(work=work))
        shas.append(commit(repo, env, "c", day=len(shas) + 1))
    return {"repo": repo, "env": env, "shas": shas, "tmp": root / "tmp"}


def _processes_under(path: Path) -> list[str]:
    """Command lines of live processes that name ``path`` (a leftover round server, discovery or benchmark)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmd:
            found.append(f"{proc.name}: {cmd[:200]}")
    return found


def _wait_until_gone(path: Path, seconds: float = 10) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := _processes_under(path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture(scope="module")
def ab_project(tmp_path_factory):
    return _ab_project(tmp_path_factory.mktemp("abint"), {"bench_ab.py": AB_SUITE})


def _ctrl_c_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGTERM])
def test_continuous_interrupted_in_its_rounds_ends_in_one_line_and_leaves_nothing_behind(ab_project, signum):
    p = ab_project
    before = set(p["tmp"].iterdir())
    proc = subprocess.Popen([sys.executable, "-m", "mmtrack", "continuous", *p["shas"], "--rounds", "6"],
                            cwd=p["repo"], env=p["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_as_from_a_terminal)
    seen = ""
    deadline = time.monotonic() + 240
    while "round 2 of" not in seen and time.monotonic() < deadline:  # the builds done, in the in-process rounds
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
    time.sleep(0.3)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    err = seen + err
    assert "Traceback" not in out + err, err[-3000:]
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), err[-3000:]
    assert "round 2 of" in seen, seen
    assert not _wait_until_gone(p["repo"]), _processes_under(p["repo"])
    assert not [q.name for q in set(p["tmp"].iterdir()) - before if q.name.startswith(("asv-", "tmp", "mmtrack-"))]


@pytest.mark.slow
def test_continuous_survives_a_suite_that_starts_a_thread_at_import(tmp_path):
    p = _ab_project(tmp_path, {"bench_ab.py": AB_SUITE, "bench_thread.py": THREAD_SUITE})
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mmtrack", "continuous", *p["shas"], "--rounds", "2"],
                          cwd=p["repo"], env=p["env"], capture_output=True, text=True, timeout=280)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "bench_thread.time_nothing" in proc.stdout and "bench_ab.time_crunch" in proc.stdout, proc.stdout
    assert time.monotonic() - started < 250
    assert not _wait_until_gone(p["repo"]), _processes_under(p["repo"])


def test_asvs_output_lines_are_bounded_and_non_numbers_are_named():
    from mmtrack.asvbridge.asvrun import bounded_line, not_a_number

    huge = "[ 50.00%] ··· lists.track_huge_list  " + repr(list(range(2_000_000))) + "\n"
    shown = bounded_line(huge)
    assert len(shown) < 2100 and shown.endswith("characters left out)\n") and shown.startswith("[ 50.00%]")
    assert bounded_line("short\n") == "short\n"
    assert not_a_number(3) is None and not_a_number(2.5) is None
    assert "a list of 2 values" in not_a_number([1, 2])
    assert "a dict" in not_a_number({"a": 1}) and "a str" in not_a_number("12") and "a bool" in not_a_number(True)


@pytest.mark.slow
def test_continuous_killed_outright_leaves_no_round_server_or_benchmark_behind(ab_project):
    """SIGKILL gives mmtrack no chance to close asv's server: the server and its forks end with it all the same."""
    p = ab_project
    proc = subprocess.Popen([sys.executable, "-m", "mmtrack", "continuous", *p["shas"], "--rounds", "6"],
                            cwd=p["repo"], env=p["env"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = ""
    deadline = time.monotonic() + 240
    while "round 2 of" not in seen and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
    time.sleep(0.5)
    proc.kill()
    proc.wait(timeout=60)
    assert "round 2 of" in seen, seen
    assert not _wait_until_gone(p["repo"]), _processes_under(p["repo"])


SLOW_SERVER_START = '''\
import os, sys, time
if sys.argv[0].endswith("round_server.py") and "run_server" in sys.argv and os.environ.get("SLOW_SERVER_MARK"):
    open(os.environ["SLOW_SERVER_MARK"], "a").close()
    time.sleep(8)  # a loaded machine's slow interpreter start, stretched: asv waits for the server's socket
'''


@pytest.mark.slow
def test_continuous_terminated_while_a_round_server_starts_ends_at_once_and_leaves_no_server(ab_project, tmp_path):
    """SIGTERM while asv waits for a round's fork server to open its socket: the server was started but asv has no
    handle to close it yet. mmtrack must still end the server, and not wait on asv's reader of its output."""
    p = ab_project
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW_SERVER_START)
    mark = tmp_path / "server-starting"
    env = {**p["env"], "SLOW_SERVER_MARK": str(mark),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), p["env"].get("PYTHONPATH", "")])}
    with open(tmp_path / "stderr", "w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "mmtrack", "continuous", *p["shas"], "--rounds", "2"],
                                cwd=p["repo"], env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        deadline = time.monotonic() + 240
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), (tmp_path / "stderr").read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"still running 60 s after SIGTERM: {_processes_under(p['repo'])}") from None
        said = (tmp_path / "stderr").read_text()
    assert time.monotonic() - started < 6, said[-3000:]  # not after the server's slow start ended
    assert proc.returncode == 143 and "Traceback" not in out + said, said[-3000:]
    assert said.strip().splitlines()[-1].startswith("terminated (SIGTERM)"), said[-3000:]
    assert not _wait_until_gone(p["repo"]), _processes_under(p["repo"])
