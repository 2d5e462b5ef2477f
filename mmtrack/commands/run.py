"""``mmtrack run``: one commit's benchmarks under the real asv, into the store.

asv itself is driven by :mod:`mmtrack.asvbridge.asvrun` (prepare, ``asv machine``, ``asv run``, collect); this
verb adds the store (the section at the end is the one place that talks to it), the comparison with the previous
commit (:mod:`mmtrack.commands.run_summary`), the gate and ``--confirm``.

A failed benchmark (asv's or mmtrack's) or a suite file that does not import
gives exit status 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

from ..asvbridge import spool
from ..asvbridge.asvrun import (
    AsvInvocation,
    CaseResult,
    Collected,
    Prepared,
    collect,
    ensure_machine,
    prepare,
    results_file,
    run_asv,
)
from ..errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, UserError
from ..results import CommitInfo
from ..vcs import GitError, commit_info
from .reporting import Report, silent
from .run_summary import SUMMARY_VERDICTS, summarize  # noqa: F401  (SUMMARY_VERDICTS: the CLI reads it here)

SHOWN_LEFT_OUT = 8  # benchmarks named in --confirm-max's line; the rest counted
CONFIRM_ROUNDS = 4  # A/B rounds per side of --confirm, unless --confirm-rounds says


@dataclass(slots=True)
class RunRequest(AsvInvocation):
    """`mmtrack run`: one asv run, then the store, the comparison with the previous commit and the gate."""

    db: str | None = None  # store URL (else MMTRACK_DB, else the default)
    confirm: bool = False  # re-measure suspected regressions A/B against the previous commit
    confirm_ambiguous: bool = False  # ... and the rows history could not decide (ambiguous)
    confirm_budget: float | None = None  # seconds for the A/B rounds of --confirm
    confirm_max: int | None = None  # at most this many benchmarks re-measured by --confirm, the most worth it first
    confirm_rounds: int | None = None  # A/B rounds of --confirm (None: CONFIRM_ROUNDS); the undecided get up to twice
    round_alpha: float | None = None  # significance the --confirm rounds must reach (None: ab.interleave.ROUND_ALPHA)
    fail_on: tuple[str, ...] = ()  # compare's --fail-on, on the comparison with the previous commit (see gate())
    instrument: str = "wall"  # "callgrind": count the suite under Valgrind instead of asv's timing (callgrind_run.py)


def check_confirm_options(request: RunRequest) -> None:
    """``--confirm-rounds``, ``--confirm-budget``, ``--confirm-max`` and ``--round-alpha`` are refused before anything
    runs, not after the suite: a bad value, or any of them without ``--confirm`` (where it would do nothing)."""
    if request.confirm_rounds is not None and request.confirm_rounds < 1:
        raise UserError(f"--confirm-rounds {request.confirm_rounds}: need at least 1 round per side", EXIT_USAGE)
    if request.confirm_budget is not None and not (request.confirm_budget > 0 and math.isfinite(request.confirm_budget)):
        raise UserError(f"--confirm-budget {request.confirm_budget:g}: give a time in seconds above 0", EXIT_USAGE)
    if request.confirm_max is not None and request.confirm_max < 1:
        raise UserError(f"--confirm-max {request.confirm_max}: need at least 1 benchmark", EXIT_USAGE)
    if request.round_alpha is not None:  # the A/B rule's modules load only when a round is asked for
        from ..ab.rule import round_alpha_for

        round_alpha_for(request.round_alpha)
    given = {"--confirm-rounds": request.confirm_rounds, "--confirm-budget": request.confirm_budget,
             "--confirm-max": request.confirm_max, "--round-alpha": request.round_alpha}
    for option, value in given.items():
        if value is not None and not request.confirm:
            raise UserError(f"{option} {value:g}: it sets what the --confirm rounds do; add --confirm, or leave it out",
                            EXIT_USAGE)
    if request.confirm_ambiguous and not request.confirm:
        raise UserError("--confirm-ambiguous: it adds the ambiguous rows to what --confirm re-measures; add --confirm, "
                        "or leave it out", EXIT_USAGE)


# -- the command -----------------------------------------------------------------------------
@dataclass(slots=True)
class RunOutcome:
    prepared: Prepared
    collected: Collected
    asv_exit: int | None  # None: asv did not run (--instrument callgrind counted the suite itself)
    started_at: datetime
    comparison: Any = None  # mmtrack compare's outcome against the previous commit, if there is one
    summary: list[str] = field(default_factory=list)  # what the comparison could not say
    reports: list[str] = field(default_factory=list)  # leftover spool files that could not be ingested
    notes: list[str] = field(default_factory=list)  # leftover spool files that were ingested
    before: str | None = None  # the previous commit measured here, that the comparison read

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.collected.failed else EXIT_OK


@dataclass(frozen=True, slots=True)
class RunResult:
    """What ``mmtrack run`` did: the run, what ``--confirm`` re-measured, and the rows that fail ``--fail-on``."""

    outcome: RunOutcome
    confirmations: list[Any] = field(default_factory=list)  # ab.confirm's Confirmation per re-measured row
    failing: list[Any] = field(default_factory=list)  # the comparison's rows that fail --fail-on
    fail_on: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        # A failed benchmark exits 2 whatever the gate says, as in `mmtrack bench`.
        code = self.outcome.exit_code
        return code if code != EXIT_OK or not self.failing else EXIT_FAILURES


# -- what the verb reports while it runs (rendered by mmtrack/cli_events.py) -------------------------
@dataclass(frozen=True, slots=True)
class PrepareNote:
    text: str  # something asv's preparation noticed


@dataclass(frozen=True, slots=True)
class SuiteImportFailed:
    path: str
    message: str


@dataclass(frozen=True, slots=True)
class AsvStarting:
    prepared: Prepared


@dataclass(frozen=True, slots=True)
class NothingToConfirm:
    what: str  # "suspected", or "suspected or ambiguous"


@dataclass(frozen=True, slots=True)
class ConfirmCapped:
    confirm_max: int
    left: str  # describe_left's words


@dataclass(frozen=True, slots=True)
class Confirming:
    what: str  # "2 suspected and 1 ambiguous"
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class ConfirmProgress:
    line: str  # a line of the A/B rounds


@dataclass(frozen=True, slots=True)
class ConfirmWarning:
    text: str


@dataclass(frozen=True, slots=True)
class Confirmed:
    confirmation: Any  # ab.confirm's Confirmation


@dataclass(frozen=True, slots=True)
class CountsExplained:
    explanations: list[Any]  # why_counts.Explanation per regressed instruction count


def execute(request: RunRequest, report: Report = silent) -> RunOutcome:
    store_check = StoreCheck(request.db)
    prepared = prepare(request, meanwhile=store_check)
    try:
        for note in prepared.notes:
            report(PrepareNote(note))
        for f in prepared.import_failures:
            report(SuiteImportFailed(str(f.path), f.message))
        ensure_machine(prepared)
        store_check.refuse()
        started = datetime.now(timezone.utc)
        report(AsvStarting(prepared))
        if request.instrument == "callgrind":
            from ..asvbridge import callgrind_run

            kept = callgrind_run.profiles_of(prepared.project, prepared.commit.sha)
            outcome = RunOutcome(prepared, callgrind_run.measure(prepared, request.bench, None, profiles=kept), None,
                                 started)
            ingest(outcome, request.db)
            return outcome
        with ProcessTime() as asv_time:
            asv_exit = run_asv(prepared, request, meanwhile=load_ingest_modules)
        path = results_file(prepared, started.timestamp())
        if path is None:
            raise UserError(
                f"asv run exited with status {asv_exit} and wrote no result for {prepared.commit.sha[:12]} in "
                f"{prepared.results_dir / prepared.machine}; see asv's output above"
                + (f" (-b {request.bench!r} may match no benchmark)" if request.bench else "")
            )
        collected = collect(prepared, path, started, request.bench)
        outcome = RunOutcome(prepared, collected, asv_exit, started)
        if (note := waited_note(asv_time.wall, asv_time.cpu)):
            outcome.summary.append(note)
        if (note := cases_waited_note(collected.cases)):
            outcome.summary.append(note)
        ingest(outcome, request.db)
        return outcome
    finally:
        prepared.cleanup()


#: asv's processes' wall time over their CPU time above which the run waited for a CPU (asv runs one benchmark
#: process at a time; imports and file writes keep a quiet run near 1.1).
RUN_WAITED_RATIO = 1.5


class ProcessTime:
    """The wall time of a block and the CPU time of the child processes it waited for (asv and its benchmarks)."""

    def __enter__(self) -> "ProcessTime":
        import resource
        import time

        self._t0, self._c0 = time.monotonic(), _children_cpu(resource)
        return self

    def __exit__(self, *exc: object) -> None:
        import resource
        import time

        self.wall = time.monotonic() - self._t0
        self.cpu = _children_cpu(resource) - self._c0


def _children_cpu(resource: Any) -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def waited_note(wall: float, cpu: float) -> str:
    """One line when asv's processes had a CPU for less of the run than a quiet machine gives them; "" else."""
    if cpu <= 0 or wall / cpu <= RUN_WAITED_RATIO:
        return ""
    import os

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"the run waited for a CPU: asv's processes ran {cpu:.1f} s of CPU time in {wall:.1f} s (wall/CPU "
            f"{wall / cpu:.1f}x; load {load:.1f} on {os.cpu_count()} CPUs); its wall-clock timings read slow, so "
            "re-run on a quiet machine or judge with `mmtrack continuous`")


