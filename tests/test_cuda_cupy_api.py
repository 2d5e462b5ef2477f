"""Smoke tests of the CuPy-facing code (CupyCudaApi, scripts/gpu_check.py) on a fake ``cupy``.

There is no GPU here, so these tests cannot say anything about real timings. They run the
CuPy-facing code paths against a minimal fake of the CuPy calls it makes, written from
CuPy's documented API (``cupy.cuda.Event``, ``get_elapsed_time``, ``get_current_stream``,
``runtime.deviceGetAttribute``, ``MemoryPointer.memset_async``, ``cupyx.profiler.benchmark``),
so that a wrong name, a wrong argument order or a broken control flow fails here rather than
on the first GPU machine. The fake device advances a virtual clock per operation and keeps
one bit of L2 state so that cold mode is visibly slower than hot.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

L2_BYTES = 50 * 2**20


class FakeCUDARuntimeError(RuntimeError):
    def __init__(self, status):
        self.status = status
        super().__init__(f"cudaErrorFake: status {status}")


class FakeDevice:
    def __init__(self):
        self.clock_s = 0.0
        self.resident: set[int] = set()  # ids of buffers in L2
        self.calls: list[str] = []

    def run(self, seconds: float, name: str) -> None:
        self.clock_s += seconds
        self.calls.append(name)


def make_fake_cupy(dev: FakeDevice) -> tuple[types.ModuleType, types.ModuleType]:
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "0.0-fake"
    cuda = types.ModuleType("cupy.cuda")
    runtime = types.ModuleType("cupy.cuda.runtime")
    driver = types.ModuleType("cupy.cuda.driver")
    cupy.cuda = cuda
    cuda.runtime = runtime
    cuda.driver = driver

    runtime.CUDARuntimeError = FakeCUDARuntimeError
    driver.CUDADriverError = type("CUDADriverError", (RuntimeError,), {})
    runtime.cudaDevAttrL2CacheSize = 38
    runtime.cudaDevAttrClockRate = 13
    runtime.getDeviceCount = lambda: 1
    runtime.getDevice = lambda: 0

    def attribute(attr, device):
        assert device == 0
        return {38: L2_BYTES, 13: 1_980_000}[attr]

    runtime.deviceGetAttribute = attribute
    runtime.getDeviceProperties = lambda device: {"name": b"Fake H200", "l2CacheSize": L2_BYTES}
    runtime.deviceGetPCIBusId = lambda device: "0000:19:00.0"

    class Device:
        def __init__(self, device_id=None):
            self.id = 0 if device_id is None else device_id

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Stream:
        def __init__(self, ptr=0, device_id=-1):
            self.ptr, self.device_id = ptr, device_id

        def synchronize(self):
            dev.calls.append("stream_synchronize")

    null = Stream()

    class Event:
        def __init__(self, block=False, disable_timing=False, interprocess=False):
            self.stamp = None

        def record(self, stream=None):
            self.stamp = dev.clock_s

        def synchronize(self):
            assert self.stamp is not None

    class MemoryPointer:
        def __init__(self, nbytes):
            self.nbytes = nbytes
            self.mem = types.SimpleNamespace(size=nbytes)

        def memset_async(self, value, size, stream=None):
            assert 0 <= value <= 255 and size <= self.nbytes
            if size >= L2_BYTES:
                dev.resident.clear()
            dev.run(size / 3e12, "memset")

        def copy_from_device_async(self, src, size, stream=None):
            assert size <= min(self.nbytes, src.nbytes)
            dev.run(2 * size / 4e12, "copy")

    class Array:
        def __init__(self, shape, dtype):
            self.shape = shape if isinstance(shape, tuple) else (shape,)
            self.dtype = np.dtype(dtype)
            self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
            self.data = MemoryPointer(self.nbytes)

    def elapsed(start, stop):
        return (stop.stamp - start.stamp) * 1e3

    def matmul(a, b, out=None):
        n = a.shape[0]
        dev.run(2 * n**3 / 50e12, "gemm")
        return out

    def add(x, y, out=None):
        hot = id(x) in dev.resident
        dev.run(2 * x.nbytes / (10e12 if hot else 3e12), "add")
        dev.resident.add(id(x))
        return out

    cuda.Device = Device
    cuda.Stream = Stream
    cuda.Event = Event
    cuda.get_elapsed_time = elapsed
    cuda.get_current_stream = lambda device_id=-1: null
    cuda.get_device_id = lambda: 0
    cuda.alloc = MemoryPointer
    cupy.uint8, cupy.float32 = np.uint8, np.float32
    cupy.ones = cupy.empty = cupy.zeros = lambda shape, dtype=np.float64: Array(shape, dtype)
    cupy.empty_like = lambda a: Array(a.shape, a.dtype)
    cupy.random = types.SimpleNamespace(random=lambda shape, dtype=np.float64: Array(shape, dtype))
    cupy.matmul = matmul
    cupy.add = add

    cupyx = types.ModuleType("cupyx")
    profiler = types.ModuleType("cupyx.profiler")
    cupyx.profiler = profiler

    def benchmark(func, args=(), kwargs={}, n_repeat=10000, *, name=None, n_warmup=10, max_duration=None,
                  devices=None):
        for _ in range(n_warmup):
            func(*args)
        times = []
        for _ in range(n_repeat):
            t0 = dev.clock_s
            func(*args)
            times.append(dev.clock_s - t0)
        return types.SimpleNamespace(gpu_times=np.asarray([times]), cpu_times=np.asarray(times))

    profiler.benchmark = benchmark
    return cupy, cupyx


@pytest.fixture()
def fake_gpu(monkeypatch):
    dev = FakeDevice()
    cupy, cupyx = make_fake_cupy(dev)
    for name, module in {
        "cupy": cupy, "cupy.cuda": cupy.cuda, "cupy.cuda.runtime": cupy.cuda.runtime,
        "cupy.cuda.driver": cupy.cuda.driver, "cupyx": cupyx, "cupyx.profiler": cupyx.profiler,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    return dev


def test_cupy_api_queries_and_errors(fake_gpu):
    from mmtrack.measure.cuda import CupyCudaApi, cuda_unavailable_reason

    assert cuda_unavailable_reason() is None
    api = CupyCudaApi()
    assert (api.device_id, api.device_name(), api.l2_cache_bytes(), api.clock_rate_khz()) == (
        0, "Fake H200", L2_BYTES, 1_980_000)
    assert api.pci_bus_id() == "0000:19:00.0"
    assert api.error_status(FakeCUDARuntimeError(700)) == 700
    assert api.error_status(ValueError("not CUDA")) is None


def test_backend_on_the_cupy_api_in_cold_mode(fake_gpu):
    from mmtrack.measure.backend import Results
    from mmtrack.measure.cuda import CudaEventBackend

    backend = CudaEventBackend(bytes_per_op=2**20, flush_l2=True)
    assert backend.flush_bytes == 2 * L2_BYTES
    backend.begin()
    fake_gpu.run(1e-3, "kernel")
    backend.end()
    results, metrics = Results(), []
    backend.collect(1e-5, 1, 0, results, metrics)
    assert results.duration == pytest.approx(1e-3)
    assert fake_gpu.calls[:3] == ["memset", "stream_synchronize", "kernel"]
    assert "NVML diagnostics off: nvidia-ml-py is not installed" in backend.describe()
    backend.close()


def test_gpu_check_runs_end_to_end_on_the_fake(fake_gpu, capsys, monkeypatch):
    module = importlib.import_module("scripts.gpu_check")
    code = module.main([])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["check", "mmtrack"]
    assert [line.split("  ")[0] for line in lines[2:6]] == [
        "copy: median cuda_event_ms vs cupyx",
        "copy: gpu_gib_s vs device copy rate",
        "gemm: median cuda_event_ms vs cupyx",
        "l2 kernel: cold vs hot median",
    ]
    assert "device: 0 Fake H200" in out and "gemm gpu_tflops (median)" in out
    assert {"copy", "gemm", "add", "memset"} <= set(fake_gpu.calls)
