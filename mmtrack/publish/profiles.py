"""The kept callgrind profiles in the site: copied in, and linked from the pages (why a count changed).

``mmtrack run --instrument callgrind`` (and ``continuous``) keep each case's profile per commit
(``.mmtrack/profiles/<sha>/``, :func:`mmtrack.asvbridge.callgrind_run.profiles_of`), ``mmtrack bench`` per saved
run (``.mmtrack/profiles/bench-run-<N>/``, :mod:`mmtrack.benchruns.profiles`). Each benchmark page links the
profile of every point of a counted series that has one; the regressions page links both sides of a regressed
count of ``mmtrack run``. Each file is copied once into the site (``profiles/<folder>/``): Valgrind's own format,
for ``callgrind_annotate`` or KCachegrind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..analysis.deterministic import SECTION
from ..results import MetricKey, SeriesKey, SeriesPoint
from .writer import SiteWriter

COUNTED = str(MetricKey(SECTION, "instructions", "instr/op"))  # the rows' metric label of callgrind's count


class SiteProfiles:
    """The kept profiles (``kept``: the folder of folders, None: none kept) as one build copies them into the
    site: each file once, and not read again while its size and modification time hold."""

    def __init__(self, writer: SiteWriter, kept: Path | None) -> None:
        self.writer = writer
        self.kept = kept if kept is not None and kept.is_dir() else None
        self._linked: dict[str, set[str]] = {}  # per benchmark, the copies its pages link

    def of_points(self, key: SeriesKey, points: Sequence[SeriesPoint], pos: dict[str, int]) -> list[list[Any]]:
        """``[commit position, site path]`` of each drawn point of an instruction count series whose profile is
        kept, the profile copied into the site: its bench run's own, else its commit's. (A case's other counted
        series share its profiles: the page finds them by case.)"""
        if self.kept is None or (key.metric.section, key.metric.name) != (SECTION, "instructions") or not points:
            return []
        from ..asvbridge.callgrind_pool import profile_label  # the worker's modules: only with profiles

        label = profile_label(key.benchmark, dict(points[0].measurement.params))
        out: list[list[Any]] = []
        for p in points:
            at = pos.get(p.commit.sha)
            if at is None or p.measurement.status != "ok":
                continue
            found = next(filter(None, (self.found(f, label) for f in (f"bench-run-{p.run_id}", p.commit.sha))), None)
            if found is not None:
                out.append([at, self.copy(found)])
        self._linked.setdefault(key.benchmark, set()).update(rel for _, rel in out)
        return out

    def keep(self, bench: str, paths: Any) -> bool:
        """Keep the last build's copies that ``bench``'s pages link (``paths``, from the build's state: pages kept
        or carried on); False, keeping none, where one is gone."""
        paths = [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
        fresh = [p for p in paths if p not in self.writer.new]
        if not all(map(self.writer.keepable, fresh)):
            return False
        for p in fresh:
            self.writer.keep(p)
        self._linked.setdefault(bench, set()).update(paths)
        return True

    def linked_by(self, bench: str) -> list[str]:
        """The copies ``bench``'s pages link: what the next build keeps with them."""
        return sorted(self._linked.get(bench, ()))

    def copy(self, path: Path) -> str:
        """The site path of the kept profile ``path`` (a file of a folder of ``kept``), copied there once."""
        rel = f"profiles/{path.parent.name}/{path.name}"
        if rel not in self.writer.new:
            stat = path.stat()
            self.writer.put_lazy(rel, f"{stat.st_size}:{stat.st_mtime_ns}", path.read_bytes)
        return rel

    def found(self, folder: str, label: str) -> Path | None:
        """The profile kept for ``label`` in ``folder``, or None."""
        from ..asvbridge.callgrind_pool import kept_profile

        assert self.kept is not None
        found = kept_profile(self.kept / folder, label)
        return None if found is None else found[0]


def link_profiles(profiles: SiteProfiles, rows: list[dict[str, Any]]) -> None:
    """Add both sides' profile paths to each regressed count of ``mmtrack run`` whose two commits' are kept."""
    if profiles.kept is None:
        return
    from ..asvbridge.callgrind_pool import profile_label

    for row in rows:
        if row.get("source") != "run" or row.get("verdict") != "regressed" or row.get("metric") != COUNTED:
            continue
        label = profile_label(str(row["bench"]), dict(row.get("params") or {}))
        sides = [profiles.found(str(row.get(side)), label) for side in ("before_sha", "after_sha")]
        if sides[0] is not None and sides[1] is not None:
            row["profiles"] = [profiles.copy(path) for path in sides]


__all__ = ["SiteProfiles", "link_profiles"]
