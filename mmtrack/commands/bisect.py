"""``mmtrack bisect GOOD BAD -b BENCH [--metric M]``: the commit where a metric moved, by A/B.

The search itself is :mod:`mmtrack.ab.bisect`, run from the request by :mod:`mmtrack.ab.bisect_run`, which
resolves the commits and returns the search's outcome (its path and culprit); the CLI renders it as a table or
JSON. Exit status: 0 when a culprit was found, 2 for a usage error (dirty tree, unknown
commit, failed build, GOOD and BAD not different).
"""

from __future__ import annotations

from typing import Any, Callable

from ..ab.bisect_run import BisectRequest, bisect_commits
from ..errors import UserError


def run_bisect(request: BisectRequest, progress: Callable[[str], None] | None = None) -> Any:
    """The search's outcome (:func:`mmtrack.ab.bisect_run.bisect_commits`), once the request names a benchmark."""
    if not request.bench:
        raise UserError("mmtrack bisect needs -b REGEX: the benchmark whose metric moved")
    return bisect_commits(request, progress)
