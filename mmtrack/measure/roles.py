"""What one concurrent benchmark reports per worker role: role statistics and the scenario it ran."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .metrics import Direction, MetricSummary
from .stats import CounterSummary, Distribution, counter_direction

ROLE_SECTION_PREFIX = "role:"


@dataclass(frozen=True, slots=True)
class EventCounterSummary:
    """One named worker event counter of one role over the measured samples."""

    name: str
    total: int
    per_op: float  # total / the role's total operations
    per_second: float  # total / total measured time
    per_sample: tuple[int, ...]  # the role's count in each sample


@dataclass(frozen=True, slots=True)
class RoleStats:
    """One worker role over the measured samples."""

    name: str
    threads: int
    operations: tuple[int, ...]  # the role's operations per sample (all its threads)
    thread_operations: tuple[tuple[int, ...], ...]  # per sample, per thread of the role
    durations: tuple[float, ...]  # the sample wall times (s), same for every role
    latency: Distribution  # seconds per op of one thread, over threads × samples
    rate: Distribution  # ops/s of one thread, over threads × samples
    events: list[EventCounterSummary] = field(default_factory=list)
    counters: list[CounterSummary] = field(default_factory=list)  # perf counters of this role's threads

    @property
    def section(self) -> str:
        return f"{ROLE_SECTION_PREFIX}{self.name}"

    @property
    def total_operations(self) -> int:
        return sum(self.operations)

    def tracked_metrics(self) -> list[MetricSummary]:
        """The role's series: time per op and throughput per thread, role throughput, events."""
        section = self.section
        per_thread = [(ops, d) for row, d in zip(self.thread_operations, self.durations) for ops in row]
        out = [
            MetricSummary.from_values(
                # A thread with no operation (a starved writer) has no time per op: left out, not infinite.
                section, "time_per_op", "s", [d / o for o, d in per_thread if o > 0] or [math.nan],
                direction=Direction.LOWER,
            ),
            MetricSummary.from_values(
                section, "throughput_per_thread", "ops/s", [o / d if d > 0 else math.nan for o, d in per_thread],
                direction=Direction.HIGHER,
            ),
            MetricSummary.from_values(
                section, "throughput", "ops/s",
                [o / d if d > 0 else math.nan for o, d in zip(self.operations, self.durations)],
                direction=Direction.HIGHER,
            ),
        ]
        for c in self.counters:
            out.append(MetricSummary.from_values(section, c.name, f"{c.name}/op", c.per_sample_per_op or [math.nan],
                                                 direction=counter_direction(c.name)))
        for e in self.events:
            per_op = [c / o if o else math.nan for c, o in zip(e.per_sample, self.operations)]
            per_s = [c / d if d > 0 else math.nan for c, d in zip(e.per_sample, self.durations)]
            # Per op is the judged figure; per second moves with throughput, so it is shown, not judged.
            out.append(MetricSummary.from_values(section, e.name, f"{e.name}/op", per_op, direction=Direction.LOWER))
            out.append(MetricSummary.from_values(section, e.name, f"{e.name}/s", per_s, direction=Direction.NEUTRAL))
        return out


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    """How a concurrent benchmark ran: its roles, options and the interpreter's threading."""

    roles: tuple[tuple[str, int], ...]  # (name, threads)
    sample_duration: float
    metadata: dict[str, str]
    gil_enabled: bool
    python_build: str
    pinning: str
    identity: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "roles": [list(r) for r in self.roles],
            "sample_duration": self.sample_duration,
            "metadata": dict(self.metadata),
            "gil_enabled": self.gil_enabled,
            "python_build": self.python_build,
            "pinning": self.pinning,
            "identity": self.identity,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ScenarioInfo":
        return cls(
            roles=tuple((str(n), int(t)) for n, t in d["roles"]),
            sample_duration=float(d["sample_duration"]),
            metadata={str(k): str(v) for k, v in dict(d.get("metadata") or {}).items()},
            gil_enabled=bool(d["gil_enabled"]),
            python_build=str(d["python_build"]),
            pinning=str(d["pinning"]),
            identity=str(d["identity"]),
        )
