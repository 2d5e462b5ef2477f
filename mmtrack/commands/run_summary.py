"""``mmtrack run``'s comparison of the commit it measured with its neighbours in the store: the commit measured just
before it on the same machine and environment (``mmtrack compare``'s comparison, :mod:`mmtrack.analysis.compare_store`,
its verdicts stored for the pages), and, for a backfilled commit, the next one measured re-judged against it.
:mod:`mmtrack.commands.run` calls :func:`summarize` once the run is in the store."""

from __future__ import annotations

from typing import Any

from ..asvbridge.asvrun import Prepared
from ..errors import UserError
from ..vcs import GitError

# Rows worth a line in the summary; new, removed and unchanged metrics are only counted.
SUMMARY_VERDICTS = ("regressed", "improved", "ambiguous", "failed", "fixed", "not comparable")


def summarize(store: Any, outcome: Any) -> None:
    """Compare with the commit before this one among those measured on this machine and environment, in git's order
    (mmtrack compare); a backfilled commit also re-judges the next one measured, whose verdicts the pages read.
    ``outcome``: the run's :class:`~mmtrack.commands.run.RunOutcome`, which gains the summary's lines, the commit
    before and the comparison (typed loosely: that module imports this one)."""
    from ..store import writes

    prepared, environment = outcome.prepared, outcome.collected.environment
    commit, machine = prepared.commit, prepared.machine
    before, after = measured_neighbours(store, prepared.project, machine, environment, commit.sha)
    if before is None and after is None:
        outcome.summary.append(f"first commit measured on {machine} ({environment}): nothing to compare with yet")
        return
    if after is not None:  # a backfilled commit: the step to the next commit measured is now this one's
        _rejudge_next(store, outcome, commit.sha, after, environment, first=before is None)
    if before is None:
        return
    outcome.before = before
    try:
        outcome.comparison = _compare(store, prepared, before, commit.sha, environment)
    except UserError as exc:  # the run is recorded; a comparison that cannot be made is only said
        outcome.summary.append(f"no comparison with the previous commit {before[:8]}: {exc}")
        return
    # What the summary reports, kept: the pages show it where the history is too short for detect.
    writes.save_run_verdicts(store, machine, environment, commit.sha,
                              run_verdicts(outcome.comparison.comparison, machine, environment, before, commit.sha))


def measured_neighbours(store: Any, repo: Any, machine: str, environment: str, sha: str) -> tuple[str | None, str | None]:
    """The commits measured on ``machine`` and ``environment`` just before and just after ``sha``, in git's order
    where the repository knows them (the store's commit dates otherwise): a backfilled older commit sits between
    its neighbours in the code, not after the last one stored."""
    from ..analysis.commit_order import from_history
    from ..store import reads
    from ..vcs import history

    dated = [c.sha for c in reads.commits(store, machine=machine, environment=environment)]
    if sha not in dated:
        return None, None
    try:
        order = from_history(dated, history(repo), str(repo))
    except GitError:
        order = None
    ordered = sorted(dated, key=order.sort_key) if order is not None else dated
    i = ordered.index(sha)
    return (ordered[i - 1] if i > 0 else None), (ordered[i + 1] if i + 1 < len(ordered) else None)


def _compare(store: Any, prepared: Prepared, a: str, b: str, environment: str) -> Any:
    """``mmtrack compare A B`` on this machine and environment, on the run's open store, no gate."""
    from ..analysis.compare_store import CompareRequest, compare_in, policy_for
    from ..analysis.gate import Gate

    request = CompareRequest(a=a, b=b, machine=prepared.machine, env=environment, cwd=prepared.project)
    return compare_in(store, request, policy_for(request), Gate.of("compare", request.fail_on))


def _rejudge_next(store: Any, outcome: Any, sha: str, after: str, environment: str, first: bool) -> None:
    """The next commit measured, judged against this backfilled one and its verdicts stored in place of those it had
    against the commit before; said in one line."""
    from ..analysis.render import summary_line
    from ..store import writes

    machine = outcome.prepared.machine
    try:
        found = _compare(store, outcome.prepared, sha, after, environment)
    except UserError as exc:
        outcome.summary.append(f"no comparison with the next commit measured, {after[:8]}: {exc}")
        return
    writes.save_run_verdicts(store, machine, environment, after,
                              run_verdicts(found.comparison, machine, environment, sha, after))
    where = "older than every commit measured" if first else "backfilled between two commits measured"
    outcome.summary.append(f"{where} on {machine} ({environment}): the next one, {after[:8]}, re-judged against it "
                           f"(mmtrack compare {sha[:8]} {after[:8]}): {summary_line(found.comparison)}")


def run_verdicts(comparison: Any, machine: str, environment: str, before_sha: str, after_sha: str) -> list[Any]:
    """The summary's rows (:data:`SUMMARY_VERDICTS`) as store records."""
    from ..results import RunVerdict, SeriesKey

    def value(m: Any) -> float | None:
        return m.median if m is not None and m.status == "ok" else None

    return [
        RunVerdict(SeriesKey(machine, environment, r.benchmark, r.params, r.metric), before_sha, after_sha,
                   r.verdict, r.state, r.ratio, value(r.before), value(r.after), r.p_value, r.note)
        for r in comparison.rows
        if r.verdict in SUMMARY_VERDICTS
    ]
