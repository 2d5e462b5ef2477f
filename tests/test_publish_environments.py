"""The pages say which machine and environment a row belongs to, open on the per-commit history, keep the code
version label off the legend, and show the A/B confirmation of a regression (issue 45). Real Chromium."""

from __future__ import annotations

import dataclasses
import os

import pytest
from test_publish_browser import CHROMIUM, browser, open_page, page, read_regressions, wait_charts  # noqa: F401

from mmtrack.publish import bench_id, build_site
from benchmarks.synthetic_history import synthetic_model
from mmtrack.results import RunVerdict

AB_ENV = "ab-py3.11"  # sorts before asv's environment name: the page used to open on it

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"),
                       reason="needs Debian's chromium (apt-get install chromium; .ci/run does)"),
]


def _with_ab_runs(model):
    """The model plus its last two commits measured again A/B (as `continuous` stores them), a change point in
    both environments, a new code version near the newest commit, and `run --confirm`'s verdict on the last one."""
    series, changes = dict(model.series), list(model.change_points)
    n = len(model.commits)
    for key, points in model.series.items():
        series[key] = [dataclasses.replace(p, measurement=dataclasses.replace(
            p.measurement, version="v1" if i < n - 3 else "v2")) for i, p in enumerate(points)]
        series[dataclasses.replace(key, environment=AB_ENV)] = list(points[-2:])
    for cp in model.change_points:
        changes.append(dataclasses.replace(cp, series=dataclasses.replace(cp.series, environment=AB_ENV)))
    key = changes[0].series
    before, after = model.commits[-2].sha, model.commits[-1].sha
    run = RunVerdict(key, before, after, "regressed", "suspected", 1.3, 1.0, 1.3, 1e-3)
    ab = {(key, after): {"state": "confirmed", "ratio": 1.31, "p_value": 2e-4, "rounds": 6, "before_sha": before}}
    return dataclasses.replace(model, series=series, change_points=changes, run_verdicts=[run], ab_verdicts=ab)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    model = _with_ab_runs(synthetic_model(1, 40, 1, seed=3, step_every=1))
    out = tmp_path_factory.mktemp("envsite")
    build_site(model, out)
    return out, model


def _table(pg, selector: str) -> list[dict[str, str]]:
    head = pg.eval_on_selector_all(f"{selector} thead th", "ths => ths.map(t => t.textContent)")
    rows = pg.eval_on_selector_all(f"{selector} tbody tr",
                                   "rs => rs.map(r => Array.from(r.children).map(td => td.textContent))")
    return [dict(zip(head, r)) for r in rows]


def test_the_regressions_page_names_each_rows_environment_and_shows_the_ab_confirmation(site, page):
    out, model = site
    open_page(page, out, "regressions.html")
    page.select_option("#kind", "")
    page.wait_for_selector("#regressions tbody tr")
    rows = _table(page, "#regressions")
    assert {r["Environment"] for r in rows} == {"virtualenv-py3.12", AB_ENV}
    confirmed = [r for r in rows if r.get("A/B", "").startswith("confirmed")]
    assert len(confirmed) == 1 and "mmtrack run" in confirmed[0]["Found by"], rows
    assert "+31.0%" in confirmed[0]["A/B"] and "6 rounds" in confirmed[0]["A/B"]
    assert page.problems == []


def test_one_environment_needs_no_environment_column(tmp_path, page):
    out = tmp_path / "site"
    build_site(synthetic_model(1, 40, 1, seed=3, step_every=1), out)
    open_page(page, out, "regressions.html")
    page.wait_for_selector("#regressions tbody tr")
    assert "Environment" not in page.eval_on_selector_all("#regressions thead th", "ths => ths.map(t => t.textContent)")


def test_the_benchmark_page_opens_on_the_per_commit_history_and_lists_environments(site, page):
    out, model = site
    bench = model.benchmarks()[0]
    open_page(page, out, f"b/{bench_id(bench)}.html")
    (chart,) = wait_charts(page, 1)
    assert chart["points"] == 40
    assert page.eval_on_selector("select[data-dim='env']", "s => s.value") == "virtualenv-py3.12"
    assert {r["Environment"] for r in _table(page, "#changes")} == {"virtualenv-py3.12", AB_ENV}
    assert page.problems == []


def test_the_code_version_label_stays_off_the_legend(site, page):
    out, model = site
    open_page(page, out, f"b/{bench_id(model.benchmarks()[0])}.html")
    wait_charts(page, 1)
    boxes = page.evaluate("""() => {
      const d = document.querySelector('#charts .js-plotly-plot');
      const r = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
      const label = Array.from(d.querySelectorAll('.annotation')).find(a => a.textContent.includes('code version'));
      return { label: r(label), legend: r(d.querySelector('.legend')) };
    }""")
    (l1, t1, r1, b1), (l2, t2, r2, b2) = boxes["label"], boxes["legend"]
    assert r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1, boxes


def test_the_compare_page_names_the_environment_of_each_row(site, page):
    out, model = site
    a, b = model.commits[-2].sha, model.commits[-1].sha
    page.goto((out / "compare.html").as_uri() + f"?a={a[:10]}&b={b[:10]}")
    page.wait_for_function("document.querySelectorAll('#compare tbody tr').length > 1", timeout=20000)
    assert {r["Environment"] for r in _table(page, "#compare")} == {"virtualenv-py3.12", AB_ENV}
    assert page.problems == []
