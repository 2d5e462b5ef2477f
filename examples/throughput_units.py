"""throughput_units: report a rate in the unit your users think in (lines/s).

One operation parses one CSV document of 100 lines, so throughput is
``Throughput.per_operation(100, "lines")`` and the report reads ``lines/s``.
asv ``params`` work as usual: each value is its own case.
"""

import csv
import io

import mmtrack

LINES = 100


class ThroughputUnits:
    params = [4, 16]
    param_names = ["columns"]

    def setup(self, columns):
        row = ",".join(f"field{i}" for i in range(columns))
        self.document = "\n".join([row] * LINES)

    @mmtrack.bench(throughput=mmtrack.Throughput.per_operation(LINES, "lines"))
    def track_parse_csv(self, ctx, chunk_size, chunk_num):
        document = self.document
        for _ in range(chunk_size):
            for _row in csv.reader(io.StringIO(document)):
                pass
