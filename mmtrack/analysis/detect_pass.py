"""A detect pass on an open store (``mmtrack detect``, ``mmtrack update``): read the selected series, detect their
change points within the suite's false-alarm budget, group those that follow the run into environment events,
store them, refresh the alert queue, and the drift since a baseline.

The method lives in :mod:`mmtrack.analysis.detect`; this module enumerates the series, hands their points over and
stores the findings (``ChangePoint``). The verbs open the store and call :func:`detect_in`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

from ..errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, UserError, is_relative_effect
from ..forked import map_split
from ..results import ChangePoint, SeriesKey
from ..store.selection import check_machine_env, check_metrics, series_keys
from ..vcs import GitError, history, is_repository, project_root
from .alert_queue import refresh_alerts
from .alerts import Alert, dismissed_series
from .budget import DEFAULT_FDR, BudgetOutcome, budgeted_reports, family_sizes
from .commit_order import BY_DATE, CommitOrder, by_date, from_history, permutation
from .detect import DetectPolicy, SeriesReport
from .drift_since import check_drift_gate, drift_report, resolve_baseline
from .events import (
    EnvironmentEvent,
    RunPoints,
    find_events,
    is_environment,
    mark_events,
    without_returns_from_events,
)
from .gate import Gate, checked, persisting_regressions
from .placement import align_to_agreement
from .ranking import with_confirmations
from .series import detect_values, kept_steps

#: How detect orders commits without a repository at hand: what the outputs say was used.
COMMIT_ORDER = BY_DATE


@dataclass(slots=True)
class DetectRequest:
    db: str | None = None
    machine: str | None = None
    env: str | None = None
    benchmark: str | None = None  # regex
    metrics: tuple[str, ...] = ()
    method: str = "rankseg"
    min_effect: float | None = None
    alpha: float | None = None
    store_results: bool = True
    fail_on: tuple[str, ...] = ()  # "regression": exit 1 when a regression persists to the latest commit
    events: bool = True  # group change points that follow the run (date, environment) into environment events
    repo: str | None = None  # a git repository whose history orders the commits (else their recorded dates)
    repo_at_hand: bool = False  # without ``repo``: the current directory's repository, where it is one
    fdr: float | None = DEFAULT_FDR  # the suite's false-alarm budget (analysis/budget.py); None: off
    baseline: str | None = None  # a ref (tag, branch, commit): each series' drift since it (drift_since.py)


@dataclass(slots=True)
class DetectOutcome:
    reports: list[SeriesReport]
    stored: int | None  # None when not stored
    policy: DetectPolicy
    fail_on: tuple[str, ...] = ()
    read_only: bool = False  # the store was read-only: nothing stored
    events: list[EnvironmentEvent] = field(default_factory=list)
    commit_order: str = COMMIT_ORDER
    alerts: list[Alert] = field(default_factory=list)  # every stored alert after this detection (alert_queue.py)
    budget: BudgetOutcome | None = None  # what the suite's false-alarm budget held back
    drift: Any = None  # analysis.drift.DriftReport since the request's baseline; None without one

    @property
    def changes(self) -> list[ChangePoint]:
        return [c for r in self.reports for c in r.changes]

    @property
    def code_changes(self) -> list[ChangePoint]:
        """The change points no environment event holds: the ones the code may have caused."""
        return [c for c in self.changes if not is_environment(c)]

    @property
    def open_regressions(self) -> list[ChangePoint]:
        """Regressions that persist to the latest commit, proved by the rank test or confirmed by the next commits."""
        return persisting_regressions(self.gated_changes, "confirmed")

    @property
    def gated_changes(self) -> list[ChangePoint]:
        """The code changes the gate reads: those of alerts a person marked invalid or wontfix left out."""
        dismissed = dismissed_series(self.alerts)
        return [c for c in self.code_changes if (c.series, c.after_sha) not in dismissed]

    @property
    def suspected_regressions(self) -> list[ChangePoint]:
        """Regressions in the newest commits that the next commits have not settled yet (``--fail-on suspected``)."""
        return persisting_regressions(self.code_changes, "suspected")

    @property
    def alerts_line(self) -> str:
        """The alert queue in one line: how many alerts, how many untriaged (``mmtrack alerts list``)."""
        active = [a for a in self.alerts if a.active]
        untriaged = sum(a.state == "untriaged" for a in active)
        return (f"alerts: {len(active)} ({untriaged} untriaged, {sum(a.explained for a in active)} explained by "
                "environment events); `mmtrack alerts list` shows the queue")

    @property
    def too_short(self) -> list[SeriesReport]:
        return [r for r in self.reports if r.status == "too_short"]

    @property
    def exit_code(self) -> int:
        gate = Gate("detect", self.fail_on)
        return EXIT_FAILURES if gate.changes(self.gated_changes) or gate.drift(self.drift) else EXIT_OK


METHODS = ("rankseg", "edivisive", "pelt")

PARALLEL_SERIES = 200  # fewer series than this are detected in this process alone: a fork would cost more


def policy_for(request: DetectRequest) -> DetectPolicy:
    """The detector's policy; every knob is checked here so that bad values fail as one line, exit 2."""
    checked("detect", request.fail_on)
    check_drift_gate(request.fail_on, request.baseline)
    if request.method not in METHODS:
        raise UserError(f"unknown --method {request.method!r}; choose one of {', '.join(METHODS)}", EXIT_USAGE)
    kw: dict[str, Any] = {"method": request.method}
    if request.min_effect is not None:
        if not is_relative_effect(request.min_effect):
            raise UserError(f"--min-effect {request.min_effect:g} is out of range; give a relative step such as "
                            "0.02 (2%), from 0 up to 10", EXIT_USAGE)
        kw["min_effect"] = request.min_effect
    if request.alpha is not None:
        if not (0 < request.alpha < 1):
            raise UserError(f"--alpha {request.alpha:g} is out of range; give a significance level between 0 and 1, "
                            "such as 0.0001", EXIT_USAGE)
        kw["alpha"] = request.alpha
    if request.fdr is not None and not (0 < request.fdr < 1):
        raise UserError(f"--fdr {request.fdr:g} is out of range; give the false-alarm budget per commit between 0 "
                        "and 1, such as 0.001, or 0 to turn it off", EXIT_USAGE)
    return DetectPolicy(**kw)


