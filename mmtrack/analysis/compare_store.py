"""``mmtrack compare``'s comparison on an open store: A and B resolved (a commit or a run), every metric of both
judged (:mod:`mmtrack.analysis.compare`) with what the series around them say, and settled by what A/B runs and
``detect`` stored. ``mmtrack compare`` and ``mmtrack run``'s summary run it."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, UserError, is_relative_effect
from ..results import ChangePoint, CommitInfo, Measurement, MetricKey, SeriesKey
from ..store.selection import check_machine_env, check_metrics, metric_matches, unknown
from .compare import (
    HISTORY_WINDOW,
    ComparePolicy,
    Comparison,
    Row,
    RunLabels,
    compare_measurements,
    decided_in_run,
    reconciled_with_detect,
    series_history,
    series_history_at,
    series_later,
    settled_by_ab,
)
from .gate import Gate

HISTORY = HISTORY_WINDOW  # commits of a series' history that judge a change against its own noise

_RUN_ID = re.compile(r"^(?:run:|#)(\d+)$|^(\d{1,6})$")
_HEX = re.compile(r"^[0-9a-fA-F]{4,40}$")


@dataclass(slots=True)
class CompareRequest:
    a: str
    b: str
    db: str | None = None
    machine: str | None = None
    env: str | None = None
    metrics: tuple[str, ...] = ()
    fmt: str = "table"
    fail_on: tuple[str, ...] = ()
    threshold: float | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    history: int = HISTORY  # 0: judge on the two commits' samples alone
    alpha: float | None = None  # the samples' significance, with and without history (None: the policy's)
    only_changed: bool = False
    cwd: Path | None = None
    sort: str = "verdict"  # verdict | ratio | name


@dataclass(slots=True)
class Side:
    """One side of the comparison as resolved."""

    spec: str
    label: str
    measurements: list[Measurement]
    machine: str | None
    environment: str | None
    commit: CommitInfo | None
    run_id: int | None = None


@dataclass(slots=True)
class CompareOutcome:
    comparison: Comparison
    before: Side
    after: Side
    failing: list[Any]

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURES if self.failing else EXIT_OK


# --------------------------------------------------------------------------- resolving A and B


def _git_rev(spec: str, cwd: Path | None) -> str | None:
    from ..vcs import project_root, resolve_rev

    return resolve_rev(project_root(cwd), spec)


def _git_refs(cwd: Path | None) -> list[str]:
    from ..vcs import project_root, refs

    return refs(project_root(cwd))


def resolve_commit(store: Any, spec: str, cwd: Path | None = None) -> CommitInfo:
    """A commit spec (sha, prefix, branch, tag, any git revision) to a commit in the store."""
    from ..store import reads as q

    stored = q.commits(store)
    if _HEX.match(spec):
        matches = [c for c in stored if c.sha.startswith(spec.lower())]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            return q.resolve_commit(store, spec)  # its message names the candidates
    by_branch = [c for c in stored if spec in c.branches]
    sha = _git_rev(spec, cwd)
    if sha is not None:
        hit = next((c for c in stored if c.sha == sha), None)
        if hit is not None:
            return hit
        raise UserError(
            f"{spec!r} is commit {sha[:12]}, which has no runs in the store; measure it first "
            f"(mmtrack run) or pick a measured commit, e.g. {', '.join(c.sha[:8] for c in stored[-3:]) or 'none yet'}",
            EXIT_USAGE,
        )
    if by_branch:  # a branch the store knows (asv's branches) but git here does not
        return by_branch[-1]
    names = [c.sha[:8] for c in stored] + [b for c in stored for b in c.branches] + _git_refs(cwd)
    raise unknown("commit", spec, names, "; give a sha, a branch, a tag or a run id (run:ID)")


def resolve_side(store: Any, spec: str, machine: str | None, env: str | None, cwd: Path | None) -> Side:
    from ..store import reads as q

    m = _RUN_ID.match(spec.strip())
    if m:
        run_id = int(m.group(1) or m.group(2))
        info = next((r for r in q.runs(store) if r.id == run_id), None)
        if info is not None:
            return Side(
                spec,
                f"run {run_id} ({info.commit.short})",
                q.measurements_for_run(store, run_id),
                info.machine,
                info.environment,
                info.commit,
                run_id,
            )
        if m.group(1):  # explicitly a run id
            raise unknown("run id", spec, [f"run:{r.id}" for r in q.runs(store, limit=50)])
    commit = resolve_commit(store, spec, cwd)
    measurements = q.measurements_for_commit(store, commit.sha, machine, env)
    runs = q.runs(store, machine=machine, environment=env, commit=commit.sha)
    if env is None:  # the side's series are those measurements_for_commit read: per-commit history first
        runs = q.prefer_history(runs, q.ab_environments(store), lambda r: r.environment)
    clean = [r for r in runs if not r.commit.dirty] or runs
    if not measurements or not clean:
        where = " and ".join(x for x in (f"machine {machine}" if machine else "", f"environment {env}" if env else "") if x)
        raise UserError(f"commit {commit.sha[:12]} has no clean run{' on ' + where if where else ''} in the store", EXIT_USAGE)
    return Side(spec, commit.short, measurements, clean[0].machine, clean[0].environment, commit)


@dataclass(slots=True)
class SeriesContext:
    """What the series around A and B say about each case (see :func:`series_context`)."""

    history: dict[tuple[str, str, MetricKey], list[float]] = field(default_factory=dict)
    later: dict[tuple[str, str, MetricKey], list[float]] = field(default_factory=dict)
    decided: list[Row] = field(default_factory=list)
    # B's cases that a same-machine A/B run of A against B settled (mmtrack run --confirm): the stored verdict
    ab: dict[tuple[str, str, MetricKey], dict[str, Any]] = field(default_factory=dict)
    labels: RunLabels | None = None  # the commit of each history and later value, when A and B share a series
    # A case measured at B whose series skipped A: its own commit before B (older than A), as the pages judge it.
    stand_ins: dict[tuple[str, str, MetricKey], tuple[Measurement, CommitInfo]] = field(default_factory=dict)


_Case = tuple[str, str, MetricKey]  # (benchmark, params, metric): one series on each side


@dataclass
class _Gathered:
    """What :func:`series_context` gathers per case on its way: the commits of the values and B's own tails."""

    history_labels: dict[_Case, list[str]] = field(default_factory=dict)
    later_labels: dict[_Case, list[str]] = field(default_factory=dict)
    before_labels: dict[_Case, str] = field(default_factory=dict)
    tails: dict[_Case, tuple[list[Measurement], list[str]]] = field(default_factory=dict)
    settled: dict[_Case, set[str]] = field(default_factory=dict)


