"""`mmtrack publish` end to end: real asv results (MetPy) imported into a real SQLite store,
change points saved as detect saves them (by hand, then by `detect` itself), the site published
by the CLI, republished incrementally, and pages checked in Chromium against the store's series.
Set MMTRACK_DOCS_SCREENSHOT=1 to refresh docs/screenshot.png from the detected regression."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mmtrack.store.reads", reason="the store is not merged yet")

from mmtrack.publish import bench_id  # noqa: E402
from mmtrack.publish.fromstore import model_from_store  # noqa: E402
from mmtrack.publish.model import SiteConfig  # noqa: E402
from mmtrack.results import ChangePoint  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
METPY = ROOT / "tests" / "data" / "asv-results" / "metpy"
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
CALL = re.compile(r"^MM\.(\w+)\((.*)\);\n$", re.S)



def mmtrack(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MMTRACK_DB", None)
    return subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def read_call(path: Path) -> list:
    m = CALL.match(path.read_text(encoding="utf-8"))
    assert m, path
    return json.loads("[" + m.group(2) + "]")


@pytest.fixture
def store_url(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{work / 'mmtrack.db'}"
    r = mmtrack("import-asv", str(METPY / "results"), "--db", url, cwd=work)
    assert r.returncode == 0, r.stderr
    return url


def test_publish_from_store_with_stored_change_points(store_url: str, tmp_path: Path) -> None:
    from mmtrack.store import writes
    from mmtrack.store.db import open_store

    store = open_store(store_url)
    try:
        model = model_from_store(store, SiteConfig())
        key = sorted(model.series, key=lambda k: k.benchmark)[0]
        pts = [p for p in model.series[key] if p.measurement.status == "ok"]
        cp = ChangePoint(key, pts[0].measurement.direction, "regression", pts[29].commit.sha, pts[30].commit.sha,
                         pts[29].measurement.median, pts[30].measurement.median,
                         pts[30].measurement.median / pts[29].measurement.median, persists=False, method="test")
        writes.save_change_points(store, [cp])
        n_series = len(model.series)
        expected_points = len(pts)
    finally:
        store.close()

    site = tmp_path / "site"
    args = ("publish", "-o", str(site), "--db", store_url, "--config", str(METPY / "asv.conf.json"))
    r = mmtrack(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.search(rf"published 128 benchmarks, {n_series} series \({n_series} read\), 1 change point to", r.stdout), r.stdout
    info = read_call(site / "data/site.js")[0]
    assert info["title"] == "metpy" and info["commit_url"] == "http://github.com/unidata/metpy/commit/"
    regs = read_call(site / "data/regressions.js")[0]
    assert [(x["bench"], x["after_sha"], x["persists"]) for x in regs] == [(key.benchmark, cp.after_sha, False)]

    again = mmtrack(*args, cwd=tmp_path)
    assert again.returncode == 0 and " 0 files written" in again.stdout, again.stdout
    assert f"{n_series} series (0 read)" in again.stdout, again.stdout  # nothing new: no series read

    bad = mmtrack("publish", "-o", str(site), "--db", store_url, "-b", "no-such-benchmark", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown benchmark 'no-such-benchmark'; nearest:" in bad.stderr, bad.stderr
    bad = mmtrack("publish", "-o", str(site), "--db", store_url, "--machine", "../../etc", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown machine '../../etc'" in bad.stderr, bad.stderr

    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium for the page check")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        page = browser.new_page()
        problems: list[str] = []
        page.on("console", lambda m: m.type == "error" and problems.append(m.text))
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto((site / f"b/{bench_id(key.benchmark)}.html").as_uri())
        page.wait_for_function("document.querySelectorAll('#charts .js-plotly-plot .scatterlayer').length === 1")
        got = page.evaluate("() => { const d = document.querySelector('#charts .js-plotly-plot');"
                            " return [d.data.find(t => t.name === 'median').x.length, d.layout.shapes.length]; }")
        page.screenshot(path=str(tmp_path / "metpy.png"), full_page=True)
        browser.close()
    assert got == [expected_points, 2] and problems == []


def test_detected_changes_on_the_real_history(store_url: str, tmp_path: Path) -> None:
    """detect stores its change points; publish shows each on its chart and on the regressions page."""
    from mmtrack.commands.detect import DetectRequest, run_detect

    outcome = run_detect(DetectRequest(db=store_url))
    assert outcome.stored and outcome.stored == len(outcome.changes)
    site = tmp_path / "site"
    r = mmtrack("publish", "-o", str(site), "--db", store_url, "--config", str(METPY / "asv.conf.json"), cwd=tmp_path)
    assert r.returncode == 0 and f" {outcome.stored} change points" in r.stdout, r.stdout + r.stderr
    rows = read_call(site / "data/regressions.js")[0]
    assert sorted((x["bench"], x["after_sha"], x["kind"]) for x in rows) == sorted(
        (c.series.benchmark, c.after_sha, c.kind) for c in outcome.changes)
    # The benchmark with the largest persisting regression, as the README shows it.
    worst = max((c for c in outcome.changes if c.kind == "regression" and c.persists), key=lambda c: c.ratio)
    n_changes = sum(c.series == worst.series for c in outcome.changes)
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium for the page check")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        page = browser.new_page(viewport={"width": 1200, "height": 640})
        problems: list[str] = []
        page.on("console", lambda m: m.type == "error" and problems.append(m.text))
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto((site / f"b/{bench_id(worst.series.benchmark)}.html").as_uri())
        page.wait_for_function("document.querySelectorAll('#charts .js-plotly-plot .scatterlayer').length === 1")
        shapes = page.evaluate("document.querySelector('#charts .js-plotly-plot').layout.shapes.length")
        assert shapes == 2 * n_changes
        assert page.eval_on_selector_all("#changes tbody tr", "rs => rs.length") == n_changes
        # Hover the first commit of the new level, as a reader would.
        page.evaluate("""sha => { const d = document.querySelector('#charts .js-plotly-plot');
            const i = MM._store.commits.findIndex(c => c[0] === sha);
            Plotly.Fx.hover(d, [{curveNumber: 2, pointNumber: d.data[2].x.indexOf(i)}]); }""", worst.after_sha)
        page.wait_for_timeout(200)
        assert worst.after_sha[:8] in page.text_content(".hoverlayer")
        shot = tmp_path / "screenshot.png"
        page.screenshot(path=str(shot), full_page=True)
        # The regressions page, as the README shows its top: the persisting regressions listed first.
        page.set_viewport_size({"width": 1200, "height": 728})
        page.goto((site / "regressions.html").as_uri())
        page.wait_for_function("document.querySelectorAll('#rows tbody tr, table tbody tr').length > 0")
        listed = page.eval_on_selector_all("table tbody tr", "rs => rs.length")
        regressions = sum(c.kind == "regression" for c in outcome.changes)
        assert listed == regressions, (listed, regressions)  # the page shows regressions by default
        listing = tmp_path / "screenshot-regressions.png"
        page.screenshot(path=str(listing))
        browser.close()
    assert problems == []
    if os.environ.get("MMTRACK_DOCS_SCREENSHOT"):
        (ROOT / "docs").mkdir(exist_ok=True)
        (ROOT / "docs" / "screenshot.png").write_bytes(shot.read_bytes())
        (ROOT / "docs" / "screenshot-regressions.png").write_bytes(listing.read_bytes())


def test_publish_from_the_store_loads_no_scipy(tmp_path: Path) -> None:
    """Reading a site from the store needs no statistics: scipy alone costs about a second."""
    from conftest import cli_env

    code = (
        "import sys; from mmtrack.store import open_store; from mmtrack.publish.model import SiteConfig; "
        "from mmtrack.publish.fromstore import model_from_store; from mmtrack.commands.publish import run_publish; "
        f"model_from_store(open_store('sqlite:///{tmp_path / 'e.db'}'), SiteConfig(title='t')); "
        "print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _compare_json(store_url: str, a: str, b: str, cwd: Path) -> dict:
    r = mmtrack("compare", a, b, "--db", store_url, "--format", "json", cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_compare_page_gives_the_verdicts_of_mmtrack_compare(store_url: str, tmp_path: Path) -> None:
    """The compare page colours exactly the rows `mmtrack compare --format json` calls regressed or
    improved on the same two commits (not every slowdown), and shows the CLI's verdict on each row."""
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store

    store = open_store(store_url)
    try:
        shas = [c.sha for c in q.commits(store)]
    finally:
        store.close()
    # The newest pair of commits on which the CLI flags something (MetPy's last one flags nothing).
    for a, b in reversed(list(zip(shas[-9:-1], shas[-8:]))):
        cli = _compare_json(store_url, a, b, tmp_path)
        if {"regressed", "improved"} & set(cli["counts"]):
            break
    else:
        pytest.fail("no flagged pair among MetPy's newest commits")
    site = tmp_path / "site"
    r = mmtrack("publish", "-o", str(site), "--db", store_url, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium for the page check")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        problems: list[str] = []
        page.on("console", lambda m: m.type == "error" and problems.append(m.text))
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto((site / "compare.html").as_uri() + f"?a={a}&b={b}")
        page.wait_for_function("document.querySelectorAll('#compare tbody tr').length > 0", timeout=30000)
        head = page.eval_on_selector_all("#compare thead th", "hs => hs.map(h => h.textContent)")
        shown = page.eval_on_selector_all(
            "#compare tbody tr", "rs => rs.map(r => [r.className, ...Array.from(r.cells).map(c => c.textContent)])")
        summary = page.text_content("#summary")
        browser.close()
    assert problems == []

    def key(bench: str, params: str, metric: str) -> tuple[str, str, str]:
        return bench, params, metric

    by_case = {
        key(row["benchmark"], ", ".join(f"{k}={v}" for k, v in sorted(row["params"].items())),
            f"{row['metric']['section']}/{row['metric']['name']} [{row['metric']['unit']}]"
            if row["metric"]["section"] else f"{row['metric']['name']} [{row['metric']['unit']}]"): row
        for row in cli["rows"]
    }
    colours = {"regressed": "regression", "improved": "improvement"}
    # By column name: a column no row fills (Params, on this history) is left out of the page.
    cells = [(cls, dict(zip(head, texts))) for cls, *texts in shown]
    page_rows = {key(c["Benchmark"], c.get("Params", ""), c["Metric"]): (cls, c["Verdict"]) for cls, c in cells}
    assert "Params" not in head  # MetPy's benchmarks take no parameters
    assert len(page_rows) == len(shown) == sum(r["after"] is not None and r["before"] is not None
                                               and r["after"]["status"] == "ok" == r["before"]["status"]
                                               for r in cli["rows"])
    assert set(page_rows) <= set(by_case), set(page_rows) - set(by_case)
    for case, (cls, verdict) in page_rows.items():
        row = by_case[case]
        assert cls == colours.get(row["verdict"], ""), (case, cls, row["verdict"])
        state = f" ({row['state']})" if row["state"] and row["verdict"] in colours else ""
        assert verdict == row["verdict"] + state, (case, verdict, row["verdict"])
    flagged = {c for c, row in by_case.items() if row["verdict"] in colours}
    assert flagged and flagged == {c for c, (cls, _) in page_rows.items() if cls}
    n = sum(cli["counts"].get(v, 0) for v in colours)
    assert f"{cli['counts'].get('regressed', 0)} regressed, {cli['counts'].get('improved', 0)} improved" in summary, summary
    assert n == len(flagged)
    # Listed as the CLI lists them: by verdict (regressed, ambiguous, improved, ..., unchanged), then worst first.
    from mmtrack.analysis.policy import VERDICT_ORDER

    order = [VERDICT_ORDER.index(c["Verdict"].split(" (")[0] or "unchanged") for _cls, c in cells]
    assert order == sorted(order) and len(set(order)) > 1, order
    assert "by verdict, then worst change first" in summary
