"""custom_metrics: per-sample metrics returned by the benchmark itself.

``@mmtrack.bench_sample`` functions return a ``BenchSampleResult``: the number of
operations plus any metrics. Each metric is aggregated per (section, name, unit)
into mean, median, p95, min, max and count, and shown beside the timing.
``MetricValue.integer`` marks ids and counts: they print without decimals.
"""

import time

import mmtrack
from mmtrack import BenchSampleResult, MetricValue

N = 24
FLOPS_PER_MATMUL = 2 * N**3


def matmul(a, b):
    cols = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]


class CustomMetrics:
    def setup(self):
        self.a = [[float((i + j) % 5) for j in range(N)] for i in range(N)]

    @mmtrack.bench_sample(chunk_size=100)
    def track_matmul(self, ctx, chunk_size, chunk_num):
        start = time.perf_counter()
        for _ in range(chunk_size):
            matmul(self.a, self.a)
        elapsed = time.perf_counter() - start
        # A tuned library picks an algorithm per call; here it alternates by sample.
        algo = chunk_num % 3
        return (
            BenchSampleResult(chunk_size)
            .push_metric(MetricValue.duration_ms("matmul_ms", elapsed / chunk_size))
            .push_metric(MetricValue.throughput_tflops("tflops", FLOPS_PER_MATMUL * chunk_size, elapsed))
            .push_metric(MetricValue.integer("algo_id", algo, "id").with_display_name("selected algorithm"))
        )
