"""The published site in real headless Chromium, opened from file://.

Checks: no console errors, every chart drawn with the right number of points,
the params selector redraws, a click shows the commit link, hostile names
execute nothing. Screenshots go to the tests' tmp folders.
"""

from __future__ import annotations

import os

import dataclasses
import json
import re
from pathlib import Path
from typing import Iterator

import pytest

from mmtrack.measure.metrics import Direction
from mmtrack.publish import SiteConfig, bench_id, build_site
from benchmarks.synthetic_history import synthetic_model
from mmtrack.results import ChangePoint, CommitInfo, Measurement, MetricKey, SeriesKey, SeriesPoint, canonical_params

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
EVIL = "<img src=x onerror=alert(1)>"
EVIL_MACHINE = "</script><script>alert(2)</script>"
EVIL_PARAM = "\"><svg onload=alert(3)>"
EVIL_MSG = "<img src=x onerror=alert(4)> & </script>"
COMMIT_URL = "https://github.com/example/project/commit/"

pytestmark = [
    pytest.mark.slow,
    # Skipped on a developer machine without Chromium, never in CI (.ci/run installs it).
    pytest.mark.skipif(
        not CHROMIUM.exists() and not os.environ.get("CI"),
        reason="needs Debian's chromium (apt-get install chromium; .ci/run does)",
    ),
]


def _evil_series(commits: list[CommitInfo]) -> tuple[dict, list[ChangePoint]]:
    metric = MetricKey("custom", "<b>bold</b>", "s<script>")
    series = {}
    for pv in ("1", EVIL_PARAM):
        key = SeriesKey(EVIL_MACHINE, "env", EVIL, canonical_params({"n": pv}), metric)
        series[key] = [
            SeriesPoint(c, i, Measurement(EVIL, {"n": pv}, metric, Direction.LOWER, median=1.0 + (i > 10), q1=0.9, q3=1.2,
                                 version="<b>v1" if i < 100 else "<b>v2"))
            for i, c in enumerate(commits)
        ]
    key = next(iter(series))
    cp = ChangePoint(key, Direction.LOWER, "regression", commits[10].sha, commits[11].sha, 1.0, 2.0, 2.0, method=EVIL)
    return series, [cp]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, object]:
    cfg = SiteConfig(title="mmtrack demo", commit_url=COMMIT_URL, chunk_size=64)
    model = synthetic_model(
        6, 150, 5, seed=7, params={"n": ("1000", "100000"), "dtype": ("float32", "float64")},
        machines=("ci-linux-x86", "ci-arm64"), config=cfg,
    )
    commits = list(model.commits)
    commits[-1] = dataclasses.replace(commits[-1], message=EVIL_MSG)
    swap = {commits[-1].sha: commits[-1]}
    series = {k: [dataclasses.replace(p, commit=swap.get(p.commit.sha, p.commit)) for p in v] for k, v in model.series.items()}
    # A gap: a failed run leaves one commit out of one series.
    gap_key = sorted(series, key=lambda k: (k.benchmark, k.machine, k.environment, k.params, k.metric))[0]
    pts = series[gap_key]
    series[gap_key] = [*pts[:5], dataclasses.replace(pts[5], measurement=dataclasses.replace(pts[5].measurement, status="failed")), *pts[6:]]
    evil, evil_cps = _evil_series(commits)
    series.update(evil)
    model = dataclasses.replace(model, commits=commits, series=series, change_points=[*model.change_points, *evil_cps])
    out = tmp_path_factory.mktemp("site")
    build_site(model, out)
    return out, model


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, tmp_path) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    pg.problems = []  # type: ignore[attr-defined]
    pg.on("console", lambda m: m.type in ("error", "warning") and pg.problems.append(f"console {m.type}: {m.text}"))
    pg.on("pageerror", lambda e: pg.problems.append(f"pageerror: {e}"))
    pg.on("dialog", lambda d: (pg.problems.append(f"dialog: {d.message}"), d.dismiss()))
    pg.on("request", lambda r: not r.url.startswith("file://") and pg.problems.append(f"network: {r.url}"))
    yield pg
    ctx.close()


