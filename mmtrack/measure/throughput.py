"""What one measured operation represents, so rates print in the right unit."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Throughput:
    """``amount`` units per operation; the rate unit is ``<unit>/s``."""

    amount: float = 1.0
    unit: str = "ops"

    def __post_init__(self) -> None:
        if not isinstance(self.unit, str) or not self.unit.strip():
            raise ValueError("Throughput unit must be a non-empty string")
        if not (isinstance(self.amount, (int, float)) and math.isfinite(self.amount) and self.amount > 0):
            raise ValueError(f"Throughput amount per operation must be > 0, got {self.amount!r}")

    @classmethod
    def ops(cls) -> "Throughput":
        return cls(1.0, "ops")

    @classmethod
    def bytes(cls, n: float) -> "Throughput":
        return cls(float(n), "bytes")

    @classmethod
    def per_operation(cls, n: float, unit: str) -> "Throughput":
        return cls(float(n), unit)

    @property
    def rate_unit(self) -> str:
        return f"{self.unit}/s"

    def rate(self, operations: float, seconds: float) -> float:
        return operations * self.amount / seconds if seconds > 0 else math.nan

    def format_rate(self, rate: float) -> str:
        from .units import format_si

        return format_si(rate, self.rate_unit)
