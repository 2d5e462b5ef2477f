"""Inputs from outside never reach a terminal raw, and every input file gets the same checks (issue 47).

A store whose metric names and units carry escape sequences (ESC ``[2J``, OSC 8 links, OSC 0 titles,
bidi overrides), read by every command with the real CLI; asv results folders and configs that are
links, FIFOs or JSON of the wrong shape; submodules in an A/B build; a benchmark that fails on one
side of a bisect; a slow save with no other writer; a 5 MB project name.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import cli_env, run_cli
from mmtrack.errors import UserError

EVIL_UNIT = "B\x1b[2J\x1b]8;;http://evil.example/\x07"
EVIL_NAME = "m\u202eevil\x1b]0;pwned\x07"
URL_UNIT = "http://evil.example/u"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")  # what must never reach a terminal as such


def _assert_no_raw_controls(proc: subprocess.CompletedProcess, what: str) -> None:
    for stream in (proc.stdout, proc.stderr):
        leaked = [repr(c) for c in RAW if c in stream]
        assert not leaked, (what, leaked, stream[-1500:])


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory) -> Path:
    """12 commits of a series named and united by the benchmark's author, with a step at commit 8."""
    from mmtrack.measure.metrics import Direction, MetricSummary
    from mmtrack.results import CommitInfo
    from mmtrack.store.db import open_store
    from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run

    folder = tmp_path_factory.mktemp("hostile")
    db = folder / "store.db"
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    with open_store(f"sqlite:///{db}") as store:
        for i in range(12):
            level = 1.0 if i < 8 else 2.0
            metrics = [MetricSummary.from_values("custom", name, unit, [level * (1 + k / 1000) for k in range(10)],
                                                 direction=Direction.LOWER)
                       for name, unit in ((EVIL_NAME, EVIL_UNIT), ("plain", URL_UNIT))]
            commit = CommitInfo(sha=f"{i + 1:040x}", date=base + timedelta(hours=i), message=f"c{i}")
            run = RunRecord(machine="box\x1b[31m", environment="env\u202e", commit=commit,
                            started_at=base + timedelta(hours=i), suite="s")
            record_engine_run(store, run, [EngineCaseRecord("s.T.track_x", {"p": "'\u202e'"}, metrics=metrics)])
    return db