def open_page(pg, site: Path, rel: str, shot: Path | None = None) -> None:
    pg.goto((site / rel).as_uri())
    pg.wait_for_load_state("load")


CHARTS_JS = """() => Array.from(document.querySelectorAll('#charts .js-plotly-plot')).map(d => ({
  series: +d.getAttribute('data-series'),
  points: d.data.find(t => t.name === 'median').x.length,
  drawn: d.querySelectorAll('.scatterlayer .trace .points path').length,
  shapes: (d.layout.shapes || []).length,
}))"""


def wait_charts(pg, n: int) -> list[dict]:
    pg.wait_for_function(f"document.querySelectorAll('#charts .js-plotly-plot .scatterlayer').length === {n}", timeout=20000)
    return pg.evaluate(CHARTS_JS)


def read_regressions(site: Path) -> list[dict]:
    text = (site / "data/regressions.js").read_text()
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def series_of(model, bench: str) -> list[SeriesKey]:
    return sorted((k for k in model.series if k.benchmark == bench), key=lambda k: (k.machine, k.environment, k.params, k.metric))


def ok_points(model, key: SeriesKey) -> int:
    return sum(1 for p in model.series[key] if p.measurement.status == "ok")


def test_index_lists_filters_and_searches(site, page, tmp_path) -> None:
    out, model = site
    open_page(page, out, "index.html")
    page.wait_for_selector("#benchmarks tbody tr")
    names = page.eval_on_selector_all("#benchmarks tbody a.bench-link", "as => as.map(a => a.textContent)")
    assert names == sorted(model.benchmarks())
    # A name may break after each dot and underscore (one <wbr> per break), and reads as itself.
    breaks = page.eval_on_selector_all("#benchmarks tbody a.bench-link", "as => as.map(a => a.querySelectorAll('wbr').length)")
    assert breaks == [sum(name[:-1].count(c) for c in "._") for name in names]
    page.fill("#search", "linalg")
    assert page.eval_on_selector_all("#benchmarks tbody tr", "rs => rs.length") == sum("linalg" in b for b in model.benchmarks())
    page.fill("#search", "")
    page.select_option("#machine", EVIL_MACHINE)
    assert page.eval_on_selector_all("#benchmarks tbody a.bench-link", "as => as.map(a => a.textContent)") == [EVIL]
    page.select_option("#machine", "")
    page.select_option("#sort", "size")
    first = page.eval_on_selector("#benchmarks tbody a.bench-link", "a => a.textContent")
    assert first == EVIL  # its change (x2.0) is the largest
    page.select_option("#sort", "name")
    page.check("#only-changes")
    with_changes = {cp.series.benchmark for cp in model.change_points}
    assert set(page.eval_on_selector_all("#benchmarks tbody a.bench-link", "as => as.map(a => a.textContent)")) == with_changes
    page.screenshot(path=str(tmp_path / "index.png"), full_page=True)
    assert page.problems == []


