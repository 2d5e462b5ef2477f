"""BenchmarkStats: everything one engine benchmark run produced, in one value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import contention
from .backend import MeasurementDomain
from .conditions import UNDER_CALLGRIND, SamplingConditions
from .metrics import Direction, MetricSummary
from .roles import RoleStats, ScenarioInfo
from .spread import ProcessSpread
from .stats import CounterSummary, Distribution, counter_direction
from .throughput import Throughput


@dataclass(slots=True)
class BenchmarkStats:
    """Everything one engine benchmark run produced."""

    name: str
    params: dict[str, str]
    throughput: Throughput
    domain: MeasurementDomain
    measurement_label: str
    emits_cpu_diagnostics: bool
    chunk_size: int
    calibrated: bool
    durations: tuple[float, ...]  # per-sample duration (s) as the backend defined it
    host_durations: tuple[float, ...]  # per-sample host wall-clock (s)
    operations: tuple[int, ...]
    latency: Distribution  # seconds per operation
    rate: Distribution  # throughput units per second
    counters: list[CounterSummary] = field(default_factory=list)
    metrics: list[MetricSummary] = field(default_factory=list)  # bench + backend, per sample
    diagnostics: list[MetricSummary] = field(default_factory=list)  # diagnostic pass only
    diagnostic_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # backend bylines
    # Concurrent benchmarks only (measure/concurrent.py): the top-level figures are then "workers combined".
    roles: list[RoleStats] = field(default_factory=list)
    scenario: ScenarioInfo | None = None
    conditions: SamplingConditions | None = None  # at the start of sampling; None when not recorded
    # Sampled in several worker processes (measure/processes.py): how far apart they were. None: one process.
    process_spread: ProcessSpread | None = None

    @property
    def samples(self) -> int:
        return len(self.durations)

    @property
    def full_name(self) -> str:
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(self.params.values())})"

    def counter(self, name: str) -> CounterSummary | None:
        return next((c for c in self.counters if c.name == name), None)

    def tracked_metrics(self) -> list[MetricSummary]:
        """Every metric of this run as one flat list, for the store and compare.

        Timing first (time per op, throughput, wall / CPU time where it applies), then counters per op,
        then the custom and diagnostic metrics.
        """
        per_op = [d / o if o else math.nan for d, o in zip(self.durations, self.operations)]
        rates = [self.throughput.rate(o, d) for d, o in zip(self.durations, self.operations)]
        timed = self.conditions is None or self.conditions.process_model != UNDER_CALLGRIND
        out = [
            MetricSummary.from_values("timing", "time_per_op", "s", per_op,
                                      direction=Direction.LOWER if timed else Direction.NEUTRAL),
            MetricSummary.from_values(
                "timing", "throughput", self.throughput.rate_unit, rates,
                direction=Direction.HIGHER if timed else Direction.NEUTRAL
            ),
        ]
        if timed and (waiting := contention.wall_per_cpu(self)) is not None:
            out.append(waiting)  # beside the wall clock: whether it waited for a CPU
        for c in self.counters:
            out.append(
                MetricSummary.from_values(
                    "counters", c.name, f"{c.name}/op", c.per_sample_per_op, direction=counter_direction(c.name)
                )
            )
        for role in self.roles:
            out.extend(role.tracked_metrics())
        return out + list(self.metrics) + list(self.diagnostics)
