"""``mmtrack continuous BASE [HEAD]``: both commits built, measured interleaved here, judged.

1. Resolve BASE and HEAD (fetching BASE in a shallow CI clone); refuse a dirty tree.
2. Build each commit into its own cached environment (:mod:`mmtrack.ab.envs`).
3. Run the selected benchmarks A B, B A, ... for three rounds (:mod:`mmtrack.ab.interleave`).
4. Judge every metric of every case on its rounds (each round's best sample, the machine's fast-mode
   rounds, then the round test: :func:`mmtrack.ab.interleave.judge`) with mmtrack's comparison,
   direction-aware; re-run the benchmarks not yet decided either way alone, a round at a time, up to
   ``--rounds``, then the ambiguous ones up to ``--max-rounds`` (:func:`mmtrack.ab.interleave.settle`).
   A flagged benchmark's tolerance is calibrated on an A/A of BASE against a second build of it
   (:mod:`mmtrack.ab.calibrate`).
5. Store both sides as runs marked as an A/B pair (:mod:`mmtrack.ab.record`) and return the outcome, which
   the CLI renders as a table, markdown or JSON (mmtrack/cli_results.py).

Exit status: 0, or 1 with ``--fail-on`` and a matching row, or 2 for a usage error
(dirty tree, unknown commit, failed build) or a benchmark that failed on HEAD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, UserError, is_relative_effect

DEFAULT_ROUNDS = 6


@dataclass(slots=True)
class ContinuousRequest:
    base: str
    head: str = "HEAD"
    project: Path = Path(".")
    config: Path | None = None
    bench: str | None = None
    rounds: int = DEFAULT_ROUNDS
    max_rounds: int | None = None  # undecided benchmarks re-run up to this (None: twice rounds; 0: never)
    min_effect: float | None = None  # flag changes beyond it: 0.1 flags changes beyond 10% (None: AB_THRESHOLD)
    factor: float | None = None  # the same as asv's factor (1.1), --factor's former spelling; give one of the two
    round_alpha: float | None = None  # significance the rounds must reach (None: ab.interleave.ROUND_ALPHA)
    fail_on: tuple[str, ...] = ()
    db: str | None = None
    machine: str | None = None
    quick: bool = False
    save: bool = True
    asv_args: tuple[str, ...] = ()
    instrument: str = "wall"  # "callgrind": each side counted once under Valgrind, no rounds


@dataclass(slots=True)
class ContinuousOutcome:
    result: Any  # ab.interleave.ABResult
    comparison: Any  # analysis.compare.Comparison
    failing: list[Any] = field(default_factory=list)
    pair_id: int | None = None
    specs: tuple[str, str] = ("", "")  # BASE and HEAD as given
    why: list[Any] = field(default_factory=list)  # analysis.why_counts.WhyChanged of each regressed count

    @property
    def exit_code(self) -> int:
        if any(c.status == "failed" for c in self.result.head.cases.values()):
            return EXIT_USAGE
        return EXIT_FAILURES if self.failing else EXIT_OK


def policy_for(factor: float | None, round_alpha: float | None = None, min_effect: float | None = None) -> Any:
    from ..ab.rule import AB_THRESHOLD, round_alpha_for
    from ..ab.verdicts import ab_policy

    if factor is not None and not factor > 1.0:
        raise UserError(f"--factor {factor}: asv's factor is a ratio above 1 (1.1 flags changes beyond 10%)")
    if min_effect is not None and not (is_relative_effect(min_effect) and min_effect > 0):
        raise UserError(f"--min-effect {min_effect}: give a relative effect above 0, e.g. 0.05 for 5%")
    threshold = min_effect if min_effect is not None else AB_THRESHOLD if factor is None else factor - 1.0
    return ab_policy(threshold, round_alpha_for(round_alpha))


def run_continuous(request: ContinuousRequest, progress: Callable[[str], None] | None = None) -> ContinuousOutcome:
    from ..ab.envs import refuse_dirty, resolve_commit
    from ..ab.interleave import make_plan, measure_pair
    from ..ab.verdicts import pair_verdicts
    from ..analysis.gate import Gate

    gate = Gate.of("continuous", request.fail_on or ())
    policy = policy_for(request.factor, request.round_alpha, request.min_effect)
    max_rounds = request.max_rounds if request.max_rounds is not None else 2 * request.rounds
    if max_rounds < 0 or 0 < max_rounds < request.rounds:  # the knobs first, before the project is read
        raise UserError(f"--max-rounds {max_rounds}: below --rounds {request.rounds} (0 turns the extra rounds off)")
    plan, repo = make_plan(request.project, request.config, request.machine, request.bench, request.rounds,
                           request.quick, request.asv_args)
    plan.max_rounds = max_rounds
    if request.instrument == "callgrind":  # a count is the same every time: one round, nothing to settle
        plan.instrument, plan.rounds, plan.max_rounds = "callgrind", 1, 0
    refuse_dirty(repo)
    base_sha = resolve_commit(repo, request.base)
    head_sha = resolve_commit(repo, request.head)
    result = measure_pair(plan, repo, base_sha, head_sha, progress)
    comparison = pair_verdicts(plan, repo, result, policy, progress)
    outcome = ContinuousOutcome(result, comparison, gate.rows(comparison),
                                specs=(request.base, request.head))
    if request.instrument == "callgrind":  # both sides' profiles are kept per commit: why a count changed
        from ..analysis.why_counts import why_counts_changed
        from ..asvbridge.callgrind_run import profiles_of

        outcome.why = why_counts_changed(comparison.rows, profiles_of(plan.project, base_sha),
                                         profiles_of(plan.project, head_sha))
    if request.save:
        from ..ab.record import record_pair
        from ..store.db import open_store, resolve_url

        store = open_store(resolve_url(request.db))
        try:
            outcome.pair_id = record_pair(store, result, "continuous", str(plan.config.get("project") or ""))
            save_ab_verdicts(store, outcome.pair_id, comparison, plan.machine, result, base_sha, head_sha)
        finally:
            store.close()
    return outcome


def save_ab_verdicts(store: Any, pair_id: int, comparison: Any, machine: str, result: Any, base_sha: str,
                     head_sha: str) -> None:
    """One ``ab_verdict`` per row the A/B run found regressed or improved: the pages show it at the head commit."""
    from datetime import datetime, timezone

    from ..ab.record import ab_environment
    from ..store.models import ABVerdict

    environment = ab_environment()  # the environment record_pair stores both sides under
    now = datetime.now(timezone.utc)
    with store.session() as session:
        for r in comparison.rows:
            if r.verdict not in ("regressed", "improved"):
                continue
            session.add(ABVerdict(
                pair_id=pair_id, machine=machine, environment=environment, benchmark=r.benchmark, params=r.params,
                section=r.metric.section, metric=r.metric.name, unit=r.metric.unit, before_sha=base_sha,
                after_sha=head_sha, state=r.verdict, ratio=r.ratio, p_value=r.p_value, rounds=result.rounds,
                note=r.note, created_at=now,
            ))
        session.commit()