def test_benchmark_page_draws_every_metric_with_all_points(site, page, tmp_path) -> None:
    out, model = site
    bench = sorted(b for b in model.benchmarks() if b != EVIL)[0]
    keys = series_of(model, bench)
    open_page(page, out, f"b/{bench_id(bench)}.html")
    charts = wait_charts(page, 5)
    assert page.text_content("h1") == bench
    for c in charts:
        key = keys[c["series"]]
        assert (key.machine, key.params) == (keys[0].machine, keys[0].params)
        assert c["points"] == ok_points(model, key) and c["drawn"] == c["points"]
    assert sorted(c["points"] for c in charts)[0] == 149  # the series with one failed run
    # Change points are drawn as a shaded range plus a line.
    assert all(c["shapes"] == 2 * sum(cp.series == keys[c["series"]] for cp in model.change_points) for c in charts)
    page.screenshot(path=str(tmp_path / "benchmark.png"), full_page=True)

    # The params selector redraws the charts for the chosen case.
    page.select_option("select[data-dim='p:n']", "100000")
    page.select_option("select[data-dim='machine']", "ci-arm64")
    page.wait_for_function("Array.from(document.querySelectorAll('#charts .js-plotly-plot')).every(d => d.data)")
    charts = wait_charts(page, 5)
    for c in charts:
        key = keys[c["series"]]
        assert key.machine == "ci-arm64" and '"n":"100000"' in key.params and c["points"] == ok_points(model, key)

    # The choice is kept in the URL: a reload (or a shared link) shows the same case.
    assert "machine=ci-arm64" in page.evaluate("location.hash")
    page.reload()
    for c in wait_charts(page, 5):
        assert keys[c["series"]].machine == "ci-arm64" and '"n":"100000"' in keys[c["series"]].params

    # By date: the same points, placed at their commit dates.
    page.check("#by-date")
    page.wait_for_function("document.querySelector('#charts .js-plotly-plot').layout.xaxis.type === 'date'")
    first_x = page.evaluate("document.querySelector('#charts .js-plotly-plot').data[2].x[0]")
    assert first_x == model.commits[0].date.isoformat(timespec="seconds")
    assert [c["points"] for c in wait_charts(page, 5)] == [c["points"] for c in charts]
    assert "x=date" in page.evaluate("location.hash")
    page.uncheck("#by-date")
    wait_charts(page, 5)

    # A click on a point shows its commit with a link through the configured URL.
    page.evaluate("() => { const d = document.querySelector('#charts .js-plotly-plot');"
                  " const t = d.data.findIndex(t => t.name === 'median');"
                  " d.emit('plotly_click', {points: [{data: d.data[t], pointIndex: 3}]}); }")
    sha = model.commits[3].sha
    assert page.get_attribute("#commit-detail a", "href") == COMMIT_URL + sha
    assert sha in page.text_content("#commit-detail")
    assert page.problems == []


def test_regressions_page(site, page, tmp_path) -> None:
    out, model = site
    open_page(page, out, "regressions.html")
    page.wait_for_selector("#regressions tbody tr")
    regs = [cp for cp in model.change_points if cp.kind == "regression"]
    assert page.eval_on_selector_all("#regressions tbody tr", "rs => rs.length") == len(regs)
    # Cells by their column's name: an Environment column joins where the rows come from several (issue 45).
    head = page.eval_on_selector_all("#regressions thead th", "ths => ths.map(t => t.textContent)")
    assert "Environment" in head  # this site's rows come from two environments
    cells = page.eval_on_selector_all("#regressions tbody tr:first-child td", "tds => tds.map(t => t.textContent)")
    first = dict(zip(head, cells))
    assert re.fullmatch(r"regression [+-]\d+\.\d%", first["Change"]) and first["Persists"] in ("yes", "no")
    # Before → after in one scaled unit with 4 significant digits, not seconds rounded to 3 decimals.
    cells = page.eval_on_selector_all(f"#regressions tbody tr td:nth-child({head.index('Before → after') + 1})",
                                      "tds => tds.map(t => t.textContent)")
    timed = [c for c in cells if re.search(r" (ns|µs|ms|s) → ", c)]
    assert timed and all(re.fullmatch(r"\d[\d.]* (ns|µs|ms|s) → \d[\d.]* (ns|µs|ms|s)", c) for c in timed), cells[:5]
    assert not any(re.fullmatch(r"0\.00\d → 0\.00\d s", c) for c in cells)
    hrefs = page.eval_on_selector_all("#regressions tbody tr:first-child a.sha", "as => as.map(a => a.href)")
    assert len(hrefs) == 2 and all(h.startswith(COMMIT_URL) for h in hrefs)
    page.screenshot(path=str(tmp_path / "regressions.png"), full_page=True)
    # A row links to its benchmark page with its case selected and its change drawn.
    row = next(r for r in read_regressions(out) if r["id"] == page.eval_on_selector(
        "#regressions tbody tr:first-child a.bench-link", "a => a.href.split('/b/')[1].slice(0, 16)"))
    page.click("#regressions tbody tr:first-child a.bench-link")
    charts = wait_charts(page, 1 if row["bench"] == EVIL else 5)
    keys = series_of(model, row["bench"])
    assert all((keys[c["series"]].machine, keys[c["series"]].params) == (row["machine"], keys[row["s"]].params) for c in charts)
    assert any(c["series"] == row["s"] and c["shapes"] >= 2 for c in charts)
    assert page.problems == []


