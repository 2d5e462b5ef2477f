"""Links from the regressions page to the callgrind profiles kept for a regressed count (why it changed).

``mmtrack run --instrument callgrind`` keeps each case's profile per commit (``.mmtrack/profiles/<sha>/``,
:func:`mmtrack.asvbridge.callgrind_run.profiles_of`). For a regressed ``instructions`` row of ``mmtrack run``
whose two commits' profiles are there, both files are copied into the site (``profiles/<sha>/``) and the row
links them: Valgrind's own format, for ``callgrind_annotate`` or KCachegrind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..analysis.deterministic import SECTION
from ..results import MetricKey
from .writer import SiteWriter

COUNTED = str(MetricKey(SECTION, "instructions", "instr/op"))  # the rows' metric label of callgrind's count


def link_profiles(writer: SiteWriter, kept: Path | None, rows: list[dict[str, Any]]) -> None:
    """Copy both sides' profiles of each regressed count into the site and add their paths to its row."""
    if kept is None or not kept.is_dir():
        return
    from ..asvbridge.callgrind_pool import kept_profile, profile_label  # the worker's modules: only with profiles

    written: set[str] = set()
    for row in rows:
        if row.get("source") != "run" or row.get("verdict") != "regressed" or row.get("metric") != COUNTED:
            continue
        label = profile_label(str(row["bench"]), [str(v) for v in (row.get("params") or {}).values()])
        sides = [kept_profile(kept / str(row.get(side)), label) for side in ("before_sha", "after_sha")]
        if None in sides:
            continue
        links = [f"profiles/{row[side]}/{found[0].name}" for side, found in zip(("before_sha", "after_sha"), sides)]
        for rel, found in zip(links, sides):
            if rel not in written:
                writer.put(rel, found[0].read_bytes())  # type: ignore[index]
                written.add(rel)
        row["profiles"] = links


__all__ = ["link_profiles"]
