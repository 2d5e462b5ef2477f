"""Concurrent benchmarks: worker roles against shared state, released together, per-role statistics.

Named after micromeasure's concurrent API, in Python form:

- a shared context, prepared once per sample by ``prepare(num_threads)``;
- :class:`ConcurrentWorker` roles (name, thread count, worker function);
- a :class:`ConcurrentBenchControl` per thread: ``should_stop()``, ``thread_index()``,
  ``role_thread_index()``;
- a :class:`ConcurrentWorkerResult`: operations plus named integer event counters (``with_counter``);
- an optional sample lifecycle (``before_sample`` / ``after_sample``) that returns scenario
  metrics, told the phase and index of the sample (:class:`ConcurrentSampleInfo`).

One sample: the context is prepared, ``before_sample`` runs, every worker thread is started and
waits at a barrier; when all are waiting the backend's ``begin`` runs, the deadline is set and the
workers are released together. Each loops until ``should_stop()``; the sample ends when the last
one has joined, then the backend's ``end`` runs, then ``after_sample``. There is no chunk
calibration: a sample lasts ``sample_duration``. Warm-up samples (and their lifecycle metrics) are
discarded; the sample count is ``duration / sample_duration`` clamped to [min_samples, max_samples].

Perf counters opened with ``inherit`` (LinuxPerfBackend's default) count every worker thread:
the threads are started after the counters were opened, in the thread that opened them.
"""

from __future__ import annotations

import enum
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from .backend import MeasurementBackend, Results, announce_once
from .benchmark_stats import BenchmarkStats
from .metrics import MetricValue, aggregate_metrics
from .roles import EventCounterSummary, RoleStats, ScenarioInfo
from .stats import CounterSummary, Distribution, summarize_counters
from .throughput import Throughput

DEFAULT_SAMPLE_DURATION = 0.05  # seconds, micromeasure's default
SCENARIO_SECTION = "scenario"
MAX_EMPTY_REPEATS = 10  # per run: windows with no operation at all that are measured again


class ConcurrentWorkerError(RuntimeError):
    """A worker raised: the case fails with this one line."""


class ConcurrentBenchControl:
    """The handle a worker thread gets: when to stop, and which thread it is."""

    __slots__ = ("_clock", "_deadline", "_thread_index", "_role_thread_index")

    def __init__(self, clock: Callable[[], int], thread_index: int, role_thread_index: int) -> None:
        self._clock = clock
        self._deadline = 0  # set by the coordinator right before the release
        self._thread_index = thread_index
        self._role_thread_index = role_thread_index

    def should_stop(self) -> bool:
        """True once the sample's deadline has passed (or another worker failed)."""
        return self._clock() >= self._deadline

    def thread_index(self) -> int:
        """This thread's index across every thread of the sample."""
        return self._thread_index

    def role_thread_index(self) -> int:
        """This thread's index within its role."""
        return self._role_thread_index


@dataclass(slots=True)
class ConcurrentWorkerResult:
    """What a worker returns: its operations, plus named integer event counters."""

    operations: int
    counters: dict[str, int] = field(default_factory=dict)

    def with_counter(self, name: str, value: int) -> "ConcurrentWorkerResult":
        self.counters[name] = value
        return self


WorkerFn = Callable[[Any, ConcurrentBenchControl], "ConcurrentWorkerResult | int"]


@dataclass(frozen=True, slots=True)
class ConcurrentWorker:
    """One role: ``threads`` threads each run ``run(ctx, control)``."""

    name: str
    threads: int
    run: WorkerFn

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError("a ConcurrentWorker needs a non-empty name")
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or self.threads < 1:
            raise TypeError(f"worker role {self.name!r}: threads must be a positive int, got {self.threads!r}")
        if not callable(self.run):
            raise TypeError(f"worker role {self.name!r}: run must be a function (ctx, control)")


class ConcurrentSamplePhase(str, enum.Enum):
    WARM_UP = "warm-up"
    MEASUREMENT = "measurement"


@dataclass(frozen=True, slots=True)
class ConcurrentSampleInfo:
    """Which sample a lifecycle callback is about: phase and zero-based index within the phase."""

    phase: ConcurrentSamplePhase
    index: int


