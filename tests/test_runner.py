"""Runner semantics, as micromeasure's: calibration, fixed chunks, backends, diagnostics."""

from __future__ import annotations

import math
import time

import pytest

from mmtrack import (
    BenchSampleResult,
    BenchSpec,
    DiagnosticError,
    DiagnosticResult,
    InvalidMetricError,
    MeasurementBackend,
    MetricValue,
    RunOptions,
    Throughput,
    WallClockBackend,
    run_benchmark,
)
from mmtrack.measure.runner import BenchmarkDefinitionError, Runner

FAST = RunOptions(warm_up=0.01, duration=0.05, min_samples=5, max_samples=12, target_chunk=0.005)


def linear_workload(clock, ns_per_op=1_000, overhead_ns=5_000):
    def fn(ctx, chunk_size, chunk_num):
        clock.spend(overhead_ns + ns_per_op * chunk_size)

    return fn


def test_calibration_converges_for_linear_workload(fake_clock):
    spec = BenchSpec("linear", linear_workload(fake_clock))
    runner = Runner(spec, RunOptions(target_chunk=0.05), clock=fake_clock)
    size = runner.calibrate()
    chunk_seconds = (5_000 + 1_000 * size) * 1e-9
    assert 0.8 * 0.05 <= chunk_seconds <= 1.25 * 0.05
    assert 30_000 <= size <= 70_000


def test_calibration_is_bounded_and_clamped(fake_clock):
    # A workload that never gets slower cannot push chunk_size past the clamp.
    spec = BenchSpec("constant", lambda ctx, n, i: fake_clock.spend(10))
    runner = Runner(spec, RunOptions(target_chunk=0.05, max_chunk_size=1000, calibration_passes=50), clock=fake_clock)
    assert runner.calibrate() == 1000


def test_calibration_with_real_clock_lands_near_target():
    def spin(ctx, chunk_size, chunk_num):
        total = 0
        for i in range(chunk_size):
            total += i

    spec = BenchSpec("spin", spin)
    runner = Runner(spec, RunOptions(target_chunk=0.02))
    size = runner.calibrate()
    t0 = time.perf_counter()
    spin(None, size, 0)
    elapsed = time.perf_counter() - t0
    assert 0.004 < elapsed < 0.1  # the order of magnitude of the target; the machine is noisy


def test_fixed_chunk_size_is_used_exactly(fake_clock):
    seen = []

    def fn(ctx, chunk_size, chunk_num):
        seen.append(chunk_size)
        fake_clock.spend(1_000_000)

    stats = run_benchmark(BenchSpec("fixed", fn, chunk_size=37), FAST, clock=fake_clock)
    assert set(seen) == {37}
    assert stats.chunk_size == 37 and not stats.calibrated
    assert set(stats.operations) == {37}


def test_sample_count_follows_duration_and_clamps(fake_clock):
    fn = linear_workload(fake_clock, ns_per_op=0, overhead_ns=10_000_000)  # 10 ms per chunk
    opts = RunOptions(warm_up=0.02, duration=0.1, min_samples=3, max_samples=50)
    stats = run_benchmark(BenchSpec("n", fn, chunk_size=1), opts, clock=fake_clock)
    assert stats.samples == 10
    opts = RunOptions(warm_up=0.02, duration=10.0, min_samples=3, max_samples=7)
    runner = Runner(BenchSpec("n", fn, chunk_size=1), opts, clock=fake_clock)
    stats = runner.run()
    assert stats.samples == 7
    assert any("under-runs the target" in w for w in stats.warnings)


class DeviceClockBackend(MeasurementBackend):
    """Reports a fixed device duration per sample, or zero to request the fallback."""

    def __init__(self, device_seconds):
        self.device_seconds = device_seconds

    def collect(self, host_elapsed, ops, chunk_index, results, metrics):
        results.duration = self.device_seconds
        results.iterations = ops
        metrics.append(MetricValue.duration_ms("device_ms", self.device_seconds))


def test_backend_duration_overrides_host_time(fake_clock):
    fn = linear_workload(fake_clock, ns_per_op=0, overhead_ns=1_000_000)  # host: 1 ms
    spec = BenchSpec("dev", fn, chunk_size=10, backend=lambda: DeviceClockBackend(0.004))
    stats = run_benchmark(spec, FAST, clock=fake_clock)
    assert set(stats.durations) == {0.004}
    assert set(stats.host_durations) == {0.001}
    assert stats.latency.median == pytest.approx(0.0004)


