"""custom_backend: your own measurement backend, here a simulated CUDA-event backend.

A backend runs around every sample: ``begin`` before the bench call, ``end``
after, then ``collect`` decides what the sample's duration means and may push
metrics. This one needs no CUDA: its "device clock" is the thread's CPU time
(``time.thread_time_ns``), so ``cuda_event_ms`` is real CPU time and
``host_overhead_ms`` is wall time the thread spent off the CPU. It pushes the
same metrics as ``CudaEventBackend``; the bench adds ``tflops``; all three appear
in one custom-metric table, and the Measurement row reads ``timing + CUDA events``.
"""

import time

import mmtrack
from mmtrack import BenchSampleResult, MeasurementBackend, MetricValue

N = 16
FLOPS = 2 * N**3


class SimulatedCudaEventBackend(MeasurementBackend):
    def begin(self):
        self._start = time.thread_time_ns()

    def end(self):
        self._stop = time.thread_time_ns()

    def collect(self, host_elapsed, ops, chunk_index, results, metrics):
        device = (self._stop - self._start) * 1e-9
        results.duration = device  # the device clock defines the sample's duration
        results.iterations = ops
        results.chunks_executed = 1
        metrics.append(MetricValue.duration_ms("cuda_event_ms", device))
        metrics.append(MetricValue.duration_ms("host_overhead_ms", max(host_elapsed - device, 0.0)))

    @property
    def measurement_label(self):
        return "timing + CUDA events"

    @property
    def emits_cpu_diagnostics(self):
        return False


class CustomBackend:
    def setup(self):
        self.a = [[float(i ^ j) for j in range(N)] for i in range(N)]

    @mmtrack.bench_sample(backend=SimulatedCudaEventBackend, domain="gpu", chunk_size=250)
    def track_simulated_gemm(self, ctx, chunk_size, chunk_num):
        a = self.a
        cols = list(zip(*a))
        start = time.thread_time_ns()
        for _ in range(chunk_size):
            [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]
        seconds = (time.thread_time_ns() - start) * 1e-9
        return BenchSampleResult(chunk_size).push_metric(
            MetricValue.throughput_tflops("tflops", FLOPS * chunk_size, seconds)
        )