@dataclass(frozen=True, slots=True)
class ConcurrentGroup:
    """The options of one concurrent benchmark (micromeasure's concurrent group)."""

    workers: tuple[ConcurrentWorker, ...]
    sample_duration: float = DEFAULT_SAMPLE_DURATION
    lifecycle: Callable[[], Any] | None = None  # a factory, called once per run
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.workers:
            raise TypeError("a concurrent benchmark needs at least one ConcurrentWorker")
        for w in self.workers:
            if not isinstance(w, ConcurrentWorker):
                raise TypeError(f"workers holds a {type(w).__name__}; give ConcurrentWorker(name, threads, run)")
        names = [w.name for w in self.workers]
        if len(set(names)) != len(names):
            raise TypeError(f"worker role names must be unique, got {names}")
        if not (isinstance(self.sample_duration, (int, float)) and self.sample_duration > 0):
            raise TypeError(f"sample_duration must be > 0 seconds, got {self.sample_duration!r}")

    @property
    def num_threads(self) -> int:
        return sum(w.threads for w in self.workers)

    def identity(self) -> str:
        """Roles, thread counts, sample duration and metadata: runs differing here are not comparable."""
        roles = ", ".join(f"{w.name}×{w.threads}" for w in self.workers)
        meta = ", ".join(f"{k}={v}" for k, v in sorted(self.metadata.items()))
        return f"roles {roles}; sample {self.sample_duration * 1e3:g} ms" + (f"; {meta}" if meta else "")


# -- statistics --------------------------------------------------------------------------------
def gil_enabled() -> bool:
    """Whether this interpreter runs with the GIL (always True before 3.13's free-threaded build)."""
    probe = getattr(sys, "_is_gil_enabled", None)
    return bool(probe()) if probe is not None else True


def python_build() -> str:
    import platform  # imported here: `import mmtrack` stays cheap (asv imports suites often)
    import sysconfig

    free = " free-threading build" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    return f"{platform.python_implementation()} {platform.python_version()}{free}"


def role_stats(
    workers: Sequence[ConcurrentWorker], samples: Sequence["_SampleRecord"]
) -> list[RoleStats]:
    """Per-role statistics from the measured samples (pure: the tests feed known counts)."""
    durations = tuple(s.elapsed for s in samples)
    total_time = math.fsum(durations)
    out = []
    for r, worker in enumerate(workers):
        thread_ops = tuple(tuple(res.operations for res in s.results[r]) for s in samples)
        ops = tuple(sum(row) for row in thread_ops)
        pairs = [(o, d) for row, d in zip(thread_ops, durations) for o in row]
        counters: list[CounterSummary] = []
        if any(s.thread_counters for s in samples):
            counters = _role_counters(samples, r, ops)
        out.append(RoleStats(
            name=worker.name,
            threads=worker.threads,
            operations=ops,
            thread_operations=thread_ops,
            durations=durations,
            latency=Distribution.of([d / o for o, d in pairs if o > 0]),
            rate=Distribution.of([o / d for o, d in pairs if d > 0]),
            events=_role_events(samples, r, ops, total_time),
            counters=counters,
        ))
    return out


def _role_events(samples: Sequence["_SampleRecord"], r: int, ops: tuple[int, ...],
                 total_time: float) -> list[EventCounterSummary]:
    """The event counts role ``r``'s workers returned, summed over its threads, in the order first seen."""
    names: list[str] = []
    for s in samples:
        for res in s.results[r]:
            names.extend(n for n in res.counters if n not in names)
    events = []
    for n in names:
        per_sample = tuple(sum(res.counters.get(n, 0) for res in s.results[r]) for s in samples)
        total = sum(per_sample)
        events.append(EventCounterSummary(
            n, total, total / sum(ops) if sum(ops) else math.nan,
            total / total_time if total_time > 0 else math.nan, per_sample,
        ))
    return events


def _role_counters(samples: Sequence["_SampleRecord"], r: int, ops: tuple[int, ...]) -> list[CounterSummary]:
    """Role ``r``'s own perf counters: its threads' readings summed per sample, with their coverage."""
    per_sample: list[dict[str, float]] = []
    coverage: list[tuple[int, int]] = []
    for s in samples:
        summed: dict[str, float] = {}
        enabled = running = 0
        for reading in s.thread_counters[r] if s.thread_counters else ():
            for n, v in reading.counters.items():
                summed[n] = summed.get(n, 0.0) + v
            enabled, running = enabled + reading.time_enabled_ns, running + reading.time_running_ns
        per_sample.append(summed)
        coverage.append((enabled, running))
    return summarize_counters(per_sample, ops, coverage)


