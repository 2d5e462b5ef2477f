"""Bottleneck heuristics on counter readings, and their gating by domain and backend.

The readings are per-run totals shaped like what a PMU reports for the named
kind of workload (hardware counters cannot be produced on this machine); each
test states the ratio it sits on, against the documented thresholds.
"""

from __future__ import annotations

import pytest
from rich.console import Console

from mmtrack.measure import diagnose
from mmtrack.measure.backend import MeasurementDomain
from mmtrack.measure.diagnose import Readings, bottlenecks, cpu_diagnostics, stability_warnings
from mmtrack.measure.report import render_stats
from mmtrack.measure.benchmark_stats import BenchmarkStats
from mmtrack.measure.stats import Distribution, summarize_counters
from mmtrack.measure.throughput import Throughput

HEALTHY = Readings(  # IPC 2.5, 1% branch misses, 2% cache misses, few stalls
    cycles=1e9, instructions=2.5e9, cache_references=1e7, cache_misses=2e5, icache_misses=1e5,
    branches=5e8, branch_misses=5e6, stalled_frontend=5e7, stalled_backend=1e8,
)


def test_a_healthy_run_has_no_bottleneck():
    assert bottlenecks(HEALTHY) == []


def test_backend_stalls_mean_data_side_memory_latency():
    r = Readings(cycles=1e9, instructions=8e8, stalled_backend=4.5e8)  # 45% > 30%
    (line,) = bottlenecks(r)
    assert line.startswith("data-side memory latency") and "45%" in line


def test_cache_miss_rate_alone_also_flags_memory_latency():
    r = Readings(cache_references=1e6, cache_misses=3.5e5)  # 35% > 20%
    assert bottlenecks(r) == ["data-side memory latency: cache miss rate 35%"]


def test_branch_misses_above_five_percent():
    r = Readings(branches=1e8, branch_misses=8e6)  # 8%
    assert bottlenecks(r) == ["branch predictor disruption: 8.0% of branches mispredicted"]
    assert bottlenecks(Readings(branches=1e8, branch_misses=4e6)) == []  # 4%: fine


def test_icache_pressure_from_l1i_misses_or_frontend_stalls():
    mpki = Readings(instructions=1e9, icache_misses=1.5e7)  # 15 per 1k instructions
    assert bottlenecks(mpki) == ["i-cache pressure: 15.0 L1i misses per 1k instructions"]
    frontend = Readings(cycles=1e9, stalled_frontend=4e8)  # 40%
    assert bottlenecks(frontend) == ["i-cache pressure: frontend stalls 40% of cycles"]


def test_low_ipc():
    assert bottlenecks(Readings(cycles=1e9, instructions=3e8)) == ["low IPC: 0.30 instructions per cycle"]
    assert bottlenecks(Readings(cycles=1e9, instructions=6e8)) == []


def test_thresholds_are_strict_inequalities():
    at = Readings(cycles=1e9, instructions=5e8, stalled_backend=3e8, branches=1e8, branch_misses=5e6)
    assert bottlenecks(at) == []  # exactly 30%, 5% and IPC 0.5 are not flagged


def test_too_few_events_are_not_judged():
    tiny = Readings(cycles=500, instructions=100, branches=20, branch_misses=10, cache_references=8, cache_misses=8)
    assert bottlenecks(tiny) == []
    assert diagnose.MIN_EVENTS == 1000


def test_software_counters_only_say_nothing():
    assert bottlenecks(Readings()) == []


def make_stats(domain: MeasurementDomain, totals: dict[str, float], emits: bool = True, latencies=None) -> BenchmarkStats:
    ops = (1000, 1000)
    per_sample = [{k: v / 2 for k, v in totals.items()}] * 2
    lat = latencies or [1e-6, 1e-6]
    return BenchmarkStats(
        name="b", params={}, throughput=Throughput.ops(), domain=domain, measurement_label="timing + PMU",
        emits_cpu_diagnostics=emits, chunk_size=1000, calibrated=True, durations=(1e-3, 1e-3),
        host_durations=(1e-3, 1e-3), operations=ops, latency=Distribution.of(lat), rate=Distribution.of([1e9, 1e9]),
        counters=summarize_counters(per_sample, ops, [(1, 1), (1, 1)]),
    )


BRANCHY = {"cycles": 1e9, "instructions": 2e9, "branches": 1e8, "branch-misses": 9e6}


def test_readings_come_from_the_run_counters():
    r = Readings.of(make_stats(MeasurementDomain.CPU, BRANCHY))
    assert (r.cycles, r.instructions, r.branches, r.branch_misses) == (1e9, 2e9, 1e8, 9e6)
    assert r.cache_misses is None


def test_counters_missing_from_some_samples_are_put_on_the_same_footing():
    # cycles were read in both samples, instructions (another group) only in the first.
    # Raw totals would say IPC 0.9e9 / 2e9 = 0.45: a false "low IPC". Per sample it is 0.9.
    stats = make_stats(MeasurementDomain.CPU, {})
    per_sample = [{"cycles": 1e9, "instructions": 0.9e9}, {"cycles": 1e9}]
    stats.counters = summarize_counters(per_sample, stats.operations, [(1, 1), (1, 1)])
    assert stats.counter("instructions").total == 0.9e9  # the raw total covers half the run
    r = Readings.of(stats)
    assert r.cycles == 2e9 and r.instructions == pytest.approx(1.8e9)
    assert cpu_diagnostics(stats) == []
    assert bottlenecks(Readings(cycles=2e9, instructions=0.9e9)) == ["low IPC: 0.45 instructions per cycle"]


def test_gating_by_domain_and_backend():
    cpu = cpu_diagnostics(make_stats(MeasurementDomain.CPU, BRANCHY))
    assert cpu == ["branch predictor disruption: 9.0% of branches mispredicted"]
    assert cpu_diagnostics(make_stats(MeasurementDomain.GPU, BRANCHY)) == []
    assert cpu_diagnostics(make_stats(MeasurementDomain.IO, BRANCHY)) == []
    assert cpu_diagnostics(make_stats(MeasurementDomain.CPU, BRANCHY, emits=False)) == []
    assert cpu_diagnostics(make_stats(MeasurementDomain.MIXED, BRANCHY)) == [f"[host] {cpu[0]}"]


def test_report_prints_bottlenecks_only_where_they_apply():
    def text(stats: BenchmarkStats) -> str:
        console = Console(width=160, record=True)
        console.print(render_stats(stats))
        return console.export_text()

    assert "possible bottlenecks:" in text(make_stats(MeasurementDomain.CPU, BRANCHY))
    assert "[host] branch predictor" in text(make_stats(MeasurementDomain.MIXED, BRANCHY))
    assert "possible bottlenecks" not in text(make_stats(MeasurementDomain.GPU, BRANCHY))


def test_stability_warnings_apply_in_every_domain():
    noisy = [1e-6] * 8 + [3e-6, 3.2e-6]
    for domain in MeasurementDomain:
        warnings = stability_warnings(make_stats(domain, {}, latencies=noisy))
        assert any(w.startswith("unstable run") for w in warnings)
        assert any(w.startswith("many outliers: 2 of 10") for w in warnings)
