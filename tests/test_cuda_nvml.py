"""NVML diagnostics: the pynvml wrapper against a stand-in pynvml module, and the rules."""

from __future__ import annotations

import sys
import types

import pytest

from mmtrack.measure import nvml
from mmtrack.measure.metrics import Direction, MetricFormat


class NVMLError(Exception):
    pass


def fake_pynvml(*, by_pci: bool = True, event_reasons: bool = True, default_app_clock: int = 1755,
                max_clock: int = 1980) -> types.ModuleType:
    """Only the calls NvmlClockMonitor makes, with nvidia-ml-py's names and constants."""
    mod = types.ModuleType("pynvml")
    mod.NVMLError = NVMLError
    mod.NVML_CLOCK_SM = 1
    mod.calls = []
    mod.nvmlInit = lambda: mod.calls.append("init")
    mod.nvmlShutdown = lambda: mod.calls.append("shutdown")

    def by_pci_id(bus_id):
        mod.calls.append(("pci", bus_id))
        if not by_pci:
            raise NVMLError("NVML_ERROR_NOT_FOUND")
        return "handle-pci"

    mod.nvmlDeviceGetHandleByPciBusId = by_pci_id
    mod.nvmlDeviceGetHandleByIndex = lambda i: mod.calls.append(("index", i)) or f"handle-{i}"
    mod.nvmlDeviceGetClockInfo = lambda h, clock: 1410 if clock == mod.NVML_CLOCK_SM else 0

    def default_app(h, clock):
        if not default_app_clock:
            raise NVMLError("NVML_ERROR_NOT_SUPPORTED")
        return default_app_clock

    mod.nvmlDeviceGetDefaultApplicationsClock = default_app
    mod.nvmlDeviceGetMaxClockInfo = lambda h, clock: max_clock
    if event_reasons:
        mod.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x4
    mod.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: 0x20
    return mod


def test_monitor_finds_the_gpu_by_pci_bus_id_and_reads_clock_and_reasons(monkeypatch):
    mod = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monitor, why = nvml.open_nvml_monitor("0000:3B:00.0", 0, default_clock_mhz=1980.0)
    assert why is None
    assert ("pci", b"0000:3B:00.0") in mod.calls and not any(c[0] == "index" for c in mod.calls if isinstance(c, tuple))
    assert monitor.default_clock_mhz == 1980.0  # the CUDA clock rate wins, as in nvbench
    assert monitor.read() == nvml.ClockReading(1410.0, 0x4)
    monitor.close()
    monitor.close()
    assert mod.calls.count("shutdown") == 1


def test_monitor_falls_back_to_index_throttle_reasons_and_nvml_default_clock(monkeypatch):
    mod = fake_pynvml(by_pci=False, event_reasons=False)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monitor, _ = nvml.open_nvml_monitor("0000:3B:00.0", 2, default_clock_mhz=0.0)
    assert ("index", 2) in mod.calls
    assert monitor.default_clock_mhz == 1755.0
    assert monitor.read().reasons == 0x20


def test_monitor_uses_max_clock_when_no_default_applications_clock(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(default_app_clock=0))
    monitor, _ = nvml.open_nvml_monitor(None, 0)
    assert monitor.default_clock_mhz == 1980.0


def test_missing_or_failing_nvml_is_a_reason_not_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert nvml.open_nvml_monitor(None, 0) == (None, "NVML diagnostics off: nvidia-ml-py is not installed")
    mod = fake_pynvml()

    def no_driver():
        raise NVMLError("NVML_ERROR_DRIVER_NOT_LOADED")

    mod.nvmlInit = no_driver
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    monitor, why = nvml.open_nvml_monitor(None, 0)
    assert monitor is None and why == "NVML diagnostics off: NVMLError: NVML_ERROR_DRIVER_NOT_LOADED"


def test_the_75_percent_rule_and_the_metrics():
    assert nvml.is_below_threshold(nvml.ClockReading(1484.9, 0), 1980.0)
    assert not nvml.is_below_threshold(nvml.ClockReading(1485.0, 0), 1980.0)
    assert not nvml.is_below_threshold(nvml.ClockReading(100.0, 0), 0.0)  # unknown default: never flag
    sm, reasons, below = nvml.reading_metrics(nvml.ClockReading(900.0, 0x44), 1980.0)
    assert (sm.name, sm.unit, sm.section, sm.direction) == ("sm_clock_mhz", "MHz", "nvml", Direction.NEUTRAL)
    assert (reasons.value, reasons.format, reasons.effective_direction()) == (0x44, MetricFormat.INTEGER,
                                                                             Direction.NEUTRAL)
    assert (below.value, below.direction) == (1, Direction.LOWER)


def test_reason_names():
    assert nvml.reason_names(0) == []
    assert nvml.reason_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert nvml.reason_names(0x1000 | 0x1) == ["gpu_idle", "0x1000"]


@pytest.mark.parametrize("mhz,flag", [(1980, 0), (1000, 1)])
def test_flag_value_is_an_integer(mhz, flag):
    *_, below = nvml.reading_metrics(nvml.ClockReading(mhz, 0), 1980)
    assert below.value == flag and below.format is MetricFormat.INTEGER


def test_the_backend_opens_nvml_by_default_with_the_cuda_default_clock(monkeypatch):
    from test_cuda_standin import StandInCuda

    from mmtrack.measure.cuda import CudaEventBackend
    from mmtrack.measure.metrics import MetricValue
    from mmtrack.measure.backend import Results

    mod = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    cuda = StandInCuda(clock_khz=1_755_000)
    backend = CudaEventBackend(api=cuda, clock=cuda.clock)
    assert ("pci", b"0000:01:00.0") in mod.calls
    backend.begin()
    cuda.kernel(1_000)
    backend.end()
    metrics: list[MetricValue] = []
    backend.collect(1e-6, 1, 0, Results(), metrics)
    by_name = {m.name: m.value for m in metrics}
    assert by_name["sm_clock_mhz"] == 1410.0
    assert by_name["clock_below_75pct"] == 0  # 1410 >= 0.75 * 1755
    assert by_name["clock_event_reasons"] == 0x4
    backend.close()
    assert mod.calls.count("shutdown") == 1


def test_the_backend_notes_when_nvml_is_missing(monkeypatch):
    from test_cuda_standin import StandInCuda

    from mmtrack.measure.cuda import CudaEventBackend

    monkeypatch.setitem(sys.modules, "pynvml", None)
    backend = CudaEventBackend(api=StandInCuda())
    assert backend.describe() == (
        "CUDA events on device 0 (Stand-in GPU); NVML diagnostics off: nvidia-ml-py is not installed"
    )