# -- sampling ----------------------------------------------------------------------------------
@dataclass(slots=True)
class _SampleRecord:
    elapsed: float  # seconds from the release to the last join
    results: list[list[ConcurrentWorkerResult]]  # per role, per thread
    backend: Results
    metrics: list[MetricValue]  # backend metrics (combined section)
    scenario: list[MetricValue]  # lifecycle metrics
    thread_counters: list[list[Results]] | None = None  # per role, per thread: its own perf counters


def _as_result(returned: Any, role: str) -> ConcurrentWorkerResult:
    if isinstance(returned, ConcurrentWorkerResult):
        result = returned
    elif isinstance(returned, int) and not isinstance(returned, bool):
        result = ConcurrentWorkerResult(returned)
    else:
        raise ConcurrentWorkerError(
            f"worker role {role!r} returned {type(returned).__name__}; "
            f"return ConcurrentWorkerResult(operations) or an int"
        )
    if not isinstance(result.operations, int) or isinstance(result.operations, bool) or result.operations < 0:
        raise ConcurrentWorkerError(
            f"worker role {role!r}: operations must be an int >= 0, got {result.operations!r}"
        )
    for counter, value in result.counters.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConcurrentWorkerError(
                f"worker role {role!r}: event counter {counter!r} must be an int >= 0, "
                f"got {value!r}"
            )
    return result


def _end(backend: Any, attempts: int = 5) -> None:
    """``backend.end()``, tried again on ECHILD.

    join() returns when a worker's Python code is done, a moment before its OS thread exits; reading an
    inherited perf counter while the kernel folds that exiting thread in failed with ECHILD 3 times in
    1,500 one-ms samples of 6 threads (Linux 6.18, a loaded machine). Disabling and reading again is harmless.
    """
    for attempt in range(attempts):
        try:
            backend.end()
            return
        except ChildProcessError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.001)


def _open_thread_counters(names: Sequence[str]) -> Any:
    """The calling thread's own perf counters (not inherited), or None without any or when they do not open."""
    if not names:
        return None
    from .perf import LinuxPerfBackend  # only reached when the run's backend is the perf backend

    try:
        return LinuxPerfBackend(names, inherit=False)
    except Exception:  # noqa: BLE001  (a role without counters is reported without them, the timing stands)
        return None


class _Pinning:
    """Worker threads pinned round-robin over the CPUs this process may use (or not at all)."""

    def __init__(self, enabled: bool) -> None:
        cpus: list[int] = []
        if enabled:
            try:
                cpus = sorted(os.sched_getaffinity(0))
            except (AttributeError, OSError):
                cpus = []
        self.cpus = cpus
        self.failed = ""

    def pin(self, thread_index: int) -> None:
        if not self.cpus:
            return
        try:
            os.sched_setaffinity(0, {self.cpus[thread_index % len(self.cpus)]})  # 0: the calling thread
        except OSError as exc:
            self.failed = str(exc)
            announce_once(f"could not pin a worker thread to CPU ({exc}); running unpinned")

    def describe(self) -> str:
        if not self.cpus:
            return "unpinned"
        if self.failed:
            return f"unpinned (pinning failed: {self.failed})"
        return f"workers pinned round-robin to CPUs {','.join(map(str, self.cpus))}"


def _thread_slots(
    group: ConcurrentGroup, clock: Callable[[], int]
) -> tuple[list[ConcurrentBenchControl], list[tuple[ConcurrentWorker, int, ConcurrentBenchControl]]]:
    """One control per worker thread, and each thread's (role, index in its role, control)."""
    controls: list[ConcurrentBenchControl] = []
    slots: list[tuple[ConcurrentWorker, int, ConcurrentBenchControl]] = []
    for worker in group.workers:
        for j in range(worker.threads):
            control = ConcurrentBenchControl(clock, len(controls), j)
            controls.append(control)
            slots.append((worker, j, control))
    return controls, slots


def _start_at_barrier(threads: list[threading.Thread], ready: threading.Barrier) -> None:
    """Start the worker threads and wait until every one waits at the start barrier."""
    for t in threads:
        t.start()
    try:
        ready.wait()  # every worker is started and waiting
    except threading.BrokenBarrierError:
        raise ConcurrentWorkerError("a worker thread did not reach the start barrier")


