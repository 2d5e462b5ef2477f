"""`mmtrack update`'s detect from each touched series' last stored step on, and its run points read from the
columns it holds (issue 46): both store what a detect of the whole series stores."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np

from benchmarks.synthetic_history import synthetic_model, write_asv_results
from mmtrack.analysis.detect import DetectPolicy, find_steps, find_steps_after
from mmtrack.analysis.series import detect_values, kept_steps
from mmtrack.measure.metrics import Direction
from mmtrack.publish import SiteConfig
from mmtrack.results import MetricKey, SeriesKey
from tests.test_update import mmtrack, stored_fields, updates_then_full_detect

KEY = SeriesKey("m", "e", "b", "", MetricKey("timing", "time_per_op", "s"))


def _series(n: int, seed: int, steps: dict[int, float]) -> list[float]:
    rng = np.random.default_rng(seed)
    level = np.ones(n)
    for at, ratio in steps.items():
        level[at:] *= ratio
    return (level * (1 + 0.01 * rng.standard_normal(n))).tolist()


def test_search_from_the_last_step_finds_what_the_whole_series_search_finds() -> None:
    policy = DetectPolicy()
    values = _series(180, 4, {40: 1.3})
    kept = 0
    for n in range(100, 181):
        before = [s.index for s in find_steps(values[: n - 1], policy, settle=True)]
        found = find_steps_after(values[:n], before, policy)
        kept += found is not None
        assert found is None or found == find_steps(values[:n], policy, settle=True), n
    assert kept > 70  # the clear step is kept for almost every commit


def test_a_newer_step_or_a_failed_kept_one_sends_the_series_to_the_whole_search() -> None:
    policy = DetectPolicy()
    values = _series(200, 5, {40: 1.3, 170: 1.25})
    assert find_steps_after(values, [40], policy) is None  # the newer step at 170
    flat = _series(200, 6, {})
    assert find_steps_after(flat, [40], policy) is None  # no step at 40 passes its test


def _stored(values: list[float], shas: list[str], policy: DetectPolicy) -> list:
    return list(detect_values(KEY, shas, values, [None] * len(values), Direction.LOWER, policy).changes)


def test_kept_steps_only_for_a_series_that_gained_newer_commits_after_a_clear_step() -> None:
    policy = DetectPolicy()
    values = _series(160, 7, {40: 1.3})
    shas = [f"c{i:03d}" for i in range(160)]
    stored = _stored(values[:159], shas[:159], policy)
    assert stored
    assert kept_steps(stored, shas, {shas[-1]}, policy) == [stored[0].extra["index"]]
    assert kept_steps(stored, shas, {shas[-1], shas[100]}, policy) is None  # a commit measured again
    assert kept_steps(stored, shas[:159] + ["x", shas[-1]], {shas[-1]}, policy) is None  # "x" is no new commit
    assert kept_steps(stored, shas[:159], set(), policy) is None  # nothing new
    weak = [dataclasses.replace(c, p_value=1e-6) for c in stored]
    assert kept_steps(weak, shas, {shas[-1]}, policy) is None
    recent = _stored(_series(80, 8, {60: 1.3}), shas[:79], policy)
    assert recent and kept_steps(recent, shas[:80], {shas[79]}, policy) is None  # 20 commits before the newest


def _run_points_both_ways(url: str) -> tuple[dict, dict]:
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store
    from mmtrack.store.selection import series_keys

    store = open_store(url, existing=True)
    try:
        keys = series_keys(store)
        columns = [c.usable() for c in q.series_columns(store, keys)]
        read, pos_read = q.series_run_points(store, keys)
        derived, pos_derived = q.series_run_points(store, keys, columns)
    finally:
        store.close()
    assert pos_read == pos_derived

    def points(runs: dict) -> dict:
        return {k: sorted(zip(v.shas, v.days.tolist(), v.values.tolist())) for k, v in runs.items()}

    return points(read), points(derived)


def test_run_points_from_the_columns_are_the_stored_runs_and_a_commit_measured_twice_is_read(tmp_path: Path) -> None:
    model = synthetic_model(2, 20, 2, seed=3, config=SiteConfig())
    results, url = tmp_path / "results", f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(results, model)
    assert mmtrack("import-asv", str(results), "--db", url, cwd=tmp_path).returncode == 0
    read, derived = _run_points_both_ways(url)
    assert read and read == derived

    # The same commit measured again (a second results file): the columns keep its latest run only, so the runs are
    # read from the measurements, earlier run included.
    first = sorted((results / "ci-linux-x86").glob("*-*.json"))[0]
    shutil.copyfile(first, first.with_name("again-" + first.name))
    assert mmtrack("import-asv", str(results), "--db", url, cwd=tmp_path).returncode == 0
    read, derived = _run_points_both_ways(url)
    assert read == derived
    assert max(len(v) for v in read.values()) == 21  # 20 commits, one of them twice


def test_updates_from_the_last_step_store_what_a_full_detect_stores(tmp_path: Path) -> None:
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store
    from mmtrack.store.selection import series_keys

    model = synthetic_model(3, 100, 2, seed=5, step_every=1, config=SiteConfig())
    url, full_url = updates_then_full_detect(tmp_path, model, 96)

    incremental = stored_fields(url, "index", "points")
    assert incremental and incremental == stored_fields(full_url, "index", "points")
    # ...and the updates searched some series from their last step only: the last one did
    store = open_store(url)
    try:
        columns = [c.usable() for c in q.series_columns(store, series_keys(store))]
    finally:
        store.close()
    policy = DetectPolicy()
    assert any(kept_steps(_stored(c.values[:-1], c.shas[:-1], policy), c.shas, {c.shas[-1]}, policy)
               for c in columns)
