"""bench_import: what ``import mmtrack`` costs a fresh interpreter.

One operation is one ``python -c "import mmtrack"`` in a subprocess, so the
timing includes interpreter start-up. The child also reports two custom
metrics: ``import_ms``, the import alone, and ``modules_loaded``, how many
modules the import pulled in: a deterministic count that jumps when someone
makes ``import mmtrack`` load SQLAlchemy, plotly or CuPy eagerly.
"""

import os
import subprocess
import sys
from pathlib import Path

import mmtrack
from mmtrack import BenchSampleResult, MetricValue

CHILD = (
    "import sys, time; before = set(sys.modules); t = time.perf_counter(); import mmtrack; "
    "dt = time.perf_counter() - t; print(dt, len(set(sys.modules) - before), mmtrack.__file__)"
)


class ImportTime:
    timeout = 300

    def setup(self):
        # The child imports the very mmtrack this benchmark imported (the working tree under asv).
        root = str(Path(mmtrack.__file__).resolve().parents[1])
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self.expected = str(Path(mmtrack.__file__).resolve())

    @mmtrack.bench_sample(chunk_size=1)
    def track_import_mmtrack(self, ctx, chunk_size, chunk_num):
        proc = subprocess.run([sys.executable, "-c", CHILD], env=self.env, capture_output=True, text=True, check=True)
        seconds, modules, where = proc.stdout.split()
        if str(Path(where).resolve()) != self.expected:
            raise RuntimeError(f"the child imported {where}, not {self.expected}")
        return (
            BenchSampleResult(1)
            .push_metric(MetricValue.duration_ms("import_ms", float(seconds)))
            .push_metric(MetricValue.integer("modules_loaded", int(modules), "count"))
        )
