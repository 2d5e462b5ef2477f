"""CudaEventBackend's logic, driven through the real engine runner on a stand-in device.

The stand-in (test_cuda_standin.py) keeps exact device and host timelines, so the
expected durations below are computed from the model, not guessed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_cuda_standin import StandInClocks, StandInCuda, StandInCudaError

from mmtrack.measure.backend import MeasurementDomain
from mmtrack.measure.cuda import FLUSH_FACTOR, CudaEventBackend
from mmtrack.measure.metrics import GIB, Direction, MetricFormat
from mmtrack.measure.runner import BenchSpec, RunOptions, Runner
from mmtrack.measure.benchmark_stats import BenchmarkStats

KERNEL_NS = 500_000  # 0.5 ms of device work per operation
CHUNK = 4
SAMPLES = 8
OPTIONS = RunOptions(warm_up=1e-3, duration=1.0, min_samples=SAMPLES, max_samples=SAMPLES)


def device_ms(cuda: StandInCuda, chunk: int = CHUNK) -> float:
    """The model's exact device time of one sample: first launch, then the kernels."""
    return (cuda.launch_ns + chunk * KERNEL_NS) / 1e6


def run(cuda: StandInCuda, fn=None, **backend_options) -> tuple[BenchmarkStats, list[CudaEventBackend]]:
    made: list[CudaEventBackend] = []

    def backend() -> CudaEventBackend:
        backend_options.setdefault("nvml", False)
        made.append(CudaEventBackend(api=cuda, clock=cuda.clock, **backend_options))
        return made[-1]

    def kernels(ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            cuda.kernel(KERNEL_NS)

    spec = BenchSpec(
        name="standin_kernel",
        fn=fn or kernels,
        domain=MeasurementDomain.GPU,
        chunk_size=CHUNK,
        backend=backend,
    )
    return Runner(spec, OPTIONS, clock=cuda.clock).run(), made


def metric(stats: BenchmarkStats, name: str):
    found = [m for m in list(stats.metrics) + list(stats.diagnostics) if m.name == name]
    return found[0] if found else None


# -- timing --------------------------------------------------------------------------------
def test_device_time_is_the_sample_duration_not_host_time():
    cuda = StandInCuda()
    stats, _ = run(cuda)
    expected = device_ms(cuda) / 1e3
    assert stats.durations == pytest.approx([expected] * SAMPLES)
    # the runner's host span covers only the launches, which the device time does not equal
    assert stats.host_durations == pytest.approx([CHUNK * cuda.launch_ns * 1e-9] * SAMPLES)
    assert stats.latency.median == pytest.approx(expected / CHUNK)
    assert stats.measurement_label == "timing + CUDA events"
    assert stats.emits_cpu_diagnostics is False


def test_event_and_overhead_metrics():
    cuda = StandInCuda()
    stats, _ = run(cuda)
    event = metric(stats, "cuda_event_ms")
    assert event.unit == "ms" and event.count == SAMPLES
    assert event.median == pytest.approx(device_ms(cuda))
    overhead = metric(stats, "host_overhead_ms")
    # host span = device time + the wait for the stop event; overhead is that wait
    assert overhead.values == pytest.approx([cuda.sync_ns / 1e6] * SAMPLES)
    assert overhead.direction is Direction.LOWER
    assert metric(stats, "gpu_gib_s") is None and metric(stats, "gpu_tflops") is None
    assert metric(stats, "cuda_error_code") is None


def test_bandwidth_and_tflops_come_from_device_time_and_ops():
    cuda = StandInCuda()
    stats, _ = run(cuda, bytes_per_op=3 * 2**20, flops_per_op=2 * 1024**3)
    seconds = device_ms(cuda) / 1e3
    gib = metric(stats, "gpu_gib_s")
    assert gib.unit == "GiB/s" and gib.direction is Direction.HIGHER
    assert gib.median == pytest.approx(3 * 2**20 * CHUNK / GIB / seconds)
    tflops = metric(stats, "gpu_tflops")
    assert tflops.unit == "TFLOP/s" and tflops.direction is Direction.HIGHER
    assert tflops.median == pytest.approx(2 * 1024**3 * CHUNK / 1e12 / seconds)


def test_default_stream_is_cupys_current_stream_at_each_begin():
    cuda = StandInCuda()
    other = type(cuda.default_stream)("user stream")

    def switch_streams(ctx, chunk_size, chunk_num):
        # the sample runs on whatever stream was current at begin; changing the current
        # stream mid-sample must not split the start and stop events across streams
        for _ in range(chunk_size):
            cuda.kernel(KERNEL_NS)
        cuda.current = other if cuda.current is cuda.default_stream else cuda.default_stream

    run(cuda, fn=switch_streams)
    records = cuda.ops("record")
    pairs = list(zip(records[0::2], records[1::2]))
    assert len(pairs) == SAMPLES + 1  # one warm-up sample
    used = [start_stream for (_, start_stream), (_, stop_stream) in pairs if start_stream is stop_stream]
    assert len(used) == len(pairs)
    assert {s.name for s in used} == {"default", "user stream"}
    assert [s.name for s in used[:3]] == ["default", "user stream", "default"]


def test_an_explicit_stream_is_used_whatever_is_current():
    cuda = StandInCuda()
    mine = type(cuda.default_stream)("explicit")
    run(cuda, stream=mine)
    assert {stream.name for _, stream in cuda.ops("record")} == {"explicit"}


def test_negative_or_non_finite_options_are_refused():
    with pytest.raises(ValueError, match="bytes_per_op"):
        CudaEventBackend(bytes_per_op=-1, api=StandInCuda(), nvml=False)
    with pytest.raises(ValueError, match="flops_per_op"):
        CudaEventBackend(flops_per_op=math.nan, api=StandInCuda(), nvml=False)
    with pytest.raises(ValueError, match="bytes_per_op"):
        CudaEventBackend(bytes_per_op=math.inf, api=StandInCuda(), nvml=False)
    backend = CudaEventBackend(bytes_per_op=np.int64(4096), api=StandInCuda(), nvml=False)
    assert backend.bytes_per_op == 4096.0


# -- cold mode -----------------------------------------------------------------------------
def test_cold_mode_flushes_a_queried_l2_sized_buffer_before_each_sample_outside_the_timing():
    hot_cuda = StandInCuda(l2_bytes=7 * 2**20)
    hot, _ = run(hot_cuda)
    cuda = StandInCuda(l2_bytes=7 * 2**20)
    cold, made = run(cuda, flush_l2=True)

    assert cuda.calls["l2_cache_bytes"] == 1  # queried from the device, once
    assert cuda.ops("alloc") == [FLUSH_FACTOR * 7 * 2**20]
    assert made[0].flush_bytes >= made[0].l2_bytes == 7 * 2**20
    memsets = cuda.ops("memset")
    assert len(memsets) == SAMPLES + 1 and all(n == FLUSH_FACTOR * 7 * 2**20 for n, _ in memsets)
    # order per sample: memset, wait for it, start event, kernels, stop event
    order = [op for op, _ in cuda.log if op not in ("kernel", "alloc")]
    per_sample = ["memset", "stream_synchronize", "record", "record", "synchronize"]
    assert order == per_sample * (SAMPLES + 1)
    # the flush (2 * 7 MiB at 1 TB/s = 14.7 us) is not in the device time, nor in the overhead
    assert cold.durations == pytest.approx(hot.durations)
    assert metric(cold, "host_overhead_ms").values == pytest.approx(metric(hot, "host_overhead_ms").values)
    assert "cold L2: 14 MiB written before each sample (L2 7 MiB)" in cold.notes[0]


def test_cold_mode_on_a_device_without_l2_flushes_nothing_and_says_so():
    cuda = StandInCuda(l2_bytes=0)
    stats, _ = run(cuda, flush_l2=True)
    assert cuda.ops("alloc") == [] and cuda.ops("memset") == []
    assert "reports no L2 cache" in stats.notes[0]


# -- CUDA errors ---------------------------------------------------------------------------
def test_an_elapsed_time_error_marks_that_sample_and_the_run_goes_on():
    cuda = StandInCuda()
    cuda.fail("elapsed_ms", 600, lambda n: n == 4)  # warm-up is call 1, so sample index 2
    stats, _ = run(cuda)
    errors = metric(stats, "cuda_error_code")
    assert errors.count == 1 and errors.values == (600.0,)
    assert errors.format is MetricFormat.INTEGER and errors.direction is Direction.NEUTRAL
    assert metric(stats, "cuda_event_ms").count == SAMPLES - 1
    # that one sample took the backend's synchronized host span: device time + the wait
    assert stats.durations[2] == pytest.approx(device_ms(cuda) / 1e3 + cuda.sync_ns * 1e-9)
    assert [d for i, d in enumerate(stats.durations) if i != 2] == pytest.approx([device_ms(cuda) / 1e3] * 7)
    assert "CUDA error in 1 of 9 samples" in stats.notes[0] and "600" in stats.notes[0]


def test_a_sticky_error_at_synchronize_marks_every_later_sample():
    cuda = StandInCuda()
    cuda.fail("synchronize", 700, lambda n: n >= 6)  # an illegal address stays with the context
    stats, _ = run(cuda)
    assert metric(stats, "cuda_error_code").values == (700.0,) * 4
    assert metric(stats, "cuda_event_ms").count == 4
    # elapsed time is never asked for a sample whose stop event failed
    assert cuda.calls["elapsed_ms"] == 5
    assert len(stats.durations) == SAMPLES


def test_a_failed_start_event_skips_the_stop_event_for_that_sample():
    cuda = StandInCuda()
    cuda.fail("record", 709, lambda n: n == 1)  # the warm-up sample's start event
    stats, made = run(cuda)
    # without a start event the sample took the runner's host time (launches only),
    # far under the warm-up budget, so warm-up ran one more sample
    samples = made[0]._samples
    assert samples == SAMPLES + 2
    assert cuda.calls["record"] == 2 * samples - 1
    assert metric(stats, "cuda_error_code") is None  # warm-up samples are discarded
    assert f"CUDA error in 1 of {samples} samples" in stats.notes[0]


def test_a_failing_flush_is_a_cuda_error_of_that_sample():
    cuda = StandInCuda(l2_bytes=2**20)
    cuda.fail("memset", 2, lambda n: n == 3)
    stats, _ = run(cuda, flush_l2=True)
    assert metric(stats, "cuda_error_code").values == (2.0,)
    # no start event was recorded: that sample (index 1; call 1 was warm-up) took the runner's host time
    assert stats.durations[1] == pytest.approx(CHUNK * cuda.launch_ns * 1e-9)
    assert stats.durations[0] == stats.durations[2] == pytest.approx(device_ms(cuda) / 1e3)


def test_an_exception_that_is_not_a_cuda_error_propagates_and_the_backend_is_closed():
    cuda = StandInCuda()
    clocks = StandInClocks([1980.0])

    def broken_record(event, stream):
        raise TypeError("stream must be a cupy.cuda.Stream")

    cuda.record = broken_record
    with pytest.raises(TypeError, match="cupy.cuda.Stream"):
        run(cuda, nvml=clocks)
    assert clocks.closed == 1


def test_error_codes_do_not_mix_into_timing_statistics():
    cuda = StandInCuda()
    cuda.fail("elapsed_ms", 600, lambda n: n % 2 == 0)
    stats, _ = run(cuda)
    event = metric(stats, "cuda_event_ms")
    assert event.values == pytest.approx([device_ms(cuda)] * event.count)
    assert metric(stats, "cuda_error_code").count + event.count == SAMPLES


# -- NVML diagnostics ------------------------------------------------------------------------
def test_nvml_readings_flag_samples_below_75_percent_of_the_default_clock():
    cuda = StandInCuda()
    plain, _ = run(StandInCuda())
    # one reading per sample end; the first belongs to the discarded warm-up sample
    clocks = StandInClocks([1980, 1980, 1485, 1484, 990, 1980, 1700, 1980, 1980], reasons=[0, 0, 0, 4, 0x44, 0])
    stats, _ = run(cuda, nvml=clocks)
    below = metric(stats, "clock_below_75pct")
    assert below.section == "nvml" and below.format is MetricFormat.INTEGER
    assert below.values == (0, 0, 1, 1, 0, 0, 0, 0)
    sm = metric(stats, "sm_clock_mhz")
    assert sm.values == (1980, 1485, 1484, 990, 1980, 1700, 1980, 1980) and sm.direction is Direction.NEUTRAL
    reasons = metric(stats, "clock_event_reasons")
    assert reasons.values == (0, 0, 4, 0x44, 0, 0, 0, 0)
    # diagnostics never enter the timing
    assert stats.durations == plain.durations
    assert "NVML: 2 of 9 samples below 75% of the 1980 MHz default SM clock" in stats.notes[0]
    assert "sw_power_cap, hw_thermal_slowdown" in stats.notes[0]
    assert clocks.closed == 1


def test_a_failing_nvml_read_turns_diagnostics_off_and_keeps_the_timing():
    cuda = StandInCuda()
    clocks = StandInClocks([1980.0], fail_after=3)
    stats, _ = run(cuda, nvml=clocks)
    assert metric(stats, "sm_clock_mhz").count == 2
    assert metric(stats, "cuda_event_ms").count == SAMPLES
    assert clocks.closed == 1 and clocks.reads == 4
    assert "NVML diagnostics stopped: RuntimeError: NVML_ERROR_GPU_IS_LOST" in stats.notes[0]


def test_describe_names_the_device():
    cuda = StandInCuda()
    stats, made = run(cuda)
    assert stats.notes == ["CUDA events on device 0 (Stand-in GPU)"]
    assert made[0].api is cuda


def test_the_runner_reports_the_backend_in_the_terminal_report():
    from rich.console import Console

    from mmtrack.measure.report import render_stats

    stats, _ = run(StandInCuda(), bytes_per_op=2**20)
    console = Console(width=160, record=True)
    console.print(render_stats(stats))
    text = console.export_text()
    assert "timing + CUDA events" in text
    assert "cuda_event_ms" in text and "gpu_gib_s" in text and "host_overhead_ms" in text


def test_standin_error_is_a_runtime_error_like_cupys():
    assert issubclass(StandInCudaError, RuntimeError)
