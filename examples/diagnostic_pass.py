"""diagnostic_pass: invasive measurements in a replay pass that never touches the timing.

tracemalloc slows every allocation, so measuring peak memory while timing would
falsify the timing. A diagnostic pass replays the benchmark after the timed
samples; its metrics join the custom-metric table but not the timing
statistics. A pass that raises ``DiagnosticError`` is reported, not fatal.
"""

import tracemalloc

import mmtrack
from mmtrack import DiagnosticResult, MetricValue


def build_records(n):
    return [{"id": i, "name": f"row{i}", "tags": [i, i + 1]} for i in range(n)]


class DiagnosticPass:
    def peak_memory(self, ctx, chunk_size, chunk_num):
        tracemalloc.start()
        try:
            build_records(chunk_size)
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return DiagnosticResult("memory").push_metric(
            MetricValue.integer("peak_bytes_per_op", peak // chunk_size, "bytes")
        )

    @mmtrack.bench(chunk_size=200_000, diagnostic=peak_memory, diagnostic_samples=2,
                   throughput=mmtrack.Throughput.per_operation(1, "records"))
    def track_build_records(self, ctx, chunk_size, chunk_num):
        build_records(chunk_size)