class HostFallbackDeviceClock(DeviceClockBackend):
    zero_means_host_time = True  # as the built-in backends promise (a custom one fails on zero, issue 15)


def test_zero_backend_duration_falls_back_to_host(fake_clock):
    fn = linear_workload(fake_clock, ns_per_op=0, overhead_ns=2_000_000)
    spec = BenchSpec("dev0", fn, chunk_size=4, backend=lambda: HostFallbackDeviceClock(0.0))
    stats = run_benchmark(spec, FAST, clock=fake_clock)
    assert set(stats.durations) == {0.002}
    assert stats.latency.median == pytest.approx(0.0005)


def test_wall_clock_backend_contract():
    from mmtrack.measure.backend import Results

    b = WallClockBackend()
    r = Results()
    metrics = []
    b.begin()
    b.end()
    b.collect(0.005, 42, 7, r, metrics)
    assert (r.duration, r.iterations, r.chunks_executed) == (0.005, 42, 1)
    assert metrics == [] and b.measurement_label == "timing only" and not b.emits_cpu_diagnostics


def test_same_name_different_units_stay_apart(fake_clock):
    def fn(ctx, chunk_size, chunk_num):
        fake_clock.spend(1_000_000)
        return (
            BenchSampleResult(chunk_size)
            .push_metric(MetricValue("size", 1.0, "MiB"))
            .push_metric(MetricValue("size", 1024.0, "KiB"))
            .push_metric(MetricValue("size", 2.0, "MiB", section="other"))
        )

    stats = run_benchmark(BenchSpec("units", fn, returns_sample=True, chunk_size=1), FAST, clock=fake_clock)
    keys = {m.key: m for m in stats.metrics}
    assert set(keys) == {("", "size", "MiB"), ("", "size", "KiB"), ("other", "size", "MiB")}
    assert keys[("", "size", "KiB")].median == 1024.0
    assert keys[("", "size", "MiB")].count == stats.samples


def test_per_sample_values_keep_execution_order(fake_clock):
    def fn(ctx, chunk_size, chunk_num):
        fake_clock.spend(1_000_000)
        return BenchSampleResult(1).push_metric(MetricValue.integer("algo", chunk_num % 4, "id"))

    stats = run_benchmark(BenchSpec("order", fn, returns_sample=True, chunk_size=1), FAST, clock=fake_clock)
    (algo,) = stats.metrics
    assert algo.values == tuple(float(i % 4) for i in range(stats.samples))
    assert algo.format.value == "integer"


def test_diagnostic_pass_never_changes_timing(fake_clock):
    def make(diagnostic):
        clock_start = fake_clock.now
        spec = BenchSpec("diag", linear_workload(fake_clock, 1_000, 0), chunk_size=100, diagnostic=diagnostic)
        stats = run_benchmark(spec, FAST, clock=fake_clock)
        return stats, fake_clock.now - clock_start

    def slow_diagnostic(ctx, chunk_size, i):
        fake_clock.spend(50_000_000)  # a slow, invasive pass
        return DiagnosticResult("memory").push_metric(MetricValue.integer("peak", 100 + i, "bytes"))

    plain, _ = make(None)
    with_diag, _ = make(slow_diagnostic)
    assert with_diag.durations == plain.durations
    assert with_diag.latency == plain.latency
    assert [m.key for m in with_diag.diagnostics] == [("memory", "peak", "bytes")]
    assert with_diag.diagnostics[0].count == 3
    assert not with_diag.metrics  # diagnostic metrics never join the sampled metrics


@pytest.mark.parametrize("error", [DiagnosticError("profiler unavailable"), RuntimeError("boom")])
def test_failing_diagnostic_is_reported_not_fatal(fake_clock, error):
    def diagnostic(ctx, chunk_size, i):
        raise error

    spec = BenchSpec("diagfail", linear_workload(fake_clock), chunk_size=10, diagnostic=diagnostic)
    stats = run_benchmark(spec, FAST, clock=fake_clock)
    assert stats.samples >= FAST.min_samples
    assert len(stats.diagnostic_errors) == 1 and str(error) in stats.diagnostic_errors[0]


