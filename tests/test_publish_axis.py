"""The benchmark page in Chromium: the x axis names commits (short sha over date), not positions `0 1 2 3`, and a
long environment name is not cut in its selector."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LONG_ENV = "virtualenv-py3.12-matplotlib-netcdf4-numpy-pandas-pint-pooch-pyproj-scipy-traitlets-xarray"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"),
                                                   reason="needs Debian's chromium")]

AXIS_JS = """() => Array.from(document.querySelectorAll('#charts .js-plotly-plot')).map(d => ({
  vals: d.layout.xaxis.tickvals, text: d.layout.xaxis.ticktext,
  drawn: Array.from(d.querySelectorAll('.xtick text')).map(t => t.textContent)}))"""


def test_the_x_axis_names_commits_and_the_environment_selector_shows_its_name(tmp_path):
    from playwright.sync_api import sync_playwright

    from benchmarks.synthetic_history import synthetic_model
    from mmtrack.publish import bench_id, build_site

    model = synthetic_model(1, 30, 1, seed=5)
    series = {dataclasses.replace(k, environment=LONG_ENV): list(v) for k, v in model.series.items()}
    model = dataclasses.replace(model, series=series, change_points=[])
    build_site(model, tmp_path / "site")
    bench = next(iter(model.benchmarks()))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((tmp_path / "site" / "b" / f"{bench_id(bench)}.html").as_uri())
        page.wait_for_function("document.querySelectorAll('#charts .js-plotly-plot .xtick').length > 0", timeout=20000)
        (axis,) = page.evaluate(AXIS_JS)
        env = page.evaluate("""() => { const s = Array.from(document.querySelectorAll('select'))
            .find(s => Array.from(s.options).some(o => o.value.startsWith('virtualenv')));
            return { title: s.title, width: s.getBoundingClientRect().width, text: s.value }; }""")
        browser.close()
    shas = [c.sha[:8] for c in model.commits]
    assert 2 <= len(axis["vals"]) <= 12 and axis["vals"][0] == 0
    for v, text in zip(axis["vals"], axis["text"]):
        assert text.startswith(shas[v]) and "<br>" in text, (v, text)  # its commit's sha, then its date
    assert any(shas[0] in t for t in axis["drawn"]), axis["drawn"]  # drawn, not only in the layout
    assert env["title"] == LONG_ENV and env["width"] > 500, env  # wider than the old 320 px cap