def cases_waited_note(cases: Sequence[CaseResult]) -> str:
    """One line naming how many of asv's time benchmarks waited for a CPU, by their own wall/CPU ratio; "" if none."""
    from ..measure import contention

    read = [m.mean for c in cases for m in c.cpu_metrics if (m.section, m.name) == (contention.SECTION, contention.NAME)]
    waited = [r for r in read if contention.waited(r)]
    if not waited:
        return ""
    return (f"{len(waited)} of {len(read)} time benchmarks waited for a CPU (wall time up to {max(waited):.2f}x their "
            "CPU time); their verdicts are read on CPU time")


def run_command(request: RunRequest, report: Report = silent) -> RunResult:
    """Run, store, compare with the previous commit, ``--confirm``, gate. ``report`` sees, in order: the
    preparation's notes, :class:`AsvStarting`, the :class:`RunOutcome` once stored, then what ``--confirm`` does."""
    from ..analysis.gate import checked

    checked("run", request.fail_on)
    check_confirm_options(request)
    outcome = execute(request, report)
    report(outcome)
    if request.instrument == "callgrind" and outcome.before and outcome.comparison is not None:
        from .why_counts import explain

        report(CountsExplained(explain(outcome.comparison.comparison, outcome.prepared.project, outcome.before,
                                       outcome.prepared.commit.sha)))
    confirmations = confirm_rows(outcome, request, report) if request.confirm else []
    failing = gate(outcome, confirmations, request.fail_on) if request.fail_on else []
    return RunResult(outcome, confirmations, failing, request.fail_on)