def series_context(
    store: Any,
    before: Side,
    after: Side,
    cases: Iterable[tuple[str, str, MetricKey]],
    window: int,
    policy: ComparePolicy,
    skipped: Iterable[tuple[str, str, MetricKey]] = (),
) -> SeriesContext:
    """Each case's series on the before side's machine and environment, around A and B.

    ``history``: the medians of up to ``window`` commits ending at A (judge B against the
    series' own noise); ``later``: the commits measured after B (they confirm or refute
    B's verdict); ``decided``: earlier commits' suspected changes that B settles, so that
    a per-commit gate fails once a regression is confirmed; ``labels``: the commits of those
    values, which align the run's series for its frames (:mod:`mmtrack.analysis.frames`).
    ``skipped``: cases measured at B but not at A; one whose series' commit before B is not
    newer than A is judged against that commit (``stand_ins``), as the pages judge each run.
    """
    from ..store import reads as q

    out = SeriesContext()
    if window <= 0 or before.commit is None or before.machine is None or before.environment is None:
        return out
    same_series = after.commit is not None and after.machine == before.machine and after.environment == before.environment
    skipped = set(skipped) if same_series else set()
    # What same-machine A/B runs (mmtrack run --confirm) settled, per (series, after sha): history does not
    # decide those commits again.
    by_ab = {k: v for k, v in q.load_ab_verdicts(store, machine=before.machine).items()
             if v["state"] in ("confirmed", "refuted")} if same_series else {}
    got = _Gathered()
    for case in [*cases, *sorted(skipped)]:
        bench, params, metric = case
        key = SeriesKey(before.machine, before.environment, bench, params, metric)
        pts = q.series(store, key)
        idx = _before_index(pts, case, skipped, before, after, out)
        if idx is None:
            continue
        got.before_labels[case] = pts[idx].commit.sha
        measurements = [p.measurement for p in pts]
        out.history[case] = series_history(measurements, idx, window)
        got.history_labels[case] = [pts[i].commit.sha for i in series_history_at(measurements, idx, window)]
        if same_series:
            _add_after(out, got, case, key, pts, measurements, before, after, window, policy, by_ab)
    # Decided across the run, so that a runner change confirmed in every series is no regression of each.
    out.decided.extend(decided_in_run(got.tails, policy, window, got.settled))
    if same_series:
        before_of = got.before_labels if out.stand_ins else before.commit.sha
        out.labels = RunLabels(before_of, after.commit.sha, got.history_labels,  # type: ignore[union-attr]
                               got.later_labels)
    return out


