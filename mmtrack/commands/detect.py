"""``mmtrack detect``: change points over every series in the store, stored for the pages.

The pass over an open store (read, detect, events, store, alerts, drift) is :mod:`mmtrack.analysis.detect_pass`;
this module checks the request, opens the store and runs it.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Sequence

from ..analysis.detect_pass import (  # noqa: F401 - DetectOutcome, COMMIT_ORDER, METHODS: re-exported
    COMMIT_ORDER,
    METHODS,
    DetectOutcome,
    DetectRequest,
    detect_in,
    policy_for,
)
from ..analysis.gate import state_of  # noqa: F401 - re-exported
from ..errors import EXIT_USAGE, UserError
from ..results import SeriesKey


def run_detect(
    request: DetectRequest,
    store: Any | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    series: Sequence[SeriesKey] | None = None,
    columns: Sequence[Any] | None = None,
    new_commits: Collection[str] | None = None,
    clear_due: Any | None = None,
) -> DetectOutcome:
    """Detect (and by default store) change points; ``series`` limits it to these series, e.g. the ones a new
    commit touched (``mmtrack update``): their stored change points are replaced, all others are left alone.
    ``columns``: those series' columns read already (``reads.series_columns``; points without a usable
    median, as ``usable_only=False`` gives them, are left out here). ``new_commits``: the commits just imported; a
    series that only gained some of them at its end is searched from its last stored step on (``kept_steps``).
    ``clear_due``: the imports' detect marks (``writes.read_detect_due``) these series clear once stored; a detect
    of the whole store clears the marks it read itself."""
    from ..store.db import open_store

    policy = policy_for(request)
    own = store is None
    store = store or open_store(request.db, existing=True)
    try:
        return detect_in(store, request, policy, progress, series, columns, new_commits, clear_due)
    finally:
        if own:
            store.close()


# --------------------------------------------------------------------------- output


def check_output_options(show_all: bool, fmt: str) -> None:
    """``--all`` widens the table; JSON lists every change point already: refused before any work."""
    if show_all and fmt != "table":
        raise UserError(f"--all adds improvements to the table; --format {fmt} lists every change point already: "
                        "drop --all", EXIT_USAGE)
