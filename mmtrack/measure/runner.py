"""Calibration, warm-up, sampling and the diagnostic replay pass.

Semantics follow micromeasure:
- a bench function ``f(ctx, chunk_size, chunk_num)`` performs ``chunk_size`` operations;
- without a fixed chunk size, calibration grows ``chunk_size`` until one chunk takes
  about ``target_chunk`` seconds (bounded passes, clamped to [1, max_chunk_size]);
- warm-up samples run through the backend and are discarded. Calibration runs on cold code
  (first calls allocate, fill caches, fault pages in), so when the warm chunk time settles
  more than ``RESIZE_TOLERANCE`` away from the target, the chunk is re-sized on warm code and
  warmed again (at most ``MAX_RESIZES`` times). The mean warm duration at the final size sets
  the sample count, ``benchmark duration / chunk duration`` clamped to [min_samples, max_samples];
- a case sampled in several worker processes (measure/processes.py) hands the chunk size its first
  process calibrated to the others (``RunOptions.chunk_size``: not re-sized), and each process takes
  ``RunOptions.sample_share`` of the sample count;
- every sample gets a fresh context from ``context(chunk_size)`` or ``factory()``;
- the diagnostic pass runs after timing and never touches the timing statistics.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from . import affinity, conditions
from .backend import MeasurementBackend, MeasurementDomain, Results
from .benchmark_stats import BenchmarkStats
from .concurrent import ConcurrentRunner
from .default_backend import default_backend as platform_default_backend
from .metrics import (
    BenchSampleResult,
    DiagnosticError,
    DiagnosticResult,
    MetricValue,
    aggregate_metrics,
)
from .stats import Distribution, median, summarize_counters
from .throughput import Throughput

Clock = Callable[[], int]  # nanoseconds
Progress = Callable[[str, int, int], None]  # phase, done, total

# A warm chunk this far (relative) from target_chunk is re-sized before sampling.
RESIZE_TOLERANCE = 0.20
MAX_RESIZES = 3
# Warm samples at one size before its settled time is judged: a median needs a few.
MIN_WARM_SAMPLES = 3


class BenchmarkDefinitionError(TypeError):
    """The benchmark itself is wrong (bad return type, bad option): fix the code."""


class MeasurementRejected(RuntimeError):
    """The backend cannot vouch for what it measured (a count that did not grow with the ops, a marker hit inside
    a sample): the case fails with this one line, nothing of it is kept."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The measurement budget, as micromeasure's BenchmarkRuntimeOptions."""

    warm_up: float = 1.0  # seconds
    duration: float = 5.0  # target total measured time, seconds
    min_samples: int = 20
    max_samples: int = 100
    target_chunk: float = 0.05  # seconds one calibrated chunk should take
    calibration_passes: int = 16
    max_chunk_size: int = 1 << 32
    pin_cpu: bool = True  # pin the measuring thread to one core for the run (see affinity.py)
    # How the caller runs the sampling loop (conditions.py); recorded, and runs that differ in it
    # are not compared. The worker-process runner passes its own.
    process_model: str = conditions.IN_PROCESS
    # A case sampled in several worker processes (measure/processes.py): this process takes this
    # share of the run's samples, with the chunk size the case's first process calibrated.
    sample_share: float = 1.0
    chunk_size: int | None = None  # None: calibrate here

    def __post_init__(self) -> None:
        for name in ("warm_up", "duration", "target_chunk"):
            if not 0 < getattr(self, name) < math.inf:  # NaN fails too
                raise ValueError(f"{name} must be a finite number of seconds above 0, got {getattr(self, name)!r}")
        if not 0 < self.sample_share <= 1:
            raise ValueError(f"sample_share must be in (0, 1], got {self.sample_share!r}")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size!r}")
        if not 1 <= self.min_samples <= self.max_samples:
            raise ValueError(
                f"need 1 <= min_samples <= max_samples, got {self.min_samples} and {self.max_samples}"
            )

    @classmethod
    def quick(cls) -> "RunOptions":
        """A short budget for smoke runs and tests; numbers are indicative only."""
        return cls(warm_up=0.05, duration=0.3, min_samples=5, max_samples=30, target_chunk=0.01)


