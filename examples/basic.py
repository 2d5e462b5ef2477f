"""basic: the smallest engine benchmark, reported in bytes/s.

One operation is one CRC-32 over a 4 KiB block; ``chunk_size`` operations run
per sample and the runner calibrates ``chunk_size`` to about 50 ms.
"""

import zlib

import mmtrack

BLOCK = 4096


class Basic:
    def setup(self):
        self.block = bytes(range(256)) * (BLOCK // 256)

    @mmtrack.bench(throughput=mmtrack.Throughput.bytes(BLOCK))
    def track_crc32(self, ctx, chunk_size, chunk_num):
        crc = 0
        block = self.block
        for _ in range(chunk_size):
            crc = zlib.crc32(block, crc)
        self.result = crc