def _per_role(
    group: ConcurrentGroup, returned: list[Any], readings: list[Results]
) -> tuple[list[list[ConcurrentWorkerResult]], list[list[Results]]]:
    """The threads' returns (checked) and counter readings, grouped by role."""
    results: list[list[ConcurrentWorkerResult]] = []
    thread_counters: list[list[Results]] = []
    k = 0
    for worker in group.workers:
        results.append([_as_result(returned[k + j], worker.name) for j in range(worker.threads)])
        thread_counters.append(readings[k : k + worker.threads])
        k += worker.threads
    return results, thread_counters


def _backend_sample(backend: MeasurementBackend, elapsed: float, results: list[list[ConcurrentWorkerResult]],
                    index: int) -> tuple[Results, list[MetricValue]]:
    """What the backend measured over the window; the window's length and operations where it has none."""
    total_ops = sum(r.operations for role in results for r in role)
    backend_results = Results()
    backend_metrics: list[MetricValue] = []
    backend.collect(elapsed, total_ops, index, backend_results, backend_metrics)
    if backend_results.duration <= 0:
        backend_results.duration = elapsed
    if backend_results.iterations <= 0:
        backend_results.iterations = total_ops
    return backend_results, backend_metrics


class SampleHost(Protocol):
    """What a concurrent run reads of the :class:`mmtrack.measure.runner.Runner` that built it."""

    spec: Any  # a BenchSpec
    options: Any  # its RunOptions
    backend: MeasurementBackend
    clock: Callable[[], int]
    warnings: list[str]
    _hooks: bool

    def _report(self, phase: str, done: int, total: int) -> None: ...