@dataclass(slots=True)
class BenchSpec:
    """One runnable engine benchmark, with everything already bound."""

    name: str
    fn: Callable[[Any, int, int], Any]
    returns_sample: bool = False
    throughput: Throughput = field(default_factory=Throughput.ops)
    domain: MeasurementDomain = MeasurementDomain.CPU
    backend: Callable[[], MeasurementBackend] | None = None
    chunk_size: int | None = None
    context: Callable[[int], Any] | None = None
    operations_per_chunk: Callable[[int], int] | None = None
    diagnostic: Callable[[Any, int, int], DiagnosticResult] | None = None
    diagnostic_samples: int = 3
    params: dict[str, str] = field(default_factory=dict)
    # A concurrent benchmark (measure/concurrent.py): ``fn`` is then ``prepare(num_threads)``.
    concurrent: Any = None  # ConcurrentGroup


class _Sample(NamedTuple):
    """One timed sample. A NamedTuple built with ``_make``: the cheapest record per sample."""

    results: Results
    host: float
    metrics: list[MetricValue]


_make_sample = _Sample._make


class Runner:
    """Runs one BenchSpec under one backend."""

    def __init__(
        self,
        spec: BenchSpec,
        options: RunOptions | None = None,
        *,
        clock: Clock = time.perf_counter_ns,
        progress: Progress | None = None,
        default_backend: Callable[[], MeasurementBackend] | None = None,
    ) -> None:
        self.spec = spec
        self.options = options or RunOptions()
        self.clock = clock
        self.progress = progress
        # Looked up at call time so the platform default can change without touching specs.
        make = spec.backend or default_backend or platform_default_backend
        self.backend = make() if callable(make) else make
        if not isinstance(self.backend, MeasurementBackend):
            raise BenchmarkDefinitionError(
                f"benchmark {spec.name!r}: backend= takes a MeasurementBackend, its class or a function returning "
                f"one; got {type(self.backend).__name__}"
            )
        kind = type(self.backend)
        self._hooks = kind.begin is not MeasurementBackend.begin or kind.end is not MeasurementBackend.end
        self._zero_is_host = self.backend.zero_means_host_time
        self.warnings: list[str] = []

    # -- one chunk ---------------------------------------------------------------------------
    def _context(self, chunk_size: int) -> Any:
        return self.spec.context(chunk_size) if self.spec.context is not None else None

    def _operations(self, returned: Any, chunk_size: int, metrics: list[MetricValue]) -> int:
        spec = self.spec
        default_ops = spec.operations_per_chunk(chunk_size) if spec.operations_per_chunk else chunk_size
        if not spec.returns_sample:
            if returned is not None:
                raise BenchmarkDefinitionError(
                    f"benchmark {spec.name!r}: a @bench function returns None, got "
                    f"{type(returned).__name__}; use @bench_sample to return a BenchSampleResult"
                )
            return default_ops
        if isinstance(returned, BenchSampleResult):
            for m in returned.metrics:
                if not isinstance(m, MetricValue):
                    raise BenchmarkDefinitionError(
                        f"benchmark {spec.name!r}: BenchSampleResult.metrics holds a "
                        f"{type(m).__name__}; push MetricValue objects"
                    )
                m.validate(spec.name)
            metrics.extend(returned.metrics)
            ops = returned.operations
        elif isinstance(returned, int) and not isinstance(returned, bool):
            ops = returned
        else:
            raise BenchmarkDefinitionError(
                f"benchmark {spec.name!r}: a @bench_sample function returns a BenchSampleResult "
                f"(or an int operation count), got {type(returned).__name__}"
            )
        if not isinstance(ops, int) or ops <= 0:
            raise BenchmarkDefinitionError(
                f"benchmark {spec.name!r}: operations must be a positive int, got {ops!r}"
            )
        return ops

    def _timed_chunk(self, chunk_size: int) -> float:
        """Host time of one chunk, no backend: used by calibration only."""
        ctx = self._context(chunk_size)
        t0 = self.clock()
        self.spec.fn(ctx, chunk_size, 0)
        return (self.clock() - t0) * 1e-9

    def _sample(self, chunk_size: int, index: int) -> _Sample:
        # The hot path: everything here is harness overhead per sample (see
        # benchmarks/bench_harness.py), so helpers are inlined for the common case.
        spec = self.spec
        ctx = spec.context(chunk_size) if spec.context is not None else None
        fn, clock, backend = spec.fn, self.clock, self.backend
        if self._hooks:
            backend.begin()
            try:
                t0 = clock()
                returned = fn(ctx, chunk_size, index)
                t1 = clock()
            finally:
                backend.end()
        else:  # begin/end are the base class's no-ops (WallClockBackend): skip two calls
            t0 = clock()
            returned = fn(ctx, chunk_size, index)
            t1 = clock()
        metrics: list[MetricValue] = []
        if returned is None and not spec.returns_sample and spec.operations_per_chunk is None:
            ops = chunk_size  # what _operations returns for a plain @bench
        else:
            ops = self._operations(returned, chunk_size, metrics)
        host = (t1 - t0) * 1e-9
        results = Results()
        backend.collect(host, ops, index, results, metrics)
        if results.duration <= 0:
            if not self._zero_is_host:
                self._bad_duration(results.duration, index)
            results.duration = host
        if results.iterations <= 0:
            results.iterations = ops
        return _make_sample((results, host, metrics))

    def _bad_duration(self, duration: float, index: int) -> None:
        raise BenchmarkDefinitionError(
            f"benchmark {self.spec.name!r}: backend {type(self.backend).__name__} returned a duration of "
            f"{duration} at sample {index}; collect() must set a finite duration > 0"
        )

    def _check_durations(self, durations: list[float] | tuple[float, ...]) -> None:
        """NaN and inf pass the hot path's ``<= 0`` test: checked once per phase instead."""
        for i, d in enumerate(durations):
            if not math.isfinite(d):
                self._bad_duration(d, i)

    # -- phases ------------------------------------------------------------------------------
    def _scaled(self, size: int, elapsed: float, max_factor: float = math.inf) -> int:
        """The chunk size that would take target_chunk, given ``size`` ops took ``elapsed`` s."""
        opts = self.options
        factor = opts.target_chunk / elapsed if elapsed > 0 else 10.0
        return int(min(max(round(size * min(factor, max_factor)), 1), opts.max_chunk_size))

    def calibrate(self) -> int:
        """A first chunk size, from cold code; :meth:`warm_up` corrects it once the code is warm."""
        opts = self.options
        size = 1
        for _ in range(opts.calibration_passes):
            elapsed = self._timed_chunk(size)
            if 0.8 * opts.target_chunk <= elapsed <= 1.25 * opts.target_chunk:
                break
            # Timer resolution and call overhead dominate tiny chunks: grow by at most 10x
            # per pass so one lucky short reading cannot overshoot by orders of magnitude.
            new = self._scaled(size, elapsed, max_factor=10.0)
            if new == size:
                break
            size = new
        return size

    def warm_up(self, chunk_size: int) -> tuple[int, float]:
        """Run discarded samples for the warm-up budget, re-sizing a calibrated chunk on warm code.

        Returns the chunk size to sample with and the mean warm sample duration at that size.
        The settled chunk time is the median host time of the later half of the warm samples
        at one size, so the cold first calls and a stray preemption do not steer it.
        """
        opts = self.options
        resizable = self.spec.chunk_size is None and opts.chunk_size is None
        budget = int(opts.warm_up * 1e9)
        deadline = self.clock() + budget
        durations: list[float] = []
        hosts: list[float] = []
        index = resizes = 0
        while True:
            sample = self._sample(chunk_size, index)
            index += 1
            durations.append(sample.results.duration)
            hosts.append(sample.host)
            if self.clock() < deadline or (resizes and len(hosts) < MIN_WARM_SAMPLES):
                continue
            if not resizable or resizes >= MAX_RESIZES:
                break
            settled = median(hosts[len(hosts) // 2 :])
            new = self._scaled(chunk_size, settled)
            if new == chunk_size:
                break
            if abs(settled - opts.target_chunk) <= RESIZE_TOLERANCE * opts.target_chunk:
                # Close already: take the warm size without another re-warm (per-op time is warm).
                self._check_durations(durations)
                scale = new / chunk_size
                return new, scale * sum(durations) / len(durations)
            chunk_size, resizes = new, resizes + 1
            durations.clear()
            hosts.clear()
            # A short re-warm at the new size: the code is warm, the new size is not yet judged.
            deadline = self.clock() + budget // 4
        self._check_durations(durations)
        return chunk_size, sum(durations) / len(durations)

    def sample_count(self, chunk_duration: float) -> int:
        """Samples for this process: the run's count, times ``sample_share`` (rounded up)."""
        opts = self.options
        wanted = math.ceil(opts.duration / chunk_duration) if chunk_duration > 0 else opts.max_samples
        n = min(max(wanted, opts.min_samples), opts.max_samples)
        # Said once per case: a later process of a case sampled in several (opts.chunk_size set) would repeat it.
        if self.spec.chunk_size is not None and opts.chunk_size is None and n * chunk_duration < 0.8 * opts.duration:
            self.warnings.append(
                f"fixed chunk_size={self.spec.chunk_size} under-runs the target: {n} samples of "
                f"{chunk_duration * 1e3:.3g} ms measure {n * chunk_duration:.3g} s of the "
                f"{opts.duration:g} s asked for; raise chunk_size or max_samples"
            )
        return n if opts.sample_share == 1 else max(1, math.ceil(n * opts.sample_share))

    def diagnose(self, chunk_size: int) -> tuple[list[list[MetricValue]], list[str]]:
        spec = self.spec
        if spec.diagnostic is None:
            return [], []
        collected: list[list[MetricValue]] = []
        for i in range(spec.diagnostic_samples):
            try:
                result = spec.diagnostic(self._context(chunk_size), chunk_size, i)
                if not isinstance(result, DiagnosticResult):
                    raise DiagnosticError(
                        f"diagnostic pass returned {type(result).__name__}, expected DiagnosticResult"
                    )
                for m in result.metrics:
                    m.validate(spec.name)
                collected.append(
                    [m if m.section else m.with_section(result.section) for m in result.metrics]
                )
            except Exception as exc:  # a diagnostic may fail; the timing stands
                kind = "" if isinstance(exc, DiagnosticError) else f"{type(exc).__name__}: "
                return collected, [f"diagnostic pass failed at sample {i}: {kind}{exc}"]
        return collected, []

    def run(self) -> BenchmarkStats:
        spec, backend = self.spec, self.backend
        if spec.concurrent is not None:
            return ConcurrentRunner(self, spec.concurrent).run()
        pinned = affinity.pin_current_thread() if self.options.pin_cpu else None
        try:
            self._report("calibrate", 0, 1)
            if spec.chunk_size is not None:
                chunk_size = spec.chunk_size
            else:  # a chunk calibrated by the case's first process, else calibrate here
                chunk_size = self.options.chunk_size or self.calibrate()
            self._report("warm-up", 0, 1)
            chunk_size, chunk_duration = self.warm_up(chunk_size)
            n = self.sample_count(chunk_duration)
            measured_under = conditions.capture(self.options.process_model, pinned.cpu if pinned else None)
            samples = []
            for i in range(n):
                samples.append(self._sample(chunk_size, i))
                self._report("sample", i + 1, n)
            diag_metrics, diag_errors = self.diagnose(chunk_size)
            byline = backend.describe(spec.domain)
            notes = [byline] if byline else []
        finally:
            backend.close()
            affinity.restore(pinned)
        stats = self._stats(chunk_size, samples, diag_metrics, diag_errors, notes)
        stats.conditions = measured_under
        return stats

    def _report(self, phase: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(phase, done, total)

    def _stats(self, chunk_size, samples, diag_metrics, diag_errors, notes) -> BenchmarkStats:
        spec = self.spec
        durations = tuple(s.results.duration for s in samples)
        self._check_durations(durations)
        ops = tuple(s.results.iterations for s in samples)
        latency = Distribution.of([d / o for d, o in zip(durations, ops)])
        rate = Distribution.of([spec.throughput.rate(o, d) for d, o in zip(durations, ops)])
        stats = BenchmarkStats(
            name=spec.name,
            params=dict(spec.params),
            throughput=spec.throughput,
            domain=spec.domain,
            measurement_label=self.backend.measurement_label,
            emits_cpu_diagnostics=self.backend.emits_cpu_diagnostics,
            chunk_size=chunk_size,
            calibrated=spec.chunk_size is None,
            durations=durations,
            host_durations=tuple(s.host for s in samples),
            operations=ops,
            latency=latency,
            rate=rate,
            counters=summarize_counters(
                [s.results.counters for s in samples],
                ops,
                [(s.results.time_enabled_ns, s.results.time_running_ns) for s in samples],
            ),
            metrics=aggregate_metrics(s.metrics for s in samples),
            diagnostics=aggregate_metrics(diag_metrics),
            diagnostic_errors=diag_errors,
            warnings=list(self.warnings),
            notes=notes,
        )
        return stats


def run_benchmark(spec: BenchSpec, options: RunOptions | None = None, **kwargs: Any) -> BenchmarkStats:
    """Run one benchmark; exceptions from the bench itself propagate to the caller."""
    return Runner(spec, options, **kwargs).run()
