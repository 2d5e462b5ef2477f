"""asv's benchmark script (the path in ``sys.argv[1]``) started without asv_runner's memory benchmark type, its time
benchmarks' sampling ending once their best has settled.

That type's module imports pympler, and pympler imports numpy: a cost in every round's fork server
(docs/design/archive/ab-rounds-in-process.md). A round with no ``mem_`` benchmark has no use for it, so
:mod:`.asv_rounds` starts such a round's server by this script: asv_runner reads pympler as not installed
while it collects its benchmark types (its own "not requested" path), and the suite may import pympler or
numpy as usual afterwards. Run as a script in the benchmarked environment; it imports nothing of mmtrack's.

With :data:`SETTLED_WINDOW` set (seconds), a time benchmark's window of samples ends once its best has settled
(:func:`settle_windows`), not at asv's ``max_time``: an A/B round keeps only its best sample
(docs/design/archive/ab-settled-window.md).

With :data:`CPU_TIMES` set (a folder), each ``time_`` benchmark's process writes there the CPU time of the samples asv
keeps, read around the same span asv's wall clock times (:func:`record_cpu_times`); ``mmtrack run`` starts ``asv run``'s
benchmark processes through this script for that (:mod:`.asv_command`).
"""

import inspect
import json
import os
import runpy
import sys
import tempfile
import time

#: The variable that asks for settled windows: the least window, in seconds, after asv's first ``min_repeat`` samples.
SETTLED_WINDOW = "MMTRACK_SETTLED_WINDOW"
#: A new best closer than this to the one before does not count as unsettled: far less than rounds of one build scatter.
SETTLE_TOLERANCE = 0.005
#: The parameters of asv_runner's ``TimeBenchmark.benchmark_timing`` that this module wraps (asv_runner 0.3).
_ASV_TIMING_PARAMETERS = ["self", "timer", "min_repeat", "max_repeat", "max_time", "warmup_time", "number",
                          "min_run_count"]


#: Set (to anything) when the round has ``mem_`` benchmarks, or for a discovery: asv_runner's memory type is kept.
WITH_MEM = "MMTRACK_ROUND_WITH_MEM"


#: mmtrack's pid, set for this script: a parent killed while this interpreter started is seen as gone.
PARENT = "MMTRACK_ROUND_PARENT"


def die_with_parent(parent: int) -> None:
    """End with process ``parent`` (mmtrack, or the round server for a forked benchmark): a SIGKILL of mmtrack must
    leave no server or discovery behind (PR_SET_PDEATHSIG; a parent gone already ends it now)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):  # not glibc: the server still ends when asv closes it
        return
    if os.getppid() != parent:
        os._exit(1)


def main() -> None:
    die_with_parent(int(os.environ.get(PARENT) or os.getppid()))
    server = os.getpid()
    os.register_at_fork(after_in_child=lambda: die_with_parent(server))  # its forked benchmarks end with it too
    script, command = sys.argv[1], sys.argv[2:3]
    if not os.environ.get(WITH_MEM):
        sys.modules["pympler"] = None  # type: ignore[assignment]  # "import pympler" raises ImportError
        try:
            import asv_runner.benchmarks  # noqa: F401  (collects its types once, without the memory one)
        finally:
            del sys.modules["pympler"]
    least = os.environ.get(SETTLED_WINDOW)
    if least:
        settle_windows(float(least))
    if os.environ.get(CPU_TIMES):
        record_cpu_times(os.environ[CPU_TIMES])
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as when asv starts its script itself
    if command != ["discover"]:
        runpy.run_path(script, run_name="__main__")
        return
    code: object = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    # the list is written: a thread the suite started at import must not keep this process alive
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


def settle_windows(least: float) -> None:
    """asv_runner's time benchmarks sample until their best has settled: for ``least`` seconds after asv's first
    ``min_repeat`` samples, then until the last notable new best came in the first half of the samples, within
    asv's own limits (``max_repeat`` samples, ``max_time``).

    asv's warm-up, calibration and first ``min_repeat`` samples run as asv runs them; only the rest of the window
    is this rule's. On a quiet machine the best comes in the first samples and the window ends early; beside a
    busy neighbour the best keeps improving as fast stretches come, and the window runs on to asv's ``max_time``.
    """
    from asv_runner.benchmarks.time import TimeBenchmark

    asv_timing = TimeBenchmark.benchmark_timing
    if list(inspect.signature(asv_timing).parameters) != _ASV_TIMING_PARAMETERS:
        return  # another asv_runner's timing loop: its windows stay as asv samples them

    def benchmark_timing(self, timer, min_repeat, max_repeat, max_time, warmup_time, number, min_run_count):
        from timeit import default_timer as wall_timer  # asv_runner's own clock

        deadline = wall_timer() + warmup_time + max_time  # asv's own end of the window
        samples, number = asv_timing(self, timer, min_repeat, min(min_repeat, max_repeat), max_time, warmup_time,
                                     number, min_run_count)
        return samples + _until_settled(timer, number, samples, max_repeat, deadline, wall_timer() + least,
                                        wall_timer), number

    TimeBenchmark.benchmark_timing = benchmark_timing


def _until_settled(timer, number, first, max_repeat, deadline, not_before, clock):
    """More samples after ``first``: until the best has settled (see :func:`settle_windows`), ``max_repeat`` samples
    in all, or asv's ``deadline``."""
    more = []
    best = min(first) if first else float("inf")
    last_new_best = len(first)
    while len(first) + len(more) < max_repeat and clock() < deadline:
        timing = timer.timeit(number)
        more.append(timing)
        if timing < best * (1 - SETTLE_TOLERANCE):
            last_new_best = len(first) + len(more)
        best = min(best, timing)
        if clock() >= not_before and 2 * last_new_best <= len(first) + len(more):
            break
    return more