def test_compare_page(site, page) -> None:
    out, model = site
    a, b = model.commits[20].sha, model.commits[140].sha
    page.goto((out / "compare.html").as_uri() + f"?a={a[:10]}&b={b[:10]}")
    page.wait_for_function("document.querySelectorAll('#compare tbody tr').length > 0", timeout=20000)
    rows = page.eval_on_selector_all("#compare tbody tr", "rs => rs.length")
    both = sum(1 for v in model.series.values() if {a, b} <= {p.commit.sha for p in v if p.measurement.status == "ok"})
    assert rows == both
    # Another base commit: the URL follows, so the comparison can be shared.
    page.select_option("#commit-a", str(30))
    page.wait_for_function(f"location.search.includes('{model.commits[30].sha}')")
    assert page.problems == []


def test_hostile_names_execute_nothing(site, page, tmp_path) -> None:
    out, model = site
    for rel in ("index.html", f"b/{bench_id(EVIL)}.html", "regressions.html"):
        open_page(page, out, rel)
        page.wait_for_timeout(300)
        if rel.startswith("b/"):
            wait_charts(page, 1)
            assert page.text_content("h1") == EVIL
            page.select_option("select[data-dim='p:n']", EVIL_PARAM)
            wait_charts(page, 1)
            # Hover text holds the commit message as text, not markup.
            page.evaluate("() => { const d = document.querySelector('#charts .js-plotly-plot');"
                          " Plotly.Fx.hover(d, [{curveNumber: 2, pointNumber: d.data[2].x.length - 1}]); }")
            page.wait_for_timeout(200)
            assert "onerror=alert(4)" in (page.text_content(".hoverlayer") or "")
            assert "code version <b>v2" in page.text_content("#charts .annotation")
        else:
            page.wait_for_selector("table tbody tr")
        assert page.evaluate("document.querySelectorAll('main img, main svg[onload], script:not([src])').length") == 0
        page.screenshot(path=str(tmp_path / (rel.replace("/", "_") + ".png")), full_page=True)
    assert page.problems == [], page.problems


UNITS_JS = """() => Array.from(document.querySelectorAll('#charts .js-plotly-plot')).map(d => {
  const t = d.data.find(t => t.name === 'median');
  return { axis: d.layout.yaxis.title.text, title: d.layout.title.text, x: t.x, y: t.y,
           hover: t.customdata.map(c => c[3]), dtick: d.layout.xaxis.dtick };
})"""


def test_y_axis_unit_is_the_hover_unit_and_x_is_the_series_position(site, page) -> None:
    out, model = site
    bench = sorted(b for b in model.benchmarks() if b != EVIL)[0]
    open_page(page, out, f"b/{bench_id(bench)}.html")
    wait_charts(page, 5)
    charts = page.evaluate(UNITS_JS)
    units = set()
    for c in charts:
        for y, hover in zip(c["y"], c["hover"]):
            number, unit = hover.split(" ", 1)
            assert unit == c["axis"], (hover, c["axis"])  # the axis and the hover speak one unit
            assert float(number.replace(",", "")) == pytest.approx(y, rel=1e-3)  # the plotted value is the hovered one
        assert c["x"] == list(range(len(c["x"])))  # the position in this series' own history
        assert isinstance(c["dtick"], int) and c["dtick"] >= 1
        units.add(c["axis"])
    # seconds scaled (2e-4 s -> µs), bytes binary (6.4e7 B -> MiB), not raw SI
    assert "µs" in units and "MiB" in units and "s" not in units and "bytes" not in units
    assert page.problems == []