def detect_in(store: Any, request: DetectRequest, policy: DetectPolicy, progress: Callable[[int, int], None] | None,
               series: Sequence[SeriesKey] | None, columns: Sequence[Any] | None,
               new_commits: Collection[str] | None, clear_due: Any | None) -> DetectOutcome:
    """Detect on an open store: read, detect, group into events, store, refresh the alerts; the arguments are
    :func:`mmtrack.commands.detect.run_detect`'s."""
    clear_due = _due_marks(store, request, series, columns, clear_due)
    baseline = resolve_baseline(store, request.baseline, _repository(request)) if request.baseline else None
    columns = _columns_to_detect(store, request, series, columns)
    order = read_commit_order(store, request)
    analysed = [in_order(usable, order) for cols in columns if (usable := cols.usable()).values]
    reports, budget = _detected(store, request, policy, analysed, order, new_commits, progress)
    events: list[EnvironmentEvent] = []
    if request.events and any(r.changes for r in reports):
        reports, events = with_events(store, reports, analysed, order)
    read_only = not getattr(store, "writable", True)
    stored = None if read_only else _stored(store, request, reports, clear_due)
    alerts = _alerts_after(store, reports, stored, order)
    drift = drift_report(request.baseline or baseline, baseline, analysed, policy, alerts) if baseline else None
    return DetectOutcome(reports, stored, policy, request.fail_on, read_only=read_only, events=events,
                         commit_order=order.source if order else COMMIT_ORDER, alerts=alerts, budget=budget,
                         drift=drift)


def _whole_store(request: DetectRequest, series: Sequence[SeriesKey] | None, columns: Sequence[Any] | None) -> bool:
    """Whether this detection reads every series of the store: no columns or series in hand, no selection."""
    selected = request.machine or request.env or request.benchmark or request.metrics
    return columns is None and series is None and not selected


def _due_marks(store: Any, request: DetectRequest, series: Sequence[SeriesKey] | None, columns: Sequence[Any] | None,
               clear_due: Any | None) -> Any | None:
    """The detect marks the stored results clear: those given, else the store's own for a stored detect of the whole
    store (read before the columns: a mark made after them stays)."""
    from ..store import writes

    if clear_due is not None:
        return clear_due
    if _whole_store(request, series, columns) and request.store_results and getattr(store, "writable", True):
        return writes.read_detect_due(store)
    return None


def _columns_to_detect(store: Any, request: DetectRequest, series: Sequence[SeriesKey] | None,
                       columns: Sequence[Any] | None) -> Sequence[Any]:
    """The columns in hand, else the selected series' read in one query (500 series x 1,000 commits as one scan, not
    500 queries); a detect that stores its results keeps the series cache too."""
    from ..store import reads as q
    from ..store import writes

    keys = _keys_to_detect(store, request, series, columns)
    if columns is not None:
        return columns
    read = writes.series_columns_keeping_cache if request.store_results else q.series_columns
    return read(store, keys)


def _detected(store: Any, request: DetectRequest, policy: DetectPolicy, analysed: Sequence[Any],
              order: CommitOrder | None, new_commits: Collection[str] | None,
              progress: Callable[[int, int], None] | None) -> tuple[list[SeriesReport], BudgetOutcome | None]:
    """Each analysed series' report, within the suite's false-alarm budget, and what the budget held back."""
    kept = _kept_steps(store, analysed, new_commits, policy) if new_commits is not None and order is None else {}
    # Half of the series on the second core when there are many (docs/design/nightly-update-profile.md).
    reports = map_split(
        lambda c: detect_values(c.key, c.shas, c.values, c.versions, c.direction, policy, kept.get(c.key)),
        analysed, min_items=PARALLEL_SERIES, progress=progress,
    )
    return budgeted_reports(reports, family_sizes([c.shas for c in analysed]), request.fdr)


