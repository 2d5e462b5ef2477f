"""The parent side of ``--instrument callgrind``: one worker under Valgrind serves the run's cases.

Valgrind's start-up (an interpreter and mmtrack's imports) is paid once per worker, not once per case, and
at Valgrind's plain pace: the worker starts with callgrind's instrumentation off and ``vgdb`` switches it on
once the first case's suite is imported (where vgdb cannot, the worker starts again instrumented throughout: slower, the same
instruction counts). A case that crashes the worker or runs past its time budget fails alone: the worker is ended
and a fresh one serves the cases after it. The worker's environment and working directory are fixed
(:func:`worker_environment`), so two runs of one commit read the same counts.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import pickle
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

from ..errors import UserError
from ..forked import die_with_parent
from ..measure import callgrind
from ..measure.runner import RunOptions
from . import captured
from .callgrind_worker import CallgrindJob
from .session import Case, Outcome, Status
from .worker import case_job, timeout_of

START_TIMEOUT_S = 120.0  # CPU seconds for an interpreter and mmtrack's imports under Valgrind (docs/design/callgrind.md)
# Budgets count the worker's CPU time: on a loaded machine a start-up's wall time is many times its CPU time. A
# worker that waits without using the CPU (a sleep, a lock) is stopped after this many budgets.
WALL_FACTOR = 10.0
POLL_S = 0.5
FIXED_PATH = "/usr/local/bin:/usr/bin:/bin"
ProgressFn = Callable[[Case, str, int, int], None]


def require_valgrind() -> str:
    """Valgrind's version line, or one line saying which package to install."""
    version = callgrind.valgrind_version()
    if version is None:
        raise UserError(
            f"--instrument callgrind needs valgrind, which is not on PATH; install the Debian package "
            f"'{callgrind.PACKAGE}' (apt-get install {callgrind.PACKAGE}) or your system's equivalent")
    return version


def worker_environment(without: Path | None = None) -> dict[str, str]:
    """The worker's whole environment: the same variables and values on every run, whatever the shell had.

    The environment sits on the process stack, so its length moves every stack address and with them the
    simulated cache sets. PYTHONPATH keeps the parent's import path for mmtrack and the project, less the
    entries inside ``without`` (a checkout that would shadow a built commit's package).
    """
    roots = [str(Path(__file__).resolve().parents[2])]  # the folder that holds this mmtrack
    roots += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in roots]
    if without is not None:
        inside = without.resolve()
        roots = [p for p in roots if not (Path(p).resolve() == inside or inside in Path(p).resolve().parents)]
    return {
        "PATH": FIXED_PATH,
        "PYTHONHASHSEED": callgrind.HASH_SEED,
        "PYTHONPATH": os.pathsep.join(roots),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LC_ALL": "C.UTF-8",
    }


def profile_label(benchmark: str, params: Mapping[str, str]) -> str:
    """A case's profile file name stem: the benchmark and its parameter labels in the order of their names (the
    store's: a reader knows them from there, not from the suite's declaration), file-name safe."""
    values = [str(v) for _, v in sorted(params.items())]
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", "-".join([benchmark, *values]))[:150]


def kept_profile(folder: Path, label: str) -> tuple[Path, int] | None:
    """The profile kept for a case in ``folder`` and the ops its region ran, or None."""
    for path in sorted(folder.glob(f"{glob.escape(label)}.*ops.callgrind.out")):
        ops = path.name[len(label) + 1:].split("ops.", 1)[0]
        if ops.isdigit():
            return path, int(ops)
    return None


def _tail(path: Path, size: int = 8192) -> str:
    with open(path, "rb") as f:
        f.seek(max(f.seek(0, os.SEEK_END) - size, 0))
        return f.read().decode("utf-8", errors="replace")