def gate(outcome: RunOutcome, confirmations: Sequence[Any], fail_on: Sequence[str]) -> list[Any]:
    """The rows that fail ``--fail-on`` (compare's :func:`failing_rows`) on the comparison with the previous commit,
    with earlier commits' suspicions this one confirms, and the states a ``--confirm`` A/B run gave: a suspected
    regression that A/B confirms fails ``regression``; one it refutes fails nothing; a row history left ambiguous fails
    as the change A/B measured (``--confirm-ambiguous``)."""
    import dataclasses

    from ..analysis.compare import settled_by_ab
    from ..analysis.gate import Gate

    if outcome.comparison is None:
        return []
    comparison = outcome.comparison.comparison
    by_ab = {(c.row.benchmark, c.row.params, c.row.metric): c for c in confirmations if c.settled() is not None}
    if by_ab:
        def settle(r: Any) -> Any:
            c = by_ab.get((r.benchmark, r.params, r.metric))
            return r if c is None else settled_by_ab(r, c.state, c.ratio, c.p_value, c.rounds)

        comparison = dataclasses.replace(comparison, rows=tuple(settle(r) for r in comparison.rows))
    return Gate.of("run", fail_on).rows(comparison)


def confirm_rows(outcome: RunOutcome, request: RunRequest, report: Report = silent) -> list[Any]:
    """``--confirm``: the suspected rows of the summary (with ``--confirm-ambiguous``, the ambiguous ones too)
    re-measured A/B (see :mod:`mmtrack.ab.confirm`); their confirmations."""
    from ..ab import confirm as ab

    found = outcome.comparison
    rows = ab.rows_to_confirm(found.comparison, ambiguous=request.confirm_ambiguous) if (
        found is not None and found.before.commit is not None) else []
    if not rows:
        what = "suspected or ambiguous" if request.confirm_ambiguous else "suspected"
        report(NothingToConfirm(what))
        return []
    before, after = found.before.commit.sha, outcome.prepared.commit.sha
    rows, left = ab.within_cap(ab.by_priority(rows), request.confirm_max)
    if left:
        report(ConfirmCapped(request.confirm_max, describe_left(left)))
    unsure = sum(r.verdict == ab.AMBIGUOUS for r in rows)
    what = f"{len(rows) - unsure} suspected" + (f" and {unsure} ambiguous" if request.confirm_ambiguous else "")
    report(Confirming(what, before, after))
    measured, result = ab.confirm(outcome.prepared.project, request.config, outcome.prepared.machine, before, after,
                                  rows, request.confirm_rounds or CONFIRM_ROUNDS, request.confirm_budget,
                                  request.round_alpha, progress=lambda line: report(ConfirmProgress(line)))
    from ..store.db import open_store, resolve_url

    store = open_store(resolve_url(request.db))
    try:
        ab.store_report(store, measured, result, outcome.prepared.machine, outcome.collected.environment,
                        str(outcome.prepared.config.get("project") or outcome.prepared.project.name))
    finally:
        store.close()
    for w in result.warnings:
        report(ConfirmWarning(w))
    for c in measured.confirmations:
        report(Confirmed(c))
    return measured.confirmations