COMMANDS = {
    "compare table": ["compare", f"{11:040x}", f"{12:040x}"],
    "compare markdown": ["compare", f"{11:040x}", f"{12:040x}", "--format", "markdown"],
    "compare json": ["compare", f"{11:040x}", f"{12:040x}", "--format", "json"],
    "detect table": ["detect", "--dry-run", "--all", "--no-progress"],
    "detect json": ["detect", "--dry-run", "--format", "json", "--no-progress"],
    "list runs": ["list", "runs"],
    "list commits": ["list", "commits"],
    "list machines": ["list", "machines"],
    "list benchmarks": ["list", "benchmarks"],
    "list benchmarks json": ["list", "benchmarks", "--format", "json"],
    "publish": ["publish", "-o", "site", "--no-progress"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_command_prints_a_control_character_from_the_store(hostile_store, command, tmp_path):
    proc = run_cli(*COMMANDS[command], "--db", str(hostile_store), cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    _assert_no_raw_controls(proc, command)
    if command.endswith("json"):
        json.loads(proc.stdout)  # the escapes at the edge keep JSON valid
    if command == "compare table":
        assert "\\x1b[2J" in proc.stdout.replace("\n", "").replace(" ", "")  # shown, not obeyed


def test_a_unit_in_pr_markdown_stays_in_a_code_span(hostile_store, tmp_path):
    md = run_cli(*COMMANDS["compare markdown"], "--db", str(hostile_store), cwd=tmp_path).stdout
    assert URL_UNIT in md
    outside_code = re.sub(r"(`+).*?\1", "", md)
    assert "http://evil" not in outside_code, md


def test_import_asv_error_lines_show_file_and_folder_names_escaped(tmp_path):
    results = tmp_path / "results"
    machine = results / "m\x1b]0;pwned\x07"
    machine.mkdir(parents=True)
    (machine / "bad\x1b[2J.json").write_text("{not json")
    proc = run_cli("import-asv", str(results), "--db", str(tmp_path / "s.db"), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    _assert_no_raw_controls(proc, "import-asv")
    assert "bad\\x1b[2J.json" in proc.stderr or "bad\\u001b[2J.json" in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", ["loop", "dangling", "fifo"])
def test_a_benchmarks_json_that_cannot_be_read_is_reported(tmp_path, kind):
    from test_user_errors import write_result

    results = tmp_path / "results"
    write_result(results, "a" * 40, {"suite.T.track_a": 3.0})
    bj = results / "benchmarks.json"
    if kind == "loop":
        bj.symlink_to("benchmarks.json")
    elif kind == "dangling":
        bj.symlink_to("nowhere.json")
    else:
        os.mkfifo(bj)
    proc = run_cli("import-asv", str(results), "--db", str(tmp_path / "s.db"), "--no-progress", cwd=tmp_path,
                   timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    why = {"loop": "symbolic link loop", "dangling": "dangling symbolic link", "fifo": "a FIFO"}[kind]
    lines = [ln for ln in proc.stderr.splitlines() if "benchmarks.json" in ln]
    assert len(lines) == 1 and why in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert "imported 1 new run(s)" in proc.stdout


@pytest.mark.parametrize("command", ["publish", "update"])
@pytest.mark.parametrize("config", ["[1]", "fifo"])
def test_an_asv_config_that_is_not_an_object_or_not_a_file_is_one_line(tmp_path, command, config):
    from test_user_errors import assert_one_line, write_result

    results = tmp_path / "results"
    write_result(results, "a" * 40, {"suite.T.time_a": 1e-3})
    conf = tmp_path / "conf.json"
    if config == "fifo":
        os.mkfifo(conf)
    else:
        conf.write_text(config)
    args = ["publish", "-o", "site"] if command == "publish" else ["update", str(results), "-o", "site"]
    if command == "publish":
        assert run_cli("import-asv", str(results), "--db", "s.db", "--no-progress", cwd=tmp_path).returncode == 0
    proc = run_cli(*args, "--db", "s.db", "--config", str(conf), cwd=tmp_path, timeout=60)
    assert_one_line(proc, 2, "conf.json")
    assert ("a FIFO" if config == "fifo" else "must be a JSON object") in proc.stderr


def test_a_huge_project_name_is_capped_in_the_pages(tmp_path):
    from test_user_errors import write_result

    results = tmp_path / "results"
    write_result(results, "a" * 40, {"suite.T.time_a": 1e-3})
    (tmp_path / "asv.conf.json").write_text(json.dumps({"version": 1, "project": "P" * 1_000_000}))
    assert run_cli("import-asv", str(results), "--db", "s.db", "--no-progress", cwd=tmp_path).returncode == 0
    proc = run_cli("publish", "-o", "site", "--db", "s.db", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    assert "P" * 200 in index and "P" * 1000 not in index
    total = sum(f.stat().st_size for f in (tmp_path / "site").rglob("*") if f.is_file())
    assert total < 20_000_000


# -- A/B builds with submodules --------------------------------------------------------------------------
def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def with_submodule(tmp_path) -> tuple[Path, str]:
    sub = tmp_path / "sub"
    sub.mkdir()
    _git(sub, "init", "-q", "-b", "main")
    (sub / "helper.py").write_text("VALUE = 42\n")
    _git(sub, "add", "-A")
    _git(sub, "commit", "-q", "-m", "sub")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "bench.py").write_text("from lib.helper import VALUE\n")
    _git(repo, "submodule", "add", "-q", str(sub), "lib")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "with a submodule")
    return repo, _git(repo, "rev-parse", "HEAD")


def test_an_ab_build_includes_the_submodules(with_submodule, tmp_path):
    from mmtrack.ab.envs import build_env

    repo, sha = with_submodule
    env = build_env(repo, sha, tmp_path / "cache")
    assert (env.path / "src" / "lib" / "helper.py").read_text() == "VALUE = 42\n"


def test_a_submodule_that_is_not_checked_out_is_refused_before_the_build(with_submodule, tmp_path):
    from mmtrack.ab.envs import build_env

    repo, sha = with_submodule
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(repo), str(clone))  # without --recurse-submodules
    cache = tmp_path / "cache"
    with pytest.raises(UserError, match=r"uses submodule lib at [0-9a-f]{12}, which is not checked out here; run "
                                        r"`git submodule update --init --recursive`"):
        build_env(clone, sha, cache)
    assert not list(cache.glob("*/built.json")) and not list(cache.glob("*"))  # nothing cached as built


# -- bisect ------------------------------------------------------------------------------------------------
def test_bisect_names_the_side_where_the_benchmark_failed(tmp_path):
    from mmtrack.ab.bisect import Bisector
    from mmtrack.ab.envs import CommitEnv
    from mmtrack.ab.interleave import ABPlan, ABResult, PooledCase, Side
    from mmtrack.measure.metrics import Direction
    from mmtrack.results import CommitInfo, MetricKey

    def side(label: str, case: PooledCase) -> Side:
        env = CommitEnv(label * 40, tmp_path, tmp_path / "python", 0.0, cached=True)
        return Side(label, CommitInfo(sha=("a" if label == "A" else "b") * 40), env, {("s.T.time_x", "{}"): case})

    failed = PooledCase("s.T.time_x", {}, status="failed", message="ZeroDivisionError")
    ok = PooledCase("s.T.time_x", {}, rounds=4)
    key = MetricKey("timing", "time_per_op", "s")
    ok.round_bests[key], ok.directions[key] = [1e-3, 1.1e-3, 0.9e-3, 1e-3], Direction.LOWER
    result = ABResult(side("A", failed), side("B", ok), 4, ["A", "B"] * 4, "m", datetime.now(timezone.utc))
    plan = ABPlan(project=tmp_path, config_path=tmp_path / "asv.conf.json", config={}, machine="m")
    with pytest.raises(UserError) as caught:
        Bisector(plan, tmp_path, "time_per_op").pick_case(result)
    message = str(caught.value)
    assert "s.T.time_x failed on the GOOD side" in message and "no metric" not in message, message


# -- the lock notice ---------------------------------------------------------------------------------------
def test_a_slow_save_without_another_writer_blames_no_writer(tmp_path, monkeypatch):
    from rich.console import Console

    from mmtrack.benchruns import history
    from mmtrack.cli_events import bench_events
    from mmtrack.commands import bench as bench_command
    from mmtrack.commands import bench_save
    from test_bench_isolation import GOOD, HEADER
    from test_hostile_suite import make_suite

    project = make_suite(tmp_path / "proj", {"suite.py": HEADER + GOOD.format(name="A")})
    monkeypatch.setattr(bench_save, "LOCK_NOTICE_S", 0.2)
    real_save = history.save_run

    def slow_save(*args, **kwargs):
        time.sleep(1.0)  # a loaded machine, a first migration: slow, and no other writer anywhere
        return real_save(*args, **kwargs)

    monkeypatch.setattr(history, "save_run", slow_save)
    request = bench_command.BenchRequest(
        path=project / "benchmarks", quick=True, compare="none", db=f"sqlite:///{project / 's.db'}",
        overrides={"min_samples": 5, "max_samples": 8, "pin_cpu": False},
    )
    monkeypatch.chdir(project)
    out = io.StringIO()
    assert bench_command.run_bench(request, bench_events(Console(file=out, width=200))).exit_code == 0
    assert "saved as run #1" in out.getvalue()
    assert "another writer" not in out.getvalue(), out.getvalue()


HOSTILE_SUITE = '''
import os

import mmtrack

LEVEL = float(os.environ.get("TEST_LEVEL", "1"))


class T:
    @mmtrack.bench_sample(chunk_size=1)
    def track_units(self, ctx, chunk_size, chunk_num):
        value = LEVEL * (1 + chunk_num % 3 / 100)
        metric = mmtrack.MetricValue("m\\u202e", value, "B\\x1b[2J\\x1b]0;t\\x07", direction=mmtrack.Direction.LOWER)
        return mmtrack.BenchSampleResult(1).push_metric(metric)
'''


def test_bench_and_its_end_of_run_comparison_print_no_control_character(tmp_path):
    from test_bench_isolation import FAST
    from test_hostile_suite import make_suite

    project = make_suite(tmp_path / "proj", {"suite.py": HOSTILE_SUITE})
    fast = [a for a in FAST if a not in ("--compare", "none")]
    first = run_cli("bench", "benchmarks", *fast, cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    second = run_cli("bench", "benchmarks", *fast, cwd=project, env=cli_env(TEST_LEVEL="3"))  # the metric triples
    assert second.returncode in (0, 1) and "regression analysis against run #1" in second.stdout, second.stdout
    assert "1 regressed" in second.stdout, second.stdout[-2000:]
    for proc in (first, second):
        _assert_no_raw_controls(proc, "bench")
    assert "\\x1b[2J" in second.stdout.replace("\n", "").replace(" ", "")
