"""A bisection from its request (``mmtrack bisect``, ``mmtrack bisect --alert``): the plan, GOOD and BAD resolved,
the search (:mod:`.bisect`, or :mod:`.count_bisect` under callgrind), and its A/B pairs recorded in the store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(slots=True)
class BisectRequest:
    good: str
    bad: str
    bench: str
    metric: str = "time_per_op"
    project: Path = Path(".")
    config: Path | None = None
    rounds: int = 4
    machine: str | None = None
    z: float = 2.0
    retries: int = 2
    round_alpha: float | None = None  # significance the rounds must reach (None: ab.interleave.ROUND_ALPHA)
    db: str | None = None  # the store its A/B measurements go to (None: MMTRACK_DB, else the project's)
    save: bool = True
    instrument: str = "wall"  # "callgrind": each commit counted once (ab/count_bisect.py)
    case: tuple[str, str] | None = None  # (benchmark, params) to judge on where measured (an alert's series)


def bisect_commits(request: BisectRequest, progress: Callable[[str], None] | None = None) -> Any:
    """Resolve GOOD and BAD in the project's repository, search between them (wall clock by A/B, or callgrind's
    counts), and record each A/B pair measured in the store where ``request.save``; the search's outcome."""
    from .bisect import Bisector
    from .envs import refuse_dirty, resolve_commit
    from .interleave import make_plan
    from .rule import round_alpha_for

    alpha = round_alpha_for(request.round_alpha)
    plan, repo = make_plan(request.project, request.config, request.machine, request.bench, request.rounds)
    refuse_dirty(repo)
    good, bad = resolve_commit(repo, request.good), resolve_commit(repo, request.bad)
    if request.instrument == "callgrind":
        from .count_bisect import CountBisector

        plan.instrument = "callgrind"
        return CountBisector(plan, repo, request.metric, progress, case=request.case).run(good, bad)
    store = _open_store(request)  # a --db that cannot be written: one line now, not after the builds
    pair_ids: list[int] = []

    def keep(result: Any) -> None:
        from .record import record_pair

        pair_ids.append(record_pair(store, result, "bisect", str(plan.config.get("project") or "")))

    try:
        outcome = Bisector(plan, repo, request.metric, request.z, request.retries, progress, round_alpha=alpha,
                           on_measured=keep if store is not None else None, case=request.case).run(good, bad)
    finally:
        if store is not None:
            store.close()
    outcome.pair_ids = pair_ids
    return outcome


def _open_store(request: BisectRequest) -> Any:
    from ..store.db import open_store
    from ..store.url import resolve_url

    return open_store(resolve_url(request.db)) if request.save else None
