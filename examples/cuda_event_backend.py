"""cuda_event_backend: a device-to-device copy timed with CUDA events, in GiB/s.

``CudaEventBackend`` records a CUDA event before and after each sample on CuPy's
current stream and uses the device elapsed time as the sample's duration, so
launch overhead and host jitter stay out of it (they show up as
``host_overhead_ms``). ``bytes_per_op`` makes it report ``gpu_gib_s``; a copy
reads and writes its bytes, so one copy of N bytes moves 2N (as CUDA's
bandwidthTest counts device-to-device copies). GPU work uses a fixed
``chunk_size``: calibration times host launches, not the device.

Without CuPy or a CUDA device, ``setup`` raises NotImplementedError and the case
is reported as skipped with the one-line reason.
"""

import mmtrack
from mmtrack.measure.cuda import CudaEventBackend, cuda_unavailable_reason

NBYTES = 64 * 2**20  # 64 MiB, well past any L2


class CudaCopy:
    def setup(self):
        reason = cuda_unavailable_reason()
        if reason is not None:
            raise NotImplementedError(reason)
        import cupy

        self.src = cupy.ones(NBYTES, dtype=cupy.uint8)
        self.dst = cupy.empty_like(self.src)

    @mmtrack.bench(
        domain="gpu",
        chunk_size=10,
        throughput=mmtrack.Throughput.bytes(2 * NBYTES),
        backend=lambda: CudaEventBackend(bytes_per_op=2 * NBYTES),
    )
    def track_device_copy(self, ctx, chunk_size, chunk_num):
        import cupy

        stream = cupy.cuda.get_current_stream()
        dst, src = self.dst.data, self.src.data
        for _ in range(chunk_size):
            dst.copy_from_device_async(src, NBYTES, stream)  # cudaMemcpyAsync, device to device

    @mmtrack.bench(
        domain="gpu",
        chunk_size=10,
        throughput=mmtrack.Throughput.bytes(NBYTES),
        backend=lambda: CudaEventBackend(bytes_per_op=NBYTES),
    )
    def track_device_memset(self, ctx, chunk_size, chunk_num):
        import cupy

        stream = cupy.cuda.get_current_stream()
        dst = self.dst.data
        for i in range(chunk_size):
            dst.memset_async(i & 0xFF, NBYTES, stream)  # cudaMemsetAsync: writes only
