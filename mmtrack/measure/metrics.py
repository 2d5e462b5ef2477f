"""Metric values a benchmark or backend reports per sample, and their aggregation.

Identity of a metric is ``(section, name, unit)``: two metrics that share a name
but not a unit are different series. ``display_name`` is cosmetic and ``format``
is a rendering hint (INTEGER means an id or a count and prints no decimals).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..vocabulary import Direction, MetricFormat, default_direction  # the words, re-exported for the engine's API
from .quantiles import percentile

GIB = 1024.0**3


# Squares of samples (variance, stddev) overflow a float beyond about 1.3e154; this bound
# leaves room for sums of millions of squared samples.
MAX_METRIC_MAGNITUDE = 1e150


class InvalidMetricError(ValueError):
    """A metric that cannot be aggregated (empty name/unit, NaN/inf value...)."""


@dataclass(frozen=True, slots=True)
class MetricValue:
    """One value of one metric, reported for one sample."""

    name: str
    value: float
    unit: str
    section: str | None = None
    display_name: str | None = None
    format: MetricFormat = MetricFormat.NUMBER
    direction: Direction | None = None

    # -- helpers named as in micromeasure -------------------------------------------------
    @classmethod
    def duration_ms(cls, name: str, seconds: float) -> "MetricValue":
        """A duration given in seconds, reported in milliseconds."""
        return cls(name, float(seconds) * 1e3, "ms")

    @classmethod
    def bandwidth_gib_s(cls, name: str, bytes: float, seconds: float) -> "MetricValue":  # noqa: A002
        return cls(name, float(bytes) / GIB / max(float(seconds), 1e-300), "GiB/s")

    @classmethod
    def throughput_tflops(cls, name: str, flops: float, seconds: float) -> "MetricValue":
        return cls(name, float(flops) / 1e12 / max(float(seconds), 1e-300), "TFLOP/s")

    @classmethod
    def integer(cls, name: str, value: int, unit: str) -> "MetricValue":
        return cls(name, float(int(value)), unit, format=MetricFormat.INTEGER)

    def with_display_name(self, display_name: str) -> "MetricValue":
        return dataclasses.replace(self, display_name=display_name)

    def with_section(self, section: str) -> "MetricValue":
        return dataclasses.replace(self, section=section)

    def with_format(self, fmt: MetricFormat) -> "MetricValue":
        return dataclasses.replace(self, format=fmt)

    def with_direction(self, direction: Direction | str) -> "MetricValue":
        return dataclasses.replace(self, direction=Direction(direction))

    # -- identity ----------------------------------------------------------------------------
    @property
    def key(self) -> tuple[str, str, str]:
        return (self.section or "", self.name, self.unit)

    @property
    def label(self) -> str:
        return self.display_name or self.name

    def effective_direction(self) -> Direction:
        return self.direction or default_direction(self.unit, self.format)

    def validate(self, benchmark: str) -> None:
        """Raise InvalidMetricError naming the benchmark and the metric."""
        where = f"benchmark {benchmark!r}, metric {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidMetricError(f"{where}: metric name is empty; give every metric a name")
        if not isinstance(self.unit, str) or not self.unit.strip():
            raise InvalidMetricError(f"{where}: unit is empty; give a unit such as 'ms' or 'GiB/s'")
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real):
            raise InvalidMetricError(f"{where}: value {self.value!r} is not a number")
        if not math.isfinite(float(self.value)):
            raise InvalidMetricError(f"{where}: value is {self.value}; report finite numbers only")
        if abs(float(self.value)) > MAX_METRIC_MAGNITUDE:
            raise InvalidMetricError(
                f"{where}: value {float(self.value):g} would overflow the statistics (sums and squares "
                f"of samples); report values below {MAX_METRIC_MAGNITUDE:g} in magnitude, e.g. in a larger unit"
            )


@dataclass(slots=True)
class BenchSampleResult:
    """What a ``bench_sample`` function returns for one sample."""

    operations: int
    metrics: list[MetricValue] = field(default_factory=list)

    def with_metric(self, name: str, value: float, unit: str) -> "BenchSampleResult":
        self.metrics.append(MetricValue(name, value, unit))
        return self

    def push_metric(self, metric: MetricValue) -> "BenchSampleResult":
        self.metrics.append(metric)
        return self


@dataclass(slots=True)
class DiagnosticResult:
    """Metrics from one diagnostic replay sample; they never touch the timing."""

    section: str
    metrics: list[MetricValue] = field(default_factory=list)

    def push_metric(self, metric: MetricValue) -> "DiagnosticResult":
        self.metrics.append(metric if metric.section else metric.with_section(self.section))
        return self


class DiagnosticError(Exception):
    """Raised by a diagnostic pass that cannot run; reported, never fatal."""


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """A metric aggregated over the samples of one benchmark run."""

    section: str
    name: str
    unit: str
    display_name: str
    format: MetricFormat
    direction: Direction
    mean: float
    median: float
    p95: float
    min: float
    max: float
    count: int
    values: tuple[float, ...]  # per-sample values in execution order

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.section, self.name, self.unit)

    @classmethod
    def from_values(
        cls,
        section: str,
        name: str,
        unit: str,
        values: Sequence[float],
        *,
        display_name: str | None = None,
        fmt: MetricFormat = MetricFormat.NUMBER,
        direction: Direction | None = None,
    ) -> "MetricSummary":
        # Plain Python, as numpy computes it (quantiles.py): the worker never imports numpy.
        a = tuple(float(v) for v in values)
        if not a:
            raise ValueError("a metric summary needs at least one value")
        if any(math.isnan(v) for v in a):  # numpy: every statistic of an array with a NaN is NaN
            mean = median = p95 = low = high = math.nan
        else:
            s = sorted(a)
            mean, median, p95, low, high = math.fsum(a) / len(a), percentile(s, 50), percentile(s, 95), s[0], s[-1]
        return cls(
            section=section,
            name=name,
            unit=unit,
            display_name=display_name or name,
            format=fmt,
            direction=direction or default_direction(unit, fmt),
            mean=mean,
            median=median,
            p95=p95,
            min=low,
            max=high,
            count=len(a),
            values=a,
        )


def aggregate_metrics(samples: Iterable[Iterable[MetricValue]]) -> list[MetricSummary]:
    """Group per-sample metrics by (section, name, unit), first-seen order kept."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    first: dict[tuple[str, str, str], MetricValue] = {}
    for sample in samples:
        for m in sample:
            groups.setdefault(m.key, []).append(float(m.value))
            first.setdefault(m.key, m)
    return [
        MetricSummary.from_values(
            *key,
            values,
            display_name=first[key].label,
            fmt=first[key].format,
            direction=first[key].effective_direction(),
        )
        for key, values in groups.items()
    ]


def pool_metrics(groups: Iterable[Sequence[MetricSummary]]) -> list[MetricSummary]:
    """The per-sample values of several runs of one case pooled, metric by metric (asv's rounds, a
    case's worker processes), first-seen order kept; a metric of one run alone is kept as it is."""
    parts: dict[tuple[str, str, str], list[MetricSummary]] = {}
    for metrics in groups:
        for m in metrics:
            parts.setdefault(m.key, []).append(m)
    return [
        ms[0] if len(ms) == 1 else MetricSummary.from_values(
            *key, [v for m in ms for v in m.values], display_name=ms[0].display_name, fmt=ms[0].format,
            direction=ms[0].direction,
        )
        for key, ms in parts.items()
    ]
