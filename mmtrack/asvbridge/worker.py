"""One benchmark case in its own worker process, as asv and pyperf run benchmarks.

The parent (``mmtrack bench``) sends a :class:`CaseJob`; the worker imports the
benchmark's module, runs calibration, warm-up, sampling and the diagnostic pass
(so the backend, its perf counters and CPU pinning all live in the worker) and
sends back the :class:`~mmtrack.asvbridge.session.Outcome`, a plain record.

Workers start from a fork server (a clean interpreter that never holds a
database connection), or are spawned where there is none. Whatever the
benchmark does to its process (``sys.exit``, ``os._exit``, a signal, a hang) ends
that worker only; :func:`run_in_worker` turns it into a failed outcome with one
line naming the cause.

Messages on the pipe, worker to parent: ``("progress", phase, done, total)``,
``("log", level, message)`` (the engine's one-time notices, shown once per run by the parent)
and finally ``("outcome", Outcome)`` or ``("cache", bytes)``.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import re
import select
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable

from ..forked import die_with_parent
from ..measure.backend import announce_once
from ..measure.runner import RunOptions
from . import captured
from .session import Case, Outcome, Status, SuiteSession

DEFAULT_TIMEOUT_S = 60.0  # asv's default ``timeout``
PROGRESS_EVERY_S = 0.1  # the most often a worker reports progress: the parent redraws, not the worker
FORK_GRACE_S = 0.5  # how long a worker waits for a forked child's notice after its case
# Imported once by the fork server, so that each worker inherits them instead of paying for them:
# "__main__" (the `mmtrack` console script, else every worker runs it again), the engine and the
# perf backend. Only light modules: the first sample waits for the fork server, and numpy alone
# took about as long as the rest (the engine's statistics are plain Python, measure/quantiles.py).
# A suite that imports numpy gets it preloaded too (heavy_imports). A missing one is skipped.
PRELOAD = ["mmtrack.asvbridge.forkserver_guard", "__main__", __name__, "mmtrack.measure.perf",
           "mmtrack.measure.perf_explain", "mmtrack.measure.serialize"]
ORPHAN_GRACE_S = 5.0  # a worker outliving its timeout by this much ends itself: its parent is gone or stuck
HEAVY = ("numpy",)  # preloaded when the suite's own files import them (heavy_imports)
_IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]+(%s)\b" % "|".join(HEAVY), re.MULTILINE)
_preload = list(PRELOAD)  # what the fork server of this run preloads: PRELOAD and the suite's HEAVY ones


@dataclass(frozen=True, slots=True)
class CaseJob:
    """Which case to run, found again in the worker by module file, name and parameter index."""

    source: Path
    suite: Path  # the path the parent discovered from: names are relative to it
    benchmark: str
    param_index: int
    options: RunOptions
    cache: bytes | None = None  # the pickled setup_cache value of the case's class, if it has one
    timed: bool = False  # an asv time_ benchmark (asvbridge/timed.py): discovered with timed=True


@dataclass(frozen=True, slots=True)
class CacheJob:
    """Run ``setup_cache`` of the class that holds ``benchmark``; send back the pickled value."""

    source: Path
    suite: Path
    benchmark: str


Job = CaseJob | CacheJob
ProgressFn = Callable[[str, int, int], None]


def case_job(case: Case, options: RunOptions, cache: bytes | None = None) -> CaseJob:
    names, combos = case.benchmark.param_grid()
    b = case.benchmark
    return CaseJob(b.source, b.suite, b.name, combos.index(case.params), options, cache, b.timed)


def timeout_of(case: Case, override: float | None = None) -> float:
    """``--timeout``, else asv's ``timeout`` attribute (method, then class), else 60 s."""
    if override is not None:
        return override
    declared = case.benchmark.declared_timeout()
    return declared if declared is not None else DEFAULT_TIMEOUT_S


