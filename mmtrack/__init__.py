"""mmtrack: micromeasure-style measurement inside asv benchmarks, with a SQL history.

The public names follow micromeasure's where one exists. Importing mmtrack has
no side effects: no database, no CuPy, no perf_event_open until used.
"""

from __future__ import annotations

from .asvbridge.declare import bench, bench_sample
from .measure.backend import MeasurementBackend, MeasurementDomain, Results, WallClockBackend
from .measure.metrics import (
    BenchSampleResult,
    DiagnosticError,
    DiagnosticResult,
    Direction,
    InvalidMetricError,
    MetricFormat,
    MetricSummary,
    MetricValue,
)
from .measure.runner import BenchmarkDefinitionError, BenchSpec, RunOptions, run_benchmark
from .measure.stats import BenchmarkStats
from .measure.throughput import Throughput

__version__ = "0.1.0"

__all__ = [
    "bench",
    "bench_sample",
    "BenchmarkDefinitionError",
    "BenchmarkStats",
    "BenchSampleResult",
    "BenchSpec",
    "CudaEventBackend",
    "DiagnosticError",
    "DiagnosticResult",
    "Direction",
    "InvalidMetricError",
    "MeasurementBackend",
    "MeasurementDomain",
    "MetricFormat",
    "MetricSummary",
    "MetricValue",
    "Results",
    "RunOptions",
    "Throughput",
    "WallClockBackend",
    "run_benchmark",
]


def __getattr__(name: str) -> type:
    # CudaEventBackend is exported lazily: its module imports no CuPy either, but this keeps
    # `import mmtrack` from loading GPU code at all (CuPy itself loads only when one is built).
    if name == "CudaEventBackend":
        from .measure.cuda import CudaEventBackend

        return CudaEventBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