def test_values_at_or_below_zero_and_beyond_the_float_range_draw(page, tmp_path) -> None:
    """track_ values that step from 0, flip sign or span 1e-300 to 1e300: every page draws them without an error,
    and the index ranks a change that no log can size (a sign flip) first by size."""
    from mmtrack.analysis.series import detect_series
    from mmtrack.publish import SiteModel
    from benchmarks.synthetic_history import synthetic_commits

    commits = synthetic_commits(40, 0)
    shapes = {"track_from_zero": lambda i: 0.0 if i < 20 else 5.0, "track_sign_flip": lambda i: -1.0 if i < 20 else 1.0,
              "track_huge": lambda i: 1e-300 if i < 20 else 1e300, "track_small_step": lambda i: 1.0 if i < 20 else 1.5}
    metric = MetricKey("track", "value", "unit")
    series, changes = {}, []
    for name, shape in shapes.items():
        key = SeriesKey("m1", "env", f"suite.{name}", "{}", metric)
        series[key] = [SeriesPoint(c, i, Measurement(key.benchmark, {}, metric, Direction.LOWER, median=shape(i)))
                       for i, c in enumerate(commits)]
        changes.extend(detect_series(key, series[key]).changes)
    assert len(changes) == 4
    site = tmp_path / "site"
    build_site(SiteModel(series=series, commits=commits, change_points=changes), site)
    open_page(page, site, "index.html")
    page.wait_for_selector("#benchmarks tbody tr")
    page.select_option("#sort", "size")
    names = page.eval_on_selector_all("#benchmarks tbody tr td:first-child", "tds => tds.map(t => t.textContent)")
    assert names[-1] == "suite.track_small_step", names  # the only change a ratio sizes comes last
    open_page(page, site, "regressions.html")
    page.wait_for_selector("#regressions tbody tr")
    assert page.eval_on_selector_all("#regressions tbody tr", "rs => rs.length") == 4
    for name in shapes:
        open_page(page, site, f"b/{bench_id('suite.' + name)}.html")
        assert wait_charts(page, 1)[0]["points"] == 40
    page.goto((site / "compare.html").as_uri() + f"?a={commits[19].sha[:10]}&b={commits[20].sha[:10]}")
    page.wait_for_function("document.querySelectorAll('#compare tbody tr').length === 4", timeout=20000)
    assert page.problems == []


def test_instruction_counts_read_in_the_units_users_expect(page, tmp_path) -> None:
    """callgrind's counts per op on a benchmark page: "1.27 M instr/op" on the axis and in the hovers, beside time."""
    from mmtrack.publish import SiteModel
    from benchmarks.synthetic_history import synthetic_commits

    commits = synthetic_commits(12, 0)
    values = {MetricKey("callgrind", "instructions", "instr/op"): 1.271e6,
              MetricKey("callgrind", "est_cycles", "cycles/op"): 2.2e6, MetricKey("timing", "time_per_op", "s"): 3.1e-4}
    series = {}
    for metric, value in values.items():
        key = SeriesKey("m1", "callgrind-cpython-3.11", "suite.time_parse", "{}", metric)
        series[key] = [SeriesPoint(c, i, Measurement(key.benchmark, {}, metric, Direction.LOWER, median=value * (1 + i / 1000)))
                       for i, c in enumerate(commits)]
    site = tmp_path / "site"
    build_site(SiteModel(series=series, commits=commits, change_points=[]), site)
    open_page(page, site, f"b/{bench_id('suite.time_parse')}.html")
    wait_charts(page, 3)
    charts = page.evaluate(UNITS_JS)
    assert {c["axis"] for c in charts} == {"M instr/op", "M cycles/op", "µs"}
    instructions = next(c for c in charts if c["axis"] == "M instr/op")
    assert instructions["hover"][0].startswith("1.27") and instructions["hover"][0].endswith(" M instr/op")
    assert page.problems == []


