"""The grouping of run points by series (``store/reads/run_points``): each series' runs in the rows' order,
series in the order of their first row, rows without a day or a finite median left out."""

import math
import random

from mmtrack.store.reads.run_points import _grouped


def test_groups_rows_per_series_in_order_and_drops_missing_values():
    rng = random.Random(3)
    rows = [(rng.choice([7, 3, 11, 5]), f"sha{i}", rng.choice([None, 1.5 * i]),
             rng.choice([None, math.nan, math.inf, rng.random()])) for i in range(400)]
    expected: dict[int, list[tuple[str, float, float]]] = {}
    for sid, sha, day, median in rows:
        if median is not None and math.isfinite(median) and day is not None:
            expected.setdefault(sid, []).append((sha, day, median))

    got = _grouped(rows)

    assert list(got) == list(expected)
    for sid, points in expected.items():
        assert got[sid].shas == [p[0] for p in points]
        assert got[sid].days.tolist() == [p[1] for p in points]
        assert got[sid].values.tolist() == [p[2] for p in points]
    assert _grouped([]) == {}
