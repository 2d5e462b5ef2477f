"""Empty states explain themselves: with fewer commits than `mmtrack detect` needs, `detect` and the regressions page
say how many it needs and how many there are, and the page's counts add up."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, cli_env, run_cli

METPY = REPO / "tests" / "data" / "asv-results" / "metpy" / "results"
CHROMIUM = Path("/usr/bin/chromium")


def four_commits_of_metpy(tmp_path: Path) -> Path:
    """The first four results files of MetPy's real history (tests/data), as an asv results folder."""
    results = tmp_path / "results"
    machine = next(p for p in sorted(METPY.iterdir()) if p.is_dir())
    (results / machine.name).mkdir(parents=True)
    shutil.copy(METPY / "benchmarks.json", results)
    shutil.copy(machine / "machine.json", results / machine.name)
    for f in sorted(p for p in machine.glob("*.json") if p.name != "machine.json")[:4]:
        shutil.copy(f, results / machine.name)
    return results


def test_detect_with_four_commits_says_it_needs_eight(tmp_path):
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert run_cli("import-asv", str(four_commits_of_metpy(tmp_path)), "--db", db, "--no-progress").returncode == 0
    proc = run_cli("detect", "--db", db, "--no-progress", env=cli_env(COLUMNS="400"))
    assert proc.returncode == 0, proc.stderr
    assert "fewer than 8 commits, the longest has 4 commits: measure 4 more" in proc.stdout, proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists() and not os.environ.get("CI"), reason="needs Debian's chromium")
def test_the_regressions_page_says_what_detect_needs_and_its_counts_add_up(tmp_path):
    from playwright.sync_api import sync_playwright

    from benchmarks.synthetic_history import synthetic_model
    from mmtrack.publish import build_site

    model = dataclasses.replace(synthetic_model(2, 4, 1, seed=3), change_points=[])
    build_site(model, tmp_path / "site")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.goto((tmp_path / "site" / "regressions.html").as_uri())
        page.wait_for_function("document.getElementById('summary').textContent.length > 0", timeout=20000)
        summary = page.inner_text("#summary")
        browser.close()
    assert summary.startswith("0 of 0 rows shown: 0 change points found by mmtrack detect, 0 verdicts"), summary
    assert "mmtrack detect needs 8 commits of a series and this site has 4 commits: measure 4 more" in summary
