"""One benchmark case of one A/B side, its rounds pooled: asv's samples of plain benchmarks, every per-sample value
of every metric of engine benchmarks (:func:`mmtrack.asvbridge.spool.merge_metrics`), an asv ``time_`` case's CPU
time, and each round's best sample per metric (:func:`round_best`), what :mod:`mmtrack.ab.interleave` judges."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..asvbridge import asvrun, spool
from ..measure.metrics import MetricSummary
from ..results import PRIMARY, Measurement, MetricKey
from ..vocabulary import Direction
from .rule import fast_mode

CaseKey = tuple[str, str]  # (benchmark, canonical params)


@dataclass(slots=True)
class PooledCase:
    """One benchmark case of one side, its rounds pooled."""

    benchmark: str
    params: dict[str, str]
    status: str = "ok"
    message: str = ""
    version: str | None = None
    unit: str = ""
    samples: list[float] = field(default_factory=list)  # asv's samples (or values) of every round
    metrics: list[MetricSummary] = field(default_factory=list)  # engine benchmarks: every metric, pooled
    cpu_metrics: list[MetricSummary] = field(default_factory=list)  # asv time_ cases: CPU time, wall/CPU, pooled
    record: spool.SpoolRecord | None = None  # the last round's engine record (statistics of a round)
    rounds: int = 0
    # Per metric, one value per round: the round's best sample (see :func:`round_best`).
    round_bests: dict[MetricKey, list[float]] = field(default_factory=dict)
    directions: dict[MetricKey, Direction] = field(default_factory=dict)

    def add(self, case: asvrun.CaseResult) -> None:
        self.rounds += 1
        self.version = self.version or case.version
        self.unit = self.unit or case.unit
        if case.status != "ok":
            # A case that fails or skips in any round is that on this side: its numbers are not comparable.
            if self.status != "failed":
                self.status, self.message = case.status, case.message
            return
        values = case.samples or ((case.value,) if case.value is not None else ())
        self.samples.extend(values)
        if case.record is not None:
            self.metrics = spool.merge_metrics(self.metrics, case.record.metrics)
            self.record = case.record
            for m in case.record.metrics:
                self._add_round(MetricKey(*m.key), m.direction, m.values or (m.median,))
        elif values:
            self._add_round(*_asv_metric(self.benchmark, self.unit), values)
            self._add_cpu_time(case.cpu_metrics)

    def _add_cpu_time(self, metrics: Sequence[MetricSummary]) -> None:
        """An asv ``time_`` round's CPU time beside its wall clock (:mod:`mmtrack.asvbridge.cpu_times`)."""
        if not metrics:
            return
        self.cpu_metrics = spool.merge_metrics(self.cpu_metrics, metrics) if self.cpu_metrics else list(metrics)
        for m in metrics:
            self._add_round(MetricKey(*m.key), m.direction, m.values or (m.median,))

    def _add_round(self, key: MetricKey, direction: Direction, values: Sequence[float]) -> None:
        finite = [v for v in values if math.isfinite(v)]
        if finite:
            self.round_bests.setdefault(key, []).append(round_best(finite, direction))
            self.directions[key] = direction

    def measurements(self) -> list[Measurement]:
        """This case's metrics as compare's records (the primary one carries a failure)."""
        if self.status != "ok":
            status: Any = self.status
            return [Measurement(self.benchmark, self.params, PRIMARY, Direction.LOWER, status=status,
                                version=self.version)]
        return [Measurement.from_summary(self.benchmark, self.params, s, version=self.version)
                for s in self.summaries()]

    def round_measurements(self) -> list[Measurement]:
        """This case's metrics as compare's records of its fast-mode round bests (what A/B judges)."""
        if self.status != "ok" or not self.round_bests:
            return self.measurements()
        return [Measurement.from_summary(self.benchmark, self.params, MetricSummary.from_values(
                    key.section, key.name, key.unit, fast_mode(bests, self.directions[key]) or bests,
                    direction=self.directions[key]), version=self.version)
                for key, bests in sorted(self.round_bests.items())]

    def summaries(self) -> list[MetricSummary]:
        """Every metric, pooled: the engine's, else asv's value under the metric its import uses."""
        if self.metrics:
            return self.metrics
        if not self.samples:
            return []
        key, direction = _asv_metric(self.benchmark, self.unit)
        return [MetricSummary.from_values(key.section, key.name, key.unit, self.samples, direction=direction),
                *self.cpu_metrics]


def round_best(values: Sequence[float], direction: Direction) -> float:
    """A round's best sample: the fastest time (the highest rate) of that round, the median of a neutral metric.

    A shared machine's interference only ever adds time, and comes and goes over seconds: a
    round's median moves with it (an A/A pair read 0.69 on a loaded 2-core machine), while the
    best sample of a round stays near the code's own cost. BenchmarkTools.jl judges on the
    minimum for the same reason (Chen and Revels, "Robust benchmarking in noisy environments", 2016).
    """
    if direction is Direction.LOWER:
        return min(values)
    if direction is Direction.HIGHER:
        return max(values)
    return statistics.median(values)


def _asv_metric(benchmark: str, unit: str) -> tuple[MetricKey, Direction]:
    from ..asvbridge.results_file import asv_metric

    return asv_metric("time" if benchmark.rsplit(".", 1)[-1].startswith("time") else "track", unit)
