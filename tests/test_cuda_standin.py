"""A stand-in for the CUDA event API (this machine and CI have no GPU).

It models one device queue and the host thread on two nanosecond timelines:

- a launch costs the host ``launch_ns``; the work starts on the device when both the
  device is free and the launch is done, then occupies it for its own duration;
- recording an event stamps it with the time the stream reaches it (no device time);
- synchronizing on an event (or the stream) blocks the host until then, plus ``sync_ns``.

So a sample of ``n`` kernels of ``k`` ns has an exact device elapsed time of
``launch_ns + n * k`` (the first launch delays the first kernel) and an exact host
span, which the tests check. Faults are injected per operation and call number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mmtrack.measure.nvml import ClockReading


class StandInCudaError(RuntimeError):
    """Carries a CUDA status as cupy's CUDARuntimeError does."""

    def __init__(self, status: int, name: str = "cudaError") -> None:
        self.status = status
        super().__init__(f"{name}: injected CUDA error {status}")


@dataclass(eq=False)
class Stream:
    name: str


@dataclass(eq=False)
class Event:
    stamp_ns: int | None = None
    stream: Stream | None = None


@dataclass(eq=False)
class Buffer:
    nbytes: int


@dataclass
class StandInCuda:
    """Implements mmtrack.measure.cuda.CudaApi on simulated timelines."""

    l2_bytes: int = 50 * 2**20
    clock_khz: int = 1_980_000
    launch_ns: int = 2_000
    sync_ns: int = 3_000
    memset_bytes_per_ns: float = 1000.0  # 1 TB/s
    device_id: int = 0
    host_ns: int = 1_000_000
    device_free_ns: int = 0
    log: list[tuple[str, object]] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    faults: dict[str, Callable[[int], int | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.default_stream = Stream("default")
        self.current = self.default_stream

    # -- test controls -----------------------------------------------------------------
    def clock(self) -> int:
        return self.host_ns

    def fail(self, op: str, status: int, calls: Callable[[int], bool]) -> None:
        """Raise StandInCudaError(status) on the calls of ``op`` (1-based) for which ``calls`` is true."""
        self.faults[op] = lambda n: status if calls(n) else None

    def kernel(self, ns: int, stream: Stream | None = None) -> None:
        """What a bench function does: launch ``ns`` of device work on a stream."""
        self._enqueue(ns)
        self.log.append(("kernel", stream or self.current))

    def ops(self, name: str) -> list[object]:
        return [detail for op, detail in self.log if op == name]

    # -- helpers -----------------------------------------------------------------------
    def _call(self, op: str) -> None:
        n = self.calls[op] = self.calls.get(op, 0) + 1
        fault = self.faults.get(op)
        status = fault(n) if fault else None
        if status is not None:
            raise StandInCudaError(status)

    def _enqueue(self, ns: int) -> None:
        self.host_ns += self.launch_ns
        start = max(self.device_free_ns, self.host_ns)
        self.device_free_ns = start + ns

    # -- CudaApi -----------------------------------------------------------------------
    def device_name(self) -> str:
        return "Stand-in GPU"

    def l2_cache_bytes(self) -> int:
        self._call("l2_cache_bytes")
        return self.l2_bytes

    def clock_rate_khz(self) -> int:
        return self.clock_khz

    def pci_bus_id(self) -> str | None:
        return "0000:01:00.0"

    def current_stream(self) -> Stream:
        return self.current

    def new_event(self) -> Event:
        return Event()

    def record(self, event: Event, stream: Stream) -> None:
        self._call("record")
        event.stamp_ns = max(self.device_free_ns, self.host_ns)
        event.stream = stream
        self.device_free_ns = event.stamp_ns
        self.log.append(("record", (event, stream)))

    def synchronize(self, event: Event) -> None:
        self._call("synchronize")
        assert event.stamp_ns is not None, "synchronize on an event never recorded"
        self.host_ns = max(self.host_ns, event.stamp_ns) + self.sync_ns
        self.log.append(("synchronize", event))

    def elapsed_ms(self, start: Event, stop: Event) -> float:
        self._call("elapsed_ms")
        assert start.stamp_ns is not None and stop.stamp_ns is not None
        return (stop.stamp_ns - start.stamp_ns) / 1e6

    def alloc(self, nbytes: int) -> Buffer:
        self.log.append(("alloc", nbytes))
        return Buffer(nbytes)

    def memset(self, buffer: Buffer, value: int, nbytes: int, stream: Stream) -> None:
        self._call("memset")
        assert nbytes <= buffer.nbytes
        self._enqueue(int(nbytes / self.memset_bytes_per_ns))
        self.log.append(("memset", (nbytes, stream)))

    def stream_synchronize(self, stream: Stream) -> None:
        self._call("stream_synchronize")
        self.host_ns = max(self.host_ns, self.device_free_ns) + self.sync_ns
        self.log.append(("stream_synchronize", stream))

    def error_status(self, exc: BaseException) -> int | None:
        return exc.status if isinstance(exc, StandInCudaError) else None


@dataclass
class StandInClocks:
    """A ClockMonitor stand-in: plays back SM clock readings, one per sample end."""

    mhz: list[float]
    reasons: list[int] | None = None
    default_clock_mhz: float = 1980.0
    fail_after: int | None = None
    reads: int = 0
    closed: int = 0

    def read(self) -> ClockReading:
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise RuntimeError("NVML_ERROR_GPU_IS_LOST")
        i = min(self.reads - 1, len(self.mhz) - 1)
        return ClockReading(self.mhz[i], (self.reasons or [0])[min(i, len(self.reasons or [0]) - 1)])

    def close(self) -> None:
        self.closed += 1


# -- the model itself -----------------------------------------------------------------------
def test_standin_device_time_excludes_host_time_before_the_start_event():
    cuda = StandInCuda(launch_ns=2_000, sync_ns=3_000)
    start, stop = cuda.new_event(), cuda.new_event()
    cuda.host_ns += 50_000  # host work before the sample does not show on the device
    cuda.record(start, cuda.current)
    cuda.kernel(100_000)
    cuda.kernel(100_000)
    cuda.record(stop, cuda.current)
    cuda.synchronize(stop)
    assert cuda.elapsed_ms(start, stop) == (2_000 + 200_000) / 1e6
    assert cuda.host_ns == stop.stamp_ns + 3_000


def test_standin_injects_faults_by_call_number():
    cuda = StandInCuda()
    cuda.fail("record", 700, lambda n: n == 2)
    event = cuda.new_event()
    cuda.record(event, cuda.current)
    try:
        cuda.record(event, cuda.current)
    except StandInCudaError as exc:
        assert cuda.error_status(exc) == 700
    else:
        raise AssertionError("the second record should fail")
    assert cuda.error_status(ValueError()) is None
