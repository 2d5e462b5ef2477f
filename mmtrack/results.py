"""Plain records that cross layers: engine → results → store → analysis → pages.

The store returns these, analysis consumes them, the pages render them. None of
them knows about SQL, asv or Plotly.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Mapping

from .measure.metrics import MetricSummary
from .measure.stats import sample_stats
from .vocabulary import Direction, MetricFormat, MetricKey  # noqa: F401 - MetricKey: re-exported

Status = Literal["ok", "failed", "skipped"]


def canonical_params(params: Mapping[str, str] | None) -> str:
    """One stable string for a parameter combination (part of a series' identity)."""
    return json.dumps(dict(params or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# The primary metric of every benchmark: asv's value (seconds per op for engine benchmarks).
PRIMARY = MetricKey("timing", "time_per_op", "s")


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """A series' identity: (machine, environment, benchmark, params, metric)."""

    machine: str
    environment: str
    benchmark: str
    params: str  # canonical_params(...)
    metric: MetricKey


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str  # full sha
    date: datetime | None = None
    message: str | None = None
    dirty: bool = False
    branches: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        return self.sha[:8] + ("+dirty" if self.dirty else "")


@dataclass(frozen=True, slots=True)
class Measurement:
    """One metric of one benchmark case in one run."""

    benchmark: str
    params: Mapping[str, str]
    metric: MetricKey
    direction: Direction
    status: Status = "ok"
    median: float | None = None
    mean: float | None = None
    p95: float | None = None
    min: float | None = None
    max: float | None = None
    q1: float | None = None
    q3: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    count: int = 0
    samples: tuple[float, ...] = ()
    version: str | None = None  # benchmark code version; a change breaks comparability
    format: MetricFormat = MetricFormat.NUMBER
    display_name: str | None = None
    method: str | None = None  # the counting method's version (measure/conditions.py); a change breaks it too

    @property
    def params_key(self) -> str:
        return canonical_params(self.params)

    @property
    def case(self) -> tuple[str, str, MetricKey]:
        return (self.benchmark, self.params_key, self.metric)

    @classmethod
    def from_summary(
        cls,
        benchmark: str,
        params: Mapping[str, str],
        summary: MetricSummary,
        *,
        version: str | None = None,
        method: str | None = None,
    ) -> "Measurement":
        values = [v for v in summary.values if math.isfinite(v)]
        st = sample_stats(values) if values else {}
        q1, q3 = st.get("q1"), st.get("q3")
        return cls(
            benchmark=benchmark,
            params=dict(params),
            metric=MetricKey(*summary.key),
            direction=summary.direction,
            median=summary.median,
            mean=summary.mean,
            p95=summary.p95,
            min=summary.min,
            max=summary.max,
            q1=q1,
            q3=q3,
            count=summary.count,
            samples=tuple(summary.values),
            version=version,
            format=summary.format,
            display_name=summary.display_name,
            method=method,
        )

    def scaled(self, factor: float) -> "Measurement":
        """The same measurement with every value multiplied by ``factor`` (another run's frame)."""
        if factor == 1.0:
            return self

        def times(v: float | None) -> float | None:
            return None if v is None else v * factor

        return dataclasses.replace(
            self, median=times(self.median), mean=times(self.mean), p95=times(self.p95), min=times(self.min),
            max=times(self.max), q1=times(self.q1), q3=times(self.q3), ci_low=times(self.ci_low),
            ci_high=times(self.ci_high), samples=tuple(v * factor for v in self.samples))


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """One commit's value in a series, in commit order."""

    commit: CommitInfo
    run_id: int
    measurement: Measurement


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """A detected change in one series, as stored for the pages."""

    series: SeriesKey
    direction: Direction
    kind: Literal["regression", "improvement", "change"]
    before_sha: str  # last commit of the old level
    after_sha: str  # first commit of the new level
    before_value: float
    after_value: float
    ratio: float  # after / before
    p_value: float | None = None
    persists: bool = True  # the new level holds to the latest commit
    method: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)

    @property
    def size(self) -> float:
        """How far it moved, to rank changes by: |log ratio|; infinite when no ratio says how far (to or from 0, or
        a sign flip of a ``track_`` value: -1 -> +1 has the ratio -1)."""
        r = self.ratio
        return abs(math.log(r)) if 0 < r < math.inf else 0.0 if math.isnan(r) else math.inf


@dataclass(frozen=True, slots=True)
class RunVerdict:
    """What ``mmtrack run``'s comparison with the previous commit said about one series at a commit
    (a row of ``mmtrack compare``, as the run printed it): stored, so the pages show it even where the
    history is too short for ``detect``."""

    series: SeriesKey
    before_sha: str  # the previous commit measured on this machine and environment
    after_sha: str  # the commit the run measured
    verdict: str  # mmtrack compare's verdict: regressed, improved, ambiguous, failed, fixed, not comparable
    state: str | None  # suspected, confirmed, refuted (history verdicts); None: judged on the samples alone
    ratio: float | None
    before_value: float | None
    after_value: float | None
    p_value: float | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class BenchContext:
    """Where and on what a bench run happened."""

    suite: str  # suite identity: the benchmark folder, relative to the project root
    host: dict[str, str]
    commit: CommitInfo | None
    started_at: datetime
    code_versions: dict[str, str]

    @property
    def machine(self) -> str:
        return self.host["machine"]