def _before_index(pts: list[Any], case: _Case, skipped: set[_Case], before: Side, after: Side,
                  out: SeriesContext) -> int | None:
    """The index of A in a case's series, or for a case A skipped, of its stand-in (noted in ``out``)."""
    if case not in skipped:
        return _index_of(pts, before.commit.sha)  # type: ignore[union-attr]
    idx = _own_before(pts, before.commit, after.commit)  # type: ignore[arg-type]
    if idx is not None:
        out.stand_ins[case] = (pts[idx].measurement, pts[idx].commit)
    return idx


def _add_after(out: SeriesContext, got: _Gathered, case: _Case, key: SeriesKey, pts: list[Any],
               measurements: list[Measurement], before: Side, after: Side, window: int, policy: ComparePolicy,
               by_ab: dict[Any, dict[str, Any]]) -> None:
    """What a case's series says after B (later values, an A/B verdict of A against B) and B's own tail."""
    at = _index_of(pts, after.commit.sha)  # type: ignore[union-attr]
    if at is None:
        return
    verdict = by_ab.get((key, after.commit.sha))  # type: ignore[union-attr]
    if verdict is not None and verdict["before_sha"] == before.commit.sha:  # type: ignore[union-attr]
        out.ab[case] = verdict
    out.later[case] = series_later(measurements, at, policy)
    got.later_labels[case] = [p.commit.sha for p in pts[at + 1 : at + 1 + len(out.later[case])]]
    # B's own series up to B, same code version: the commits whose suspicion B may settle.
    version = pts[at].measurement.version
    tail = pts[max(0, at - window - policy.confirm_window) : at + 1]
    while tail and tail[0].measurement.version != version:
        tail = tail[1:]
    if len(tail) > 2:
        got.tails[case] = ([p.measurement for p in tail], [p.commit.short for p in tail])
        if done := {p.commit.short for p in tail if (key, p.commit.sha) in by_ab}:
            got.settled[case] = done


def _index_of(points: list[Any], sha: str) -> int | None:
    """The index of the series' last point at commit ``sha``; None when the series has none there."""
    return max((i for i, p in enumerate(points) if p.commit.sha == sha), default=None)


def _own_before(points: list[Any], a: CommitInfo, b: CommitInfo) -> int | None:
    """The index of the series' point just before B, when it is not newer than A: the series skipped A
    (the run at A did not measure it) and compares with its own commit before, as the pages do."""
    at = _index_of(points, b.sha)
    if not at or a.date is None:
        return None
    prev = points[at - 1].commit
    return at - 1 if prev.date is not None and prev.date <= a.date and prev.sha != a.sha else None


