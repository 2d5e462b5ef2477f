"""``mmtrack bench``: discover engine benchmarks, run each case in a worker process, print the report.

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
from typing import TYPE_CHECKING, Any, Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..asvbridge import worker
from ..asvbridge.callgrind_pool import CallgrindSession, require_valgrind
from ..asvbridge.discover import Suite, discover
from ..asvbridge.discover_worker import discover_in_workers
from ..asvbridge.host import host_info
from ..asvbridge.session import Case, Outcome, Status, SuiteSession, expand, order_cases
from ..benchruns import journal as bench_journal
from ..benchruns import profiles as bench_profiles
from ..errors import EXIT_FAILURES, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UserError, user_regex
from ..measure import conditions
from ..measure.processes import pool
from ..measure.runner import RunOptions
from ..results import BenchContext
from ..store.url import normalize_url, redact, resolve_url
from ..textsafe import markup as escape  # rich markup escaped, terminal controls shown escaped
from ..vcs import GitError, commit_info, project_root

# Measure sooner: scipy (analysis), SQLAlchemy (store) and rich tables (report) cost seconds to
# import, so they are imported after sampling, in the functions that use them.
if TYPE_CHECKING:
    from ..benchruns.history import BaselineResult


# Worker processes per case, each taking a share of the samples (measure/processes.py). Four: in two
# interleaved peer runs (docs/design/measurement.md, section 7) they kept the memory-bound sum's run-to-run
# CV at or below pyperf's where one process did not, for about 1.2 s more per case. A --quick smoke
# run keeps one: its numbers are not to be trusted anyway.
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
                return Outcome(b.name, case.param_labels, Status.FAILED, message=f"setup_cache {got.error}")
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
            return Outcome(b.name, case.param_labels, Status.FAILED, message=f"worker {result.error}{which}")
        assert isinstance(result.value, Outcome)
        return dataclasses.replace(result.value, name=b.name, params=case.param_labels)


def execute(request: BenchRequest, console: Console | None = None,
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
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=console is None,
        auto_refresh=False,
    ) as bar:
        # Drawn here, in the parent: the worker only sends a message between samples, at most
        # every 0.1 s, and never waits for a redraw.
        overall = bar.add_task("benchmark cases", total=len(cases))
        current = bar.add_task("", total=1)
        redraw = _Redraw(bar)

        def progress(case: Case, phase: str, done: int, total: int) -> None:
            if os.getpid() != owner_pid:  # a forked child returned into the runner: it never reports
                os._exit(0)
            bar.update(current, description=f"{_case_label(case)} [{phase}]", completed=done, total=total)
            redraw()

        def finished(outcome: Outcome) -> None:
            if os.getpid() != owner_pid:
                os._exit(0)
            know_code_versions()
            run.outcomes.append(outcome)
            if on_done is not None:
                on_done(outcome)
            bar.advance(overall)
            redraw(force=True)

        session = _session(request, options, progress)
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


class _Redraw:
    """Redraws the bar between samples, at most ``per_second`` times a second."""

    def __init__(self, bar: Progress, per_second: float = 10.0) -> None:
        self.bar = bar
        self.interval = 1.0 / per_second
        self.last = 0.0

    def __call__(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.interval:
            self.last = now
            self.bar.refresh()


def _code_versions(benchmarks) -> dict[str, str]:
    versions = {}
    for b in benchmarks:
        try:
            versions[b.name] = b.code_version()
        except (OSError, TypeError):  # no source to hash (e.g. defined in a REPL)
            pass
    return versions


def render(run: BenchRun, console: Console) -> None:
    from ..measure.report import render_stats

    for failure in run.suite.failures:
        console.print(f"[bold red]error:[/] could not import {escape(str(failure.path))}: {escape(failure.message)}",
                      highlight=False, soft_wrap=True)
    for o in run.outcomes:
        if o.status is Status.OK and o.stats is not None:
            console.print(render_stats(o.stats))
        elif o.status is Status.SKIPPED:
            console.print(f"[yellow]skipped[/] {escape(o.full_name)}: {escape(o.message)}", highlight=False,
                          soft_wrap=True)
        else:  # one line, however long: the terminal wraps it, rich does not break it
            console.print(f"[bold red]failed[/] {escape(o.full_name)}: {escape(o.message)}", highlight=False,
                          soft_wrap=True)
    counts = {s: sum(1 for o in run.outcomes if o.status is s) for s in Status}
    if run.interrupted:
        console.print(f"[bold red]interrupted[/] by {run.interrupted}: {len(run.outcomes)} of {run.total} "
                      "benchmark cases finished", highlight=False)
    console.print(
        f"{len(run.outcomes)} benchmark cases: {counts[Status.OK]} ok, "
        f"{counts[Status.FAILED]} failed, {counts[Status.SKIPPED]} skipped"
        + (f"; {len(run.suite.failures)} files failed to import" if run.suite.failures else "")
    )


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


LOCK_NOTICE_S = 2.0  # a wait for the write lock longer than this is worth a line: another writer holds it
LOCK_POLL_S = 0.1


@contextmanager
def _waiting_notice(console: Console, label: str) -> Iterator[None]:
    """One line once this process has waited for the store's lock LOCK_NOTICE_S on end; a save that is only
    slow (a first migration, a loaded machine) says nothing, since no other writer is there to blame."""
    from ..store.db import BUSY_TIMEOUT_S, waiting_for_lock

    done = threading.Event()

    def watch() -> None:
        waited = 0.0
        while not done.wait(LOCK_POLL_S):
            waited = waited + LOCK_POLL_S if waiting_for_lock() else 0.0
            if waited >= LOCK_NOTICE_S:
                console.print(f"waiting for the write lock of {escape(label)} (another writer holds it); giving up "
                              f"after {BUSY_TIMEOUT_S:g} s", highlight=False)
                return

    watcher = threading.Thread(target=watch, name="mmtrack-lock-notice", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _save(url: str, ctx: BenchContext, outcomes: list[Outcome], console: Console) -> tuple[int | None, str]:
    """Save one run; returns (run id, "") or (None, why it was not saved)."""
    from ..benchruns.history import save_run
    from ..store.db import open_store

    with _waiting_notice(console, redact(url)):
        try:
            with open_store(url) as store:
                return save_run(store, ctx, outcomes), ""
        except UserError as exc:
            return None, str(exc)
        except Exception as exc:  # noqa: BLE001  (the journal keeps the measurements: say why, exit 2)
            return None, f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _journal_is_live(folder: Path) -> bool:
    """A journal whose writer still runs (its folder name ends in the writer's pid)."""
    try:
        pid = int(folder.name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_journals(project: Path, url: str, console: Console) -> None:
    """Save the finished cases that earlier runs (killed, or blocked by a lock) left in their journals."""
    for folder in bench_journal.leftovers(project):
        if _journal_is_live(folder):
            continue
        try:
            journal = bench_journal.load(folder)
        except ValueError as exc:
            console.print(f"[yellow]warning:[/] {escape(str(exc))}; move it away", highlight=False)
            continue
        if journal.store != bench_journal.store_digest(url):
            console.print(f"note: the journal {escape(str(folder))} holds a run for {escape(journal.store_label)}; "
                          "run mmtrack bench with that --db to save it", highlight=False)
            continue
        outcomes = journal.outcomes()
        if not outcomes:
            journal.remove()
            continue
        run_id, why = _save(url, journal.context, outcomes, console)
        if run_id is None:
            console.print(f"[yellow]warning:[/] the journal {escape(str(folder))} is still not saved: {escape(why)}",
                          highlight=False)
            continue
        journal.remove()
        console.print(f"saved {len(outcomes)} finished cases of an earlier, unfinished run "
                      f"({journal.context.started_at:%Y-%m-%d %H:%M:%S} UTC) from its journal as run #{run_id}",
                      highlight=False)


def _render_comparison(result: BaselineResult, console: Console) -> None:
    from ..analysis.render import render_table
    from ..benchruns.history import benchmark_verdicts

    if result.note:
        console.print(escape(result.note), highlight=False)
    if result.comparison is None:
        return
    verdicts = benchmark_verdicts(result.comparison)
    console.print(
        f"[bold]regression analysis[/] against {escape(result.baseline_label or '')}: "
        f"[red]{len(verdicts['regressed'])} regressed[/], [green]{len(verdicts['improved'])} improved[/], "
        f"{len(verdicts['unchanged'])} unchanged benchmarks",
        highlight=False,
    )
    if result.comparison.changed():
        console.print(render_table(result.comparison, only_changed=True))


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


def run_bench(request: BenchRequest, console: Console) -> int:
    started_at = datetime.now(timezone.utc)
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
        recover_journals(project, url, console)
    owner_pid = os.getpid()
    run = execute(request, console, on_done=keep if request.save else None, plan=plan,
                  code_versions=ctx.code_versions)
    if os.getpid() != owner_pid:  # a forked child that returned this far never reports or saves
        os._exit(0)
    from ..benchruns.history import storable

    run.outcomes = storable(run.outcomes, run.code_versions)  # a case the store cannot keep fails here, alone
    nothing_ran = not run.outcomes  # every file failed to import, or Ctrl-C came first
    if request.save and journal is None and not nothing_ran:
        journal = bench_journal.Journal.create(project, ctx, url, redact(url))
    render(run, console)
    run_id = None
    not_saved = False
    if request.save and nothing_ran:  # a run without results would only stand between later runs and their baseline
        console.print("not saved: no benchmark case ran", highlight=False)
    if journal is not None:
        run_id, why = _save(url, ctx, run.outcomes, console)
        if run_id is not None:
            journal.remove()
            console.print(f"saved as run #{run_id} ({ctx.commit.short if ctx.commit else ''}) in "
                          f"{escape(redact(url))}", highlight=False)
        else:
            not_saved = True
            console.print(f"[bold red]error:[/] run not saved in {escape(redact(url))}: {escape(why)}; its "
                          f"{len(run.outcomes)} finished cases are kept in {escape(str(journal.folder))}, and the "
                          "next mmtrack bench on this store saves them", highlight=False)
    kept = bench_profiles.settle(request.profiles, project, run_id)
    # Imported after sampling (measure sooner): scipy, SQLAlchemy and the report cost seconds.
    from ..analysis.render import to_json
    from ..benchruns.history import BaselineResult, compare_with_baseline
    from ..benchruns.report import build_report, write_report
    from ..store.db import open_store

    result = BaselineResult(None, None, None)
    if ctx.commit is not None and request.compare != "none" and not not_saved and not nothing_ran:
        try:
            with open_store(url) as store:
                result = compare_with_baseline(store, run_id or -1, ctx, run.outcomes, request.compare, Path.cwd())
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001  (the comparison is advice; the run is saved)
            console.print(f"[yellow]warning:[/] no comparison: {escape(type(exc).__name__)}: {escape(str(exc))}")
    _render_comparison(result, console)
    if kept is not None and result.comparison is not None and result.baseline_id is not None:
        from ..analysis.why_counts import why_counts_changed
        from .why_counts import render as render_why

        render_why(why_counts_changed(result.comparison.rows, bench_profiles.of_run(project, result.baseline_id), kept),
                   console)
    if request.output is not None:
        report = build_report(
            outcomes=run.outcomes,
            suite=ctx.suite,
            host=ctx.host,
            commit=ctx.commit,
            started_at=started_at,
            code_versions=run.code_versions,
            run_id=run_id,
            comparison=to_json(result.comparison) if result.comparison is not None else None,
            import_failures=[(str(f.path), f.message) for f in run.suite.failures],
        )
        try:
            write_report(request.output, report)
        except OSError as exc:
            raise UserError(f"MMTRACK_OUTPUT={request.output}: cannot write the report ({exc.strerror or exc}); "
                            "point it at a writable path") from None
        console.print(f"report written to {escape(str(request.output))}", highlight=False)
    if not_saved:
        return EXIT_USAGE
    if run.exit_code == EXIT_OK and request.fail_on and result.comparison is not None:
        from ..analysis.compare import failing_rows

        if failing_rows(result.comparison, request.fail_on):
            return EXIT_FAILURES
    return run.exit_code
