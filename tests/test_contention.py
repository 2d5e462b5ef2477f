"""Contention: CPU time per op beside the wall clock, "waited for a CPU", and verdicts on CPU time where the
wall clock was contended (measure/contention.py, analysis/contention.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from mmtrack.analysis.compare import compare_measurements
from mmtrack.measure import contention
from mmtrack.measure.backend import MeasurementDomain
from mmtrack.measure.cputime import ThreadCpuBackend
from mmtrack.measure.diagnose import stability_warnings
from mmtrack.measure.metrics import Direction, MetricSummary
from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark
from mmtrack.results import Measurement

BENCH = "suite.Work.time_sum"
QUICK = RunOptions(warm_up=0.05, duration=0.4, min_samples=10, max_samples=40, target_chunk=0.01)
# Chunks of several scheduler time slices: a 10 ms chunk often runs unpreempted beside two busy processes.
LONG_CHUNKS = RunOptions(warm_up=0.05, duration=1.0, min_samples=10, max_samples=20, target_chunk=0.05)


def side(wall, cpu_ns, ratio, *, seed):
    """One side of a case: time per op (s), throughput, CPU time per op (ns) and wall/CPU, 20 samples each."""
    rng = np.random.default_rng(seed)
    jitter = 1 + rng.normal(0, 0.005, 20)
    summaries = [
        MetricSummary.from_values("timing", "time_per_op", "s", wall * jitter),
        MetricSummary.from_values("timing", "throughput", "ops/s", 1 / (wall * jitter), direction=Direction.HIGHER),
        MetricSummary.from_values("counters", "task-clock", "task-clock/op", cpu_ns * jitter),
    ]
    if ratio is not None:
        summaries.append(MetricSummary.from_values(contention.SECTION, contention.NAME, contention.UNIT,
                                                   ratio * jitter, direction=Direction.NEUTRAL))
    return [Measurement.from_summary(BENCH, {}, s, version="v1") for s in summaries]


def rows(before, after):
    return {r.metric.name: r for r in compare_measurements(before, after).rows}


def test_identical_code_whose_after_side_waited_is_judged_unchanged_on_cpu_time():
    # wall x1.26 (the new-user figure), CPU time the same: the wall clock measured waiting
    got = rows(side(1.0e-6, 1000, 1.01, seed=1), side(1.26e-6, 1000, 1.27, seed=2))
    wall = got["time_per_op"]
    assert wall.verdict == "unchanged" and "judged on CPU time" in wall.note and "after 1.27x" in wall.note
    assert got["throughput"].verdict == "unchanged"
    assert got["wall_per_cpu"].verdict == "unchanged"  # neutral: a reading, never a verdict of its own


def test_a_real_slowdown_the_wall_clock_hid_is_regressed_on_cpu_time():
    # the figures: a 2x slowdown read x1.16 on the wall clock, x1.99 in task-clock
    got = rows(side(1.0e-6, 500, 2.0, seed=3), side(1.16e-6, 995, 1.17, seed=4))
    wall = got["time_per_op"]
    assert wall.verdict == "regressed" and wall.ratio == pytest.approx(1.99, rel=0.02)
    assert "before 2.00x" in wall.note and "wall clock waited for a CPU" in wall.note
    throughput = got["throughput"]
    assert throughput.verdict == "regressed" and throughput.ratio < 0.6  # fewer ops per second


def test_without_contention_the_wall_clock_decides():
    got = rows(side(1.0e-6, 990, 1.01, seed=5), side(1.3e-6, 1000, 1.02, seed=6))
    assert got["time_per_op"].verdict == "regressed" and "CPU time" not in got["time_per_op"].note


def test_cases_without_the_ratio_keep_the_wall_clock():
    # threads, IO and GPU domains and asv's own timings record no wall/CPU ratio: the wall clock stands
    got = rows(side(1.0e-6, 1000, None, seed=7), side(1.26e-6, 1000, None, seed=8))
    assert got["time_per_op"].verdict == "regressed" and got["time_per_op"].note == ""


def test_in_a_run_that_waited_a_case_without_cpu_time_reads_ambiguous_not_moved():
    """`mmtrack bench examples` twice on a busy machine: a threaded case (no wall/CPU ratio of its own) halves its
    throughput while another case of the run waited for a CPU 7.5x; the move is the machine's as much as the code's."""
    import dataclasses

    waited_case = [dataclasses.replace(m, benchmark="suite.Other.time_single") for m in side(1.0e-6, 1000, 7.5,
                                                                                              seed=11)]
    calm_case = [dataclasses.replace(m, benchmark="suite.Other.time_single") for m in side(1.0e-6, 1000, 1.0,
                                                                                           seed=12)]
    threaded_before, threaded_after = side(1.0e-6, 1000, None, seed=9), side(2.0e-6, 2000, None, seed=10)
    got = {(r.benchmark, r.metric.name): r
           for r in compare_measurements([*threaded_before, *calm_case], [*threaded_after, *waited_case]).rows}
    for metric in ("time_per_op", "throughput", "task-clock"):
        row = got[(BENCH, metric)]
        assert row.verdict == "ambiguous" and "waited for a CPU" in row.note and "7.5" in row.note, row
    # with no case waiting, the same move stands
    calm = rows(threaded_before, threaded_after)
    assert calm["time_per_op"].verdict == "regressed"


def test_a_software_counter_moved_in_one_run_is_at_most_suspected():
    """Two runs of identical code, no history: task-clock 1.63 → 3.46 µs/op reads regressed (suspected), never a
    settled regression; the wall clock of the same case, unmoved, stays unchanged."""
    got = rows(side(1.0e-6, 1630, None, seed=13), side(1.0e-6, 3460, None, seed=14))
    cpu = got["task-clock"]
    assert cpu.verdict == "regressed" and cpu.state == "suspected" and "re-run must agree" in cpu.note
    assert got["time_per_op"].verdict == "unchanged"


def test_a_custom_timing_of_a_case_that_waited_reads_ambiguous():
    """A benchmark's own matmul_ms (its wall clock) tripled while its case waited for a CPU 11.8x: no CPU time of its
    own to judge it on, so ambiguous; the case's time per op, judged on CPU time, stands as it reads."""
    def with_custom(wall, cpu_ns, ratio, ms, seed):
        rng = np.random.default_rng(seed)
        custom = MetricSummary.from_values("custom", "matmul_ms", "ms", ms * (1 + rng.normal(0, 0.005, 20)))
        return [*side(wall, cpu_ns, ratio, seed=seed), Measurement.from_summary(BENCH, {}, custom, version="v1")]

    got = rows(with_custom(1.0e-6, 1000, 5.07, 2.0, 15), with_custom(3.0e-6, 1000, 11.84, 6.2, 16))
    custom = got["matmul_ms"]
    assert custom.verdict == "ambiguous" and "waited for a CPU" in custom.note, custom
    assert got["time_per_op"].verdict == "unchanged" and "judged on CPU time" in got["time_per_op"].note


