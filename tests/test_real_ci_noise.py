"""The A/A noise source resampled from real asv results (scripts/real_ci_noise.py), on the MetPy slice in tests/data."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from scripts.ci_noise import tier_of
from scripts.real_ci_noise import load_runs, load_sources, real_ci_series, real_ci_suite, runs_in_blocks

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


def test_a_suite_resampled_run_by_run_keeps_what_each_run_did_to_every_series():
    runs = load_runs(DATA, ("Docker_Container",))["Docker_Container"]
    assert runs.residuals.shape == runs.present.shape and runs.present.mean() > 0.9
    # Mark one run: every series reads x2 there, as a slow runner would make them; resampled, the mark moves
    # with its run, in every member at once.
    marked = dataclasses.replace(runs, residuals=runs.residuals.copy())
    marked.residuals[:, 7] = math.log(2.0)
    rng = np.random.default_rng(5)
    suite = real_ci_suite(rng, marked, 6, 40, "mid")
    assert len(suite) == 6 and all(v.shape == (40,) and len(s) == 40 for v, s in suite)
    ratio = np.array([v / np.median(v) for v, _ in suite])
    high = ratio > 1.5
    assert high.any() and (high.all(axis=0) | ~high.any(axis=0)).all()  # a marked run is high in every member
    assert sum(tier_of(v) == "mid" for v, _ in suite) >= 4


def test_runs_are_used_once_while_there_are_enough():
    rng = np.random.default_rng(1)
    assert sorted(runs_in_blocks(rng, np.arange(10, 30), 20)) == list(range(10, 30))
    drawn = runs_in_blocks(rng, np.arange(5), 40)
    assert len(drawn) == 40 and set(drawn) <= set(range(5))
