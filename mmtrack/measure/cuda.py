"""CudaEventBackend: device-side timing of GPU benchmarks with CUDA events, through CuPy.

Per sample (the runner's contract, see ``backend.py``)::

    begin()    [cold mode: memset a buffer >= L2 on the stream, wait for it]
               record the start event on the stream
    ... the bench call enqueues GPU work on that stream ...
    end()      record the stop event, wait for it; read NVML clocks if available
    collect()  duration = elapsed time between the events (device time)

The stream is the one given, else CuPy's *current* stream at ``begin`` (so a
``with cupy.cuda.Stream():`` block or a per-thread default stream is honoured).
A CUDA error in any of these steps is recorded as an integer ``cuda_error_code``
metric for that sample, whose duration is then the host wall time from the start
event through the stop event's synchronize (the runner's host time when even the
start event failed), and the run goes on.

CuPy is imported only when a backend is built, never when this module is
imported. The seam is :class:`CudaApi`: :class:`CupyCudaApi` is the real one,
tests inject a stand-in.
"""

from __future__ import annotations

import math
import numbers
import time
from typing import Any, Callable, Protocol

from .backend import MeasurementBackend, Results
from .metrics import MetricValue
from .nvml import (
    ClockMonitor,
    ClockReading,
    is_below_threshold,
    open_nvml_monitor,
    reading_metrics,
    reason_names,
)

# Cold mode writes this many times the L2 size, so no line of the previous sample survives
# even with an L2 split into partitions or a replacement policy that is not strict LRU.
FLUSH_FACTOR = 2


class CudaApi(Protocol):
    """The few CUDA operations the backend uses. Operations may raise; ``error_status``
    tells a CUDA error (its integer status) from any other exception (``None``)."""

    device_id: int

    def device_name(self) -> str: ...

    def l2_cache_bytes(self) -> int: ...

    def clock_rate_khz(self) -> int: ...

    def pci_bus_id(self) -> str | None: ...

    def current_stream(self) -> Any: ...

    def new_event(self) -> Any: ...

    def record(self, event: Any, stream: Any) -> None: ...

    def synchronize(self, event: Any) -> None: ...

    def elapsed_ms(self, start: Any, stop: Any) -> float: ...

    def alloc(self, nbytes: int) -> Any: ...

    def memset(self, buffer: Any, value: int, nbytes: int, stream: Any) -> None: ...

    def stream_synchronize(self, stream: Any) -> None: ...

    def error_status(self, exc: BaseException) -> int | None: ...


class CudaUnavailableError(RuntimeError):
    """CuPy is missing or no CUDA device can be used."""


def cuda_unavailable_reason() -> str | None:
    """``None`` when CuPy imports and sees a CUDA device, else a one-line reason.

    Benchmarks call it in ``setup`` and raise ``NotImplementedError(reason)`` so the
    case is reported as skipped where there is no GPU.
    """
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (see docs/reference/cuda.md)"
    except Exception as exc:  # noqa: BLE001  (a broken CUDA install can fail at import)
        return f"CuPy failed to import: {type(exc).__name__}: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001  (no driver, no device: CUDARuntimeError)
        return f"no usable CUDA device: {type(exc).__name__}: {exc}".splitlines()[0]
    if count < 1:
        return "no CUDA device found"
    return None


class CupyCudaApi:
    """The real :class:`CudaApi`: cupy.cuda.Event, Stream and runtime on one device."""

    def __init__(self, device: int | None = None) -> None:
        reason = cuda_unavailable_reason()
        if reason is not None:
            raise CudaUnavailableError(f"CudaEventBackend needs CuPy and a CUDA device: {reason}")
        import cupy
        from cupy.cuda import runtime

        self._cupy = cupy
        self._runtime = runtime
        self.device_id = runtime.getDevice() if device is None else int(device)
        self._device = cupy.cuda.Device(self.device_id)
        errors: list[type] = [runtime.CUDARuntimeError]
        driver_error = getattr(getattr(cupy.cuda, "driver", None), "CUDADriverError", None)
        if driver_error is not None:
            errors.append(driver_error)
        self._errors = tuple(errors)

    def _attribute(self, name: str, number: int) -> int:
        # The cudaDevAttr* constants are exported by CuPy >= 12; the numbers are CUDA's own.
        return int(self._runtime.deviceGetAttribute(getattr(self._runtime, name, number), self.device_id))

    def device_name(self) -> str:
        name = self._runtime.getDeviceProperties(self.device_id)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def l2_cache_bytes(self) -> int:
        return self._attribute("cudaDevAttrL2CacheSize", 38)

    def clock_rate_khz(self) -> int:
        try:
            return self._attribute("cudaDevAttrClockRate", 13)
        except self._errors:
            return 0

    def pci_bus_id(self) -> str | None:
        try:
            return str(self._runtime.deviceGetPCIBusId(self.device_id))
        except (AttributeError, *self._errors):
            return None

    def current_stream(self) -> Any:
        return self._cupy.cuda.get_current_stream(self.device_id)

    def new_event(self) -> Any:
        with self._device:
            return self._cupy.cuda.Event()  # timing enabled, non-blocking sync

    def record(self, event: Any, stream: Any) -> None:
        with self._device:
            event.record(stream)

    def synchronize(self, event: Any) -> None:
        event.synchronize()

    def elapsed_ms(self, start: Any, stop: Any) -> float:
        return float(self._cupy.cuda.get_elapsed_time(start, stop))

    def alloc(self, nbytes: int) -> Any:
        with self._device:
            return self._cupy.cuda.alloc(nbytes)  # a MemoryPointer from CuPy's pool

    def memset(self, buffer: Any, value: int, nbytes: int, stream: Any) -> None:
        with self._device:
            buffer.memset_async(value, nbytes, stream)  # cudaMemsetAsync on that stream

    def stream_synchronize(self, stream: Any) -> None:
        stream.synchronize()

    def error_status(self, exc: BaseException) -> int | None:
        return int(exc.status) if isinstance(exc, self._errors) else None