def describe_left(rows: Sequence[Any]) -> str:
    """What ``--confirm-max`` left out: "2 suspected and 5 ambiguous row(s) of 4 benchmark(s), a, b, c, d," (the
    first :data:`SHOWN_LEFT_OUT` benchmarks named, in priority order, the rest counted)."""
    unsure = sum(r.verdict == "ambiguous" for r in rows)
    parts = [f"{len(rows) - unsure} suspected" if len(rows) > unsure else "", f"{unsure} ambiguous" if unsure else ""]
    names = list(dict.fromkeys(r.benchmark for r in rows))
    more = len(names) - SHOWN_LEFT_OUT
    shown = ", ".join(names[:SHOWN_LEFT_OUT]) + (f" and {more} more" if more > 0 else "")
    return f"{' and '.join(filter(None, parts))} row(s) of {len(names)} benchmark(s), {shown},"


# -- 5. the store: the one place that talks to it ---------------------------------------------
ENGINE_RUN_KIND = "asv-engine"  # engine metrics of benchmarks asv ran (asv's own files: kind "asv")


def open_store_or_refuse(db: str | None) -> None:
    """The store opened (created or upgraded) once before asv runs: a --db that is not a database, unreachable or
    read-only is one line then, not after the whole suite has run."""
    from ..store.db import open_store, resolve_url

    open_store(resolve_url(db)).close()


class StoreCheck:
    """:func:`open_store_or_refuse`, called while the suite's import check runs (SQLAlchemy's import and the open
    take about 0.15 s), its error kept for :meth:`refuse`: raised after the preparation's own errors, as when the
    store was opened after them; where nothing called it, :meth:`refuse` opens the store itself."""

    def __init__(self, db: str | None) -> None:
        self.db = db
        self.called = False
        self.error: Exception | None = None

    def __call__(self) -> None:
        self.called = True
        try:
            open_store_or_refuse(self.db)
        except Exception as exc:  # noqa: BLE001  (raised by refuse(), in the order it had)
            self.error = exc

    def refuse(self) -> None:
        if not self.called:
            open_store_or_refuse(self.db)
        elif self.error is not None:
            raise self.error


def load_ingest_modules() -> None:
    """What the ingest and the comparison import, imported while asv starts (it imports itself and discovers the suite
    before its first benchmark): asv's results reader, the store, its importers and compare's pass on the store,
    about 0.3 s after asv ended before."""
    from asv import results  # noqa: F401

    from ..analysis import compare_store  # noqa: F401
    from ..store import asv_import, ingest  # noqa: F401


def ingest(outcome: RunOutcome, db: str | None) -> None:
    """asv's results folder, this run's spool records and any leftovers, into the store.

    Idempotent: asv's files are imported by digest, and each engine run carries a
    source key (``spool:<run id>:<commit>:<machine>:<environment>``), so a spool
    file ingested before a crash is never recorded twice.
    """
    from ..store.db import open_store, resolve_url

    store = open_store(resolve_url(db))
    try:
        _ingest_into(store, outcome)
        summarize(store, outcome)
    finally:
        store.close()


def _engine_cases(cases: Sequence[CaseResult]) -> list[Any]:
    from ..store.ingest import EngineCaseRecord

    out = []
    for c in cases:
        rec = c.record
        out.append(
            EngineCaseRecord(
                benchmark=c.benchmark,
                params=dict(c.params),
                status=c.status,  # type: ignore[arg-type]
                message=c.message or None,
                version=c.version or (rec.version if rec else None),
                stats=rec.stats if rec is not None and c.status == "ok" else None,
                metrics=_case_metrics(c),
            )
        )
    return out


def _case_metrics(c: CaseResult) -> list[Any] | None:
    """An engine case's metrics (rounds pooled), or an asv ``time_`` case's CPU time beside asv's own file."""
    if c.status != "ok":
        return None
    if c.record is not None:
        return list(c.record.metrics)
    return list(c.cpu_metrics) or None