class _Worker:
    """One ``valgrind python -m mmtrack.asvbridge.callgrind_worker`` process and its pipes."""

    def __init__(self, scratch: Path, python: Path | None, without: Path | None, instrument_at_start: bool) -> None:
        self.scratch = scratch
        self.profiles = scratch / "callgrind.out"
        self.log = open(scratch / "worker.log", "ab")
        command = [*callgrind.valgrind_args(self.profiles, instrument_at_start=instrument_at_start),
                   str(python or sys.executable), "-m", "mmtrack.asvbridge.callgrind_worker"]
        # Its own session (killpg ends the benchmark's children too), and SIGKILLed by the kernel when this thread
        # ends (PR_SET_PDEATHSIG survives valgrind's exec): a SIGKILLed mmtrack leaves no valgrind.bin busy.
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env=worker_environment(without), cwd=scratch / "cwd", start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()))
        assert self.process.stdout is not None and self.process.stdin is not None
        self.replies: IO[bytes] = self.process.stdout
        self.jobs: IO[bytes] = self.process.stdin
        self.overran = False  # the last receive() gave up on its budget

    def cpu_seconds(self) -> float | None:
        """CPU time the worker (valgrind and the program it simulates) has used; None where /proc is unreadable."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        except (OSError, ValueError, IndexError):
            return None

    def receive(self, budget: float) -> tuple | None:
        """The next message, or None when the worker died or used ``budget`` CPU seconds (wall seconds where CPU
        time is unreadable, and ``WALL_FACTOR`` times as many wall seconds in any case) without answering."""
        start_cpu, start_wall = self.cpu_seconds(), time.monotonic()
        while True:
            ready, _, _ = select.select([self.replies], [], [], POLL_S if budget > 0 else 0.0)
            if ready:
                break
            cpu, wall = self.cpu_seconds(), time.monotonic() - start_wall
            used = cpu - start_cpu if cpu is not None and start_cpu is not None else wall
            if budget <= 0 or used >= budget or wall >= WALL_FACTOR * budget or self.process.poll() is not None:
                self.overran = budget > 0 and (used >= budget or wall >= WALL_FACTOR * budget)
                return None
        try:
            return pickle.load(self.replies)
        except (EOFError, pickle.UnpicklingError, OSError):
            return None

    def send(self, job: CallgrindJob) -> bool:
        try:
            pickle.dump(job, self.jobs, protocol=pickle.HIGHEST_PROTOCOL)
            self.jobs.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def last_words(self) -> str:
        """The program's last line on stderr (a traceback's exception, a benchmark's print), else Valgrind's own last
        message that is not a warning, escaped for a terminal: Valgrind's cache warnings say nothing of a failure."""
        for log, skip in ((self.scratch / "worker.log", ()), (callgrind.valgrind_log(self.profiles), ("warning:",))):
            try:
                lines = _tail(log).splitlines()
            except OSError:
                continue
            said = [line for line in lines if not skip or not line.strip().split("-- ", 1)[-1].startswith(skip)]
            if captured.last_line("\n".join(said)):
                return captured.last_line("\n".join(said))
        return ""

    def why_down(self) -> str:
        try:  # a closed pipe comes a moment before the exit status; a worker over its budget is still running
            code = self.process.poll() if self.overran else self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.last_words()
        said = f": {tail}" if tail else ""
        if code is None:
            return f"the worker under valgrind stopped answering{said}"
        if code < 0:
            return f"the worker under valgrind was killed by {signal.Signals(-code).name}{said}"
        return f"the worker under valgrind exited with status {code}{said}"

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # valgrind and any process the benchmark started
            except ProcessLookupError:
                pass
        self.process.wait()
        for stream in (self.jobs, self.replies, self.log):
            try:
                stream.close()
            except OSError:
                pass


