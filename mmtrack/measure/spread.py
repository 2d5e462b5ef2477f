"""ProcessSpread: how far apart the worker processes of one case were, against the noise within each."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from .stats import Distribution, between_process_dominated


class _ProcessRun(Protocol):
    """What the spread reads of one process's statistics (a BenchmarkStats)."""

    latency: Distribution

    @property
    def samples(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ProcessSpread:
    """How the per-process medians of time per op spread, against the spread within processes."""

    processes: int
    samples: tuple[int, ...]  # samples taken in each process, in run order
    medians: tuple[float, ...]  # each process's median time per op (s)
    between_cv: float  # standard deviation over mean of ``medians``
    within_cv: float  # median over processes of each one's own sample CV
    dominated: bool  # between-process spread exceeds what within-process noise gives a median

    @classmethod
    def of(cls, runs: Sequence[_ProcessRun]) -> ProcessSpread:
        medians = [r.latency.median for r in runs]
        within = statistics.median(r.latency.cv for r in runs)
        per_process = statistics.median(r.samples for r in runs)
        mean = math.fsum(medians) / len(medians)
        between = statistics.stdev(medians) / mean if len(medians) > 1 and mean else math.nan
        return cls(
            processes=len(runs),
            samples=tuple(r.samples for r in runs),
            medians=tuple(medians),
            between_cv=between,
            within_cv=within,
            dominated=between_process_dominated(medians, within, per_process),
        )

    def describe(self) -> str:
        """One line for the terminal report."""
        low, high = min(self.samples), max(self.samples)
        each = f"{low}" if low == high else f"{low}–{high}"
        line = (f"{self.processes} processes × {each} samples · process medians spread {self.between_cv:.2%}, "
                f"within a process {self.within_cv:.2%}")
        if self.dominated:
            line += (" · CV dominated by between-process variation: more samples in one process won't shrink "
                     "it, more processes will")
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "processes": self.processes,
            "samples": list(self.samples),
            "medians": [m if math.isfinite(m) else None for m in self.medians],
            "between_cv": self.between_cv if math.isfinite(self.between_cv) else None,
            "within_cv": self.within_cv if math.isfinite(self.within_cv) else None,
            "dominated": self.dominated,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProcessSpread:
        def num(x: Any) -> float:
            return math.nan if x is None else float(x)

        return cls(
            processes=int(d["processes"]),
            samples=tuple(int(x) for x in d["samples"]),
            medians=tuple(num(x) for x in d["medians"]),
            between_cv=num(d["between_cv"]),
            within_cv=num(d["within_cv"]),
            dominated=bool(d["dominated"]),
        )
