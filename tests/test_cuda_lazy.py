"""No CuPy at import, clean skips without a GPU, and what a user without CuPy sees."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mmtrack
from mmtrack.measure import cuda

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def test_import_mmtrack_loads_no_gpu_code():
    code = (
        "import sys, mmtrack\n"
        "assert 'mmtrack.measure.cuda' not in sys.modules\n"
        "backend = mmtrack.CudaEventBackend\n"
        "assert backend.__module__ == 'mmtrack.measure.cuda'\n"
        "assert 'cupy' not in sys.modules and 'pynvml' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_the_lazy_export_is_the_class_and_unknown_names_still_fail():
    assert mmtrack.CudaEventBackend is cuda.CudaEventBackend
    assert "CudaEventBackend" in mmtrack.__all__
    with pytest.raises(AttributeError, match="NoSuchThing"):
        mmtrack.NoSuchThing  # noqa: B018


def test_without_cupy_the_reason_is_one_line_and_building_the_backend_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    reason = cuda.cuda_unavailable_reason()
    assert reason == "CuPy is not installed (see docs/cuda.md)"
    with pytest.raises(cuda.CudaUnavailableError, match="needs CuPy and a CUDA device: CuPy is not installed"):
        cuda.CudaEventBackend()


def test_bench_reports_the_cuda_examples_as_skipped_without_a_gpu():
    if cuda.cuda_unavailable_reason() is None:
        pytest.skip("a GPU is present: the examples run instead of skipping")
    out = subprocess.run(
        [sys.executable, "-m", "mmtrack", "bench", "benchmarks/examples", "-b", "cuda", "--quick", "--no-save", "--compare", "none"],
        env=_env(), capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    skipped = [line for line in out.stdout.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 4
    assert all(line.endswith(": CuPy is not installed (see docs/cuda.md)") or "CUDA" in line for line in skipped)
    assert {line.split(":")[0].split(".")[1] for line in skipped} == {"cuda_event_backend", "cuda_gemm"}
    assert "4 benchmark cases: 0 ok, 0 failed, 4 skipped" in out.stdout
