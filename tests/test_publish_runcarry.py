"""A carried-on site fits only the runs whose inputs moved (publish/runcarry.py), and still equals a full rebuild.

The suite of tests/test_publish_runs.py (twelve series on one machine: slow runner visits, a step at 33, a runner
change at 37), imported commit by commit from 31 on, one series skipping commit 34: after every new commit the site
published in place equals one published fresh, and fewer of the newest commits' runs were fitted than a fresh build
fits.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from test_publish_runs import SERIES, N, _import, _publish, level, tree

from benchmarks.synthetic_history import synthetic_model, write_asv_results
from mmtrack.analysis import compare, run_part
from mmtrack.publish import SiteConfig
from mmtrack.publish.verdict_rows import STEP_COMMITS

FIRST = 31
SKIP = (3, 34)  # series 3 has no run at commit 34


def _model():
    model = synthetic_model(SERIES, N, 1, seed=5, step_every=10**6, config=SiteConfig(chunk_size=250))
    for i, key in enumerate(sorted(model.series, key=lambda k: k.benchmark)):
        rng = np.random.default_rng(100 + i)
        first = model.series[key][0].measurement.median
        model.series[key] = [
            dataclasses.replace(p, measurement=dataclasses.replace(
                p.measurement, median=(m := first * level(i, k) * (1 + rng.normal(0, 0.004))),
                q1=m * 0.995, q3=m * 1.005))
            for k, p in enumerate(model.series[key]) if (i, k) != SKIP
        ]  # fmt: skip
    return model


def test_each_new_commit_fits_only_the_runs_it_moved_and_matches_a_full_rebuild(tmp_path: Path, monkeypatch) -> None:
    model = _model()
    results, url, site = tmp_path / "results", f"sqlite:///{tmp_path / 'store.db'}", tmp_path / "site"
    write_asv_results(results, model, commits=list(model.commits[:FIRST]))
    _import(url, results)
    _publish(url, site)
    fitted: list[str] = []
    real_runs_of = run_part.runs_of
    monkeypatch.setattr(run_part, "runs_of", lambda *a, **k: fitted.append(a[5].after) or real_runs_of(*a, **k))
    for i in range(FIRST, N):
        write_asv_results(results, model, commits=[model.commits[i]])
        _import(url, results)
        fitted.clear()
        _publish(url, site)
        in_place = len(fitted)
        fitted.clear()
        fresh = tmp_path / f"fresh{i}"
        _publish(url, fresh)
        assert tree(site) == tree(fresh), f"commit {i}"
        assert len(fitted) >= STEP_COMMITS
        assert in_place <= compare.ComparePolicy().confirm_window + 2 < len(fitted), f"commit {i}"
