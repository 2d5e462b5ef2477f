"""Percentiles as numpy computes them ('linear'), in plain Python.

A worker summarises at most a few hundred samples per case; importing numpy for that cost more
(about 0.1 s per worker, or in the fork server before the first sample) than the arithmetic.
"""

from __future__ import annotations

import math
from typing import Sequence


def percentile(ordered: Sequence[float], q: float) -> float:
    """numpy's default ('linear') percentile of an already sorted, non-empty list."""
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
