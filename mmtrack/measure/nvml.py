"""Optional GPU clock diagnostics through NVML (the ``nvidia-ml-py`` package, module ``pynvml``).

After each sample, :class:`~mmtrack.measure.cuda.CudaEventBackend` reads the SM clock
and the clock event ("throttle") reasons and flags the sample when the SM clock was
below 75% of the device's default clock, the threshold nvbench uses. These readings
are diagnostic metrics in section ``nvml``; they never change a sample's duration.

Nothing here imports ``pynvml`` at import time. The seam is :class:`ClockMonitor`:
the real one is :class:`NvmlClockMonitor`, tests pass a stand-in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .metrics import Direction, MetricValue

SECTION = "nvml"
THROTTLE_THRESHOLD = 0.75  # nvbench's default --throttle-threshold

# nvmlClocksEventReasons / nvmlClocksThrottleReasons bits (nvml.h); names as nvidia-smi prints them.
REASON_BITS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)


def reason_names(mask: int) -> list[str]:
    """The names of the reason bits set in ``mask``; unknown bits print as hex."""
    names = [name for bit, name in REASON_BITS if mask & bit]
    known = 0
    for bit, _ in REASON_BITS:
        known |= bit
    if mask & ~known:
        names.append(hex(mask & ~known))
    return names


@dataclass(frozen=True, slots=True)
class ClockReading:
    """One reading taken at a sample's end."""

    sm_clock_mhz: float
    reasons: int  # bitmask of clock event reasons


class ClockMonitor(Protocol):
    """What the CUDA backend needs from a clock source; ``read`` may raise."""

    @property
    def default_clock_mhz(self) -> float: ...

    def read(self) -> ClockReading: ...

    def close(self) -> None: ...


def is_below_threshold(reading: ClockReading, default_clock_mhz: float, threshold: float = THROTTLE_THRESHOLD) -> bool:
    """True when the SM clock ran below ``threshold`` × the default clock (nvbench's rule)."""
    return default_clock_mhz > 0 and reading.sm_clock_mhz < threshold * default_clock_mhz


def reading_metrics(reading: ClockReading, default_clock_mhz: float) -> list[MetricValue]:
    """The per-sample diagnostic metrics for one reading (section ``nvml``, never timing)."""
    below = is_below_threshold(reading, default_clock_mhz)
    return [
        MetricValue("sm_clock_mhz", float(reading.sm_clock_mhz), "MHz", section=SECTION).with_direction(
            Direction.NEUTRAL
        ),
        MetricValue.integer("clock_event_reasons", reading.reasons, "mask").with_section(SECTION),
        MetricValue.integer("clock_below_75pct", int(below), "flag").with_section(SECTION).with_direction(
            Direction.LOWER
        ),
    ]


class NvmlClockMonitor:
    """Reads the SM clock and clock event reasons of one GPU through pynvml.

    The GPU is found by PCI bus id (CUDA and NVML number devices differently when
    ``CUDA_VISIBLE_DEVICES`` is set), else by index. ``default_clock_mhz`` is the
    CUDA default SM clock when the caller knows it (nvbench uses the device's
    ``clockRate``), else NVML's default applications clock, else its max SM clock.
    """

    def __init__(self, pci_bus_id: str | None, index: int, default_clock_mhz: float = 0.0) -> None:
        import pynvml  # optional dependency: nvidia-ml-py

        self._nvml: Any = pynvml
        pynvml.nvmlInit()
        try:
            handle = None
            if pci_bus_id:
                try:
                    handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
                except pynvml.NVMLError:
                    handle = None
            if handle is None:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._handle = handle
            # Newer NVML renamed "throttle reasons" to "clocks event reasons"; same bits.
            self._reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
                pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons"
            )
            self._default = float(default_clock_mhz) if default_clock_mhz > 0 else self._nvml_default_clock()
        except Exception:
            pynvml.nvmlShutdown()
            raise
        self._open = True

    def _nvml_default_clock(self) -> float:
        nv = self._nvml
        for query in ("nvmlDeviceGetDefaultApplicationsClock", "nvmlDeviceGetMaxClockInfo"):
            try:
                value = float(getattr(nv, query)(self._handle, nv.NVML_CLOCK_SM))
            except (AttributeError, nv.NVMLError):
                continue
            if value > 0:
                return value
        return 0.0

    @property
    def default_clock_mhz(self) -> float:
        return self._default

    def read(self) -> ClockReading:
        nv = self._nvml
        return ClockReading(
            sm_clock_mhz=float(nv.nvmlDeviceGetClockInfo(self._handle, nv.NVML_CLOCK_SM)),
            reasons=int(self._reasons(self._handle)),
        )

    def close(self) -> None:
        if self._open:
            self._open = False
            self._nvml.nvmlShutdown()


def open_nvml_monitor(pci_bus_id: str | None, index: int, default_clock_mhz: float = 0.0) -> tuple[
    ClockMonitor | None, str | None
]:
    """An NVML monitor for one GPU, or ``(None, reason)`` when NVML is missing or fails."""
    try:
        import pynvml  # noqa: F401
    except ImportError:
        return None, "NVML diagnostics off: nvidia-ml-py is not installed"
    try:
        return NvmlClockMonitor(pci_bus_id, index, default_clock_mhz), None
    except Exception as exc:  # noqa: BLE001  (diagnostics are optional; timing goes on)
        return None, f"NVML diagnostics off: {type(exc).__name__}: {exc}"