class CallgrindSession:
    """Runs cases in a worker under Valgrind; the run's profiles kept under ``keep`` (None: not kept).

    ``python``: the interpreter of a built commit (A/B runs), else this one; ``without``: see
    :func:`worker_environment`."""

    # Instrument from the first job on, not from start-up (scripts/callgrind_targets.py --methods compares both).
    instrument_late = True
    # ... after the first case's suite is imported (its first case cost 2.5 CPU seconds more, instrumented)
    import_before_instrumenting = True

    def __init__(self, options: RunOptions, timeout: float | None, progress: ProgressFn,
                 keep: Path | None = None, python: Path | None = None, without: Path | None = None) -> None:
        self.valgrind = require_valgrind()  # "valgrind-3.19.0": said under each case's Measurement row
        self.python, self.without = python, without  # the interpreter the worker runs (a built commit's)
        self.options = dataclasses.replace(options, pin_cpu=False, process_model=callgrind.PROCESS_MODEL)
        self.timeout = timeout
        self.progress = progress
        self.keep = keep
        self.scratch = Path(tempfile.mkdtemp(prefix="mmtrack-callgrind-"))
        (self.scratch / "cwd").mkdir()
        self.worker: _Worker | None = None
        self.profiles: dict[str, Path] = {}  # case full name -> its kept profile
        self.late_failed: str | None = None  # why vgdb could not switch the instrumentation on, if it could not

    def _started(self, first: CallgrindJob) -> _Worker | str:
        if self.worker is not None and self.worker.process.poll() is None:
            return self.worker
        self.worker = _Worker(self.scratch, self.python, self.without, instrument_at_start=not self.instrument_late)
        if self.worker.receive(START_TIMEOUT_S) != ("ready",):
            return self._start_failed()
        if self.instrument_late:
            if self.import_before_instrumenting and not self._loaded(first):
                return self._start_failed()
            why = callgrind.start_instrumentation(self.worker.process.pid, self.worker.profiles)
            if why is not None:  # no vgdb or no ptrace: start again instrumented throughout (slower, same instructions)
                self._drop()
                self.instrument_late, self.late_failed = False, why
                return self._started(first)
        return self.worker

    def _loaded(self, first: CallgrindJob) -> bool:
        """The first case's suite and package imported before the switch, at Valgrind's plain pace."""
        assert self.worker is not None
        sent = self.worker.send(dataclasses.replace(first, load_only=True))
        return sent and self.worker.receive(START_TIMEOUT_S) == ("loaded",)

    def _start_failed(self) -> str:
        assert self.worker is not None
        why = self.worker.why_down()
        self._drop()
        return f"could not start the worker under valgrind: {why}"

    def _drop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def run_case(self, case: Case) -> Outcome:
        b = case.benchmark

        def fail(message: str) -> Outcome:
            return Outcome(b.name, case.param_labels, Status.FAILED, message=message)

        self.progress(case, "starting valgrind", 0, 1)
        job = CallgrindJob(case_job(case, self.options), self.scratch / "callgrind.out", self.without is not None)
        worker = self._started(job)
        if isinstance(worker, str):
            return fail(worker)
        self.progress(case, "under callgrind", 0, 1)
        budget = timeout_of(case, self.timeout)
        log = self.scratch / "worker.log"
        since = log.stat().st_size if log.exists() else 0
        reply = worker.receive(0) if not worker.send(job) else worker.receive(budget)
        if reply is None:
            why = (f"over its time budget under valgrind ({budget:g} s of CPU time); raise the benchmark's timeout "
                   "or --timeout, or make the case smaller" if worker.overran else worker.why_down())
            self._drop()
            return fail(why)
        _, outcome, profile = reply
        if profile is not None and outcome.stats is not None and self.keep is not None:
            self.profiles[outcome.full_name] = self._kept(case, Path(profile), outcome.stats.operations[-1])
        if outcome.stats is not None:
            outcome.stats.notes.append(f"counted under {self.valgrind}" + (
                f" (instrumented from start-up: {self.late_failed})" if self.late_failed else ""))
            written = captured.summary(log, since)  # the benchmark's prints: in the worker's log, summarised here
            if written is not None:
                outcome.stats.notes.append(written.note())
        return dataclasses.replace(outcome, name=b.name, params=case.param_labels)

    def _kept(self, case: Case, profile: Path, ops: int) -> Path:
        """The case's profile moved under ``keep``, named with the ops its region ran (to compare per op)."""
        assert self.keep is not None
        self.keep.mkdir(parents=True, exist_ok=True)
        label = profile_label(case.benchmark.name, case.param_labels)
        return Path(shutil.move(profile, self.keep / f"{label}.{ops}ops.callgrind.out"))

    def close(self) -> None:
        self._drop()
        shutil.rmtree(self.scratch, ignore_errors=True)
