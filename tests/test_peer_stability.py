"""scripts/peer_stability.py's pure parts: the like-for-like ratio's interval and --agree's input checks
(the peer runs themselves need pyperf and a quiet machine: docs/design/measurement.md)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "peer_stability.py"


@pytest.fixture(scope="module")
def peer():
    spec = importlib.util.spec_from_file_location("peer_stability", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


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
    proc = subprocess.run([sys.executable, str(SCRIPT), "--agree", agree], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.strip().startswith(f"--agree {agree}:")
    assert len(proc.stderr.strip().splitlines()) == 1
