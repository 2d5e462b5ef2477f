"""What a worker process per case costs: start-up time of one ``mmtrack bench`` case, in ms.

Run with ``python3 -m mmtrack bench benchmarks -b worker``.

One operation runs the same tiny case (``Tiny.track_tiny``: one sample of a no-op, no warm-up
to speak of) twice, interleaved, so both see the same machine state:

- **in_process_case_ms**: ``SuiteSession.run_case`` in this process (``--in-process``);
- **worker_case_ms**: :func:`mmtrack.asvbridge.worker.run_in_worker`, the default: start a worker
  from the fork server, import the benchmark's module there, run the case, send the outcome back.

``worker_startup_ms`` is their difference per operation: the per-case price of isolation. The
sample loop itself runs unchanged inside the worker (see bench_harness.py for per-sample cost).
"""

import time
from pathlib import Path

import mmtrack
from mmtrack import BenchSampleResult, MetricValue

TINY = dict(warm_up=1e-4, duration=1e-4, min_samples=1, max_samples=1, target_chunk=1e-4, pin_cpu=False)


class Tiny:
    @mmtrack.bench(chunk_size=1)
    def track_tiny(self, ctx, chunk_size, chunk_num):
        pass


class Worker:
    timeout = 600

    def setup(self):
        from mmtrack.asvbridge import worker
        from mmtrack.asvbridge.discover import discover
        from mmtrack.asvbridge.session import SuiteSession, expand
        from mmtrack.measure.runner import RunOptions

        suite = discover(Path(__file__))
        (self.case,) = expand(suite.select(r"Tiny\.track_tiny$"))
        options = RunOptions(**TINY)
        self.job = worker.case_job(self.case, options)
        self.run_in_worker = worker.run_in_worker
        self.session = SuiteSession(options)
        self.run_in_worker(self.job, 60)  # the fork server starts once per run: not a per-case cost

    @mmtrack.bench_sample(chunk_size=1)
    def track_worker_startup(self, ctx, chunk_size, chunk_num):
        pc = time.perf_counter
        t0 = pc()
        here = self.session.run_case(self.case)
        t1 = pc()
        there = self.run_in_worker(self.job, 60)
        t2 = pc()
        assert here.status.value == "ok" and not there.error, there.error
        result = BenchSampleResult(1)
        result.push_metric(MetricValue("in_process_case_ms", (t1 - t0) * 1e3, "ms"))
        result.push_metric(MetricValue("worker_case_ms", (t2 - t1) * 1e3, "ms"))
        result.push_metric(MetricValue("worker_startup_ms", max((t2 - t1) - (t1 - t0), 1e-6) * 1e3, "ms"))
        return result