def test_fresh_context_per_sample_and_operations_per_chunk(fake_clock):
    made = []

    def context(chunk_size):
        made.append(chunk_size)
        return []

    def fn(ctx, chunk_size, chunk_num):
        assert ctx == []  # never the previous sample's (mutated) context
        ctx.append(chunk_num)
        fake_clock.spend(1_000_000)

    spec = BenchSpec("ctx", fn, chunk_size=8, context=context, operations_per_chunk=lambda n: n * 4)
    stats = run_benchmark(spec, FAST, clock=fake_clock)
    assert len(made) > stats.samples  # warm-up samples get fresh contexts too
    assert set(stats.operations) == {32}


@pytest.mark.parametrize(
    "metric, fragment",
    [
        (MetricValue("", 1.0, "ms"), "name is empty"),
        (MetricValue("lat", 1.0, ""), "unit is empty"),
        (MetricValue("lat", math.nan, "ms"), "nan"),
        (MetricValue("lat", math.inf, "ms"), "inf"),
    ],
)
def test_invalid_metric_names_benchmark_and_metric(fake_clock, metric, fragment):
    def fn(ctx, chunk_size, chunk_num):
        fake_clock.spend(1_000)
        return BenchSampleResult(1).push_metric(metric)

    with pytest.raises(InvalidMetricError) as info:
        run_benchmark(BenchSpec("bad_metric_bench", fn, returns_sample=True, chunk_size=1), FAST, clock=fake_clock)
    assert "bad_metric_bench" in str(info.value) and fragment in str(info.value)


@pytest.mark.parametrize("amount", [0, -1, math.nan, math.inf])
def test_non_positive_throughput_is_rejected(amount):
    with pytest.raises(ValueError, match="must be > 0"):
        Throughput.per_operation(amount, "bytes")


@pytest.mark.parametrize(
    "returns_sample, value, fragment",
    [
        (False, 5, "returns None"),
        (True, "ten", "returns a BenchSampleResult"),
        (True, BenchSampleResult(0), "positive int"),
        (True, None, "returns a BenchSampleResult"),
    ],
)
def test_wrong_return_type_is_a_clear_error(fake_clock, returns_sample, value, fragment):
    def fn(ctx, chunk_size, chunk_num):
        fake_clock.spend(1_000)
        return value

    with pytest.raises(BenchmarkDefinitionError, match=fragment):
        run_benchmark(BenchSpec("wrong", fn, returns_sample=returns_sample, chunk_size=1), FAST, clock=fake_clock)


@pytest.mark.parametrize("backend", [42, lambda: None, object])
def test_a_backend_that_is_not_one_is_a_clear_error(fake_clock, backend):
    """backend=42 was "'int' object is not callable"; a factory returning None failed later, on an attribute."""
    spec = BenchSpec("wrong_backend", lambda ctx, n, i: None, chunk_size=1, backend=backend)
    with pytest.raises(BenchmarkDefinitionError, match=r"'wrong_backend': backend= takes a MeasurementBackend, its "
                                                       r"class or a function returning one; got (int|NoneType|object)"):
        run_benchmark(spec, FAST, clock=fake_clock)


def test_backend_end_runs_even_when_bench_raises(fake_clock):
    calls = []

    class Tracking(MeasurementBackend):
        def begin(self):
            calls.append("begin")

        def end(self):
            calls.append("end")

        def close(self):
            calls.append("close")

    def fn(ctx, chunk_size, chunk_num):
        raise ValueError("broken bench")

    with pytest.raises(ValueError):
        run_benchmark(BenchSpec("raise", fn, chunk_size=1, backend=Tracking), FAST, clock=fake_clock)
    assert calls == ["begin", "end", "close"]


def test_run_options_are_validated():
    with pytest.raises(ValueError, match="min_samples"):
        RunOptions(min_samples=10, max_samples=5)
    with pytest.raises(ValueError, match="duration"):
        RunOptions(duration=0)


# -- calibration on warm code (issue 21) ------------------------------------------------------


