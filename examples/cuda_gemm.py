"""cuda_gemm: a float32 GEMM timed with CUDA events, reported in TFLOP/s.

``flops_per_op`` makes ``CudaEventBackend`` report ``gpu_tflops`` from the
device time (one n×n×n GEMM is 2n³ floating-point operations). The second
declaration runs the same GEMM in cold mode: before each sample, outside the
timed window, the backend writes a buffer twice the size of the device's L2
(queried from the device), so no operand starts in cache.

Without CuPy or a CUDA device, ``setup`` raises NotImplementedError and the case
is reported as skipped with the one-line reason.
"""

import mmtrack
from mmtrack.measure.cuda import CudaEventBackend, cuda_unavailable_reason

N = 2048
FLOPS = 2 * N**3


class CudaGemm:
    def setup(self):
        reason = cuda_unavailable_reason()
        if reason is not None:
            raise NotImplementedError(reason)
        import cupy

        self.a = cupy.random.random((N, N), dtype=cupy.float32)
        self.b = cupy.random.random((N, N), dtype=cupy.float32)
        self.c = cupy.empty_like(self.a)

    def _gemm(self, chunk_size):
        import cupy

        for _ in range(chunk_size):
            cupy.matmul(self.a, self.b, out=self.c)

    @mmtrack.bench(
        domain="gpu",
        chunk_size=5,
        throughput=mmtrack.Throughput.per_operation(FLOPS, "flop"),
        backend=lambda: CudaEventBackend(flops_per_op=FLOPS),
    )
    def track_sgemm(self, ctx, chunk_size, chunk_num):
        self._gemm(chunk_size)

    @mmtrack.bench(
        domain="gpu",
        chunk_size=1,
        throughput=mmtrack.Throughput.per_operation(FLOPS, "flop"),
        backend=lambda: CudaEventBackend(flops_per_op=FLOPS, flush_l2=True),
    )
    def track_sgemm_cold(self, ctx, chunk_size, chunk_num):
        self._gemm(chunk_size)