def test_a_regressed_count_links_both_commits_kept_callgrind_profiles(page, tmp_path) -> None:
    """`run --instrument callgrind` keeps a profile per case per commit: the regressions page links both sides'."""
    from mmtrack.publish import SiteModel
    from benchmarks.synthetic_history import synthetic_commits
    from mmtrack.results import RunVerdict

    commits = synthetic_commits(3, 0)
    metric = MetricKey("callgrind", "instructions", "instr/op")
    key = SeriesKey("m1", "callgrind-cpython-3.11", "suite.time_parse", "{}", metric)
    values = [1.0e6, 1.0e6, 1.01e6]
    series = {key: [SeriesPoint(c, i, Measurement(key.benchmark, {}, metric, Direction.LOWER, median=v))
                    for i, (c, v) in enumerate(zip(commits, values))]}
    kept = tmp_path / "profiles"
    for c, v in zip(commits, values):  # the header callgrind writes, and one function's self cost
        (kept / c.sha).mkdir(parents=True)
        (kept / c.sha / "suite.time_parse.64ops.callgrind.out").write_text(
            f"# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfn=parse\n1 {int(v * 64)}\n"
            f"summary: {int(v * 64)}\n")
    verdict = RunVerdict(key, commits[1].sha, commits[2].sha, "regressed", "confirmed", 1.01, 1.0e6, 1.01e6)
    site = tmp_path / "site"
    build_site(SiteModel(series=series, commits=commits, run_verdicts=[verdict],
                         config=SiteConfig(profiles=kept)), site)
    open_page(page, site, "regressions.html")
    page.wait_for_selector("#regressions tbody tr .profiles a")
    hrefs = page.eval_on_selector_all("#regressions .profiles a", "as => as.map(a => a.href)")
    assert len(hrefs) == 2
    for href, commit in zip(hrefs, commits[1:]):
        copied = Path(href.removeprefix("file://"))
        assert copied.is_relative_to(site) and commit.sha in href  # copied into the site: the site stays whole
        assert copied.read_bytes() == (kept / commit.sha / "suite.time_parse.64ops.callgrind.out").read_bytes()
    assert page.problems == []


def test_a_benchmark_page_links_the_kept_callgrind_profile_of_each_point(page, tmp_path) -> None:
    """`run` keeps a profile per commit, `bench` per saved run: the benchmark page lists the chosen case's, newest
    first, and a click on a point of any of its counted series links that point's own."""
    from mmtrack.publish import SiteModel
    from benchmarks.synthetic_history import synthetic_commits

    commits = synthetic_commits(4, 0)
    series = {}
    for metric in (MetricKey("callgrind", "instructions", "instr/op"), MetricKey("callgrind", "est_cycles", "cycles/op")):
        key = SeriesKey("m1", "callgrind-cpython-3.11", "suite.time_parse", "{}", metric)
        series[key] = [SeriesPoint(c, 10 + i, Measurement(key.benchmark, {}, metric, Direction.LOWER,
                                                          median=1.0e6 + i)) for i, c in enumerate(commits)]
    kept = tmp_path / "profiles"
    folders = {1: commits[1].sha, 3: "bench-run-13"}  # commit 3's point came from saved bench run 13
    for i, folder in folders.items():
        (kept / folder).mkdir(parents=True)
        (kept / folder / "suite.time_parse.64ops.callgrind.out").write_text(
            f"# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfn=parse\n1 {64 * (i + 1)}\n")
    site = tmp_path / "site"
    build_site(SiteModel(series=series, commits=commits, config=SiteConfig(profiles=kept)), site)
    open_page(page, site, f"b/{bench_id('suite.time_parse')}.html")
    wait_charts(page, 2)
    page.wait_for_selector("#profiles-section:not([hidden]) #profiles a[title]")
    listed = page.eval_on_selector_all("#profiles a[title]", "as => as.map(a => a.href)")
    assert [href.split("/")[-2] for href in listed] == [folders[3], folders[1]]  # newest first
    for href, i in zip(listed, (3, 1)):
        copied = Path(href.removeprefix("file://"))
        assert copied.is_relative_to(site)
        assert copied.read_bytes() == (kept / folders[i] / "suite.time_parse.64ops.callgrind.out").read_bytes()
    # A click on commit 3's point of the est_cycles chart (the case's other counted series) links its profile.
    page.evaluate("() => { const d = Array.from(document.querySelectorAll('#charts .js-plotly-plot'))"
                  ".find(d => d.layout.title.text.includes('est_cycles'));"
                  " const t = d.data.findIndex(t => t.name === 'median');"
                  " d.emit('plotly_click', {points: [{data: d.data[t], pointIndex: 3}]}); }")
    linked = page.get_attribute("#commit-detail .profiles a", "href")
    assert linked.endswith("/bench-run-13/suite.time_parse.64ops.callgrind.out")
    page.evaluate("() => { const d = document.querySelector('#charts .js-plotly-plot');"
                  " const t = d.data.findIndex(t => t.name === 'median');"
                  " d.emit('plotly_click', {points: [{data: d.data[t], pointIndex: 2}]}); }")
    assert page.query_selector("#commit-detail .profiles") is None  # commit 2 kept none
    assert page.problems == []
