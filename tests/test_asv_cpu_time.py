"""CPU time beside asv's wall clock for ``time_`` benchmarks (asvbridge/round_server.py, asvbridge/cpu_times.py):
each kept sample's CPU time, read around the span asv times, and a verdict on CPU time where the wall clock waited.

The end-to-end test is the issue's: two `mmtrack run`s of identical code on a real git repository under the real asv,
the second beside two busy processes (one pinned to each of two CPUs, so that the wall clock waits), read unchanged
on CPU time, and the time row says that the wall clock waited.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from doccheck import command_blocks
from test_run_acceptance import MACHINE, asv_env, commit_all, git, make_repo

from mmtrack.asvbridge import cpu_times
from mmtrack.measure import contention

DRIVE_ASV_RUNNER = '''
import json, sys, time
from mmtrack.asvbridge import round_server
round_server.record_cpu_times(sys.argv[1])
from asv_runner.benchmarks.time import TimeBenchmark

def time_loop(n):
    total = 0
    for i in range(n):
        total += i

def time_sleep():
    time.sleep(0.003)

class Own:
    timer = time.process_time  # a timer of the benchmark's own: asv's samples are not wall time
    def time_own(self):
        sum(range(1000))

kept = {}
for name, func, sources, params in [("suite.time_loop", time_loop, [time_loop], [[20000]]),
                                    ("suite.time_sleep", time_sleep, [time_sleep], None),
                                    ("suite.Own.time_own", Own().time_own, [Own.time_own, Own], None)]:
    if params:
        time_loop.params = params
    bench = TimeBenchmark(name, func, sources)
    if params:
        bench.set_param_idx(0)
    bench.do_setup()
    result = bench.run(*bench._current_params)
    kept[name] = len(result["samples"])
print(json.dumps(kept))
'''


def test_each_kept_sample_of_asvs_own_timing_gets_its_cpu_time(tmp_path):
    """asv_runner's real timing loop, patched as a benchmark process is: as many CPU times as asv kept samples; a
    CPU-bound op reads its wall/CPU ratio, one that sleeps blocks (no ratio), one with its own timer is left alone."""
    folder, driver = tmp_path / "cpu", tmp_path / "drive.py"
    driver.write_text(DRIVE_ASV_RUNNER)  # a file: asv_runner reads each benchmark's source
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(driver), str(folder)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    kept = json.loads(done.stdout)
    found = cpu_times.read(folder)
    assert set(found) == {("suite.time_loop", 0), ("suite.time_sleep", 0)}  # not the benchmark's own timer
    loop, sleep = found[("suite.time_loop", 0)], found[("suite.time_sleep", 0)]
    assert len(loop["cpu"]) == kept["suite.time_loop"] and len(sleep["cpu"]) == kept["suite.time_sleep"]
    loop_metrics = {m.name: m for m in cpu_times.metrics(loop)}
    assert set(loop_metrics) == {"task-clock", contention.NAME}
    # CPU time per op within the wall time per op (clock reads apart), whatever the load
    assert loop_metrics["task-clock"].median * 1e-9 <= max(loop["wall"]) * 1.05
    assert loop_metrics[contention.NAME].median >= contention.MANY_CPUS_RATIO
    sleep_metrics = {m.name: m for m in cpu_times.metrics(sleep)}
    assert set(sleep_metrics) == {"task-clock"}  # it blocked: its wall clock beyond CPU time is not waiting for a CPU
    assert min(sleep["blocked"]) >= 1
    assert sleep_metrics["task-clock"].median * 1e-9 < 0.5 * min(sleep["wall"])


def test_a_record_that_did_not_come_whole_is_skipped(tmp_path):
    (tmp_path / "a.json").write_text('{"name": "suite.time_x", "param_index": 0, "wall": [1e-3], "cpu": [')
    (tmp_path / "b.json").write_text(json.dumps({"name": "suite.time_x", "param_index": 1, "wall": [1e-3, 2e-3],
                                                 "cpu": [1e-3], "blocked": [0, 0]}))
    assert cpu_times.read(tmp_path) == {}


SUITE = '''
class Work:
    params = [60000]

    def time_loop(self, n):
        total = 0
        for i in range(n):
            total += i
        return total

    def mem_list(self, n):
        return [0] * n
'''

BUSY = "while True: pass"


@contextlib.contextmanager
def beside_two_busy_processes():
    """Two busy loops, each pinned to one of two CPUs, and this process (so what it starts) on those two: wherever
    the benchmark runs, it shares its CPU (unpinned, the scheduler once put both loops on one CPU and left the other
    to the benchmark)."""
    everywhere = os.sched_getaffinity(0)
    cpus = sorted(everywhere)[:2] * (2 // min(2, len(everywhere)))  # one CPU: both loops on it
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in cpus]
    try:
        for process, cpu in zip(busy, cpus):
            os.sched_setaffinity(process.pid, {cpu})
        os.sched_setaffinity(0, set(cpus))
        yield
    finally:
        os.sched_setaffinity(0, everywhere)
        for process in busy:
            process.kill()
            process.wait()


GUIDE = REPO / "docs" / "guide" / "ci-per-commit.md"
MARKER = "run by tests/test_asv_cpu_time.py"


def guide_commands() -> list[list[str]]:
    """The commands docs/guide/ci-per-commit.md shows for this, without the leading ``mmtrack``."""
    lines = [c.line for block in command_blocks(GUIDE) if block.marker == MARKER for c in block.commands()]
    assert [line.split()[:2] for line in lines] == [["mmtrack", "run"], ["mmtrack", "compare"]]
    return [shlex.split(line)[1:] for line in lines]


def compare_rows(repo: Path, env: dict[str, str]) -> dict[str, dict]:
    done = run_cli("compare", "HEAD~1", "HEAD", "--format", "json", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    return {r["metric"]["name"]: r for r in json.loads(done.stdout)["rows"] if r["benchmark"] == "bench.Work.time_loop"}


def aa_pair(root: Path) -> tuple[Path, dict[str, str], dict[str, dict]]:
    """Two commits of identical code, each measured by the guide's `mmtrack run`, the second beside two busy
    processes; the guide's compare runs, and the rows of the time benchmark."""
    home = root / "home"
    home.mkdir(parents=True)
    env = asv_env(home)
    repo = make_repo(root, env)
    (repo / "benchmarks" / "bench.py").write_text(SUITE)
    commit_all(repo, env, "suite", 1)
    run, compare = guide_commands()
    first = run_cli(*run, cwd=repo, env=env, timeout=600)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    commit_all(repo, env, "no code change", 2)  # identical code, a commit of its own
    with beside_two_busy_processes():
        second = run_cli(*run, cwd=repo, env=env, timeout=600)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert "2 benchmark cases: 2 ok, 0 failed" in second.stdout  # asv's memory type runs as before
    assert "1 of 1 time benchmarks waited for a CPU" in " ".join(second.stdout.split())
    shown = run_cli(*compare, cwd=repo, env=env)
    assert shown.returncode == 0 and "time_per_op" in shown.stdout and "task-clock" in shown.stdout
    return repo, env, compare_rows(repo, env)