#: The variable naming the folder where each ``time_`` benchmark's process writes its samples' CPU time (a JSON file).
CPU_TIMES = "MMTRACK_CPU_TIMES"


class SampleClock:
    """asv's wall clock, each span it times paired with the process's CPU time and its voluntary context switches
    (it blocked: IO, a sleep, a lock), read outside the wall clock's span: before its start, after its end.

    asv_runner reads its timer twice per timed span (``timeit``; per call with setup hooks): the reads alternate
    start and end. :meth:`sample_started` and :meth:`sample_ended` bound a sample (one ``timeit``), whose spans add up.
    """

    def __init__(self, wall=None):
        from timeit import default_timer

        self.wall = wall or default_timer
        self.started = None
        self.cpu = []  # per sample, seconds
        self.blocked = []  # per sample, voluntary context switches
        self._cpu = self._blocked = 0.0

    def read(self):
        if self.started is None:
            self.started = (time.process_time(), _voluntary_switches())
            return self.wall()
        wall = self.wall()
        cpu, blocked = time.process_time(), _voluntary_switches()
        self._cpu += cpu - self.started[0]
        self._blocked += blocked - self.started[1]
        self.started = None
        return wall

    def sample_started(self):
        self.started, self._cpu, self._blocked = None, 0.0, 0.0

    def sample_ended(self):
        self.cpu.append(self._cpu)
        self.blocked.append(self._blocked)


def _voluntary_switches():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


class _Sampled:
    """asv_runner's timer (``timeit.Timer`` or its per-call one), each ``timeit`` one sample of ``clock``."""

    def __init__(self, timer, clock):
        self.timer, self.clock = timer, clock

    def timeit(self, number):
        self.clock.sample_started()
        try:
            return self.timer.timeit(number)
        finally:
            self.clock.sample_ended()


def record_cpu_times(folder):
    """Each plain ``time_`` benchmark (asv's wall clock, not a ``timer`` of its own, not ``timeraw_``) writes to
    ``folder``, once asv's timing returns: its name, parameter index, and per kept sample the wall and CPU time per
    op and the voluntary context switches. asv's samples are the last ``timeit`` calls of its timing loop (warm-up and
    calibration come first), so the last as many spans are theirs. Nothing but the clock reads runs in a span."""
    from asv_runner.benchmarks import time as asv_time

    bench, wall_timer = asv_time.TimeBenchmark, getattr(asv_time, "wall_timer", None)
    if wall_timer is None or not hasattr(bench, "_get_timer"):
        return  # another asv_runner's timing: its samples get no CPU time
    asv_run, asv_set_param_idx = bench.run, bench.set_param_idx

    def set_param_idx(self, param_idx):
        self._mmtrack_param_index = param_idx
        return asv_set_param_idx(self, param_idx)

    def sampled(get):
        def get_timer(self, *param):
            timer = get(self, *param)
            clock = getattr(self, "_mmtrack_clock", None)
            return timer if clock is None else _Sampled(timer, clock)
        return get_timer

    def run(self, *param):
        if type(self) is not bench or self.timer is not wall_timer:
            return asv_run(self, *param)
        clock = self._mmtrack_clock = SampleClock(wall_timer)
        self.timer = clock.read
        try:
            result = asv_run(self, *param)
        finally:
            self.timer, self._mmtrack_clock = wall_timer, None
        try:
            _write_cpu_times(folder, self, result, clock)
        except (OSError, TypeError, ValueError):
            pass  # the sample's CPU time is a reading beside asv's: never a failure of the benchmark
        return result

    bench.set_param_idx, bench.run = set_param_idx, run
    for name in ("_get_timer", "_get_interleaved_timer"):  # the second: asv_runner's per-call timer (setup hooks)
        if hasattr(bench, name):
            setattr(bench, name, sampled(getattr(bench, name)))


def _write_cpu_times(folder, benchmark, result, clock):
    samples, number = result.get("samples") or [], result.get("number") or 1  # asv's samples: per op already
    kept = len(samples)
    if not kept or len(clock.cpu) < kept:
        return
    record = {"name": benchmark.name, "param_index": getattr(benchmark, "_mmtrack_param_index", 0) or 0,
              "wall": list(samples), "cpu": [c / number for c in clock.cpu[-kept:]],
              "blocked": clock.blocked[-kept:]}  # per sample: a span that blocked once is no CPU-bound op
    os.makedirs(folder, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(handle, "w") as out:
        json.dump(record, out)
    os.replace(tmp, tmp[: -len(".tmp")] + ".json")  # whole or not at all: a killed benchmark leaves a .tmp


if __name__ == "__main__":
    main()