def policy_for(request: CompareRequest) -> ComparePolicy:
    if request.history < 0:
        raise UserError(
            f"--history {request.history} is not a number of commits; give 0 (off) or more, e.g. 100", EXIT_USAGE
        )
    if request.threshold is not None and not is_relative_effect(request.threshold):
        raise UserError(f"--min-effect {request.threshold} is not a relative effect; give e.g. 0.1 for 10%", EXIT_USAGE)
    if request.alpha is not None and not (0 < request.alpha < 1):
        raise UserError(f"--alpha {request.alpha:g} is not a significance level; give one between 0 and 1, "
                        "e.g. 0.002", EXIT_USAGE)
    kw: dict[str, Any] = {"thresholds": dict(request.thresholds)}
    if request.threshold is not None:
        kw["threshold"] = request.threshold
    if request.alpha is not None:
        kw["alpha"] = kw["history_alpha"] = request.alpha
    return ComparePolicy(**kw)


def compare_in(store: Any, request: CompareRequest, policy: ComparePolicy, gate: Gate) -> CompareOutcome:
    """Compare on an open store: resolve A and B, read what their series say around them, judge every metric,
    settle rows by what A/B runs and ``detect`` stored, and the rows that fail ``gate``."""
    check_machine_env(store, request.machine, request.env)
    check_metrics(store, request.metrics)
    before = resolve_side(store, request.a, request.machine, request.env, request.cwd)
    after = resolve_side(store, request.b, request.machine, request.env, request.cwd)
    bm = [m for m in before.measurements if metric_matches(m.metric, request.metrics)]
    am = [m for m in after.measurements if metric_matches(m.metric, request.metrics)]
    cases = {m.case for m in bm} & {m.case for m in am}
    skipped = {m.case for m in am} - {m.case for m in bm}
    context = series_context(store, before, after, cases, request.history, policy, skipped)
    detected = detect_at_pair(store, before, after) if request.history > 0 else {}
    comparison = compare_measurements(
        [*bm, *(m for m, _ in context.stand_ins.values())],
        am,
        policy,
        history=context.history,
        later=context.later,
        labels=context.labels,
        decided=context.decided,
        before_label=before.label,
        after_label=after.label,
    )
    if context.stand_ins:
        comparison = _with_stand_in_notes(comparison, context.stand_ins, before.label)
    comparison = _settled_elsewhere(comparison, context.ab, detected)
    failing = gate.rows(comparison)
    return CompareOutcome(comparison, before, after, failing)


def _settled_elsewhere(comparison: Comparison, ab: dict[Any, Any], detected: dict[Any, ChangePoint]) -> Comparison:
    """``comparison`` with what settled a row elsewhere: an A/B verdict of the pair measured on the machine (not
    history's suspicion), then what ``detect`` stored for the same pair, reconciled row by row (one verdict a pair)."""
    if ab:
        comparison = dataclasses.replace(comparison, rows=tuple(
            r if (v := ab.get((r.benchmark, r.params, r.metric))) is None
            else settled_by_ab(r, v["state"], v["ratio"], v["p_value"], v["rounds"]) for r in comparison.rows))
    if detected:
        comparison = dataclasses.replace(comparison, rows=tuple(
            r if (c := detected.get((r.benchmark, r.params, r.metric))) is None else reconciled_with_detect(r, c)
            for r in comparison.rows))
    return comparison


def detect_at_pair(store: Any, before: Side, after: Side) -> dict[tuple[str, str, MetricKey], ChangePoint]:
    """The change points ``mmtrack detect`` stored whose new level begins at B, on A's series (A and B on one
    machine and environment), by case."""
    from ..store import reads as q

    if (before.commit is None or after.commit is None or before.machine is None
            or (after.machine, after.environment) != (before.machine, before.environment)):
        return {}
    return {(c.series.benchmark, c.series.params, c.series.metric): c
            for c in q.load_change_points(store, machine=before.machine, environment=before.environment)
            if c.after_sha == after.commit.sha}


def _with_stand_in_notes(comparison: Comparison, stand_ins: dict[Any, tuple[Measurement, CommitInfo]], a: str) -> Comparison:
    """Say on each row whose before value is a stand-in which commit it came from."""
    rows = []
    for row in comparison.rows:
        own = stand_ins.get((row.benchmark, row.params, row.metric))
        if own is not None:
            said = f"before: {own[1].short} (not measured at {a})"
            row = dataclasses.replace(row, note=f"{said}; {row.note}" if row.note else said)
        rows.append(row)
    return dataclasses.replace(comparison, rows=tuple(rows))
