"""mmtrack: micromeasure-style measurement inside asv benchmarks, with a SQL history.

The public names follow micromeasure's where one exists. Importing mmtrack has
no side effects: no database, no CuPy, no perf_event_open until used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .asvbridge.declare import bench, bench_concurrent, bench_sample
    from .measure.backend import MeasurementBackend, MeasurementDomain, Results, WallClockBackend
    from .measure.benchmark_stats import BenchmarkStats
    from .measure.concurrent import (
        ConcurrentBenchControl,
        ConcurrentSampleInfo,
        ConcurrentSamplePhase,
        ConcurrentWorker,
        ConcurrentWorkerResult,
    )
    from .measure.cuda import CudaEventBackend
    from .measure.metrics import (
        BenchSampleResult,
        DiagnosticError,
        DiagnosticResult,
        InvalidMetricError,
        MetricSummary,
        MetricValue,
    )
    from .measure.perf import LinuxPerfBackend
    from .measure.runner import BenchmarkDefinitionError, BenchSpec, RunOptions, run_benchmark
    from .measure.throughput import Throughput
    from .vocabulary import Direction, MetricFormat

__version__ = "0.2.0"
#: The distribution this package installs as: the PyPI name "mmtrack" belongs to an unrelated project.
__distribution__ = "mmtrack-perf"

#: Every public name and the module that defines it. All load on first use: the commands over the store
#: (update, detect, publish) never touch the measurement engine, and nothing touches perf_event_open or
#: CUDA at import time (perf needs fcntl, POSIX only).
_LAZY = {
    "bench": ".asvbridge.declare",
    "bench_concurrent": ".asvbridge.declare",
    "bench_sample": ".asvbridge.declare",
    "ConcurrentBenchControl": ".measure.concurrent",
    "ConcurrentSampleInfo": ".measure.concurrent",
    "ConcurrentSamplePhase": ".measure.concurrent",
    "ConcurrentWorker": ".measure.concurrent",
    "ConcurrentWorkerResult": ".measure.concurrent",
    "BenchmarkDefinitionError": ".measure.runner",
    "BenchmarkStats": ".measure.benchmark_stats",
    "BenchSampleResult": ".measure.metrics",
    "BenchSpec": ".measure.runner",
    "CudaEventBackend": ".measure.cuda",
    "DiagnosticError": ".measure.metrics",
    "DiagnosticResult": ".measure.metrics",
    "Direction": ".vocabulary",
    "InvalidMetricError": ".measure.metrics",
    "LinuxPerfBackend": ".measure.perf",
    "MeasurementBackend": ".measure.backend",
    "MeasurementDomain": ".measure.backend",
    "MetricFormat": ".vocabulary",
    "MetricSummary": ".measure.metrics",
    "MetricValue": ".measure.metrics",
    "Results": ".measure.backend",
    "RunOptions": ".measure.runner",
    "Throughput": ".measure.throughput",
    "WallClockBackend": ".measure.backend",
    "run_benchmark": ".measure.runner",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # later look-ups skip this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