@pytest.mark.slow
def test_an_aa_run_pair_beside_two_busy_processes_is_judged_on_cpu_time_not_on_the_wait(tmp_path):
    """The issue's pair, on what mmtrack controls: the busy run's time row says its wall clock waited and takes CPU
    time's verdict, with the wall clock's numbers still shown. Whether CPU time then reads unchanged is this VM's
    to say, not mmtrack's: its speed per CPU second moves by up to x1.7 within minutes, and a pair read x0.87-0.91
    three times running in CI (docs/design/contention.md), so a move there is left to the A/B verbs."""
    repo, env, rows = aa_pair(tmp_path / "pair")
    wall, cpu = rows["time_per_op"], rows["task-clock"]
    assert "wall clock waited for a CPU" in wall["note"] and "judged on CPU time" in wall["note"], wall["note"]
    assert wall["verdict"] == cpu["verdict"] and wall["ratio"] == pytest.approx(cpu["ratio"])
    assert wall["after"]["median"] > 0 and wall["before"]["median"] > 0  # the wall clock's numbers stay shown
    assert contention.NAME in rows  # the reading it was judged by, stored beside
    # Two runs never flag a move as more than suspected: unchanged or ambiguous (CI read ambiguous at x0.76 once).
    assert cpu["state"] != "confirmed", cpu
    assert cpu["verdict"] in ("unchanged", "ambiguous") or cpu["state"] == "suspected", cpu

    # asv's own results stay asv's: its reader loads both commits' files with their samples
    from asv.results import Results

    files = sorted((repo / ".asv" / "results" / MACHINE).glob("*-existing-*.json"))
    assert len(files) == 2
    for path in files:
        res = Results.load(str(path))
        assert res.get_result_samples("bench.Work.time_loop", res.get_result_params("bench.Work.time_loop"))[0]
    assert git(repo, env, "status", "--porcelain") == ""


CPU_SUITE = '''
import cpupkg


class Work:
    def time_work(self):
        cpupkg.work()
'''


