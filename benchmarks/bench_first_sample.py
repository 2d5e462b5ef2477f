"""bench_first_sample: how soon ``mmtrack bench`` takes its first sample after launch.

One operation is one ``python -m mmtrack bench`` of a one-benchmark suite in a fresh
process (``--quick --no-save --compare none``). The suite's benchmark writes the wall
time of its first call (calibration's first chunk: the first time mmtrack times user code)
to a file; the parent subtracts its own launch time. Custom metrics:

- ``first_sample_ms``: launch to first timed call;
- ``interpreter_ms``: ``python -c pass`` measured right before, side by side, so the
  share that is the interpreter's own start-up (site, .pth files) is visible;
- ``modules_at_first_sample``: modules loaded when the first sample starts, a deterministic
  count that jumps when someone imports scipy, SQLAlchemy or rich tables before sampling.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mmtrack
from mmtrack import BenchSampleResult, MetricValue

SUITE = '''
import os, sys, time
import mmtrack

class One:
    @mmtrack.bench()
    def track_first(self, ctx, chunk_size, chunk_num):
        path = os.environ["MMTRACK_FIRST_SAMPLE_FILE"]
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(f"{time.time()!r} {len(sys.modules)} {mmtrack.__file__}")
        sum(range(100))
'''


class FirstSample:
    timeout = 600

    def setup(self):
        root = str(Path(mmtrack.__file__).resolve().parents[1])
        self.expected = str(Path(mmtrack.__file__).resolve())
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        (self.dir / "benchmarks").mkdir()
        (self.dir / "benchmarks" / "bench_one.py").write_text(SUITE)
        self.marker = self.dir / "first"
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
            "MMTRACK_FIRST_SAMPLE_FILE": str(self.marker),
            "MMTRACK_DB": str(self.dir / "unused.db"),
        }

    def teardown(self):
        self.tmp.cleanup()

    @mmtrack.bench_sample(chunk_size=1)
    def track_first_sample(self, ctx, chunk_size, chunk_num):
        t0 = time.time()
        subprocess.run([sys.executable, "-c", "pass"], env=self.env, check=True)
        interpreter = time.time() - t0
        self.marker.unlink(missing_ok=True)
        launched = time.time()
        subprocess.run(
            [sys.executable, "-m", "mmtrack", "bench", "benchmarks", "--quick", "--no-save", "--compare", "none"],
            cwd=self.dir, env=self.env, capture_output=True, check=True,
        )
        first, modules, where = self.marker.read_text().split()
        if str(Path(where).resolve()) != self.expected:
            raise RuntimeError(f"the child ran {where}, not {self.expected}")
        return (
            BenchSampleResult(1)
            .push_metric(MetricValue.duration_ms("first_sample_ms", float(first) - launched))
            .push_metric(MetricValue.duration_ms("interpreter_ms", interpreter))
            .push_metric(MetricValue.integer("modules_at_first_sample", int(modules), "count"))
        )
