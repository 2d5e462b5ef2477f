"""``mmtrack bisect GOOD BAD -b BENCH [--metric M]``: the commit where a metric moved, by A/B.

The search itself is :mod:`mmtrack.ab.bisect`; this module resolves the commits and
returns the search's outcome (its path and culprit), which the CLI renders as a table or
JSON. Exit status: 0 when a culprit was found, 2 for a usage error (dirty tree, unknown
commit, failed build, GOOD and BAD not different).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import UserError


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


def run_bisect(request: BisectRequest, progress: Callable[[str], None] | None = None) -> Any:
    from ..ab.bisect import Bisector
    from ..ab.envs import resolve_commit
    from ..ab.interleave import make_plan
    from .continuous import refuse_dirty, round_alpha_for

    if not request.bench:
        raise UserError("mmtrack bisect needs -b REGEX: the benchmark whose metric moved")
    alpha = round_alpha_for(request.round_alpha)
    plan, repo = make_plan(request.project, request.config, request.machine, request.bench, request.rounds)
    refuse_dirty(repo)
    good, bad = resolve_commit(repo, request.good), resolve_commit(repo, request.bad)
    if request.instrument == "callgrind":
        from ..ab.count_bisect import CountBisector

        plan.instrument = "callgrind"
        return CountBisector(plan, repo, request.metric, progress, case=request.case).run(good, bad)
    store = _open_store(request)  # a --db that cannot be written: one line now, not after the builds
    pair_ids: list[int] = []

    def keep(result: Any) -> None:
        from ..ab.record import record_pair

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