class ConcurrentRunner:
    """Runs one concurrent BenchSpec; built by :class:`mmtrack.measure.runner.Runner`."""

    def __init__(self, runner: SampleHost, group: ConcurrentGroup) -> None:
        self.runner = runner
        self.group = group
        self.prepare: Callable[[int], Any] = runner.spec.fn  # type: ignore[assignment]
        self.lifecycle = group.lifecycle() if group.lifecycle is not None else None
        self.pinning = _Pinning(runner.options.pin_cpu)
        # Per-role counters: each worker thread opens the same counters for itself alone (inherit off), so a
        # role's counters are its own threads'. Only with the perf backend, whose counters opened here.
        self.thread_counter_names: tuple[str, ...] = ()
        if type(runner.backend).__name__ == "LinuxPerfBackend":
            self.thread_counter_names = tuple(runner.backend.report.opened)  # type: ignore[attr-defined]

    def _sample(self, info: ConcurrentSampleInfo) -> _SampleRecord:
        runner, group = self.runner, self.group
        clock, backend = runner.clock, runner.backend
        ctx = self.prepare(group.num_threads)
        before = getattr(self.lifecycle, "before_sample", None)
        if before is not None:
            before(ctx, info)
        controls, slots = _thread_slots(group, clock)
        returned: list[Any] = [None] * len(slots)
        readings: list[Results] = [Results() for _ in slots]
        counter_names = self.thread_counter_names
        errors: list[str] = []
        ready = threading.Barrier(len(slots) + 1)
        go = threading.Event()

        def work(k: int) -> None:
            worker, j, control = slots[k]
            self.pinning.pin(k)
            own = _open_thread_counters(counter_names)
            try:
                ready.wait()
                go.wait()
                if own is not None:
                    own.begin()
                returned[k] = worker.run(ctx, control)
                if own is not None:
                    own.end()
                    own.collect(0.0, 0, 0, readings[k], [])
            except threading.BrokenBarrierError:
                return
            except BaseException as exc:  # noqa: BLE001  (reported as the case's one line)
                errors.append(f"worker {worker.name}[{j}] raised {type(exc).__name__}: {exc}")
                for c in controls:  # stop the others now: the sample is lost anyway
                    c._deadline = 0
            finally:
                if own is not None:
                    own.close()

        threads = [threading.Thread(target=work, args=(k,), name=f"mmtrack-{slots[k][0].name}-{slots[k][1]}",
                                    daemon=True) for k in range(len(slots))]
        _start_at_barrier(threads, ready)
        hooks = runner._hooks
        if hooks:
            backend.begin()
        try:
            t0 = clock()
            deadline = t0 + int(group.sample_duration * 1e9)
            for c in controls:
                c._deadline = deadline
            go.set()
            for t in threads:
                t.join()
            t1 = clock()
        finally:
            if hooks:
                _end(backend)
        if errors:
            raise ConcurrentWorkerError(errors[0])
        # The window is over: what follows only gathers what the threads and the backend measured.
        results, thread_counters = _per_role(group, returned, readings)
        elapsed = (t1 - t0) * 1e-9
        backend_results, backend_metrics = _backend_sample(backend, elapsed, results, info.index)
        scenario = self._scenario_metrics(ctx, info)
        return _SampleRecord(elapsed, results, backend_results, backend_metrics, scenario,
                             thread_counters if counter_names else None)

    def _scenario_metrics(self, ctx: Any, info: ConcurrentSampleInfo) -> list[MetricValue]:
        """The lifecycle's after_sample metrics, checked, in the scenario section unless they name one."""
        scenario: list[MetricValue] = []
        after = getattr(self.lifecycle, "after_sample", None)
        if after is None:
            return scenario
        for m in after(ctx, info) or ():
            if not isinstance(m, MetricValue):
                raise ConcurrentWorkerError(
                    f"after_sample returned a {type(m).__name__}; return MetricValue objects"
                )
            m.validate(self.runner.spec.name)
            scenario.append(m if m.section else m.with_section(SCENARIO_SECTION))
        return scenario

    def sample_count(self) -> int:
        opts = self.runner.options
        wanted = math.ceil(opts.duration / self.group.sample_duration)
        return min(max(wanted, opts.min_samples), opts.max_samples)

    def run(self) -> BenchmarkStats:
        runner = self.runner
        try:
            runner._report("warm-up", 0, 1)
            deadline = runner.clock() + int(runner.options.warm_up * 1e9)
            index = 0
            while True:  # warm-up samples, lifecycle metrics included, are discarded
                self._sample(ConcurrentSampleInfo(ConcurrentSamplePhase.WARM_UP, index))
                index += 1
                if runner.clock() >= deadline:
                    break
            n = self.sample_count()
            samples = []
            repeated = 0
            for i in range(n):
                sample = self._sample(ConcurrentSampleInfo(ConcurrentSamplePhase.MEASUREMENT, i))
                # A window in which no worker finished one operation measured nothing (on a loaded machine the
                # threads may get no CPU for a whole short window): it is repeated, a few times at most.
                while sample.backend.iterations == 0 and repeated < MAX_EMPTY_REPEATS:
                    repeated += 1
                    sample = self._sample(ConcurrentSampleInfo(ConcurrentSamplePhase.MEASUREMENT, i))
                samples.append(sample)
                runner._report("sample", i + 1, n)
            if repeated:
                runner.warnings.append(
                    f"{repeated} sample(s) in which no worker finished an operation were repeated; "
                    f"the machine is busy or sample_duration ({self.group.sample_duration * 1e3:g} ms) is too short"
                )
            byline = runner.backend.describe(runner.spec.domain)
        finally:
            runner.backend.close()
        return self._stats(samples, [byline] if byline else [])

    def _stats(self, samples: list[_SampleRecord], notes: list[str]) -> BenchmarkStats:
        spec, group = self.runner.spec, self.group
        durations = tuple(s.backend.duration for s in samples)
        ops = tuple(s.backend.iterations for s in samples)
        throughput = Throughput.ops()
        scenario = ScenarioInfo(
            roles=tuple((w.name, w.threads) for w in group.workers),
            sample_duration=float(group.sample_duration),
            metadata={str(k): str(v) for k, v in group.metadata.items()},
            gil_enabled=gil_enabled(),
            python_build=python_build(),
            pinning=self.pinning.describe(),
            identity=group.identity(),
        )
        return BenchmarkStats(
            name=spec.name,
            params=dict(spec.params),
            throughput=throughput,
            domain=spec.domain,
            measurement_label=self.runner.backend.measurement_label,
            emits_cpu_diagnostics=self.runner.backend.emits_cpu_diagnostics,
            chunk_size=1,  # no chunks: a sample is a time window
            calibrated=False,
            durations=durations,
            host_durations=tuple(s.elapsed for s in samples),
            operations=ops,
            latency=Distribution.of([d / o for d, o in zip(durations, ops) if o > 0]),
            rate=Distribution.of([throughput.rate(o, d) for d, o in zip(durations, ops)]),
            counters=summarize_counters(
                [s.backend.counters for s in samples],
                ops,
                [(s.backend.time_enabled_ns, s.backend.time_running_ns) for s in samples],
            ),
            metrics=aggregate_metrics(s.scenario + s.metrics for s in samples),
            warnings=list(self.runner.warnings),
            notes=notes,
            roles=role_stats(group.workers, samples),
            scenario=scenario,
        )
