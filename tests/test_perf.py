"""LinuxPerfBackend on the real perf_event_open syscall.

This machine exposes software perf events but no hardware PMU, so the real
syscall is exercised with software events, the real group-to-individual
fallback and the real degradation when hardware events are missing. Where a
hardware PMU exists the same tests pass and also see hardware counters.
Scaling, per-op and IPC arithmetic run on readings in the kernel's read format
(test_perf_readings.py).
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
from pathlib import Path

import pytest

from mmtrack.measure import backend as backend_mod
from mmtrack.measure import perf
from mmtrack.measure.backend import MeasurementDomain, Results, WallClockBackend
from mmtrack.measure.default_backend import default_backend
from mmtrack.measure.perf import SOFTWARE_COUNTERS, Counter, LinuxPerfBackend, open_counters
from mmtrack.measure.perf_explain import has_cpu_pmu
from mmtrack.measure.report import render_stats
from mmtrack.measure.runner import BenchSpec, RunOptions, Runner, run_benchmark

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="Linux only")

SOFTWARE = [c.name for c in SOFTWARE_COUNTERS]
PAGE = mmap.PAGESIZE
FAST = RunOptions(warm_up=0.01, duration=0.05, min_samples=10, max_samples=10, target_chunk=0.002)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def fresh_announcements(monkeypatch):
    """Each test sees the once-per-process messages afresh."""
    monkeypatch.setattr(backend_mod, "_announced", set())


def one_sample(backend, fn=lambda: None) -> Results:
    backend.begin()
    fn()
    backend.end()
    r = Results()
    backend.collect(1e-3, 1, 0, r, [])
    return r


def test_software_counters_open_and_count_for_real():
    b = LinuxPerfBackend()
    try:
        assert set(SOFTWARE) <= set(b.report.opened)
        r = one_sample(b, lambda: sum(range(200_000)))
        assert set(SOFTWARE) <= set(r.counters)
        assert r.counters["task-clock"] > 0  # ns of CPU time: a real reading
        assert r.time_running_ns == r.time_enabled_ns > 0
    finally:
        b.close()


@pytest.mark.skipif(has_cpu_pmu(), reason="this machine has a CPU PMU: hardware counters open")
def test_missing_hardware_falls_back_to_individual_then_regroups_software():
    groups, report = open_counters()
    try:
        # The one big group failed for real (the kernel has no cycles event)...
        assert report.group_errno in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV, errno.EINVAL)
        # ...each counter was tried alone, the hardware ones failed with their errno...
        assert {"cycles", "instructions", "branch-misses", "L1-icache-load-misses"} <= set(report.failed)
        assert set(report.opened) == set(SOFTWARE)
        # ...and the survivors were packed back into one group: one ioctl pair and one read a sample.
        assert report.mode == "perf event group" and len(groups) == 1 and len(groups[0].fds) == 4
    finally:
        for g in groups:
            g.close()


def test_a_refused_counter_breaks_the_group_and_the_rest_still_count():
    """A software config the kernel does not know: a real refusal on any machine."""
    bogus = Counter("bogus", perf.PERF_TYPE_SOFTWARE, 0xFFFF)
    wanted = [perf._BY_NAME["task-clock"], bogus, perf._BY_NAME["page-faults"]]
    groups, report = open_counters(wanted)
    try:
        assert report.group_errno is not None
        assert set(report.failed) == {"bogus"}
        assert report.opened == ("task-clock", "page-faults")
        assert report.mode == "perf event group"
    finally:
        for g in groups:
            g.close()


def test_individual_counters_mode_reads_each_counter_alone():
    b = LinuxPerfBackend(SOFTWARE, grouping=False)
    try:
        assert b.report.mode == "individual counters"
        assert b.open_fds == len(SOFTWARE) and len(b._groups) == len(SOFTWARE)
        r = one_sample(b, lambda: bytearray(1 << 20))
        assert set(r.counters) == set(SOFTWARE)
        assert r.counters["task-clock"] > 0
    finally:
        b.close()


def _touch_pages(m: mmap.mmap, pages: int) -> None:
    for p in range(pages):
        m[p * PAGE] = 1


def test_page_faults_per_op_rise_when_the_bench_touches_fresh_pages():
    pages = 64

    def fresh(ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            m = mmap.mmap(-1, pages * PAGE)  # fresh anonymous pages: the first touch faults
            _touch_pages(m, pages)
            m.close()

    warm = mmap.mmap(-1, pages * PAGE)
    _touch_pages(warm, pages)

    def reused(ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            _touch_pages(warm, pages)  # already mapped: no faults

    def faults_per_op(fn) -> float:
        stats = run_benchmark(BenchSpec("pf", fn, backend=LinuxPerfBackend, chunk_size=8), FAST)
        counter = stats.counter("page-faults")
        assert counter is not None
        return counter.per_op

    try:
        fresh_pf, reused_pf = faults_per_op(fresh), faults_per_op(reused)
    finally:
        warm.close()
    assert fresh_pf >= 0.9 * pages  # about one fault per fresh page
    assert reused_pf < 1.0
    assert fresh_pf > 10 * max(reused_pf, 0.1)


def test_group_counts_inside_every_sample_and_nothing_between():
    """Regression guard: members must count in every sample, not just the first,
    and work between end() and the next begin() must not be counted."""
    fresh = lambda: [_touch_pages(mmap.mmap(-1, 32 * PAGE), 32) for _ in range(4)]  # noqa: E731
    b = LinuxPerfBackend(SOFTWARE)
    try:
        assert b.report.mode == "perf event group"
        readings = []
        for _ in range(5):
            readings.append(one_sample(b, fresh).counters["page-faults"])
            fresh()  # outside the window
        assert all(r >= 0.9 * 128 for r in readings), readings
        assert max(readings) <= 1.1 * 128 + 8, readings
    finally:
        b.close()


def test_ten_thousand_samples_leak_no_file_descriptor():
    before = open_fds()
    inside: list[int] = []

    def bench(ctx, chunk_size, chunk_num):
        if chunk_num == 0:
            inside.append(open_fds())

    opts = RunOptions(warm_up=1e-4, duration=1e-3, min_samples=10_000, max_samples=10_000, target_chunk=1e-4)
    stats = run_benchmark(BenchSpec("fd", bench, backend=LinuxPerfBackend, chunk_size=1), opts)
    assert stats.samples == 10_000
    assert stats.counter("task-clock") is not None
    assert max(inside) > before  # the counters really were open while sampling
    assert open_fds() == before
    for _ in range(50):  # the default backend, opened and closed per benchmark
        default_backend().close()
    assert open_fds() == before


def test_close_is_idempotent_and_garbage_collection_closes_too():
    before = open_fds()
    b = LinuxPerfBackend()
    b.close()
    b.close()
    LinuxPerfBackend()  # dropped without close: the finalizer releases the fds
    import gc

    gc.collect()
    assert open_fds() == before


def test_default_backend_is_perf_and_says_once_that_hardware_is_missing(caplog):
    caplog.set_level(logging.WARNING, logger="mmtrack.measure")
    first = default_backend()
    second = default_backend()
    try:
        assert isinstance(first, LinuxPerfBackend) and isinstance(second, LinuxPerfBackend)
        lines = [r.getMessage() for r in caplog.records]
        if has_cpu_pmu():
            assert all("hardware counters unavailable" not in line for line in lines)
        else:
            assert len(lines) == 1  # once per process, not per benchmark
            assert "hardware counters unavailable" in lines[0]
            assert "task-clock" in lines[0] and "bare metal" in lines[0]
    finally:
        first.close()
        second.close()


def test_bylines_follow_the_domain():
    lines = {}
    for domain in MeasurementDomain:
        spec = BenchSpec("d", lambda ctx, n, i: None, backend=LinuxPerfBackend, chunk_size=1, domain=domain)
        lines[domain] = Runner(spec, FAST).run().notes
    assert lines[MeasurementDomain.CPU][0].startswith("host PMU (perf event group): coverage=100.0%")
    assert lines[MeasurementDomain.GPU][0].startswith("host PMU (orchestration): coverage=")
    assert lines[MeasurementDomain.MIXED][0].startswith("host PMU (mixed workload): coverage=")


def test_report_shows_only_collected_counters_per_op():
    stats = run_benchmark(BenchSpec("r", lambda ctx, n, i: None, backend=LinuxPerfBackend, chunk_size=4), FAST)
    from rich.console import Console

    console = Console(width=160, record=True)
    console.print(render_stats(stats))
    text = console.export_text()
    assert "host PMU (perf event group): coverage=" in text
    for name in stats.counters:
        assert f"{name.name}/op" in text
    if not has_cpu_pmu():
        assert "cycles/op" not in text and "IPC" not in text
    tracked = {(m.section, m.name) for m in stats.tracked_metrics()}
    assert ("counters", "task-clock") in tracked and ("counters", "page-faults") in tracked


def test_inherit_counts_a_thread_the_bench_starts():
    import threading

    def spin():
        sum(range(2_000_000))

    def run_in_thread():
        t = threading.Thread(target=spin)
        t.start()
        t.join()

    def task_clock(inherit: bool) -> float:
        b = LinuxPerfBackend(["task-clock"], inherit=inherit)
        try:
            return one_sample(b, run_in_thread).counters["task-clock"]
        finally:
            b.close()

    with_child, without = task_clock(True), task_clock(False)
    assert with_child > 5 * without  # the spinning thread's CPU time is counted only with inherit


def test_pinning_holds_one_cpu_during_the_run_and_restores_the_mask():
    before = os.sched_getaffinity(0)
    seen: list[set[int]] = []
    spec = BenchSpec("pin", lambda ctx, n, i: seen.append(os.sched_getaffinity(0)), chunk_size=1,
                     backend=WallClockBackend)
    run_benchmark(spec, FAST)
    assert all(len(s) == 1 for s in seen) and seen[0] <= before
    assert os.sched_getaffinity(0) == before
    seen.clear()
    run_benchmark(spec, RunOptions(**{**_fields(FAST), "pin_cpu": False}))
    assert all(s == before for s in seen)


def test_pinning_failure_warns_once_and_the_run_goes_on(monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="mmtrack.measure")

    def refuse(pid, mask):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    spec = BenchSpec("pin", lambda ctx, n, i: None, chunk_size=1, backend=WallClockBackend)
    for _ in range(3):
        assert run_benchmark(spec, FAST).samples == 10
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "could not pin" in lines[0]


def test_no_pin_flag_reaches_the_run_options(tmp_path):
    from mmtrack.commands.bench import BenchRequest

    assert BenchRequest(tmp_path).options().pin_cpu is True
    assert BenchRequest(tmp_path, overrides={"pin_cpu": False}).options().pin_cpu is False


def _fields(options: RunOptions) -> dict:
    import dataclasses

    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
