"""The plain site model the builder renders: commits, series and change points.

It is built from the records in :mod:`mmtrack.results` only, so the builder
never needs to know where they came from (the store, an asv folder, a test).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..results import ChangePoint, CommitInfo, RunVerdict, SeriesKey, SeriesPoint
from ..vocabulary import Direction

# A series' commits (shas), medians (None: a failed run), code versions and direction: what a verdict's
# history reads, and what its run's frames and shift are read from (analysis.compare.SuiteColumns)
HistoryColumns = tuple[Sequence[str], Sequence[float | None], Sequence[str | None], Direction]


@dataclass(frozen=True, slots=True)
class SiteConfig:
    """How the site looks and links.

    ``commit_url`` is a prefix the full sha is appended to (asv's
    ``show_commit_url``); only ``http(s)://`` prefixes are linked.
    ``chunk_size`` is how many consecutive commits share one data file: after
    one new commit only the last file of each benchmark changes.
    """

    title: str = "mmtrack"
    commit_url: str | None = None
    chunk_size: int = 250
    profiles: Path | None = None  # kept callgrind profiles, one folder per commit, linked from regressed counts

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")

    @property
    def safe_commit_url(self) -> str | None:
        url = (self.commit_url or "").strip()
        return url if url.lower().startswith(("http://", "https://")) else None


@dataclass(slots=True)
class SiteModel:
    """Everything a site shows.

    ``commits`` is the commit order of the x axes (oldest first). Commits that
    appear in a series but not in ``commits`` are appended, ordered by date,
    unless ``commits_complete`` says there are none (then no series is read for it).

    ``bench_state``, when given, holds per benchmark a token that changes whenever its
    series or change points do: the builder keeps the last build's files of a benchmark
    whose token is unchanged and never reads its series (``series`` may load lazily).
    """

    series: Mapping[SeriesKey, Sequence[SeriesPoint]]
    commits: Sequence[CommitInfo] = ()
    change_points: Sequence[ChangePoint] = ()
    config: SiteConfig = field(default_factory=SiteConfig)
    bench_state: Mapping[str, str] | None = None
    commits_complete: bool = False
    # (series, after sha) -> the latest A/B verdict on it: state, ratio, p, rounds (mmtrack run --confirm)
    ab_verdicts: Mapping[tuple[SeriesKey, str], Mapping[str, Any]] = field(default_factory=dict)
    # What `mmtrack run` reported per commit (its comparison with the previous commit)
    run_verdicts: Sequence[RunVerdict] = ()
    # A series' newest n points with their samples, for the compare page's verdicts (the significance
    # tests need samples); None: ``series`` holds them already
    newest_points: Callable[[SeriesKey, int], Sequence[SeriesPoint]] | None = None
    # A series' commits (shas), medians (None: failed), code versions and direction, as ``series`` would give
    # them: the history of the compare page's verdicts, without a record per point; None: read from ``series``
    history_columns: Callable[[SeriesKey], HistoryColumns] | None = None
    # Read the history columns of these series in bulk now (every series' are read: each run's frames and
    # shift need the whole suite); None: nothing to prefetch
    prefetch_columns: Callable[[Sequence[SeriesKey]], None] | None = None
    # What the model was read from (publish.source.source_key), recorded in the manifest: a republish
    # whose key matches stops before reading anything.
    source: str | None = None
    # Per series, (change counter, append counter, store ids) (reads.SeriesRevision): a benchmark whose
    # series moved by appends alone since the last build gets only its newest points read and its last
    # chunk rewritten. None: every rebuilt benchmark reads its series whole.
    revisions: Mapping[SeriesKey, tuple[int, int, list[int]]] | None = None
    # The alerts detect keeps (analysis.alerts.Alert), for the alert queue page (publish/alerts_page.py)
    alerts: Sequence[Any] = ()
    # Every series' drift since ``publish --baseline`` (analysis.drift.DriftReport), for the regressions page; None
    drift: Any = None

    def ordered_commits(self) -> list[CommitInfo]:
        seen: dict[str, CommitInfo] = {}
        for c in self.commits:
            seen.setdefault(c.sha, c)
        if self.commits_complete:
            return list(seen.values())
        extra: dict[str, CommitInfo] = {}
        for points in self.series.values():
            for p in points:
                if p.commit.sha not in seen and p.commit.sha not in extra:
                    extra[p.commit.sha] = p.commit
        if extra:
            far = datetime.max.replace(tzinfo=timezone.utc)
            tail = sorted(extra.values(), key=lambda c: _aware(c.date) if c.date else far)
            return [*seen.values(), *tail]
        return list(seen.values())

    def benchmarks(self) -> list[str]:
        return sorted({k.benchmark for k in self.series})


def _aware(d: datetime) -> datetime:
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def model_from_points(
    points: Iterable[tuple[SeriesKey, SeriesPoint]],
    *,
    commits: Sequence[CommitInfo] = (),
    change_points: Sequence[ChangePoint] = (),
    config: SiteConfig | None = None,
) -> SiteModel:
    """Group ``(key, point)`` pairs into a model (points keep their given order)."""
    series: dict[SeriesKey, list[SeriesPoint]] = {}
    for key, point in points:
        series.setdefault(key, []).append(point)
    return SiteModel(series=series, commits=commits, change_points=change_points, config=config or SiteConfig())
