"""scripts/peer_stability.py's pure parts: the like-for-like ratio's interval and --agree's input checks
(the peer runs themselves need pyperf and a quiet machine: docs/design/measurement.md)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def peer():
    return importlib.import_module("scripts.peer_stability")


def _runs(peer, medians):
    return [peer.Run(m, [m * 0.99, m, m * 1.01], 0.01) for m in medians]


def test_the_ratio_interval_brackets_the_runs_spread(peer):
    steady = _runs(peer, [1.0, 1.01, 0.99, 1.0, 1.02, 0.98])
    low, high = peer.ratio_interval(steady, steady)
    assert low < 1.0 < high and high - low < 0.06
    slower = _runs(peer, [1.1, 1.11, 1.09, 1.1, 1.12, 1.08])
    low, high = peer.ratio_interval(slower, steady)
    assert 1.0 < low < 1.1 < high
    noisy = _runs(peer, [1.0, 1.3, 0.8, 1.2, 0.9, 1.1])
    low, high = peer.ratio_interval(noisy, steady)
    assert high - low > 0.1  # a 5% tolerance cannot be checked on runs this scattered


@pytest.mark.parametrize("agree", ["alloc_100k", "alloc_100k=x", "nosuch=0.05", "alloc_100k=2"])
def test_a_bad_agree_is_one_line(agree):
    proc = subprocess.run([sys.executable, "-m", "scripts.peer_stability", "--agree", agree], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 1 and proc.stderr.strip().startswith(f"--agree {agree}:")
    assert len(proc.stderr.strip().splitlines()) == 1