# -- the parent side ------------------------------------------------------------------------------
def _context() -> multiprocessing.context.BaseContext:
    """A fork server where the platform has one (fast starts, no inherited connections), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_preload)
        return ctx
    return multiprocessing.get_context("spawn")


def heavy_imports(suite: Path) -> list[str]:
    """The :data:`HEAVY` packages that the suite's files import by name (a plain text search).

    A worker imports the benchmark's module, so a suite that imports numpy pays for it in every
    worker unless the fork server has it; a suite that does not would wait for it before its
    first sample. A package imported only indirectly is not found: its cases still run, each
    worker importing it.
    """
    files = [suite] if suite.is_file() else suite.rglob("*.py") if suite.is_dir() else []
    found: set[str] = set()
    for f in files:
        try:
            found.update(_IMPORT_LINE.findall(f.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return [m for m in HEAVY if m in found]


def start_fork_server(suite: Path | None = None) -> None:
    """Start the fork server now, without waiting for it (measure sooner).

    The fork server spends about a quarter of a second starting an interpreter and importing
    :data:`PRELOAD` (and the heavy packages ``suite`` imports). Started as ``mmtrack bench``
    begins, it does that while this process imports the rest of the command and discovers the
    suite, instead of after; the first worker then waits only for what is left. Where there is
    no fork server, nothing happens.
    """
    global _preload
    _preload = PRELOAD + (heavy_imports(suite) if suite is not None else [])
    ctx = _context()
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


@dataclass(slots=True)
class WorkerResult:
    value: Any = None  # an Outcome (CaseJob) or bytes (CacheJob); None when the worker failed
    error: str = ""  # the cause, one line: "exited with status 3", "killed by SIGSEGV", ...
    output: captured.Written | None = None  # what the worker wrote to stdout/stderr, summarised

    def error_line(self) -> str:
        """The cause and, where the worker wrote something, its last line (a traceback's exception)."""
        return f"{self.error}: {self.output.last_line}" if self.output and self.output.last_line else self.error


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "did not exit"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    return f"exited with status {exitcode}"


def start_worker(target: Callable[..., None], *args: Any) -> tuple[Any, Connection]:
    """A fresh worker running ``target(send_end, *args)``; returns the process and the read end."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    output = captured.new_capture()
    # Not a daemon: a benchmark may start processes of its own (a daemon may not); the caller ends
    # the worker whatever happens (end_worker).
    process = ctx.Process(target=_captured_main, args=(output, target, send, *args), name="mmtrack-worker",
                          daemon=False)
    process.mmtrack_output = output  # read and removed by end_worker
    try:
        process.start()
    except BaseException:
        output.unlink(missing_ok=True)
        raise
    send.close()  # the parent keeps only the read end: the worker's exit closes the pipe
    return process, receive


def _captured_main(output: Path, target: Callable[..., None], *args: Any) -> None:
    """The worker's stdout and stderr go to the parent's file, never to its terminal raw (asvbridge/captured.py)."""
    captured.redirect_into(output)
    target(*args)


def next_message(process: Any, receive: Connection, deadline: float, timeout: float,
                 progress: ProgressFn | None = None) -> tuple[Any, str]:
    """The worker's next message other than progress and log lines, or (None, why there is none)."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, f"timed out after {timeout:g} s"
        ready = wait([receive, process.sentinel], timeout=left)
        if receive in ready:
            try:
                message = receive.recv()
            except (EOFError, OSError):
                process.join(5)
                return None, describe_exit(process.exitcode)
            if message[0] == "progress":
                if progress is not None:
                    progress(*message[1:])
                continue
            if message[0] == "log":
                _relay(message[1], message[2])
                continue
            return message, ""
        if process.sentinel in ready and not receive.poll(0):
            process.join(5)
            return None, describe_exit(process.exitcode)


def end_worker(process: Any, receive: Connection) -> captured.Written | None:
    """End the worker; what it wrote to stdout/stderr, summarised."""
    receive.close()
    if process.is_alive():
        process.kill()
    process.join(5)
    output = getattr(process, "mmtrack_output", None)
    return captured.taken(output) if output is not None else None


def run_in_worker(job: Job, timeout: float, progress: ProgressFn | None = None) -> WorkerResult:
    """Run ``job`` in a fresh worker; wait at most ``timeout`` seconds for its answer."""
    process, receive = start_worker(_worker_main, job, timeout)
    result = WorkerResult()
    try:
        message, result.error = next_message(process, receive, time.monotonic() + timeout, timeout, progress)
        if message is not None:
            result.value = message[1]
    finally:
        result.output = end_worker(process, receive)
    return result


def guard_worker(timeout: float) -> None:
    """In a worker: die with the process that started it, and end itself once ``timeout`` is long past.

    Its parent is the fork server, which dies with ``mmtrack bench`` (forkserver_guard); a
    SIGKILLed ``mmtrack bench`` must not leave a worker spinning at 100% CPU, past any timeout.
    The deadline is kept by a watchdog process, not a thread: nothing of mmtrack's runs in the
    benchmark's process beside a timed sample.
    """
    die_with_parent(os.getppid())
    start_watchdog(timeout + ORPHAN_GRACE_S)


def start_watchdog(after: float) -> None:
    """SIGKILL this process once ``after`` seconds have passed, from a process that is not its child (a
    benchmark's ``os.wait()`` never sees it) and that ends as soon as this process does."""
    target = os.getpid()
    try:
        handle: int | None = os.pidfd_open(target)  # Linux 5.3: no pid reuse to fear
    except (AttributeError, OSError):
        handle = None
    middle = os.fork()
    if middle == 0:  # the middle process: forks the watchdog and leaves, so that init adopts it
        try:
            if os.fork() == 0:
                _watch(target, handle, after)
        finally:
            os._exit(0)
    if handle is not None:
        os.close(handle)
    os.waitpid(middle, 0)


def _watch(target: int, handle: int | None, after: float) -> None:
    keep = handle if handle is not None else -1
    os.closerange(3, keep if keep > 3 else 3)  # no pipe of the worker's stays open here: EOFs arrive as before
    os.closerange(max(keep + 1, 3), MAX_FD)
    deadline = time.monotonic() + after
    if handle is not None:
        if not select.select([handle], [], [], after)[0]:
            signal.pidfd_send_signal(handle, signal.SIGKILL)
        return
    while time.monotonic() < deadline:  # no pidfd: poll (the pid can only be reused once the worker is gone)
        time.sleep(min(POLL_ORPHAN_S, max(deadline - time.monotonic(), 0.0)))
        try:
            os.kill(target, 0)
        except ProcessLookupError:
            return
    try:
        os.kill(target, signal.SIGKILL)
    except ProcessLookupError:
        pass


MAX_FD = 1 << 16
POLL_ORPHAN_S = 0.5


ENGINE_LOG = "mmtrack.measure"


def _relay(level: int, text: str) -> None:
    """Every worker announces the same missing counters: the run says it once."""
    prefix = "mmtrack: "
    if level == logging.WARNING and text.startswith(prefix):
        announce_once(text[len(prefix):])
    else:
        logging.getLogger(ENGINE_LOG).log(level, "%s", text)


# -- the worker side ------------------------------------------------------------------------------
class _ForwardLog(logging.Handler):
    def __init__(self, conn: Connection) -> None:
        super().__init__(logging.INFO)
        self.conn = conn
        self.pid = os.getpid()

    def emit(self, record: logging.LogRecord) -> None:
        if os.getpid() == self.pid:
            self.conn.send(("log", record.levelno, record.getMessage()))



def _find_case(job: Job, as_asv: bool = False) -> Case:
    """The job's case, found by discovering its file alone, named as the parent's discovery named it."""
    from .discover import discover
    from .session import expand

    source, benchmark = job.source, job.benchmark
    param_index = job.param_index if isinstance(job, CaseJob) else None
    suite = discover(job.suite, only=source, timed=isinstance(job, CaseJob) and job.timed, as_asv=as_asv)
    if suite.failures:
        raise ImportError(suite.failures[0].message)
    for b in suite.benchmarks:
        if b.name == benchmark:
            cases = expand([b])
            return cases[param_index or 0]
    raise LookupError(f"benchmark {benchmark} not found in {source}")


def _worker_main(conn: Connection, job: Job, timeout: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends this worker
    guard_worker(timeout)
    engine_log = logging.getLogger(ENGINE_LOG)
    engine_log.addHandler(_ForwardLog(conn))
    engine_log.propagate = False
    try:
        case = _find_case(job)
    except Exception as exc:  # noqa: BLE001  (the module imported in the parent; say why not here)
        message = f"could not load the benchmark in its worker: {type(exc).__name__}: {exc}"
        conn.send(("outcome", Outcome(job.benchmark, {}, Status.FAILED, message=message)))
        return
    if isinstance(job, CacheJob):
        assert case.benchmark.owner is not None
        try:
            value = pickle.dumps(SuiteSession(RunOptions()).setup_cache(case.benchmark.owner))
        except NotImplementedError as exc:  # asv skips the class's cases
            message = str(exc) or "setup_cache raised NotImplementedError"
            conn.send(("outcome", Outcome(job.benchmark, {}, Status.SKIPPED, message=message)))
        except Exception as exc:  # noqa: BLE001  (fails the class's cases, not the run)
            message = f"setup failed: {type(exc).__name__}: {exc}"
            conn.send(("outcome", Outcome(job.benchmark, {}, Status.FAILED, message=message)))
        else:
            conn.send(("cache", value))
        return
    pid = os.getpid()
    # A benchmark may fork; a child that returns into the runner must never report. It leaves a
    # byte in this pipe and exits, and the case fails.
    notices, notice = os.pipe()
    forked = False

    def _after_fork_in_parent() -> None:
        nonlocal forked
        forked = True

    os.register_at_fork(after_in_parent=_after_fork_in_parent)

    def leave_if_forked_child() -> None:
        if os.getpid() != pid:
            os.write(notice, b"f")
            os._exit(0)

    last = 0.0

    def report(_case: Case, phase: str, done: int, total: int) -> None:
        nonlocal last
        leave_if_forked_child()
        now = time.monotonic()
        if done == total or now - last >= PROGRESS_EVERY_S:
            last = now
            conn.send(("progress", phase, done, total))

    session = SuiteSession(job.options, progress=report)
    if job.cache is not None and case.benchmark.owner is not None:
        session.use_cache(case.benchmark.owner, pickle.loads(job.cache))
    outcome = session.run_case(case)
    leave_if_forked_child()
    if forked and select.select([notices], [], [], FORK_GRACE_S)[0] or select.select([notices], [], [], 0)[0]:
        outcome = Outcome(
            outcome.name, outcome.params, Status.FAILED,
            message="a forked child process returned into the benchmark runner; end children with os._exit()",
        )
    conn.send(("outcome", outcome))
