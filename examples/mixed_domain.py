"""mixed_domain: host work and (stand-in) device work in one measured operation.

In the MIXED domain CPU diagnostics are still shown, prefixed ``[host]``, since
the host part is real but is not the whole story.
"""

import hashlib

import mmtrack


class MixedDomain:
    def setup(self):
        self.payload = bytes(16384)

    @mmtrack.bench(domain="mixed", throughput=mmtrack.Throughput.bytes(16384))
    def track_hash_then_copy(self, ctx, chunk_size, chunk_num):
        payload = self.payload
        for _ in range(chunk_size):
            digest = hashlib.sha256(payload).digest()  # host part
            bytearray(payload)  # stand-in for a host-to-device copy
        self.digest = digest
