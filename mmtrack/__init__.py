"""mmtrack: micromeasure-style measurement inside asv benchmarks, with a SQL history.

The public names follow micromeasure's where one exists. Importing mmtrack has
no side effects: no database, no CuPy, no perf_event_open until used.
"""

from __future__ import annotations

from .asvbridge.declare import bench, bench_concurrent, bench_sample
from .measure.backend import MeasurementBackend, MeasurementDomain, Results, WallClockBackend
from .measure.benchmark_stats import BenchmarkStats
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
from .measure.throughput import Throughput

__version__ = "0.2.0"
#: The distribution this package installs as: the PyPI name "mmtrack" belongs to an unrelated project.
__distribution__ = "mmtrack-perf"

__all__ = [
    "bench",
    "bench_concurrent",
    "bench_sample",
    "ConcurrentBenchControl",
    "ConcurrentSampleInfo",
    "ConcurrentSamplePhase",
    "ConcurrentWorker",
    "ConcurrentWorkerResult",
    "BenchmarkDefinitionError",
    "BenchmarkStats",
    "BenchSampleResult",
    "BenchSpec",
    "CudaEventBackend",
    "DiagnosticError",
    "DiagnosticResult",
    "Direction",
    "InvalidMetricError",
    "LinuxPerfBackend",
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


_LAZY = {
    # Loaded on first use: nothing touches perf_event_open or CUDA at import time, and
    # perf needs fcntl (POSIX only).
    "LinuxPerfBackend": ".measure.perf",
    "CudaEventBackend": ".measure.cuda",
    # Only suites with concurrent benchmarks pay for loading them.
    "ConcurrentBenchControl": ".measure.concurrent",
    "ConcurrentSampleInfo": ".measure.concurrent",
    "ConcurrentSamplePhase": ".measure.concurrent",
    "ConcurrentWorker": ".measure.concurrent",
    "ConcurrentWorkerResult": ".measure.concurrent",
}


def __getattr__(name: str) -> type:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
