"""The engine measuring itself: harness overhead per sample, in ns.

Run with ``python3 -m mmtrack bench benchmarks -b harness``.

One operation is one round of three kinds of timing, interleaved in blocks
of ``BLOCK`` iterations so that all three see the same machine state (the
runner calibrates how many blocks a round holds):

- **bare**: ``t0 = perf_counter_ns(); noop(None, 1, i); t1 = perf_counter_ns()``,
  the least any harness can do around a (no-op) bench call;
- **wall**: ``Runner._sample`` (the engine's real per-sample path: fresh
  context, ``begin``, the two clock reads, ``end``, the operation count,
  ``collect``) with :class:`~mmtrack.WallClockBackend` around the same no-op;
- **perf**: the same with :class:`~mmtrack.measure.perf.LinuxPerfBackend`.

Per block, ``overhead = (harness block - bare block) / BLOCK``; the loop's own
cost cancels. A sample's value is the median over its blocks (a block where the
scheduler preempted the thread is an outlier, not a shift), and the report's
median column over samples is the figure to read. Targets: wall clock
<= 1000 ns, perf <= 10000 ns. ``perf_overhead_ns`` is absent where no perf
counter opens.
"""

import statistics
import time

import mmtrack
from mmtrack import BenchSampleResult, MetricValue, WallClockBackend
from mmtrack.measure.runner import BenchSpec, RunOptions, Runner


BLOCK = 32


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
        inner = range(BLOCK)
        wall_sample = self.wall._sample
        perf_sample = self.perf._sample if self.perf is not None else None
        bare, wall, perf = [], [], []
        for _ in range(max(chunk_size // BLOCK, 1)):
            start = pc()
            for i in inner:
                t0 = pc()
                noop(None, 1, i)
                t1 = pc()
            mid = pc()
            for i in inner:
                wall_sample(1, i)
            stop = pc()
            bare.append(mid - start)
            wall.append(stop - mid)
            if perf_sample is not None:
                for i in inner:
                    perf_sample(1, i)
                perf.append(pc() - stop)
        del t0, t1
        result = BenchSampleResult(1).push_metric(MetricValue("bare_pair_ns", _median(bare) / BLOCK, "ns"))
        result.push_metric(MetricValue("wallclock_overhead_ns", _overhead(wall, bare), "ns"))
        if perf:
            result.push_metric(MetricValue("perf_overhead_ns", _overhead(perf, bare), "ns"))
        return result


def _median(values):
    return statistics.median(values)


def _overhead(harness, bare):
    """Median over blocks of the per-iteration difference (floored at 0.001 ns: metrics are positive)."""
    return max(_median([(h - b) / BLOCK for h, b in zip(harness, bare)]), 1e-3)
