"""The alert queue page in real headless Chromium: every alert with its state, the untriaged first (issue 59)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import cli_env, run_cli

from benchmarks.synthetic_history import synthetic_model, write_asv_results
from mmtrack.publish import SiteConfig

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
HOSTILE_NOTE = "<img src=x onerror=alert(1)> runner noise"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"),
                       reason="needs Debian's chromium (apt-get install chromium; .ci/run does)"),
]


def test_chromium_shows_the_alert_queue_with_states_untriaged_first(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    model = synthetic_model(8, 40, 2, seed=3, step_every=2, config=SiteConfig())
    results, site, db = tmp_path / "results", tmp_path / "site", f"sqlite:///{tmp_path / 's.db'}"
    write_asv_results(results, model)
    assert run_cli("update", str(results), "-o", str(site), "--db", db, "--title", "t").returncode == 0
    listed = run_cli("alerts", "list", "--db", db, "--format", "json")
    ids = [a["id"] for a in json.loads(listed.stdout)["alerts"]]
    assert len(ids) == 4
    env = cli_env(USER="erin")
    assert run_cli("alerts", "invalid", ids[0], "-m", HOSTILE_NOTE, "--db", db, env=env).returncode == 0
    assert run_cli("alerts", "ack", ids[1], "--db", db, env=env).returncode == 0
    published = run_cli("publish", "-o", str(site), "--db", db, "--title", "t")
    assert published.returncode == 0, published.stderr

    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
        page.goto((site / "index.html").as_uri())
        page.click("nav a[href$='alerts.html']")  # the queue is one click from every page
        page.wait_for_selector("#alerts tbody tr")
        rows = page.eval_on_selector_all("#alerts tbody tr", "rs => rs.map(r => [r.dataset.alert, r.dataset.state])")
        states = [s for _, s in rows]
        assert states == ["untriaged", "untriaged", "acknowledged", "invalid"]
        assert dict(rows) == {ids[0]: "invalid", ids[1]: "acknowledged", ids[2]: "untriaged", ids[3]: "untriaged"}
        assert "2 untriaged" in page.text_content("#alerts-summary")
        invalid = page.locator(f"tr[data-alert='{ids[0]}']")
        assert HOSTILE_NOTE in invalid.inner_text() and "erin" in invalid.inner_text()  # shown as text, run as nothing
        assert invalid.locator("img").count() == 0
        page.locator(f"tr[data-alert='{ids[2]}'] summary").click()  # the series it holds, with their ratios
        assert page.locator(f"tr[data-alert='{ids[2]}'] li").count() == 2
        page.screenshot(path=str(tmp_path / "alerts.png"), full_page=True)
        browser.close()
    assert problems == []