def spin(ctx, n, i):
    for _ in range(n):
        sum(range(300))


def test_the_ratio_is_recorded_for_single_threaded_cpu_cases_only():
    stats = run_benchmark(BenchSpec("cpu", spin, backend=ThreadCpuBackend), QUICK)
    names = [m.name for m in stats.tracked_metrics()]
    assert contention.NAME in names and "task-clock" in names
    io = run_benchmark(BenchSpec("io", spin, backend=ThreadCpuBackend, domain=MeasurementDomain.IO), QUICK)
    assert contention.NAME not in [m.name for m in io.tracked_metrics()]


def test_thread_cpu_time_does_not_count_sleeping():
    def sleepy(ctx, n, i):
        time.sleep(0.002 * n)

    stats = run_benchmark(BenchSpec("sleep", sleepy, chunk_size=1, backend=ThreadCpuBackend), QUICK)
    cpu = stats.counter("task-clock")
    assert cpu is not None and cpu.per_op < 0.5 * stats.latency.median * 1e9
    ratio = contention.wall_per_cpu(stats)
    assert ratio is not None and contention.waited(ratio.mean)


@pytest.fixture
def one_cpu():
    """The test process confined to one CPU, and a way to make that CPU busy."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs sched_setaffinity")
    previous = os.sched_getaffinity(0)
    cpu = max(previous)
    os.sched_setaffinity(0, {cpu})
    procs: list[subprocess.Popen] = []

    def load(count):
        code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass\n"
        procs.extend(subprocess.Popen([sys.executable, "-c", code]) for _ in range(count))
        time.sleep(0.3)

    yield load
    for p in procs:
        p.kill()
        p.wait()
    os.sched_setaffinity(0, previous)


@pytest.mark.parametrize("backend", [None, ThreadCpuBackend], ids=["default", "thread-cpu"])
def test_a_real_contended_run_waits_for_a_cpu_and_is_judged_on_cpu_time(one_cpu, backend):
    spec = BenchSpec("sum", spin, backend=backend)
    before = run_benchmark(spec, LONG_CHUNKS)
    one_cpu(2)  # two busy processes share the measuring CPU: the op gets about a third of it
    after = run_benchmark(spec, LONG_CHUNKS)
    ratio = contention.wall_per_cpu(after)
    # wide: a chunk waits for up to two other time slices, whatever else the machine runs; never exact
    assert ratio is not None and contention.waited(ratio.mean) and ratio.mean > 1.3
    assert any(w.startswith("waited for a CPU") for w in stability_warnings(after))
    measured = [[Measurement.from_summary("sum", {}, m) for m in s.tracked_metrics()] for s in (before, after)]
    wall = rows(*measured)["time_per_op"]
    assert "judged on CPU time" in wall.note


def test_an_asv_run_beside_two_busy_processes_says_it_waited_for_a_cpu(one_cpu):
    """`mmtrack run` times asv's processes (wall against their CPU time): a CPU-bound child sharing its CPU with two
    busy processes gets about a third of it, and the run says it waited."""
    from mmtrack.commands.run import ProcessTime, waited_note

    one_cpu(2)  # children inherit the test's one-CPU affinity
    with ProcessTime() as asv_time:
        subprocess.run([sys.executable, "-c", "x = 0\nfor i in range(3 * 10**7): x += i"], check=True)
    note = waited_note(asv_time.wall, asv_time.cpu)
    assert asv_time.wall > 1.5 * asv_time.cpu and note.startswith("the run waited for a CPU"), note
    assert waited_note(10.0, 9.5) == "" and waited_note(10.0, 0.0) == ""  # a quiet run, nothing measured
