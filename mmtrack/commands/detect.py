"""``mmtrack detect``: change points over every series in the store, stored for the pages.

The method lives in :mod:`mmtrack.analysis.detect`; this module enumerates the
series, hands their points over and stores the findings (``ChangePoint``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..analysis.detect import DetectPolicy, SeriesReport, detect_values
from ..analysis.events import EnvironmentEvent, RunPoints, find_events, is_environment, mark_events
from ..analysis.placement import align_to_agreement
from ..analysis.ranking import with_confirmations
from ..errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, UserError, is_relative_effect
from ..forked import map_split
from ..results import ChangePoint, SeriesKey
from ..store.selection import check_machine_env, check_metrics, series_keys

#: How detect orders commits (it has no repository at hand): what the outputs say was used.
COMMIT_ORDER = "commit dates recorded in the results"


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


@dataclass(slots=True)
class DetectOutcome:
    reports: list[SeriesReport]
    stored: int | None  # None when not stored
    policy: DetectPolicy
    fail_on: tuple[str, ...] = ()
    read_only: bool = False  # the store was read-only: nothing stored
    events: list[EnvironmentEvent] = field(default_factory=list)
    commit_order: str = COMMIT_ORDER

    @property
    def changes(self) -> list[ChangePoint]:
        return [c for r in self.reports for c in r.changes]

    @property
    def code_changes(self) -> list[ChangePoint]:
        """The change points no environment event holds: the ones the code may have caused."""
        return [c for c in self.changes if not is_environment(c)]

    @property
    def open_regressions(self) -> list[ChangePoint]:
        return [c for c in self.code_changes if c.kind == "regression" and c.persists]

    @property
    def too_short(self) -> list[SeriesReport]:
        return [r for r in self.reports if r.status == "too_short"]

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURES if "regression" in self.fail_on and self.open_regressions else EXIT_OK


METHODS = ("rankseg", "edivisive", "pelt")

PARALLEL_SERIES = 200  # fewer series than this are detected in this process alone (a fork costs ~10 ms)


def policy_for(request: DetectRequest) -> DetectPolicy:
    """The detector's policy; every knob is checked here so that bad values fail as one line, exit 2."""
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
    return DetectPolicy(**kw)


def run_detect(
    request: DetectRequest,
    store: Any | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    series: Sequence[SeriesKey] | None = None,
    columns: Sequence[Any] | None = None,
) -> DetectOutcome:
    """Detect (and by default store) change points; ``series`` limits it to these series, e.g. the ones a new
    commit touched (``mmtrack update``): their stored change points are replaced, all others are left alone.
    ``columns``: those series' columns read already (``reads.series_columns``; points without a usable
    median, as ``usable_only=False`` gives them, are left out here)."""
    from ..store import reads as q
    from ..store import writes
    from ..store.db import open_store

    policy = policy_for(request)
    own = store is None
    store = store or open_store(request.db, existing=True)
    try:
        if columns is not None:
            keys = [c.key for c in columns]
        elif series is None:
            check_machine_env(store, request.machine, request.env)
            check_metrics(store, request.metrics)
            keys = series_keys(store, machine=request.machine, env=request.env, benchmark=request.benchmark,
                               metrics=request.metrics)
        else:
            keys = list(series)
        # one query for all the series' medians: 500 series x 1,000 commits read as one scan, not 500 queries
        if columns is None:
            columns = q.series_columns(store, keys, keep_cache=request.store_results)
        analysed = [usable for cols in columns if (usable := cols.usable()).values]
        # Half of the series on the second core when there are many: 500 series take about 0.4 s on one.
        reports = map_split(
            lambda c: detect_values(c.key, c.shas, c.values, c.versions, c.direction, policy), analysed,
            min_items=PARALLEL_SERIES, progress=progress,
        )
        events: list[EnvironmentEvent] = []
        if request.events and any(r.changes for r in reports):
            reports, events = with_events(store, reports, analysed)
        stored = None
        read_only = not getattr(store, "writable", True)
        if request.store_results and not read_only:
            stored = writes.save_change_points(
                store, [c for r in reports for c in r.changes], replace=[r.series for r in reports]
            )
    finally:
        if own:
            store.close()
    return DetectOutcome(reports, stored, policy, request.fail_on, read_only=read_only, events=events)


def with_events(store: Any, reports: list[SeriesReport], analysed: Sequence[Any]
                ) -> tuple[list[SeriesReport], list[EnvironmentEvent]]:
    """``reports`` with each change point moved to the commit other machines agree on where its values allow, those
    that follow the run marked, and the environment events holding them."""
    from ..store import reads as q

    stepped = [r.series for r in reports if r.changes]
    runs, position = q.series_run_points(store, stepped)
    reports = align_to_agreement(reports, {c.key: (c.shas, c.values) for c in analysed}, position)
    points = {k: RunPoints(v.shas, v.days, v.values) for k, v in runs.items()}
    events, held = find_events(reports, points, position, {c.key: c.shas for c in analysed})
    return with_confirmations(mark_events(reports, held, events), position), events


# --------------------------------------------------------------------------- output


def check_output_options(show_all: bool, fmt: str) -> None:
    """``--all`` widens the table; JSON lists every change point already: refused before any work."""
    if show_all and fmt != "table":
        raise UserError(f"--all adds improvements to the table; --format {fmt} lists every change point already: "
                        "drop --all", EXIT_USAGE)
