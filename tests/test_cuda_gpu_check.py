"""The pure parts of scripts/gpu_check.py (the measurements need a GPU), and its no-GPU exit."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpu_check():
    yield importlib.import_module("scripts.gpu_check")


def test_within_targets(gpu_check):
    assert gpu_check.check_within("t", 1.029, 1.0, 0.03, "ms").passed
    assert gpu_check.check_within("t", 0.971, 1.0, 0.03, "ms").passed
    assert not gpu_check.check_within("t", 1.031, 1.0, 0.03, "ms").passed
    assert not gpu_check.check_within("t", math.nan, 1.0, 0.03, "ms").passed
    assert not gpu_check.check_within("t", 1.0, 0.0, 0.03, "ms").passed
    assert gpu_check.check_within("bw", 2900.0, 3200.0, 0.10, "GiB/s").passed  # 9.4% low
    assert not gpu_check.check_within("bw", 2850.0, 3200.0, 0.10, "GiB/s").passed


def test_slower_target(gpu_check):
    assert gpu_check.check_slower("c", 0.0105, 0.010, 1.05, "ms").passed
    assert not gpu_check.check_slower("c", 0.0104, 0.010, 1.05, "ms").passed
    assert not gpu_check.check_slower("c", 0.02, 0.0, 1.05, "ms").passed


def test_table_and_exit_code(gpu_check):
    ok = gpu_check.check_within("copy: median cuda_event_ms vs cupyx", 0.1120, 0.1115, 0.03, "ms")
    missed = gpu_check.check_slower("l2 kernel: cold vs hot median", 0.0101, 0.0100, 1.05, "ms")
    table = gpu_check.render_table([ok, missed], [("device", "0 NVIDIA H200")])
    lines = table.splitlines()
    assert lines[0].split() == ["check", "mmtrack", "reference", "ratio", "target", "result"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].startswith("copy: median cuda_event_ms vs cupyx") and lines[2].endswith("ok")
    assert "0.112 ms" in lines[2] and "0.1115 ms" in lines[2] and "1.004" in lines[2] and "within 3%" in lines[2]
    assert lines[3].endswith("MISSED") and "ratio >= 1.05" in lines[3]
    assert lines[4] == "device: 0 NVIDIA H200"
    # columns line up
    assert lines[2].index("0.112 ms") == lines[0].index("mmtrack")
    assert gpu_check.exit_code([ok]) == 0
    assert gpu_check.exit_code([ok, missed]) == 1
    assert gpu_check.exit_code([]) == 1


def test_without_a_gpu_it_exits_3_with_one_line():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here")
    out = subprocess.run([sys.executable, "-m", "scripts.gpu_check"], capture_output=True, text=True, timeout=60,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 3
    assert out.stdout == "gpu_check: no GPU to check: CuPy is not installed (see docs/reference/cuda.md)\n"