def _record(store: Any, *, commit: CommitInfo, machine: str, environment: str, run_id: str, suite: str,
            started_at: datetime, cases: Sequence[CaseResult]) -> None:
    import asv

    from .. import __version__
    from ..store.ingest import RunRecord, record_engine_run

    record_engine_run(
        store,
        RunRecord(
            machine=machine,
            environment=environment,
            commit=commit,
            started_at=started_at,
            kind=ENGINE_RUN_KIND,
            suite=suite,
            tool_versions={"mmtrack": __version__, "asv": str(getattr(asv, "__version__", ""))},
            source=f"spool:{run_id}:{commit.sha}:{machine}:{environment}",
        ),
        _engine_cases(cases),
    )


def _ingest_into(store: Any, outcome: RunOutcome) -> None:
    from ..store.asv_import import import_asv_results

    prepared, collected = outcome.prepared, outcome.collected
    suite = str(prepared.config.get("project") or prepared.project.name)
    if outcome.asv_exit is not None:
        imported = import_asv_results(store, prepared.results_dir, suite=suite)
        outcome.reports.extend(f"asv results not imported: {problem}" for problem in imported.failed)
    engine = [c for c in collected.cases
              if c.record is not None or c.cpu_metrics or c.benchmark in _import_failure_names(prepared)]
    if engine:
        _record(
            store,
            commit=prepared.commit,
            machine=prepared.machine,
            environment=collected.environment,
            run_id=prepared.run_id,
            suite=suite,
            started_at=outcome.started_at,
            cases=engine,
        )
    for path in collected.spool_files:
        path.unlink(missing_ok=True)
    _ingest_leftovers(store, outcome, suite)


def _import_failure_names(prepared: Prepared) -> set[str]:
    return {f.module for f in prepared.import_failures}


def _leftover_env(prepared: Prepared, rec: spool.SpoolRecord) -> str | None:
    """A leftover's environment: its own, else the one asv recorded for its commit and machine."""
    if rec.environment:
        return rec.environment
    if not rec.commit:
        return None
    found = sorted((prepared.results_dir / rec.machine).glob(f"{rec.commit[:8]}-*.json"))
    return found[0].stem.split("-", 1)[1] if len(found) == 1 else None


def _ingest_leftovers(store: Any, outcome: RunOutcome, suite: str) -> None:
    """Spool files of earlier runs that died before ingesting: ingest them once, or report them."""
    prepared = outcome.prepared
    groups: dict[tuple[str, str, str, str], list[spool.SpoolEntry]] = {}
    orphaned = prepared.spool_dir / "orphaned"
    for entry in outcome.collected.leftovers:
        rec = entry.record
        env = _leftover_env(prepared, rec) if rec is not None else None
        if rec is None or not rec.commit or env is None:
            why = entry.error if rec is None else ("no commit recorded" if not rec.commit else "environment unknown")
            orphaned.mkdir(parents=True, exist_ok=True)
            entry.path.replace(orphaned / entry.path.name)
            outcome.reports.append(
                f"{_leftover_label(entry)}: cannot be ingested ({why}); moved to {orphaned}"
            )
            continue
        groups.setdefault((rec.run_id or "unknown", rec.commit, rec.machine, env), []).append(entry)
    for (run_id, sha, machine, env), entries in groups.items():
        try:
            commit = commit_info(prepared.project, sha, check_dirty=False)
        except GitError:
            commit = CommitInfo(sha=sha)
        cases = [
            CaseResult(
                benchmark=e.record.benchmark,
                params=dict(e.record.params),
                status=e.record.status,
                message=e.record.message,
                version=e.record.version,
                record=e.record,
            )
            for e in entries
            if e.record is not None
        ]
        _record(store, commit=commit, machine=machine, environment=env, run_id=run_id, suite=suite,
                started_at=_created(entries), cases=cases)
        for e in entries:
            e.path.unlink(missing_ok=True)
        outcome.notes.append(
            f"ingested {len(entries)} spool file(s) left by an earlier run (commit {sha[:12]}, machine {machine}); "
            "recorded once, by their run id"
        )


def _created(entries: Sequence[spool.SpoolEntry]) -> datetime:
    stamps = [e.record.created for e in entries if e.record is not None and e.record.created]
    try:
        return datetime.fromisoformat(min(stamps)) if stamps else datetime.now(timezone.utc)
    except ValueError:
        return datetime.now(timezone.utc)


def _leftover_label(entry: spool.SpoolEntry) -> str:
    rec = entry.record
    if rec is None:
        return f"spool file {entry.path.name} (unreadable: {entry.error})"
    commit = rec.commit[:12] if rec.commit else "unknown"
    return f"spool file {entry.path.name} ({rec.benchmark}, commit {commit}, machine {rec.machine})"
