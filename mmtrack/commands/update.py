"""``mmtrack update RESULTS_DIR -o SITE``: the per-commit CI step in one command.

Import the asv results that are new (unchanged files are skipped unread), detect
change points on the series they touched only, and republish the site (only the
benchmarks whose series or change points moved are read and rewritten). One store
is open throughout; each step is its layer's (``store.asv_import``, ``analysis.detect_pass``,
``publish.site``), as the single verbs run them.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from ..analysis.budget import DEFAULT_FDR
from ..analysis.drift_since import check_drift_gate
from ..analysis.gate import Gate, checked
from ..asvbridge.results_folder import check_results_folder
from ..errors import EXIT_FAILURES, EXIT_OK, UserError
from ..publish.site import PublishRequest, publish_site
from ..store.asv_import import ImportResult


@dataclass(frozen=True, slots=True)
class UpdateRequest:
    results_dir: Path
    publish: PublishRequest  # its db is the store's URL (resolved by the CLI)
    detect: bool = True
    fail_on: tuple[str, ...] = ()  # "regression": exit 1 when a touched series has an open regression
    fdr: float | None = DEFAULT_FDR  # the suite's false-alarm budget (analysis/budget.py); None: off
    baseline: str | None = None  # a ref: the touched series' drift since it (analysis/drift_since.py), --fail-on drift
    min_effect: float | None = None  # detect's smallest step and the drift's threshold (default: detect's)


@dataclass(slots=True)
class UpdateOutcome:
    out: Path  # the site's folder
    imported: ImportResult
    touched: int  # series keys with new, replaced or removed points
    detected: int | None  # change points found on the touched series; None when detection was off
    open_regressions: int  # counted by the gate: 0 without --fail-on
    written: int
    unchanged: int
    removed: int
    seconds: dict[str, float]
    budget: str | None = None  # what the false-alarm budget is and what it held back
    alerts: str | None = None  # the alert queue, in one line
    drift: str | None = None  # the drift since the baseline, in one line
    drifted: int = 0  # touched series drifted beyond the threshold that --fail-on drift counts

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURES if self.imported.problems or self.open_regressions or self.drifted else EXIT_OK


def update(request: UpdateRequest) -> UpdateOutcome:
    """Import, detect on the touched series, republish; each step's seconds in ``outcome.seconds``."""
    from ..store import reads as q
    from ..store.asv_import import import_asv_results
    from ..store.db import open_store, redact
    from ..store.writes import read_detect_due, series_columns_keeping_cache

    checked("update", request.fail_on)
    check_drift_gate(request.fail_on, request.baseline)
    if request.baseline and not request.detect:
        raise UserError("--baseline judges drift while detecting; drop --no-detect, or run mmtrack detect --baseline")
    url = request.publish.db
    if url is None:
        raise UserError("no store given; pass --db URL or set MMTRACK_DB")
    check_results_folder(request.results_dir, verb="mmtrack update")  # before the store: nothing to import, no store
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    store = open_store(url)
    try:
        summary = import_asv_results(store, request.results_dir)
        _test_kill_point("import")
        seconds["import"] = time.perf_counter() - t
        t = time.perf_counter()
        # What this import and any update killed before its detect wrote: the marks outlive a kill (issue 60)
        due = read_detect_due(store) if request.detect else None
        keys = q.series_keys_of(store, due.series if due is not None else summary.touched_series)
        detected, open_regressions, columns, budget, alerts, drift = None, 0, [], None, None, None
        if request.detect and keys:
            # scipy: loaded only when there is something to judge
            from ..analysis.detect_pass import DetectRequest, detect_in, policy_for

            # Read once for detect and for the pages' verdicts (their history), the blobs of series_cache kept
            columns = series_columns_keeping_cache(store, keys, usable_only=False)
            detect = DetectRequest(db=url, fdr=request.fdr, baseline=request.baseline, min_effect=request.min_effect)
            outcome = detect_in(store, detect, policy_for(detect), None, None, columns,
                                summary.commits | set(due.commits if due else ()), due)
            detected = len(outcome.changes)
            budget = outcome.budget.describe() if outcome.budget else None
            alerts = outcome.alerts_line
            open_regressions = len(Gate("update", request.fail_on).changes(outcome.gated_changes))
            drift = outcome.drift
        elif request.detect:
            detected = 0
        _test_kill_point("detect")
        seconds["detect"] = time.perf_counter() - t
        t = time.perf_counter()
        _, report = publish_site(request.publish, store=store, columns=columns)
        seconds["publish"] = time.perf_counter() - t
    finally:
        store.close()
    return UpdateOutcome(
        out=Path(request.publish.out),
        imported=ImportResult(summary, redact(url)),
        touched=len(keys),
        detected=detected,
        open_regressions=open_regressions,
        written=len(report.written),
        unchanged=report.unchanged,
        removed=len(report.removed),
        seconds=seconds,
        budget=budget,
        alerts=alerts,
        drift=drift.summary() if drift is not None else None,
        drifted=len(Gate("update", request.fail_on).drift(drift)),
    )


#: A test's kill point: ``MMTRACK_TEST_KILL_AFTER=import`` (or ``detect``) makes update SIGKILL itself after that
#: step, as a machine that dies there would; tests prove the next update repairs what the kill left.
KILL_AFTER_ENV = "MMTRACK_TEST_KILL_AFTER"


def _test_kill_point(step: str) -> None:
    if os.environ.get(KILL_AFTER_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
