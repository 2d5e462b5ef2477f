"""``mmtrack bench``: discover engine benchmarks, run each case in a worker process, save and compare the run.

Each case runs in its own worker (:mod:`mmtrack.asvbridge.worker`), so a crash, an exit or a hang
fails that case alone. Each finished case goes into the run's journal at once
(:mod:`mmtrack.bench_journal`); the store gets the run at the end, or the next ``mmtrack bench``
gets it from the journal. ``--in-process`` runs everything in this process, for debugging.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, Protocol

from ..asvbridge import worker
from ..asvbridge.callgrind_pool import CallgrindSession, require_valgrind
from ..asvbridge.discover import Suite, discover
from ..asvbridge.discover_worker import discover_in_workers
from ..asvbridge.host import host_info
from ..asvbridge.session import Case, Outcome, Status, SuiteSession, expand, order_cases
from ..benchruns import journal as bench_journal
from ..benchruns import profiles as bench_profiles
from ..errors import EXIT_FAILURES, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE, UserError, user_regex
from ..measure import conditions
from ..measure.processes import pool
from ..measure.runner import RunOptions
from ..results import BenchContext
from ..store.url import normalize_url, redact, resolve_url
from ..vcs import GitError, commit_info, project_root
from .bench_events import (
    Compared,
    ComparisonFailed,
    CountsExplained,
    NothingToSave,
    ReportWritten,
    Saved,
    SaveFailed,
)
from .bench_save import recover_journals, save
from .reporting import Report, silent

# Measure sooner: scipy (analysis), SQLAlchemy (store) and rich tables (report) cost seconds to
# import, so they are imported after sampling, in the functions that use them.
if TYPE_CHECKING:
    from ..benchruns.history import BaselineResult


# Worker processes per case, each taking a share of the samples (measure/processes.py). Four kept a memory-bound
# case's run-to-run spread at pyperf's where one process did not (docs/design/measurement.md, section 7). A --quick
# smoke run keeps one: its numbers are not to be trusted anyway.
DEFAULT_PROCESSES = 4
QUICK_PROCESSES = 1


@dataclass(slots=True)
class BenchRequest:
    path: Path
    pattern: str | None = None
    quick: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    order: str = "declared"
    seed: int | None = None
    cooldown: float = 0.0
    save: bool = True
    compare: str = "latest"  # none | latest | <run id> | <commit>
    db: str | None = None  # resolved store URL
    output: Path | None = None  # MMTRACK_OUTPUT: the versioned JSON report
    timeout: float | None = None  # per case, seconds; None: asv's ``timeout`` attribute or 60 s
    in_process: bool = False  # run cases in this process (debugging, profiling): no isolation
    fail_on: tuple[str, ...] = ()  # "regression": exit 1 when the end-of-run comparison finds one
    processes: int | None = None  # worker processes per case, sharing its samples; None: the default
    instrument: str = "wall"  # "wall": the engine's backend per case; "callgrind": instructions under Valgrind
    profiles: Path | None = None  # callgrind: where the session keeps each case's profile (benchruns/profiles.py)

    def worker_processes(self) -> int:
        if self.processes is not None:
            return self.processes
        return QUICK_PROCESSES if self.quick else DEFAULT_PROCESSES

    def options(self) -> RunOptions:
        base = RunOptions.quick() if self.quick else RunOptions()
        given = {k: v for k, v in self.overrides.items() if v is not None}
        if not 0 <= self.cooldown < math.inf:
            raise UserError(
                f"bad run option: cooldown must be a finite number of seconds, 0 or more, got {self.cooldown!r}")
        try:
            return dataclasses.replace(base, **given, process_model=PROCESS_MODELS[self.in_process])
        except ValueError as exc:
            raise UserError(f"bad run option: {exc}") from None


# What the report and the stored run say about where the samples were taken (measure/conditions.py).
PROCESS_MODELS = {False: conditions.WORKER_PER_CASE, True: conditions.IN_PROCESS}


@dataclass(slots=True)
class BenchRun:
    suite: Suite
    outcomes: list[Outcome]
    code_versions: dict[str, str] = field(default_factory=dict)
    total: int = 0  # cases selected; more than len(outcomes) when the run was interrupted
    interrupted: str | None = None  # "SIGTERM", "Ctrl-C": the run stopped early
    process_model: str = PROCESS_MODELS[False]

    @property
    def exit_code(self) -> int:
        if self.interrupted == "Ctrl-C":
            return EXIT_INTERRUPTED
        if self.interrupted == "SIGTERM":
            return EXIT_TERMINATED
        failed = self.suite.failures or any(o.status is Status.FAILED for o in self.outcomes)
        return EXIT_USAGE if failed or self.interrupted or len(self.outcomes) < self.total else EXIT_OK


class Terminated(Exception):
    """SIGTERM arrived: stop after keeping what finished, as for Ctrl-C."""


@contextmanager
def _sigterm_stops_the_run() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(_signum: int, _frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def refuse_options_that_cannot_apply(request: BenchRequest) -> None:
    """Options that would do nothing with the others given: one line before anything is run or written."""
    if request.seed is not None and request.order != "random":
        raise UserError(f"--seed {request.seed} shuffles --order random only; add --order random or drop --seed")
    from ..analysis.gate import checked

    checked("bench", request.fail_on)
    if request.fail_on and request.compare == "none":
        raise UserError(f"--fail-on {' '.join(request.fail_on)} reads the comparison that --compare none turns off; "
                        "give --compare latest|RUN|COMMIT or drop --fail-on")


def _plan(request: BenchRequest) -> tuple[Suite, list[Any], list[Case]]:
    refuse_options_that_cannot_apply(request)
    try:
        if request.in_process:
            suite = discover(request.path)
        else:  # a file that exits, crashes or hangs at import fails alone, as a case does
            suite = discover_in_workers(request.path, request.timeout or worker.DEFAULT_TIMEOUT_S)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    if request.pattern:
        user_regex(request.pattern, "-b")
    selected = suite.select(request.pattern)
    if not selected and not suite.failures:
        raise UserError(
            f"{request.path}: no engine benchmark matches {request.pattern!r}; "
            "decorate asv methods with @mmtrack.bench or loosen -b"
            if request.pattern
            else f"{request.path}: no engine benchmarks found; decorate asv methods with @mmtrack.bench"
        )
    try:
        cases = order_cases(expand(selected), request.order, request.seed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return suite, selected, cases


def _case_label(case: Case) -> str:
    return case.benchmark.name + (f"({', '.join(case.param_labels.values())})" if case.params else "")


class _WorkerSession:
    """Runs each case in fresh workers; ``setup_cache`` once per class in a worker of its own.

    With ``processes`` > 1 a case runs in that many workers one after the other, as pyperf does:
    the first calibrates the chunk and warms up fully, the others reuse its chunk size and warm up
    for a ``processes``-th of the budget; each takes a ``processes``-th of the samples, and the
    parent pools them (measure/processes.py). Per sample, nothing changes.
    """

    def __init__(self, options: RunOptions, timeout: float | None, progress: Callable[[Case, str, int, int], None],
                 processes: int = 1):
        self.options = options
        self.timeout = timeout
        self.progress = progress
        self.processes = processes
        self._caches: dict[str, worker.WorkerResult] = {}

    def run_case(self, case: Case) -> Outcome:
        b = case.benchmark
        timeout = worker.timeout_of(case, self.timeout)
        cache = None
        if b.cache_key is not None:
            if b.cache_key not in self._caches:
                self._caches[b.cache_key] = worker.run_in_worker(worker.CacheJob(b.source, b.suite, b.name), timeout)
            got = self._caches[b.cache_key]
            if got.error:
                return Outcome(b.name, case.param_labels, Status.FAILED, message=f"setup_cache {got.error_line()}")
            if isinstance(got.value, Outcome):  # setup_cache raised: the same outcome for every case
                return dataclasses.replace(got.value, name=b.name, params=case.param_labels)
            cache = got.value
        # A concurrent benchmark's sample is a time window over its own threads: one process.
        processes = 1 if b.concurrent else self.processes
        if processes == 1:
            return self._run_one(case, self.options, cache, timeout, "")
        options = dataclasses.replace(self.options, sample_share=1 / processes)
        runs = []
        for k in range(processes):
            outcome = self._run_one(case, options, cache, timeout, f" (process {k + 1} of {processes})")
            if outcome.status is not Status.OK or outcome.stats is None:
                return outcome
            runs.append(outcome)
            if k == 0:  # the others reuse the calibrated chunk, on a shorter warm-up
                options = dataclasses.replace(options, chunk_size=outcome.stats.chunk_size,
                                              warm_up=self.options.warm_up / processes)
        return dataclasses.replace(runs[0], stats=pool([o.stats for o in runs if o.stats is not None]))

    def _run_one(self, case: Case, options: RunOptions, cache: bytes | None, timeout: float, which: str) -> Outcome:
        b = case.benchmark
        result = worker.run_in_worker(
            worker.case_job(case, options, cache),
            timeout,
            lambda phase, done, total: self.progress(case, phase + which, done, total),
        )
        if result.error:
            return Outcome(b.name, case.param_labels, Status.FAILED, message=f"worker {result.error_line()}{which}")
        assert isinstance(result.value, Outcome)
        if result.output is not None and result.value.stats is not None:  # shown escaped, never raw
            result.value.stats.notes.append(result.output.note() + which)
        return dataclasses.replace(result.value, name=b.name, params=case.param_labels)


class CaseProgress(Protocol):
    """What a bench run tells its caller while its cases run (the CLI draws it as a bar, cli_progress.CaseBar).
    Every call comes from the process that runs the verb, between samples."""

    def running(self, total: int) -> ContextManager[None]:
        """Held while the ``total`` cases run."""

    def phase(self, label: str, phase: str, done: int, total: int) -> None:
        """Case ``label`` is ``done`` of ``total`` through ``phase`` (warm-up, samples ...)."""

    def case_done(self) -> None:
        """One more case finished."""


class _Unwatched:
    """The progress of a run nobody watches."""

    @contextmanager
    def running(self, total: int) -> Iterator[None]:
        yield

    def phase(self, label: str, phase: str, done: int, total: int) -> None:
        pass

    def case_done(self) -> None:
        pass


def execute(request: BenchRequest, progress: CaseProgress | None = None,
            on_done: Callable[[Outcome], None] | None = None,
            plan: tuple[Suite, list[Any], list[Case]] | None = None,
            code_versions: dict[str, str] | None = None) -> BenchRun:
    """Discover, select, run; no printing of results (the caller renders).

    ``on_done`` sees each outcome as its case finishes. Ctrl-C or SIGTERM ends the run early:
    the outcomes so far come back with ``interrupted`` set. The benchmarks' code versions are
    filled into ``code_versions`` (and ``run.code_versions``) when the first case has finished,
    before ``on_done`` sees it: asv's hash imports asv_runner (about 0.15 s), which would
    otherwise delay the first sample.
    """
    options = request.options()
    suite, selected, cases = plan or _plan(request)
    run = BenchRun(suite, [], code_versions if code_versions is not None else {}, total=len(cases),
                   process_model=PROCESS_MODELS[request.in_process])
    versions_known = False

    def know_code_versions() -> None:
        nonlocal versions_known
        if not versions_known:
            versions_known = True
            run.code_versions.update(_code_versions(selected))
    owner_pid = os.getpid()
    watch = progress or _Unwatched()
    # Told here, in the parent: the worker only sends a message between samples, at most every 0.1 s.
    with watch.running(len(cases)):

        def on_phase(case: Case, phase: str, done: int, total: int) -> None:
            if os.getpid() != owner_pid:  # a forked child returned into the runner: it never reports
                os._exit(0)
            watch.phase(_case_label(case), phase, done, total)

        def finished(outcome: Outcome) -> None:
            if os.getpid() != owner_pid:
                os._exit(0)
            know_code_versions()
            run.outcomes.append(outcome)
            if on_done is not None:
                on_done(outcome)
            watch.case_done()

        session = _session(request, options, on_phase)
        try:
            with _sigterm_stops_the_run():
                for i, case in enumerate(cases):
                    if i and request.cooldown > 0:
                        time.sleep(request.cooldown)
                    finished(session.run_case(case))
        except KeyboardInterrupt:
            run.interrupted = "Ctrl-C"
        except Terminated:
            run.interrupted = "SIGTERM"
        finally:
            if isinstance(session, CallgrindSession):
                session.close()
    know_code_versions()
    return run


def _session(request: BenchRequest, options: RunOptions, progress: Callable[[Case, str, int, int], None]):
    if request.instrument == "callgrind":
        return CallgrindSession(options, request.timeout, progress, keep=request.profiles)
    if request.in_process:
        return SuiteSession(options, progress=progress)
    return _WorkerSession(options, request.timeout, progress, request.worker_processes())


def _code_versions(benchmarks) -> dict[str, str]:
    versions = {}
    for b in benchmarks:
        try:
            versions[b.name] = b.code_version()
        except (OSError, TypeError):  # no source to hash (e.g. defined in a REPL)
            pass
    return versions


def _context(request: BenchRequest, code_versions: dict[str, str], started_at: datetime) -> tuple[Path, BenchContext]:
    path = Path(request.path).resolve()
    root = project_root(path if path.is_dir() else path.parent)  # `bench .` at the top level: its own repository
    try:
        suite = path.relative_to(root).as_posix()
    except ValueError:
        suite = path.as_posix()
    try:
        commit = commit_info(root)
    except GitError as exc:
        if request.save:
            raise UserError(f"{request.path}: cannot save the run: no git commit to key it by ({exc}); "
                            "run inside a git repository with a commit, or pass --no-save") from None
        commit = None
    return root, BenchContext(suite, host_info(), commit, started_at, code_versions)


@dataclass(slots=True)
class BenchResult:
    """What ``mmtrack bench`` did: the run, where it was saved, and its comparison with the baseline."""

    run: BenchRun
    run_id: int | None = None  # None: not saved
    save_failed: bool = False  # the store refused it; its cases wait in the journal
    baseline: BaselineResult | None = None  # the comparison with the baseline, or a note why there is none
    fail_on: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        if self.save_failed:
            return EXIT_USAGE
        comparison = getattr(self.baseline, "comparison", None)
        if self.run.exit_code == EXIT_OK and self.fail_on and comparison is not None:
            from ..analysis.gate import Gate

            if Gate("bench", self.fail_on).rows(comparison):
                return EXIT_FAILURES
        return self.run.exit_code


def check_named_baseline(request: BenchRequest, ctx: BenchContext, url: str) -> None:
    """``--compare RUN|COMMIT`` names a stored bench run: refused in one line before the suite runs, not after."""
    if request.compare in ("none", "latest") or ctx.commit is None:
        return
    from ..benchruns.history import named_baseline
    from ..store.db import open_store

    try:
        with open_store(url, existing=True) as store:
            named_baseline(store, ctx.machine, request.compare, Path.cwd())
    except UserError as exc:
        raise UserError(f"{exc}; nothing was run", exc.exit_code) from None


def run_bench(request: BenchRequest, report: Report = silent, progress: CaseProgress | None = None) -> BenchResult:
    """Run the suite, save the run, compare it with its baseline. ``report`` sees, in order: the journals of earlier
    runs saved now, the :class:`BenchRun` once its cases ran, where it was saved, :class:`Compared`, the JSON
    report written; ``progress`` sees the cases run."""
    started_at = datetime.now(timezone.utc)
    if request.output is not None:  # where the command started: a benchmark may chdir (--in-process)
        request.output = Path(request.output).absolute()
    plan = _plan(request)  # usage errors first, before anything is run or written
    if request.instrument == "callgrind":
        require_valgrind()
    project, ctx = _context(request, {}, started_at)  # code versions: filled by execute
    if request.instrument == "callgrind" and request.save:
        request.profiles = bench_profiles.pending(project)
    url = normalize_url(request.db) if request.db else resolve_url(None)
    check_named_baseline(request, ctx, url)
    journal = None

    def keep(outcome: Outcome) -> None:
        # The journal is created with the first finished case, once the code versions are known.
        nonlocal journal
        if journal is None:
            journal = bench_journal.Journal.create(project, ctx, url, redact(url))
        journal.add(outcome)

    if request.save:
        recover_journals(project, url, report)
    owner_pid = os.getpid()
    run = execute(request, progress, on_done=keep if request.save else None, plan=plan,
                  code_versions=ctx.code_versions)
    if os.getpid() != owner_pid:  # a forked child that returned this far never reports or saves
        os._exit(0)
    from ..benchruns.history import storable

    run.outcomes = storable(run.outcomes, run.code_versions)  # a case the store cannot keep fails here, alone
    nothing_ran = not run.outcomes  # every file failed to import, or Ctrl-C came first
    if request.save and journal is None and not nothing_ran:
        journal = bench_journal.Journal.create(project, ctx, url, redact(url))
    report(run)
    result = BenchResult(run, fail_on=request.fail_on)
    if request.save and nothing_ran:  # a run without results would only stand between later runs and their baseline
        report(NothingToSave())
    if journal is not None:
        _save_run(result, journal, url, ctx, report)
    kept = bench_profiles.settle(request.profiles, project, result.run_id)
    result.baseline = _compare(request, result, ctx, url, nothing_ran, report)
    report(Compared(result.baseline))
    if kept is not None:
        _explain_counts(result.baseline, project, kept, report)
    if request.output is not None:
        _write_report(request, result, ctx, started_at)
        report(ReportWritten(request.output))
    return result


def _save_run(result: BenchResult, journal: bench_journal.Journal, url: str, ctx: BenchContext,
              report: Report) -> None:
    """The run into the store, its journal removed once saved (kept, and said where, when the save failed)."""
    run = result.run
    result.run_id, why = save(url, ctx, run.outcomes, report)
    if result.run_id is not None:
        journal.remove()
        report(Saved(result.run_id, ctx.commit.short if ctx.commit else "", redact(url)))
    else:
        result.save_failed = True
        report(SaveFailed(redact(url), why, len(run.outcomes), journal.folder))


def _explain_counts(baseline: BaselineResult, project: Path, kept: Path, report: Report) -> None:
    """Why instruction counts changed against the baseline, when both runs kept their callgrind profiles."""
    if baseline.comparison is None or baseline.baseline_id is None:
        return
    from ..analysis.why_counts import why_counts_changed

    report(CountsExplained(why_counts_changed(baseline.comparison.rows,
                                              bench_profiles.of_run(project, baseline.baseline_id), kept)))


def _compare(request: BenchRequest, result: BenchResult, ctx: BenchContext, url: str, nothing_ran: bool,
             report: Report) -> BaselineResult:
    """The run against its baseline (``--compare``), when there is one to read; a failure is advice, not an error."""
    # Imported after sampling (measure sooner): scipy, SQLAlchemy and the report cost seconds.
    from ..benchruns.history import BaselineResult, compare_with_baseline
    from ..store.db import open_store

    if ctx.commit is None or request.compare == "none" or result.save_failed or nothing_ran:
        return BaselineResult(None, None, None)
    try:
        with open_store(url) as store:
            return compare_with_baseline(store, result.run_id or -1, ctx, result.run.outcomes, request.compare,
                                         Path.cwd())
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001  (the comparison is advice; the run is saved)
        report(ComparisonFailed(type(exc).__name__, str(exc)))
        return BaselineResult(None, None, None)


def _write_report(request: BenchRequest, result: BenchResult, ctx: BenchContext, started_at: datetime) -> None:
    """MMTRACK_OUTPUT: the versioned JSON report of the run and its comparison."""
    from ..analysis.render import to_json
    from ..benchruns.report import build_report, write_report

    run, comparison = result.run, result.baseline.comparison
    report = build_report(
        outcomes=run.outcomes,
        suite=ctx.suite,
        host=ctx.host,
        commit=ctx.commit,
        started_at=started_at,
        code_versions=run.code_versions,
        run_id=result.run_id,
        comparison=to_json(comparison) if comparison is not None else None,
        import_failures=[(str(f.path), f.message) for f in run.suite.failures],
    )
    try:
        write_report(request.output, report)
    except OSError as exc:
        raise UserError(f"MMTRACK_OUTPUT={request.output}: cannot write the report ({exc.strerror or exc}); "
                        "point it at a writable path") from None