class CudaEventBackend(MeasurementBackend):
    """Times each sample with CUDA events on a stream; the device time is the duration.

    ``bytes_per_op`` and ``flops_per_op`` turn the device time into ``gpu_gib_s``
    and ``gpu_tflops`` (per operation, so a sample of ``ops`` operations moved
    ``bytes_per_op * ops`` bytes). ``flush_l2=True`` (cold mode) writes a buffer of
    ``FLUSH_FACTOR`` × the device's L2 size before each sample, outside the timed
    window. NVML diagnostics are on when nvidia-ml-py is installed (``nvml=False``
    turns them off; a :class:`~mmtrack.measure.nvml.ClockMonitor` replaces them).
    ``device`` defaults to the given stream's device, else CuPy's current device.
    ``api`` and ``clock`` are the test seam (with ``api`` given, ``device`` is unused).

    A device time of exactly zero leaves the duration at zero, so the runner uses
    host time for that sample (the engine's contract); ``cuda_event_ms`` still says 0.
    """

    zero_means_host_time = True  # a sample without a device/counter reading is timed by the host

    def __init__(
        self,
        bytes_per_op: float = 0,
        flops_per_op: float = 0,
        stream: Any = None,
        device: int | None = None,
        flush_l2: bool = False,
        *,
        nvml: bool | ClockMonitor = True,
        api: CudaApi | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        for name, value in (("bytes_per_op", bytes_per_op), ("flops_per_op", flops_per_op)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
                raise ValueError(f"CudaEventBackend: {name} must be a finite number >= 0, got {value!r}")
        self.bytes_per_op = float(bytes_per_op)
        self.flops_per_op = float(flops_per_op)
        self.flush_l2 = bool(flush_l2)
        if api is None and device is None and stream is not None:
            device = getattr(stream, "device_id", -1)  # a CuPy stream knows its device
            device = device if isinstance(device, int) and device >= 0 else None
        self._api: CudaApi = api if api is not None else CupyCudaApi(device)
        self._stream = stream
        self._clock = clock
        self._start = self._api.new_event()
        self._stop = self._api.new_event()
        self._device_name = self._api.device_name()
        self._notes: list[str] = []

        self.l2_bytes = 0
        self.flush_bytes = 0
        self._flush_buffer: Any = None
        self._flush_count = 0
        if self.flush_l2:
            self.l2_bytes = int(self._api.l2_cache_bytes())
            if self.l2_bytes > 0:
                self.flush_bytes = FLUSH_FACTOR * self.l2_bytes
                self._flush_buffer = self._api.alloc(self.flush_bytes)
            else:
                self._notes.append("cold mode: the device reports no L2 cache, nothing to flush")

        self._monitor: ClockMonitor | None = None
        if nvml is True:
            self._monitor, why = open_nvml_monitor(
                self._api.pci_bus_id(), self._api.device_id, self._api.clock_rate_khz() / 1000.0
            )
            if why:
                self._notes.append(why)
        elif nvml is not False:
            self._monitor = nvml

        # per-sample state
        self._active_stream: Any = None
        self._error: tuple[int, str] | None = None
        self._t_begin: int | None = None
        self._t_end = 0
        self._reading: ClockReading | None = None
        # run totals for describe() (warm-up samples included)
        self._samples = 0
        self._error_samples = 0
        self._last_error: tuple[int, str] | None = None
        self._below = 0
        self._reasons_seen = 0

    # -- the contract ----------------------------------------------------------------------
    def begin(self) -> None:
        self._error = None
        self._reading = None
        self._active_stream = None
        self._t_begin = None
        try:
            stream = self._stream if self._stream is not None else self._api.current_stream()
            if self._flush_buffer is not None:
                # Outside the timed window: the stream runs the memset before the start
                # event, and waiting here keeps it out of the host span too.
                self._flush_count += 1
                self._api.memset(self._flush_buffer, self._flush_count & 0xFF, self.flush_bytes, stream)
                self._api.stream_synchronize(stream)
            self._t_begin = self._clock()
            self._api.record(self._start, stream)
            self._active_stream = stream
        except Exception as exc:
            self._fail(exc)

    def end(self) -> None:
        if self._error is None:
            try:
                self._api.record(self._stop, self._active_stream)
                self._api.synchronize(self._stop)
            except Exception as exc:
                self._fail(exc)
        self._t_end = self._clock()
        self._read_clocks()

    def collect(
        self,
        host_elapsed: float,
        ops: int,
        chunk_index: int,
        results: Results,
        metrics: list[MetricValue],
    ) -> None:
        results.iterations = ops
        results.chunks_executed = 1
        self._samples += 1
        device_ms: float | None = None
        if self._error is None:
            try:
                device_ms = float(self._api.elapsed_ms(self._start, self._stop))
            except Exception as exc:
                self._fail(exc)
        if self._error is not None or device_ms is None:
            code, _ = self._error or (0, "")
            self._error_samples += 1
            # No device time: use the host wall time from the start event through the stop
            # event's synchronize (or the failure), which covers the GPU work, unlike the
            # runner's launch-only host time; with no start event, leave 0 (runner host time).
            if self._t_begin is not None and self._t_end > self._t_begin:
                results.duration = (self._t_end - self._t_begin) * 1e-9
            metrics.append(MetricValue.integer("cuda_error_code", code, "enum"))
        else:
            seconds = device_ms * 1e-3
            results.duration = seconds
            span = (self._t_end - (self._t_begin or self._t_end)) * 1e-9
            metrics.append(MetricValue.duration_ms("cuda_event_ms", seconds))
            metrics.append(MetricValue.duration_ms("host_overhead_ms", max(span - seconds, 0.0)))
            if seconds > 0 and self.bytes_per_op > 0:
                metrics.append(MetricValue.bandwidth_gib_s("gpu_gib_s", self.bytes_per_op * ops, seconds))
            if seconds > 0 and self.flops_per_op > 0:
                metrics.append(MetricValue.throughput_tflops("gpu_tflops", self.flops_per_op * ops, seconds))
        if self._reading is not None and self._monitor is not None:
            metrics.extend(reading_metrics(self._reading, self._monitor.default_clock_mhz))

    @property
    def measurement_label(self) -> str:
        return "timing + CUDA events"

    @property
    def emits_cpu_diagnostics(self) -> bool:
        return False

    def close(self) -> None:
        self._start = self._stop = None
        self._flush_buffer = None
        if self._monitor is not None:
            try:
                self._monitor.close()
            except Exception:  # noqa: BLE001  (closing diagnostics never fails a run)
                pass

    def describe(self, domain: Any = None) -> str | None:
        parts = [f"CUDA events on device {self._api.device_id} ({self._device_name})"]
        if self.flush_l2 and self.l2_bytes > 0:
            parts.append(
                f"cold L2: {self.flush_bytes / 2**20:.0f} MiB written before each sample "
                f"(L2 {self.l2_bytes / 2**20:.0f} MiB)"
            )
        if self._error_samples:
            code, message = self._last_error or (0, "")
            parts.append(
                f"CUDA error in {self._error_samples} of {self._samples} samples (warm-up included), "
                f"host wall time used for those; last: {message or code}"
            )
        if self._monitor is not None and self._samples:
            clock = self._monitor.default_clock_mhz
            line = f"NVML: {self._below} of {self._samples} samples below 75% of the {clock:.0f} MHz default SM clock"
            if self._reasons_seen:
                line += f" (reasons seen: {', '.join(reason_names(self._reasons_seen))})"
            parts.append(line)
        parts.extend(self._notes)
        return "; ".join(parts)

    # -- helpers ---------------------------------------------------------------------------
    @property
    def api(self) -> CudaApi:
        return self._api

    def _fail(self, exc: Exception) -> None:
        """Record a CUDA error for this sample; anything else is a bug and propagates."""
        status = self._api.error_status(exc)
        if status is None:
            raise exc
        if self._error is None:
            self._error = (status, str(exc).splitlines()[0] if str(exc) else f"CUDA error {status}")
            self._last_error = self._error

    def _read_clocks(self) -> None:
        if self._monitor is None:
            return
        try:
            reading = self._monitor.read()
        except Exception as exc:  # noqa: BLE001  (diagnostics never touch the timing)
            self._notes.append(f"NVML diagnostics stopped: {type(exc).__name__}: {exc}")
            try:
                self._monitor.close()
            except Exception:  # noqa: BLE001
                pass
            self._monitor = None
            return
        self._reading = reading
        self._reasons_seen |= reading.reasons
        if is_below_threshold(reading, self._monitor.default_clock_mhz):
            self._below += 1


__all__ = ["CudaApi", "CudaEventBackend", "CudaUnavailableError", "CupyCudaApi", "FLUSH_FACTOR", "cuda_unavailable_reason"]