@pytest.mark.slow
def test_ab_rounds_beside_busy_processes_judge_a_case_that_waited_on_its_cpu_time(tmp_path, monkeypatch):
    """The rounds of `continuous`, `run --confirm` and `bisect`: an A/A pair beside busy processes records each
    round's CPU time, and the rule that decides the wall clock decides CPU time, whose verdict the time row takes."""
    from test_ab import commit, package_project

    from mmtrack.ab import interleave

    (tmp_path / "home").mkdir()
    env = asv_env(tmp_path / "home")
    repo = package_project(tmp_path, env, "cpupkg", {"bench_cpu.py": CPU_SUITE})
    # about 15 ms a call: longer than a scheduler time slice, so a busy neighbour preempts every sample
    (repo / "cpupkg" / "__init__.py").write_text("def work():\n    return sum(i * i for i in range(300000))\n")
    sha = commit(repo, env, "base")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    plan, top = interleave.make_plan(repo, None, MACHINE, None, 3)
    base, head = interleave.build_side(plan, top, sha, "A"), interleave.build_side(plan, top, sha, "B")
    with beside_two_busy_processes():
        result = interleave.run_interleaved(plan, base, head)
    rows = {r.metric.name: r for r in interleave.judge(result).rows if r.benchmark == "bench_cpu.Work.time_work"}
    wall, cpu = rows["time_per_op"], rows["task-clock"]
    assert cpu.test == "rounds" and cpu.verdict == "unchanged"
    assert len(result.base.cases[("bench_cpu.Work.time_work", "{}")].round_bests[cpu.metric]) == 3
    assert result.head.measurements()  # what the store gets: asv's wall samples and the CPU readings, pooled
    assert {m.metric.name for m in result.head.measurements()} == {"time_per_op", "task-clock", contention.NAME}
    assert wall.verdict == "unchanged" and "wall clock waited for a CPU" in wall.note
    assert "judged on CPU time" in wall.note
    # more rounds (settle) bound CPU time's difference for the waited case; its CPU readings keep no case open
    case = ("bench_cpu.Work.time_work", "{}")
    assert interleave.judged_metric(result, case, wall.metric) == cpu.metric
    assert interleave.beside_the_wall_clock(cpu, result) and not interleave.beside_the_wall_clock(wall, result)


def test_in_a_run_that_waited_asvs_memory_and_track_values_keep_their_verdict_and_timings_without_cpu_time_do_not():
    """Another case waited for a CPU: a blocking time_ benchmark (no ratio) that moved reads ambiguous, a mem_ size and
    a track_ count that moved keep their verdicts (no clock for the machine to move)."""
    from mmtrack.analysis.compare import compare_measurements
    from mmtrack.measure.metrics import MetricSummary
    from mmtrack.results import Measurement
    from mmtrack.vocabulary import Direction

    def side(scale: float, ratio: float) -> list[Measurement]:
        jitter = [1 + 0.002 * (i % 5) for i in range(20)]
        waited = [("suite.time_loop", MetricSummary.from_values("timing", "time_per_op", "s", [1e-3 * j for j in jitter])),
                  ("suite.time_loop", MetricSummary.from_values("counters", "task-clock", "task-clock/op",
                                                                [1e6 * j for j in jitter])),
                  ("suite.time_loop", MetricSummary.from_values(contention.SECTION, contention.NAME, contention.UNIT,
                                                                [ratio * j for j in jitter],
                                                                direction=Direction.NEUTRAL))]
        moved = [("suite.time_sleep", MetricSummary.from_values("timing", "time_per_op", "s",
                                                                [2e-3 * scale * j for j in jitter])),
                 ("suite.mem_list", MetricSummary.from_values("memory", "mem", "bytes", [8e3 * scale])),
                 ("suite.track_count", MetricSummary.from_values("track", "value", "count", [10 * scale]))]
        return [Measurement.from_summary(name, {}, s, version="v1") for name, s in waited + moved]

    rows = {r.benchmark: r for r in compare_measurements(side(1.0, 1.0), side(2.0, 3.0)).rows
            if r.metric.section != "counters" and r.metric.name != contention.NAME}
    assert rows["suite.time_loop"].verdict == "unchanged" and "judged on CPU time" in rows["suite.time_loop"].note
    assert rows["suite.time_sleep"].verdict == "ambiguous" and "waited for a CPU" in rows["suite.time_sleep"].note
    assert rows["suite.mem_list"].verdict == "regressed"
    assert rows["suite.track_count"].verdict == "regressed"
