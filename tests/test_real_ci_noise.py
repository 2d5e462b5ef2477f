"""The A/A noise source resampled from real asv results (scripts/real_ci_noise.py), on the MetPy slice in tests/data."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scripts.ci_noise import tier_of
from scripts.real_ci_noise import load_sources, real_ci_series

DATA = Path(__file__).parent / "data" / "asv-results"


def test_series_resampled_from_real_results_land_in_the_tier_asked_for():
    pools = load_sources(DATA, ("Docker_Container",))
    assert list(pools) == ["Docker_Container"]
    pool = pools["Docker_Container"]
    assert len(pool) > 10 and all(abs(float(np.median(s.residuals))) < 1.0 for s in pool)  # around the code's levels
    rng = np.random.default_rng(3)
    for tier in ("quiet", "mid", "noisy"):
        values, samples = real_ci_series(rng, pool, 120, tier)
        assert values.shape == (120,) and len(samples) == 120 and np.all(values > 0)
        assert tier_of(values) == tier
    assert load_sources(DATA, ("no-such-machine",)) == {}
