"""gpu_domain: a GPU-style benchmark, with a CPU stand-in for the kernel.

GPU work uses a fixed ``chunk_size`` (launch overhead makes calibration
misleading) and the GPU domain: host CPU counters only describe orchestration,
so no CPU bottleneck diagnostics are printed. With a GPU, pair this with
``CudaEventBackend`` (see cuda_event_backend.py).
"""

import mmtrack


class GpuDomain:
    def setup(self):
        self.matrix = [[float(i * j % 7) for j in range(32)] for i in range(32)]

    @mmtrack.bench(domain=mmtrack.MeasurementDomain.GPU, chunk_size=50,
                   throughput=mmtrack.Throughput.per_operation(2 * 32**3, "flop"))
    def track_stand_in_kernel(self, ctx, chunk_size, chunk_num):
        a = self.matrix
        cols = list(zip(*a))
        for _ in range(chunk_size):
            [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]
