#!/usr/bin/env python3
"""Check CudaEventBackend against independent GPU timings on a real CUDA device.

Run from the repository root on a machine with CUDA and CuPy::

    python3 -m scripts.gpu_check

It measures, with the real backend through the real engine runner:

1. a device-to-device copy (cudaMemcpyAsync, 1 GiB): median ``cuda_event_ms`` against
   ``cupyx.profiler.benchmark``'s GPU time of the same call (target: within 3%), and the
   backend's ``gpu_gib_s`` against the device's copy rate measured bandwidthTest-style
   (events around a batch of back-to-back copies; target: within 10%);
2. a GEMM (float32 matmul, 4096²): median ``cuda_event_ms`` against cupyx (within 3%);
3. an in-place elementwise kernel on a buffer of a quarter of L2: cold mode
   (``flush_l2=True``) against hot (target: cold median at least 5% slower).

It prints a short table and exits 0 when every target is met, 1 when one is missed,
and 3 (one line) when there is no CuPy or no CUDA device. It runs in well under a minute.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

EXIT_OK = 0
EXIT_MISSED = 1
EXIT_NO_GPU = 3

TIME_TOLERANCE = 0.03  # median cuda_event_ms vs cupyx GPU time
BANDWIDTH_TOLERANCE = 0.10  # gpu_gib_s vs measured device copy rate
COLD_MIN_RATIO = 1.05  # cold median / hot median on an L2-resident kernel

COPY_BYTES = 2**30  # 1 GiB: a few µs of launch gap stay well under 1% of the copy
GEMM_N = 4096


@dataclass(frozen=True, slots=True)
class Check:
    """One target: a measured value against a reference value."""

    name: str
    measured: float
    reference: float
    unit: str
    target: str
    passed: bool

    @property
    def ratio(self) -> float:
        return self.measured / self.reference if self.reference else math.nan


def check_within(name: str, measured: float, reference: float, tolerance: float, unit: str) -> Check:
    """Passes when ``measured`` is within ``tolerance`` (relative) of ``reference``."""
    ok = reference > 0 and math.isfinite(measured) and abs(measured / reference - 1.0) <= tolerance
    return Check(name, measured, reference, unit, f"within {tolerance:.0%}", ok)


def check_slower(name: str, cold: float, hot: float, min_ratio: float, unit: str) -> Check:
    """Passes when ``cold`` is at least ``min_ratio`` times ``hot``."""
    ok = hot > 0 and math.isfinite(cold) and cold / hot >= min_ratio
    return Check(name, cold, hot, unit, f"ratio >= {min_ratio:g}", ok)


def render_table(checks: Sequence[Check], info: Sequence[tuple[str, str]] = ()) -> str:
    """A plain-text table, one line per check, then ``key: value`` info lines."""
    header = ("check", "mmtrack", "reference", "ratio", "target", "result")
    rows = [header] + [
        (
            c.name,
            f"{c.measured:.4g} {c.unit}",
            f"{c.reference:.4g} {c.unit}",
            f"{c.ratio:.3f}",
            c.target,
            "ok" if c.passed else "MISSED",
        )
        for c in checks
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.extend(f"{k}: {v}" for k, v in info)
    return "\n".join(lines)


def exit_code(checks: Sequence[Check]) -> int:
    return EXIT_OK if checks and all(c.passed for c in checks) else EXIT_MISSED


# -- the measurements (need CuPy and a GPU) -------------------------------------------------
def _median_metric(stats: Any, name: str) -> float:
    for m in stats.metrics:
        if m.name == name:
            return m.median
    raise RuntimeError(f"{stats.name}: no {name!r} metric; CUDA errors: "
                       f"{[m.values for m in stats.metrics if m.name == 'cuda_error_code']}")


def run_backend(name: str, call: Callable[[], Any], **backend_options: Any) -> Any:
    """One call per sample, timed by the real CudaEventBackend through the real runner."""
    from mmtrack.measure.backend import MeasurementDomain
    from mmtrack.measure.cuda import CudaEventBackend
    from mmtrack.measure.runner import BenchSpec, Runner, RunOptions

    def fn(ctx: Any, chunk_size: int, chunk_num: int) -> None:
        for _ in range(chunk_size):
            call()

    spec = BenchSpec(
        name=name,
        fn=fn,
        domain=MeasurementDomain.GPU,
        chunk_size=1,
        backend=lambda: CudaEventBackend(**backend_options),
    )
    options = RunOptions(warm_up=0.3, duration=1.0, min_samples=50, max_samples=200)
    return Runner(spec, options).run()


def cupyx_gpu_ms(call: Callable[[], Any], n_repeat: int = 200) -> float:
    from cupyx.profiler import benchmark

    result = benchmark(call, n_repeat=n_repeat, n_warmup=10)
    return float(statistics.median(result.gpu_times[0])) * 1e3  # seconds -> ms


def device_copy_gib_s(cupy: Any, dst: Any, src: Any, nbytes: int, batch: int = 20, repeats: int = 5) -> float:
    """The copy rate bandwidthTest reports: events around ``batch`` back-to-back copies."""
    stream = cupy.cuda.get_current_stream()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    rates = []
    for _ in range(repeats):
        start.record(stream)
        for _ in range(batch):
            dst.data.copy_from_device_async(src.data, nbytes, stream)
        stop.record(stream)
        stop.synchronize()
        seconds = cupy.cuda.get_elapsed_time(start, stop) * 1e-3
        rates.append(2 * nbytes * batch / seconds / 2**30)  # read + write, as bandwidthTest counts D2D
    return float(statistics.median(rates))


def measure() -> tuple[list[Check], list[tuple[str, str]]]:
    import cupy

    from mmtrack.measure.cuda import CupyCudaApi

    api = CupyCudaApi()
    info = [("device", f"{api.device_id} {api.device_name()}"), ("L2", f"{api.l2_cache_bytes() / 2**20:.0f} MiB"),
            ("cupy", cupy.__version__)]
    checks: list[Check] = []

    # 1. device-to-device copy
    src = cupy.ones(COPY_BYTES, dtype=cupy.uint8)
    dst = cupy.empty_like(src)
    stream = cupy.cuda.get_current_stream()

    def copy() -> None:
        dst.data.copy_from_device_async(src.data, COPY_BYTES, stream)

    stats = run_backend("d2d_copy", copy, bytes_per_op=2 * COPY_BYTES)
    checks.append(check_within("copy: median cuda_event_ms vs cupyx", _median_metric(stats, "cuda_event_ms"),
                               cupyx_gpu_ms(copy), TIME_TOLERANCE, "ms"))
    checks.append(check_within("copy: gpu_gib_s vs device copy rate", _median_metric(stats, "gpu_gib_s"),
                               device_copy_gib_s(cupy, dst, src, COPY_BYTES), BANDWIDTH_TOLERANCE, "GiB/s"))
    src = dst = None  # free the device memory before the next check (the closure is done)

    # 2. GEMM
    a = cupy.random.random((GEMM_N, GEMM_N), dtype=cupy.float32)
    b = cupy.random.random((GEMM_N, GEMM_N), dtype=cupy.float32)
    c = cupy.empty_like(a)

    def gemm() -> None:
        cupy.matmul(a, b, out=c)

    stats = run_backend("gemm", gemm, flops_per_op=2 * GEMM_N**3)
    checks.append(check_within("gemm: median cuda_event_ms vs cupyx", _median_metric(stats, "cuda_event_ms"),
                               cupyx_gpu_ms(gemm), TIME_TOLERANCE, "ms"))
    info.append(("gemm gpu_tflops (median)", f"{_median_metric(stats, 'gpu_tflops'):.2f} TFLOP/s"))
    a = b = c = None  # likewise

    # 3. cold vs hot L2 on data that fits in L2
    n = max(api.l2_cache_bytes() // 4 // 4, 1024)  # float32 elements filling a quarter of L2
    x = cupy.zeros(n, dtype=cupy.float32)

    def touch() -> None:
        cupy.add(x, 1.0, out=x)

    hot = _median_metric(run_backend("l2_hot", touch), "cuda_event_ms")
    cold_stats = run_backend("l2_cold", touch, flush_l2=True)
    checks.append(check_slower("l2 kernel: cold vs hot median", _median_metric(cold_stats, "cuda_event_ms"), hot,
                               COLD_MIN_RATIO, "ms"))
    info.append(("cold mode", cold_stats.notes[0] if cold_stats.notes else "-"))
    return checks, info


def main(argv: Sequence[str] | None = None) -> int:
    from mmtrack.measure.cuda import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason is not None:
        print(f"gpu_check: no GPU to check: {reason}")
        return EXIT_NO_GPU
    checks, info = measure()
    print(render_table(checks, info))
    code = exit_code(checks)
    if code:
        print(f"gpu_check: {sum(not c.passed for c in checks)} of {len(checks)} targets missed")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