def _stored(store: Any, request: DetectRequest, reports: Sequence[SeriesReport], clear_due: Any | None) -> int | None:
    """How many change points were stored in place of the reported series' own; None where the request stores none."""
    from ..store import writes

    if not request.store_results:
        return None
    return writes.save_change_points(store, [c for r in reports for c in r.changes],
                                     replace=[r.series for r in reports], clear_due=clear_due)


def _alerts_after(store: Any, reports: Sequence[SeriesReport], stored: int | None, order: CommitOrder | None
                  ) -> list[Alert]:
    """Every alert after this detection; where nothing was stored (--dry-run, a read-only store), the alerts the
    change points would become, none of them written."""
    pending = None if stored is not None else ([r.series for r in reports], [c for r in reports for c in r.changes])
    return refresh_alerts(store, order.position if order else None, pending=pending)


def _keys_to_detect(store: Any, request: DetectRequest, series: Sequence[SeriesKey] | None,
                    columns: Sequence[Any] | None) -> list[SeriesKey]:
    """The series to detect on: those of the columns in hand, those given, or the request's selection (checked)."""
    if columns is not None:
        return [c.key for c in columns]
    if series is not None:
        return list(series)
    check_machine_env(store, request.machine, request.env)
    check_metrics(store, request.metrics)
    return series_keys(store, machine=request.machine, env=request.env, benchmark=request.benchmark,
                       metrics=request.metrics)


def _kept_steps(store: Any, analysed: Sequence[Any], new_commits: Collection[str], policy: DetectPolicy
                ) -> dict[SeriesKey, list[int]]:
    """Per series that only gained ``new_commits`` at its end: its stored steps' indices (``kept_steps``)."""
    from ..store import reads as q

    stored: dict[SeriesKey, list[ChangePoint]] = {}
    for c in q.load_change_points(store):
        stored.setdefault(c.series, []).append(c)
    new = set(new_commits)
    out = {}
    for c in analysed:
        if c.key in stored and (index := kept_steps(stored[c.key], c.shas, new, policy)) is not None:
            out[c.key] = index
    return out


def _repository(request: DetectRequest) -> Path | None:
    """The repository that orders the commits: ``--repo`` (refused where it is none), else the current directory's
    where it is one."""
    if request.repo is not None:
        path = Path(request.repo).expanduser()
        if not is_repository(path):
            raise UserError(f"--repo {request.repo}: not a git repository; give the project's checkout, or leave "
                            "--repo out to order commits by their recorded dates", EXIT_USAGE)
        return path.resolve()
    if request.repo_at_hand and is_repository(Path.cwd()):
        return project_root()
    return None


def read_commit_order(store: Any, request: DetectRequest) -> CommitOrder | None:
    """Git's order of the store's commits where a repository is at hand (those it lacks keep their date order), or
    None: the store's date order, as its series are read."""
    from ..store import reads as q

    repo = _repository(request)
    if repo is None:
        return None
    _, position = q.series_run_points(store, [])
    dated = sorted(position, key=position.__getitem__)
    try:
        order = from_history(dated, history(repo), str(repo))
    except GitError:  # a repository without a commit yet: it orders nothing
        order = None
    if order is None and request.repo is not None:  # asked for, so say why it was not used
        return by_date(dated, f"--repo {request.repo} holds fewer than two of the {len(dated)} commits")
    return order


def in_order(columns: Any, order: CommitOrder | None) -> Any:
    """One series' columns in ``order`` (as read, by date, without one)."""
    index = permutation(columns.shas, order) if order else None
    if index is None:
        return columns
    return dataclasses.replace(columns, shas=[columns.shas[i] for i in index],
                               values=[columns.values[i] for i in index],
                               versions=[columns.versions[i] for i in index])


def with_events(store: Any, reports: list[SeriesReport], analysed: Sequence[Any], order: CommitOrder | None = None
                ) -> tuple[list[SeriesReport], list[EnvironmentEvent]]:
    """``reports`` with each change point moved to the commit other machines agree on where its values allow, those
    that follow the run marked, and the environment events holding them."""
    from ..store import reads as q

    stepped = [r.series for r in reports if r.changes]
    wanted = set(stepped)
    runs, position = q.series_run_points(store, stepped, [c for c in analysed if c.key in wanted])
    position = order.position if order else position
    reports = align_to_agreement(reports, {c.key: (c.shas, c.values) for c in analysed}, position)
    points = {k: RunPoints(v.shas, v.days, v.values) for k, v in runs.items()}
    events, held = find_events(reports, points, position, {c.key: c.shas for c in analysed})
    marked = without_returns_from_events(mark_events(reports, held, events))
    return with_confirmations(marked, position), events
