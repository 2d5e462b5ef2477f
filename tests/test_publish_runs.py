"""The compare page judges a commit as `mmtrack compare` does: with the rest of its run (issue 16).

A suite of twelve quiet benchmarks on one CI machine, in a real SQLite store: now and then a run lands on a
slower runner type, and every series of that run is slower by its own amount. Benchmark 0 steps up at commit
33 onto the level its slow runs visited (only the run's frames tell it from a runner visit); at commit 37 the
whole run moves 30% (a runner change, no benchmark's regression). Every verdict on the pages must be the CLI's.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.synthetic_history import synthetic_model, write_asv_results
from mmtrack.analysis.compare import series_steps
from mmtrack.commands.compare import CompareRequest, run_compare
from mmtrack.commands.publish import PublishRequest, publish
from mmtrack.publish import SiteConfig, bench_id
from mmtrack.publish.builder import _old_call
from mmtrack.publish.verdict_rows import STEP_COMMITS
from mmtrack.publish.writer import SiteWriter
from mmtrack.store.asv_import import import_asv_results
from mmtrack.store.db import open_store

N, SERIES = 40, 12
SLOW_RUNS = {8, 15, 22, 29}  # runs on a slower runner type the history visits
SLOWER = 1.2
STEP_AT = 33  # benchmark 0 steps onto its slow-runner level, on the usual runner
RUNNER_CHANGE = 37  # from here on every run is 30% slower: a runner pool that changed


def sensitivity(i: int) -> float:
    """How far series i follows the runner: 0.8 to 1.25 of the run's move."""
    return 0.8 + 0.45 * i / (SERIES - 1)


def level(i: int, k: int) -> float:
    out = SLOWER ** sensitivity(i) if k in SLOW_RUNS else 1.0
    if i == 0 and k >= STEP_AT:
        out *= SLOWER ** sensitivity(0)
    return out * (1.3 if k >= RUNNER_CHANGE else 1.0)


@pytest.fixture
def suite(tmp_path: Path):
    """(store url, model, results folder) with every commit imported."""
    return make_suite(tmp_path, level)


def make_suite(tmp_path: Path, level_of, skips: frozenset[tuple[int, int]] = frozenset()):
    """The suite with series i at level ``level_of(i, k)`` at commit k; ``skips``: the (i, k) no run measured."""
    model = synthetic_model(SERIES, N, 1, seed=5, step_every=10**6, config=SiteConfig(chunk_size=250))
    keys = sorted(model.series, key=lambda k: k.benchmark)
    for i, key in enumerate(keys):
        rng = np.random.default_rng(100 + i)
        first = model.series[key][0].measurement.median
        model.series[key] = [
            dataclasses.replace(p, measurement=dataclasses.replace(
                p.measurement, median=(m := first * level_of(i, k) * (1 + rng.normal(0, 0.004))), q1=m * 0.995, q3=m * 1.005))
            for k, p in enumerate(model.series[key]) if (i, k) not in skips
        ]  # fmt: skip
    results, url = tmp_path / "results", f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(results, model)
    _import(url, results)
    return url, model, results


def _import(url: str, results: Path) -> None:
    store = open_store(url)
    try:
        assert not import_asv_results(store, results).failed
    finally:
        store.close()


def _publish(url: str, out: Path):
    return publish(PublishRequest(out=out, db=url, title="t"))


def _page_verdicts(site: Path) -> dict[str, list[list]]:
    (by_bench,) = _old_call(SiteWriter(site), "data/verdicts.js", "verdicts")
    return by_bench


def _cli(url: str, a: str, b: str) -> dict[str, tuple[str, str | None]]:
    outcome = run_compare(CompareRequest(a=a, b=b, db=url))
    return {r.benchmark: (r.verdict, r.state) for r in outcome.comparison.rows}


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_verdict_on_the_pages_is_mmtrack_compares(suite, tmp_path: Path) -> None:
    url, model, _ = suite
    site = tmp_path / "site"
    _publish(url, site)
    pages = _page_verdicts(site)
    shas = [c.sha for c in model.commits]
    keys = sorted(model.series, key=lambda k: k.benchmark)
    seen = {}
    for a in range(N - STEP_COMMITS, N):
        cli = _cli(url, shas[a - 1], shas[a])
        for key in keys:
            (steps,) = pages[bench_id(key.benchmark)]
            (page,) = [v for v in steps if (v[0], v[1]) == (a - 1, a)]
            assert (page[2], page[3]) == cli[key.benchmark], (a, key.benchmark, page, cli[key.benchmark])
            seen[a, key.benchmark] = (page[2], page[3])
    step = seen[STEP_AT, keys[0].benchmark]
    assert step == ("regressed", "confirmed")  # in the run's frames: a step no runner visit explains
    assert {seen[RUNNER_CHANGE, k.benchmark] for k in keys} == {("ambiguous", None)}  # the whole run moved

    # Judged alone, as the pages did before: the runner change reads as twelve regressions, and the step
    # onto a level the slow runs visited as the series' own noise.
    alone = {}
    for key in keys[:1]:
        points = [p.measurement for p in model.series[key]]
        alone = {j: (row.verdict, row.state) for j, row in series_steps(points, last=STEP_COMMITS)}
    assert alone[RUNNER_CHANGE] == ("regressed", "suspected")
    assert alone[STEP_AT][0] == "ambiguous"


