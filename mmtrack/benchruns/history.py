"""Every ``mmtrack bench`` run saved, and compared at once with the last compatible run.

This is glue between the engine's outcomes, the store and the comparison: the
statistics are ``mmtrack.analysis.compare``'s (one implementation for bench,
run and compare), the compatibility rules ``mmtrack.analysis.baseline``'s.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..analysis.baseline import BaselineChoice, CaseIdentity, RunIdentity, latest_compatible
from ..analysis.compare import ComparePolicy, Comparison, compare_measurements
from ..asvbridge.host import host_info
from ..asvbridge.session import Outcome, Status
from ..errors import UserError
from ..measure.conditions import comparable
from ..results import PRIMARY, BenchContext, Measurement, canonical_params
from ..store import reads
from ..store.db import Store
from ..store.ingest import EngineCaseRecord, RunRecord, measurement_setup, record_engine_run
from ..store.limits import case_problem, identity_problem
from ..vcs import resolve_rev
from ..vocabulary import Direction

# How many earlier runs to inspect for a compatible baseline before giving up.
BASELINE_SEARCH_DEPTH = 50
MIN_SHA = 7  # git's shortest default abbreviation: a shorter number given to --compare is always a run id


def environment_name() -> str:
    return f"{sys.implementation.name}-{sys.version_info.major}.{sys.version_info.minor}"


def _case_identity(name: str, params: str, version: str | None, setup: dict | None) -> CaseIdentity:
    setup = setup or {}
    return CaseIdentity(
        benchmark=name,
        params=params,
        throughput=str(setup.get("throughput")),
        domain=str(setup.get("domain")),
        backend_label=str(setup.get("backend")),
        version=version or None,
        scenario=str(setup.get("scenario") or ""),
        conditions=comparable(setup["conditions"]) if setup.get("conditions") else (),
    )


def current_identity(run_id: int, ctx: BenchContext, outcomes: Sequence[Outcome]) -> RunIdentity:
    cases = {}
    for o in outcomes:
        key = (o.name, canonical_params(o.params))
        setup = measurement_setup(o.stats) if o.stats is not None else None
        cases[key] = _case_identity(o.name, key[1], ctx.code_versions.get(o.name), setup)
    return RunIdentity(run_id, ctx.machine, ctx.suite, cases)


def stored_identity(store: Store, run: reads.RunInfo) -> RunIdentity:
    cases = {
        (c.benchmark, c.params): _case_identity(c.benchmark, c.params, c.version, dict(c.setup or {}))
        for c in reads.case_setups(store, run.id)
    }
    return RunIdentity(run.id, run.host or None, run.suite, cases, label=describe_run(run))


def describe_run(run: reads.RunInfo) -> str:
    when = run.started_at.strftime("%Y-%m-%d %H:%M:%S")
    return f"run #{run.id} ({run.commit.short}, {when})"


def save_run(store: Store, ctx: BenchContext, outcomes: Sequence[Outcome]) -> int:
    from .. import __version__

    assert ctx.commit is not None
    record = RunRecord(
        machine=ctx.machine,
        environment=environment_name(),
        commit=ctx.commit,
        started_at=ctx.started_at,
        kind="bench",
        suite=ctx.suite,
        host=ctx.machine,
        tool_versions={"mmtrack": __version__, "python": host_info()["python"]},
        machine_info=dict(ctx.host),
    )
    cases = [_case_record(o, ctx.code_versions) for o in storable(outcomes, ctx.code_versions)]
    cases = [c for c in cases if identity_problem(c) is None]  # no row can name it: its failure was reported
    return record_engine_run(store, record, cases)


def _case_record(o: Outcome, code_versions: dict[str, str]) -> EngineCaseRecord:
    return EngineCaseRecord(benchmark=o.name, params=dict(o.params), status=o.status.value, message=o.message or None,
                            version=code_versions.get(o.name), stats=o.stats)


def storable(outcomes: Sequence[Outcome], code_versions: dict[str, str]) -> list[Outcome]:
    """``outcomes``, each case the store cannot keep as it is turned into a failed one saying why: a
    metric name too long for its column fails that case, not the save of the whole run."""
    out = []
    for o in outcomes:
        problem = case_problem(_case_record(o, code_versions))
        out.append(o if problem is None else Outcome(o.name, o.params, Status.FAILED, message=f"not storable: {problem}"))
    return out


def outcome_measurements(outcomes: Sequence[Outcome], code_versions: dict[str, str]) -> list[Measurement]:
    """The measurements of this run, as the store will hold them."""
    out = []
    for o in outcomes:
        version = code_versions.get(o.name)
        if o.stats is None:
            status = "failed" if o.status is Status.FAILED else "skipped"
            out.append(Measurement(o.name, dict(o.params), PRIMARY, Direction.LOWER, status=status, version=version))
            continue
        method = (o.stats.conditions.method if o.stats.conditions is not None else "") or None
        out.extend(Measurement.from_summary(o.name, o.params, s, version=version, method=method)
                   for s in o.stats.tracked_metrics())
    return out


@dataclass(frozen=True, slots=True)
class BaselineResult:
    comparison: Comparison | None
    baseline_label: str | None
    note: str | None  # one line: why the latest earlier run was skipped, or why none was found
    baseline_id: int | None = None  # the stored run compared with


def choose_baseline(store: Store, current: RunIdentity, ctx: BenchContext, compare: str, cwd: Path) -> tuple[reads.RunInfo | None, str | None]:
    """The baseline run for ``--compare latest|<run id>|<commit>``, and a note for the user."""
    if compare == "latest":
        earlier = [r for r in reads.runs(store, kind="bench", machine=ctx.machine, limit=BASELINE_SEARCH_DEPTH + 1)
                   if r.id != current.run_id]
        by_id = {r.id: r for r in earlier}
        choice: BaselineChoice = latest_compatible(current, (stored_identity(store, r) for r in earlier))
        note = None
        if choice.skipped_latest is not None:
            skipped, reason = choice.skipped_latest
            note = f"not compared with {skipped.label}: {reason}"
        if choice.baseline is None:
            return None, note or "no earlier run of this suite on this host to compare with"
        return by_id[choice.baseline.run_id], note
    return named_baseline(store, ctx.machine, compare, cwd, exclude=current.run_id), None


def named_baseline(store: Store, machine: str, compare: str, cwd: Path, exclude: int | None = None) -> reads.RunInfo:
    """The run ``--compare RUN|COMMIT`` names (a bench run of that commit on ``machine``, not ``exclude``), or
    one line saying why there is none: checked before the suite runs, and again when it is compared."""
    run_id = compare.removeprefix("run:")
    # Digits are a run id, unless MIN_SHA or more of them name a commit git knows (a sha prefix such as "0512763887").
    short_id = run_id != compare or (run_id.isdigit() and len(run_id) < MIN_SHA)
    sha = None if short_id else resolve_rev(cwd, compare)
    if run_id.isdigit() and sha is None:
        found = reads.runs(store, run_id=int(run_id))
        if not found:
            raise UserError(f"--compare {compare}: no run with that id in the store; `mmtrack list runs` lists them "
                            "(run:ID is always a run id, a 7-digit or longer number also a commit)")
        return found[0]
    commit = reads.resolve_commit(store, sha or compare)
    candidates = [r for r in reads.runs(store, kind="bench", machine=machine, commit=commit.sha) if r.id != exclude]
    clean = [r for r in candidates if not r.commit.dirty]
    if not (clean or candidates):
        raise UserError(f"--compare {compare}: no bench run of commit {commit.sha[:12]} on host {machine!r}")
    return (clean or candidates)[0]


def compare_with_baseline(
    store: Store,
    run_id: int,
    ctx: BenchContext,
    outcomes: Sequence[Outcome],
    compare: str,
    cwd: Path,
    policy: ComparePolicy | None = None,
) -> BaselineResult:
    current = current_identity(run_id, ctx, outcomes)
    baseline, note = choose_baseline(store, current, ctx, compare, cwd)
    if baseline is None:
        return BaselineResult(None, None, note)
    label = describe_run(baseline)
    comparison = compare_measurements(
        reads.measurements_for_run(store, baseline.id),
        outcome_measurements(outcomes, ctx.code_versions),
        policy,
        before_label=f"#{baseline.id}",
        after_label="this run",
    )
    return BaselineResult(comparison, label, note, baseline.id)


def benchmark_verdicts(comparison: Comparison) -> dict[str, list[str]]:
    """Per benchmark case: regressed if any metric regressed or failed, improved if any
    improved and none regressed, else unchanged. Returns verdict -> case names."""
    per_case: dict[str, set[str]] = defaultdict(set)
    for row in comparison.rows:
        if row.direction is Direction.NEUTRAL and row.verdict in ("regressed", "improved"):
            continue
        per_case[row.name].add(row.verdict)
    out: dict[str, list[str]] = {"regressed": [], "improved": [], "unchanged": []}
    for name, verdicts in sorted(per_case.items()):
        if verdicts & {"regressed", "failed"}:
            out["regressed"].append(name)
        elif verdicts & {"improved", "fixed"}:
            out["improved"].append(name)
        else:
            out["unchanged"].append(name)
    return out
