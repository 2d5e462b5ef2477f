"""scripts/shared_moves.py: which large moves of a run the benchmark's other parameters made too."""

from __future__ import annotations

import numpy as np

from scripts import shared_moves


def test_a_burst_of_one_benchmarks_parameters_is_shared_by_its_family_not_by_the_run():
    rng = np.random.default_rng(0)
    keys = [("a", (1,)), ("a", (2,)), ("b", (1,)), ("b", (2,)), ("c", (1,))]
    table = rng.normal(0.0, 0.01, (40, len(keys)))
    table[20, :2] += 0.4  # benchmark a, both parameters, one run
    got = shared_moves.shared(keys, shared_moves.moves(table))
    assert got["large_moves"] == 2
    assert got["shared_by_family"] == 1.0 and got["shared_by_run"] == 0.0