def test_a_series_that_skipped_the_before_commit_is_judged_against_its_own_commit_before(tmp_path: Path) -> None:
    """Benchmark 5 was not measured at commit 34 and is 30% slower at 35. ``compare 34 35`` judges it against
    its own commit 33, as the pages do (it was a "new" row before), and says so on the row."""
    skipped, slower = 34, 35

    def level_of(i: int, k: int) -> float:
        return level(i, k) * (1.3 if i == 5 and k >= slower else 1.0)

    url, model, _ = make_suite(tmp_path, level_of, frozenset({(5, skipped)}))
    shas = [c.sha for c in model.commits]
    outcome = run_compare(CompareRequest(a=shas[skipped], b=shas[slower], db=url))
    rows = {r.benchmark: r for r in outcome.comparison.rows}
    keys = sorted(model.series, key=lambda k: k.benchmark)
    row = rows[keys[5].benchmark]
    assert row.verdict == "regressed" and row.state is not None, row
    assert row.ratio == pytest.approx(1.3, rel=0.03)
    assert f"before: {shas[skipped - 1][:8]} (not measured at {shas[skipped][:8]})" in row.note
    assert {r.verdict for b, r in rows.items() if b != keys[5].benchmark} == {"unchanged"}

    site = tmp_path / "site"
    _publish(url, site)
    (steps,) = _page_verdicts(site)[bench_id(keys[5].benchmark)]
    (page,) = [v for v in steps if v[1] == slower]
    assert page[0] == skipped - 1  # the pages compare it with its own commit before, too
    assert (page[2], page[3]) == (row.verdict, row.state)


def test_a_carried_on_site_reads_each_run_again_when_other_benchmarks_move_it(suite, tmp_path: Path) -> None:
    """Eleven benchmarks are re-run at commit 33 on a slower runner (a run of their own, the newest of that
    commit); benchmark 0 is not. Its series did not change, but its verdict at 33 reads that run's frames:
    the carried-on site recomputes it and equals a full rebuild, and equals `mmtrack compare` there."""
    url, model, results = suite
    site = tmp_path / "site"
    _publish(url, site)
    before = _page_verdicts(site)
    shas = [c.sha for c in model.commits]
    (path,) = results.rglob(f"{shas[STEP_AT][:8]}-*.json")
    doc = json.loads(path.read_text())
    zero = sorted(model.series, key=lambda k: k.benchmark)[0].benchmark
    scaled = {0, 5, 6, 7, 8}  # result, 99% CI, quartiles (write_asv_results' columns)
    doc["results"] = {name: [[x * 1.3 for x in col] if j in scaled else col for j, col in enumerate(v[:11])]
                      + [[[s * 1.3 for s in v[11][0]]]] for name, v in doc["results"].items() if name != zero}
    doc["date"] += 3_600_000  # an hour later: the newest run of that commit
    path.with_name("rerun-" + path.name).write_text(json.dumps(doc))
    _import(url, results)
    built, _ = _publish(url, site)
    assert built is not None
    after = _page_verdicts(site)
    fresh = tmp_path / "fresh"
    _publish(url, fresh)
    assert tree(site) == tree(fresh)
    (old,) = [v for v in before[bench_id(zero)][0] if v[1] == STEP_AT]
    (new,) = [v for v in after[bench_id(zero)][0] if v[1] == STEP_AT]
    assert old[2:4] == ["regressed", "confirmed"] and new[2:4] != old[2:4]
    assert tuple(new[2:4]) == _cli(url, shas[STEP_AT - 1], shas[STEP_AT])[zero]
    shutil.rmtree(fresh)
