"""``mmtrack compare A B``: every metric of two commits (or runs) side by side, with verdicts.

A and B are commits (a sha or prefix, a branch or a tag, resolved through git or the
store) or run ids (``run:12``, ``#12`` or a bare number below 1,000,000). The
statistics live in :mod:`mmtrack.analysis.compare`, the comparison on an open store in
:mod:`mmtrack.analysis.compare_store`; this module checks the request and opens the store.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..analysis.compare_store import (  # noqa: F401 - Side, series_context, resolve_side, HISTORY: re-exported
    HISTORY,
    CompareOutcome,
    CompareRequest,
    Side,
    compare_in,
    policy_for,
    resolve_side,
    series_context,
)
from ..analysis.gate import Gate
from ..errors import EXIT_USAGE, UserError, is_relative_effect


def parse_threshold_for(items: Iterable[str]) -> dict[str, float]:
    """``PATTERN=VALUE`` items of ``--threshold-for``."""
    out: dict[str, float] = {}
    for item in items:
        pattern, sep, value = item.rpartition("=")
        try:
            if not sep or not pattern:
                raise ValueError
            out[pattern] = float(value)
        except ValueError:
            raise UserError(f"--threshold-for {item!r}: give PATTERN=VALUE, e.g. 'suite.Strict.*=0.02'", EXIT_USAGE) from None
        if not is_relative_effect(out[pattern]):
            raise UserError(f"--threshold-for {item!r}: {value} is not a relative effect; give e.g. "
                            f"'{pattern}=0.02' for 2%", EXIT_USAGE)
    return out


def run_compare(request: CompareRequest, store: Any | None = None) -> CompareOutcome:
    """Resolve A and B in the store, compare every metric, decide the exit code."""
    from ..store.db import open_store

    gate = Gate.of("compare", request.fail_on)
    if request.only_changed and request.fmt != "table":
        raise UserError(f"--only-changed leaves unchanged rows out of the table; --format {request.fmt} lists every "
                        "row (markdown folds the unchanged away): drop one of them", EXIT_USAGE)
    policy = policy_for(request)
    own = store is None
    store = store or open_store(request.db, existing=True)
    try:
        return compare_in(store, request, policy, gate)
    finally:
        if own:
            store.close()
