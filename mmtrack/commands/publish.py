"""``mmtrack publish -o DIR``: the store as a static site (Plotly, offline, incremental).

The publishing itself (settings, checks, the store read, the pages) is :mod:`mmtrack.publish.site`'s;
:func:`publish` is its :func:`~mmtrack.publish.site.publish_site`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import EXIT_OK
from ..publish.site import (  # noqa: F401 - asv_settings, site_config, TITLE_LIMIT: re-exported
    TITLE_LIMIT,
    PublishRequest,
    asv_settings,
    site_config,
)
from ..publish.site import publish_site as publish
from ..publish.writer import WriteReport


@dataclass(frozen=True, slots=True)
class PublishResult:
    out: Path
    benchmarks: int  # shown on the site
    series: int
    read: int  # series read from the store this time (a republish reads only those that changed)
    change_points: int
    report: WriteReport  # files written, unchanged, removed
    seconds: float
    exit_code: int = EXIT_OK


def run_publish(request: PublishRequest, progress: Callable[[int, int], None] | None = None) -> PublishResult:
    """Publish; ``progress(done, total)`` sees the series as the store is read."""
    t0 = time.perf_counter()
    model, report = publish(request, progress=progress)
    secs = time.perf_counter() - t0
    if model is None:  # nothing new: the last build's figures
        n = report.up_to_date or {}
        return PublishResult(request.out, n.get("benchmarks", 0), n.get("series", 0), 0, n.get("change_points", 0),
                             report, secs)
    # A republish reads only the series that changed, and only the newest points of those that only grew.
    read = {*getattr(model.series, "loaded", model.series), *getattr(model.series, "newest_read", ()),
            *getattr(model.series, "read_elsewhere", ())}
    return PublishResult(request.out, len(model.benchmarks()), len(model.series), len(read), len(model.change_points),
                         report, secs)
