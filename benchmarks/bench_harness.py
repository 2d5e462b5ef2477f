"""The engine measuring itself: harness overhead per sample, in ns.

Run with ``python3 -m mmtrack bench benchmarks -k harness``.

One operation is one round of three blocks timed side by side, each
``chunk_size`` iterations long (the runner calibrates ``chunk_size``):

- **bare**: ``t0 = perf_counter_ns(); noop(None, 1, i); t1 = perf_counter_ns()``,
  the least any harness can do around a (no-op) bench call;
- **wall**: ``Runner._sample`` (the engine's real per-sample path: fresh
  context, ``begin``, the two clock reads, ``end``, the operation count,
  ``collect``) with :class:`~mmtrack.WallClockBackend` around the same no-op;
- **perf**: the same with :class:`~mmtrack.measure.perf.LinuxPerfBackend`.

Per sample, ``wallclock_overhead_ns = wall/iteration - bare/iteration`` and
likewise for ``perf_overhead_ns``; the loop's own cost cancels. The report's
median column is the figure to read. Targets: wall clock <= 1000 ns,
perf <= 10000 ns. ``perf_overhead_ns`` is absent where no perf counter opens.
"""

import time

import mmtrack
from mmtrack import BenchSampleResult, MetricValue, WallClockBackend
from mmtrack.measure.runner import BenchSpec, RunOptions, Runner


def _noop(ctx, chunk_size, chunk_num):
    return None


def _runner(backend):
    return Runner(BenchSpec("noop", _noop, backend=backend, chunk_size=1), RunOptions(pin_cpu=False))


class Harness:
    def setup(self):
        from mmtrack.measure.perf import LinuxPerfBackend, PerfUnavailable

        self.wall = _runner(WallClockBackend)
        try:
            self.perf = _runner(LinuxPerfBackend)
        except PerfUnavailable:
            self.perf = None

    def teardown(self):
        self.wall.backend.close()
        if self.perf is not None:
            self.perf.backend.close()

    @mmtrack.bench_sample()
    def track_harness_overhead(self, ctx, chunk_size, chunk_num):
        pc = time.perf_counter_ns
        noop = _noop
        loop = range(chunk_size)

        start = pc()
        for i in loop:
            t0 = pc()
            noop(None, 1, i)
            t1 = pc()
        bare = (pc() - start) / chunk_size

        sample = self.wall._sample
        start = pc()
        for i in loop:
            sample(1, i)
        wall = (pc() - start) / chunk_size

        result = BenchSampleResult(1).push_metric(MetricValue("bare_pair_ns", bare, "ns"))
        result.push_metric(MetricValue("wallclock_overhead_ns", max(wall - bare, 1e-3), "ns"))
        if self.perf is not None:
            sample = self.perf._sample
            start = pc()
            for i in loop:
                sample(1, i)
            perf = (pc() - start) / chunk_size
            result.push_metric(MetricValue("perf_overhead_ns", max(perf - bare, 1e-3), "ns"))
        del t0, t1
        return result
