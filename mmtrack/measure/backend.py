"""The measurement-backend contract, measurement domains and the wall-clock backend.

The runner owns the host wall-clock span around the bench call; a backend owns
whatever else it records around that same window (perf counters, CUDA events)
and decides what a sample's duration means. The contract, per sample::

    backend.begin()
    t0 = perf_counter_ns(); ops = bench(...); t1 = perf_counter_ns()
    backend.end()
    backend.collect(host_elapsed, ops, chunk_index, results, metrics)

``collect`` fills ``results.duration`` (seconds). Leaving it at zero means "use
host elapsed time". It may push per-sample metrics onto ``metrics``.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field

from .metrics import MetricValue


class MeasurementDomain(str, enum.Enum):
    """What a benchmark measures; decides which diagnostics make sense.

    CPU: CPU bottleneck diagnostics apply. GPU and IO: CPU counters describe host
    orchestration only, so CPU diagnostics are suppressed. MIXED: emitted, but
    prefixed ``[host]``.
    """

    CPU = "cpu"
    GPU = "gpu"
    IO = "io"
    MIXED = "mixed"


@dataclass(slots=True)
class Results:
    """One sample as a backend saw it.

    ``counters`` maps a counter name to its (multiplex-scaled) total for the
    sample; a counter's presence is its has-flag. ``time_enabled_ns`` and
    ``time_running_ns`` describe counter coverage when counters multiplex.
    """

    duration: float = 0.0
    iterations: int = 0
    chunks_executed: int = 0
    counters: dict[str, float] = field(default_factory=dict)
    time_enabled_ns: int = 0
    time_running_ns: int = 0

    def has(self, counter: str) -> bool:
        return counter in self.counters


class MeasurementBackend:
    """Base class for measurement backends. Subclass and override what you need."""

    # micromeasure's "a zero duration means host time" is a promise of the built-in backends. A
    # custom backend that reports zero (or NaN, inf) fails its case, naming the backend.
    zero_means_host_time = False

    def begin(self) -> None:
        """Called right before the bench call of each sample."""

    def end(self) -> None:
        """Called right after the bench call of each sample."""

    def collect(
        self,
        host_elapsed: float,
        ops: int,
        chunk_index: int,
        results: Results,
        metrics: list[MetricValue],
    ) -> None:
        """Write the sample into ``results`` and push any derived metrics."""
        results.duration = host_elapsed
        results.iterations = ops
        results.chunks_executed = 1

    @property
    def measurement_label(self) -> str:
        """Shown in the report's Measurement row, e.g. ``timing + CUDA events``."""
        return "timing only"

    @property
    def emits_cpu_diagnostics(self) -> bool:
        """Whether CPU bottleneck diagnostics derived from this backend make sense."""
        return False

    def close(self) -> None:
        """Release resources (file descriptors, device events). Called once per run."""

    def describe(self, domain: MeasurementDomain | None = None) -> str | None:
        """One line for the report under the Measurement row, or None.

        The runner passes the benchmark's domain, so a counter backend can say
        what its counters describe there (host orchestration for GPU work).
        """
        return None


class WallClockBackend(MeasurementBackend):
    """Timing only: a sample's duration is the host elapsed time."""

    __slots__ = ()
    zero_means_host_time = True

    def collect(self, host_elapsed, ops, chunk_index, results, metrics):  # noqa: D401
        results.duration = host_elapsed
        results.iterations = ops
        results.chunks_executed = 1


_log = logging.getLogger("mmtrack.measure")
_announced: set[str] = set()


def announce_once(message: str) -> None:
    """Log ``message`` as a warning the first time this process sees it (stderr by default)."""
    if message not in _announced:
        _announced.add(message)
        _log.warning("mmtrack: %s", message)