def warming_workload(clock, cold_ns, warm_ns, cold_calls):
    """``cold_ns`` per op for the first ``cold_calls`` calls, ``warm_ns`` after; records each chunk size."""
    calls = []

    def fn(ctx, chunk_size, chunk_num):
        calls.append(chunk_size)
        clock.spend((cold_ns if len(calls) <= cold_calls else warm_ns) * chunk_size)

    fn.calls = calls
    return fn


WARM_OPTS = RunOptions(warm_up=0.5, duration=1.0, min_samples=5, max_samples=20, target_chunk=0.05)


def test_chunk_is_resized_when_the_code_gets_faster_after_calibration(fake_clock):
    # Cold calls cost 1 ms/op (first allocations, cold caches), warm ones 0.2 ms/op: sizing on
    # the cold calls alone would give 50 ops = 10 ms warm chunks, a fifth of the target.
    fn = warming_workload(fake_clock, 1_000_000, 200_000, cold_calls=8)
    stats = run_benchmark(BenchSpec("warms", fn), WARM_OPTS, clock=fake_clock)
    assert stats.chunk_size == 250
    assert all(0.8 * 0.05 <= d <= 1.2 * 0.05 for d in stats.durations)


def test_chunk_is_resized_when_the_code_gets_slower_after_calibration(fake_clock):
    # The allocation-heavy case: the first call takes 45 ms, then one op settles at 8 ms.
    fn = warming_workload(fake_clock, 45_000_000, 8_000_000, cold_calls=1)
    stats = run_benchmark(BenchSpec("allocates", fn), WARM_OPTS, clock=fake_clock)
    assert stats.chunk_size == 6  # 48 ms samples, not 1 op = 8 ms
    assert median_of(stats.durations) == pytest.approx(0.048)


def test_fixed_chunk_is_never_resized(fake_clock):
    fn = warming_workload(fake_clock, 1_000_000, 200_000, cold_calls=8)
    stats = run_benchmark(BenchSpec("fixed", fn, chunk_size=50), WARM_OPTS, clock=fake_clock)
    assert set(fn.calls) == {50} and stats.chunk_size == 50
    # 50 warm ops of 0.2 ms: the fixed chunk was sized for a 10 ms target, and it gets exactly that.
    assert median_of(stats.durations) == pytest.approx(0.010)


def median_of(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def spin_workload(loop: int):
    """About ``loop`` additions per op: ~1 µs at 20, ~50 µs at 1000, ~5 ms at 100k on this machine."""

    def fn(ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            total = 0
            for i in range(loop):
                total += i

    return fn


@pytest.mark.parametrize("loop", [20, 1_000, 100_000], ids=["~1us", "~50us", "~5ms"])
def test_median_sample_hits_the_target_on_real_workloads(loop):
    # Real workloads on a loaded shared machine: other processes' load changed the wall time per op
    # by 2x within seconds on this 2-core machine, in stretches of several samples, which no
    # calibration can foresee. So the engine runs on this thread's CPU-time clock (the Runner takes
    # any clock): contention does not stretch it, the code's own warm-up does. A reduced target
    # (20 ms) and the median sample; a miss is measured again, up to three times. A systematic miss
    # (sizing on cold code) misses every time; the fake-clock tests above pin that logic exactly.
    target = 0.02
    opts = RunOptions(warm_up=0.2, duration=0.4, min_samples=9, max_samples=25, target_chunk=target)
    medians = []
    for _attempt in range(3):
        stats = run_benchmark(BenchSpec("spin", spin_workload(loop)), opts, clock=time.thread_time_ns)
        assert stats.calibrated
        medians.append(median_of(stats.host_durations))
        if 0.8 * target <= medians[-1] <= 1.2 * target:
            return
    pytest.fail(f"median sample {[f'{m * 1e3:.1f} ms' for m in medians]}, target {target * 1e3:g} ms ±20%")


def test_between_process_rule():
    from mmtrack.measure.stats import between_process_dominated

    # 30 samples at 2% within-run CV: a median is good to about 0.46%, so medians 5% apart are the processes'.
    assert between_process_dominated([1.00, 1.05, 0.97, 1.04], within_cv=0.02, samples=30)
    assert not between_process_dominated([1.000, 1.002, 0.999, 1.001], within_cv=0.02, samples=30)
    assert not between_process_dominated([1.0], within_cv=0.02, samples=30)  # one run: nothing to say
