"""``mmtrack run --instrument callgrind``: one commit's suite counted under Valgrind instead of timed by asv.

The suite's engine benchmarks and asv's own ``time_`` benchmarks (:mod:`.timed`) run in one worker under
callgrind (:mod:`.callgrind_pool`); each case becomes a :class:`~.asvrun.CaseResult` with the record an engine
benchmark's spool file would hold, so the store takes it as it takes any engine run: ordinary metrics per
commit, one series each.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from ..errors import UserError, user_regex
from ..measure import conditions
from ..measure.runner import RunOptions
from . import spool
from .asvrun import CaseResult, Collected, Prepared, config_folder
from .callgrind_pool import CallgrindSession
from .discover import discover
from .session import Case, Status, expand

ENVIRONMENT_PREFIX = "callgrind-"


def environment_name() -> str:
    """The store's environment of a callgrind run: the instrument and the Python build (asv's ``--python=same``)."""
    return ENVIRONMENT_PREFIX + conditions.python_build().replace(" ", "-")


def profiles_of(project: Path, sha: str) -> Path:
    """Where a commit's callgrind profiles are kept in a checkout, one per case (why a count changed)."""
    return project / ".mmtrack" / "profiles" / sha


def suite_of(prepared: Prepared) -> Path:
    return (config_folder(prepared.config_path) / str(prepared.config.get("benchmark_dir", "benchmarks"))).resolve()


def measure(prepared: Prepared, bench: str | None, timeout: float | None,
            progress: Callable[[Case, str, int, int], None] = lambda *a: None,
            profiles: Path | None = None, python: Path | None = None, without: Path | None = None) -> Collected:
    """Count every selected case of the commit's suite; failed cases are kept as failed results.

    ``python``: a built commit's interpreter (A/B runs), and ``without``: the checkout whose import paths must not
    shadow that build's package."""
    suite = discover(suite_of(prepared), timed=True)
    chosen = suite.select(bench and user_regex(bench, "-b").pattern)
    if not chosen:
        raise UserError(f"{suite_of(prepared)}: no benchmark" + (f" matches -b {bench!r}" if bench else "")
                        + "; check -b and benchmark_dir")
    environment = environment_name()
    session = CallgrindSession(RunOptions(), timeout, progress, keep=profiles, python=python, without=without)
    cases: list[CaseResult] = []
    try:
        for case in expand(chosen):
            cases.append(_result(prepared, case, session.run_case(case), environment))
    finally:
        session.close()
    for f in prepared.import_failures:  # preflight found them, as for an asv run
        cases.append(CaseResult(f.module, {}, "failed", f"could not import {f.path}: {f.message}"))
    return Collected(environment, prepared.results_dir, cases, [], [])


def _result(prepared: Prepared, case: Case, outcome, environment: str) -> CaseResult:
    status = {Status.OK: "ok", Status.FAILED: "failed", Status.SKIPPED: "skipped"}[outcome.status]
    version = case.benchmark.code_version()
    stats = outcome.stats if outcome.status is Status.OK else None
    record = spool.SpoolRecord(
        benchmark=case.benchmark.name, params=case.param_labels, status="ok" if stats else "failed",
        machine=prepared.machine, commit=prepared.commit.sha, environment=environment, run_id=prepared.run_id,
        message=outcome.message, version=version, created=datetime.now(timezone.utc).isoformat(),
        metrics=stats.tracked_metrics() if stats else [], stats=stats)
    return CaseResult(case.benchmark.name, case.param_labels, status, outcome.message, version,
                      record=record if status != "skipped" else None)
