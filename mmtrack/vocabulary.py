"""The words results are told in: which way is better for a metric, how it prints, and what names it.

They sit below the engine and the records alike (they import nothing of mmtrack), so the store, the analysis and
the pages name a direction or a metric without loading the measurement engine; ``measure.metrics`` re-exports them
as part of the engine's public API.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class MetricFormat(str, enum.Enum):
    NUMBER = "number"
    INTEGER = "integer"


class Direction(str, enum.Enum):
    """Which way is better for a metric; NEUTRAL metrics are never flagged."""

    LOWER = "lower"
    HIGHER = "higher"
    NEUTRAL = "neutral"


_RATE_UNITS = ("tflop/s", "gflop/s", "gib/s", "mib/s", "gb/s", "mb/s", "flop/s")
_TIME_UNITS = {"s", "ms", "us", "µs", "ns", "seconds", "sec"}


def default_direction(unit: str, fmt: MetricFormat = MetricFormat.NUMBER) -> Direction:
    """The default direction implied by a unit.

    Rates (``/s``, TFLOP/s, GiB/s) are higher-better; durations and counts are
    lower-better; INTEGER-format metrics that are not counts (ids) are neutral.
    """
    u = unit.strip().lower()
    if u.endswith("/s") or u in _RATE_UNITS or u.endswith("per second"):
        return Direction.HIGHER
    if u in _TIME_UNITS or u.endswith("/op") or u.startswith("s/") or u.startswith("ns/"):
        return Direction.LOWER
    if fmt is MetricFormat.INTEGER and u in {"id", "index", "algo", "enum", ""}:
        return Direction.NEUTRAL
    if u in {"id", "index", "enum", "ratio"}:
        return Direction.NEUTRAL
    if u in {"bytes", "b", "count", "pages", "faults", "misses", "events", "%"}:
        return Direction.LOWER
    return Direction.LOWER if fmt is MetricFormat.NUMBER else Direction.NEUTRAL


@dataclass(frozen=True, slots=True, order=True)
class MetricKey:
    """Metric identity: (section, name, unit). Display names are cosmetic."""

    section: str
    name: str
    unit: str

    def __str__(self) -> str:
        base = f"{self.name} [{self.unit}]"
        return f"{self.section}/{base}" if self.section else base
