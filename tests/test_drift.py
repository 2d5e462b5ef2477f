"""Drift since a baseline (issue 59): a real git repository tagged at a release, asv results of its commits imported
into a real store (SQLite, PostgreSQL with MMTRACK_TEST_PG), ``detect``/``update``/``publish --baseline``."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from test_store_support import store_url  # noqa: F401

from benchmarks.synthetic_history import write_asv_results
from mmtrack.analysis.drift import SeriesDrift, series_drift
from mmtrack.measure.metrics import Direction, MetricFormat
from mmtrack.publish import SiteConfig
from mmtrack.publish.model import SiteModel
from mmtrack.results import CommitInfo, Measurement, MetricKey, SeriesKey, SeriesPoint

N_COMMITS = 40
RELEASE = 10  # the commit tagged v1.0
STEPS = (15, 20, 25, 30)  # each a 3% move the worse way: under the 5% threshold alone, 12.6% together
THRESHOLD = "0.05"
TIME = MetricKey("timing", "time_per_op", "s")
BANDWIDTH = MetricKey("custom", "bandwidth", "GiB/s")  # higher is better
#: How the series read back from asv (a custom metric becomes a track_ benchmark's value)
CREEP, FALLING, FLAT = (("suite.Creep.time_creep", "time_per_op"), ("suite.Creep.track_time_creep_custom_bandwidth",
                        "value"), ("suite.Flat.time_flat", "time_per_op"))


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def tagged_repo(root: Path) -> list[CommitInfo]:
    """A git repository of ``N_COMMITS`` commits, a day apart, the ``RELEASE``-th tagged v1.0."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    start = datetime(2026, 1, 1, 12, tzinfo=timezone.utc)
    commits = []
    for i in range(N_COMMITS):
        date = start + timedelta(days=i)
        git(repo, "commit", "-q", "--allow-empty", "-m", f"change {i}", date=date.isoformat())
        commits.append(CommitInfo(git(repo, "rev-parse", "HEAD"), date, f"change {i}"))
    git(repo, "tag", "v1.0", commits[RELEASE].sha)
    return commits


def levels(drifting: bool, better_when_higher: bool = False) -> np.ndarray:
    out = np.ones(N_COMMITS)
    if drifting:
        for at in STEPS:
            out[at:] *= 1 / 1.03 if better_when_higher else 1.03
    return out


def drift_model(commits: list[CommitInfo], seed: int = 5) -> SiteModel:
    """Three series: one time that creeps up in small steps, one bandwidth that creeps down, one flat time."""
    rng = np.random.default_rng(seed)
    plan = {("suite.Creep.time_creep", TIME, Direction.LOWER): levels(True) * 2e-4,
            ("suite.Creep.time_creep", BANDWIDTH, Direction.HIGHER): levels(True, better_when_higher=True) * 12.0,
            ("suite.Flat.time_flat", TIME, Direction.LOWER): levels(False) * 5e-4}
    series = {}
    for (bench, metric, direction), level in plan.items():
        values = level * (1 + rng.normal(0, 0.004, N_COMMITS))
        key = SeriesKey("ci-linux-x86", "virtualenv-py3.12", bench, "{}", metric)
        series[key] = [SeriesPoint(c, i + 1, Measurement(
            benchmark=bench, params={}, metric=metric, direction=direction, median=float(v), q1=float(v) * 0.99,
            q3=float(v) * 1.01, count=10, format=MetricFormat.NUMBER)) for i, (c, v) in enumerate(zip(commits, values))]
    return SiteModel(series=series, commits=commits, config=SiteConfig())


@pytest.fixture
def project(tmp_path: Path):
    """(repository, results folder, SQLite URL of the imported store, commits)."""
    commits = tagged_repo(tmp_path)
    results = tmp_path / "results"
    write_asv_results(results, drift_model(commits))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    imported = run_cli("import-asv", str(results), "--db", db)
    assert imported.returncode == 0, imported.stderr
    return tmp_path / "repo", results, db, commits


def drift_of(report: dict) -> dict[tuple[str, str], dict]:
    return {(s["benchmark"], s["metric"]): s for s in report["drift"]["series"]}


def test_small_steps_that_add_up_drift_and_a_flat_series_does_not(project):
    repo, _, db, _ = project
    out = run_cli("detect", "--db", db, "--repo", str(repo), "--baseline", "v1.0", "--min-effect", THRESHOLD,
                  "--format", "json", "--no-progress")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    drift = drift_of(report)
    creep, falling, flat = drift[CREEP], drift[FALLING], drift[FLAT]
    assert creep["verdict"] == "drifted" and 1.08 < creep["ratio"] < 1.18 and creep["low"] > 1.0
    assert falling["verdict"] == "drifted" and 0.85 < falling["ratio"] < 0.93  # higher is better: a fall drifts
    assert flat["verdict"] == "within" and flat["low"] < 1.0 < flat["high"]
    assert report["drift"]["drifted"] == 2 and report["drift"]["threshold"] == 0.05
    assert report["drift"]["summary"].startswith("drift since v1.0 (")
    # No change point detect reports on the creeping series is as large as the drift it adds up to
    steps = [c["ratio"] for s in report["series"] if s["benchmark"] == "suite.Creep.time_creep" for c in s["changes"]]
    assert all(abs(np.log(r)) < abs(np.log(creep["ratio"])) for r in steps)


def test_a_baseline_after_the_last_step_sees_no_drift_and_the_table_says_so(project):
    repo, _, db, commits = project
    out = run_cli("detect", "--db", db, "--repo", str(repo), "--baseline", commits[33].sha[:10], "--min-effect",
                  THRESHOLD, "--fail-on", "drift", "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"drift since {commits[33].sha[:10]}: 0 of 3 series beyond 5%" in out.stdout


def test_fail_on_drift_exits_1_when_a_series_drifted_and_names_the_worst(project):
    repo, _, db, _ = project
    out = run_cli("detect", "--db", db, "--repo", str(repo), "--baseline", "v1.0", "--min-effect", THRESHOLD,
                  "--fail-on", "drift", "--no-progress")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 of 3 series beyond 5%, worst" in out.stdout and "time_creep" in out.stdout
    flat_only = run_cli("detect", "--db", db, "--repo", str(repo), "--baseline", "v1.0", "--min-effect", THRESHOLD,
                        "--fail-on", "drift", "-b", "Flat", "--no-progress")
    assert flat_only.returncode == 0, flat_only.stdout + flat_only.stderr


@pytest.mark.parametrize("args, said", [
    (("--baseline", "v9.9"), "--baseline v9.9: no commit in git"),
    (("--baseline", "deadbeef"), "--baseline deadbeef: commit 'deadbeef' is not in the store"),
    (("--fail-on", "drift"), "--fail-on drift needs a baseline: add --baseline REF"),
    (("--baseline", "v1.0", "--min-effect", "-1"), "--min-effect -1 is out of range"),
    (("--baseline=--output=x",), "--baseline '--output=x': not a ref"),
])
def test_an_unknown_baseline_or_a_drift_gate_without_one_is_one_line_and_exit_2(project, args, said):
    repo, _, db, _ = project
    out = run_cli("detect", "--db", db, "--repo", str(repo), "--no-progress", *args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr


def test_without_a_repository_the_baseline_is_a_stored_commit_and_a_tag_is_refused(project, tmp_path):
    _, _, db, commits = project
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    by_sha = run_cli("detect", "--db", db, "--baseline", commits[RELEASE].sha[:12], "--min-effect", THRESHOLD,
                     "--format", "json", "--no-progress", cwd=outside)
    assert by_sha.returncode == 0, by_sha.stderr
    assert json.loads(by_sha.stdout)["drift"]["drifted"] == 2
    by_tag = run_cli("detect", "--db", db, "--baseline", "v1.0", "--no-progress", cwd=outside)
    assert by_tag.returncode == 2 and "--baseline v1.0: no commit in the store is named so" in by_tag.stderr


def test_help_offers_drift_and_baseline_only_where_the_gate_accepts_them():
    for verb, has in (("detect", True), ("update", True), ("compare", False), ("run", False), ("bench", False)):
        text = run_cli(verb, "--help").stdout
        assert ("drift:" in text) is has and ("--baseline" in text) is has, verb
    assert "--baseline" in run_cli("publish", "--help").stdout
    refused = run_cli("compare", "a", "b", "--fail-on", "drift")
    assert refused.returncode == 2 and "gives no 'drift' verdict" in refused.stderr


def test_update_fails_on_drift_and_the_regressions_page_shows_it(project, tmp_path):
    repo, results, db, _ = project
    site = tmp_path / "site"
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    out = run_cli("update", str(results), "-o", str(site), "--db", fresh, "--baseline", "v1.0", "--min-effect",
                  THRESHOLD, "--fail-on", "drift", cwd=repo)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "drift since v1.0" in out.stdout and "2 of 3 series beyond 5%" in out.stdout
    page = (site / "regressions.html").read_text()
    assert "<h2>Drift since v1.0</h2>" in page and page.count('data-verdict="drifted"') == 2
    plain = run_cli("publish", "-o", str(tmp_path / "plain"), "--db", db)
    assert plain.returncode == 0 and "drift-section" not in (tmp_path / "plain" / "regressions.html").read_text()
    lone = run_cli("publish", "-o", str(tmp_path / "plain"), "--db", db, "--min-effect", "0.1")
    assert lone.returncode == 2 and "add --baseline REF" in lone.stderr
    blind = run_cli("update", str(results), "-o", str(site), "--db", fresh, "--no-detect", "--baseline", "v1.0")
    assert blind.returncode == 2 and "drop --no-detect" in blind.stderr


def test_drift_on_the_store_backends_and_a_dismissed_series_leaves_the_gate(tmp_path, store_url):  # noqa: F811
    from mmtrack.commands.detect import DetectRequest, run_detect
    from mmtrack.store.asv_import import import_asv_results
    from mmtrack.store.db import open_store

    commits = tagged_repo(tmp_path)
    write_asv_results(tmp_path / "results", drift_model(commits, seed=9))
    store = open_store(store_url)
    try:
        import_asv_results(store, tmp_path / "results")
    finally:
        store.close()
    request = DetectRequest(db=store_url, baseline="v1.0", repo=str(tmp_path / "repo"), min_effect=0.05,
                            fail_on=("drift",))
    outcome = run_detect(request)
    assert {(d.series.benchmark, d.series.metric.name) for d in outcome.drift.drifted} == {CREEP, FALLING}
    assert outcome.exit_code == 1
    # The drift's steps formed alerts; marked invalid and won't fix, their series no longer fail the gate
    from mmtrack.commands.alerts import triage_alert

    alerts = [a for a in outcome.alerts if a.kind == "regression"]
    assert {(s.series.benchmark, s.series.metric.name) for a in alerts for s in a.series} == {CREEP, FALLING}
    triage_alert(store_url, alerts[0].id, "invalid", "runner noise", who="ci")
    assert run_detect(request).exit_code == 1  # the other series still drifted
    triage_alert(store_url, alerts[1].id, "wontfix", "accepted", who="ci")
    again = run_detect(request)
    assert again.exit_code == 0 and len(again.drift.drifted) == 2 and all(d.dismissed for d in again.drift.drifted)
    assert "(2 in alerts marked invalid or won't fix)" in again.drift.summary()


def test_a_baseline_a_series_did_not_measure_or_across_a_code_change_is_unknown():
    key = SeriesKey("m", "e", "b", "{}", TIME)
    shas = [f"{i:040x}" for i in range(30)]
    values = list(1e-3 * (1 + np.random.default_rng(1).normal(0, 0.01, 30)))
    missing = series_drift(key, shas, values, [None] * 30, Direction.LOWER, "f" * 40, 0.05)
    changed = series_drift(key, shas, values, ["1"] * 20 + ["2"] * 10, Direction.LOWER, shas[5], 0.05)
    same = series_drift(key, shas, values, ["1"] * 30, Direction.LOWER, shas[5], 0.05)
    assert isinstance(missing, SeriesDrift) and (missing.verdict, missing.ratio) == ("unknown", None)
    assert changed.verdict == "unknown" and "code changed" in changed.note
    assert same.verdict == "within" and same.baseline_commits == 6 and same.current_commits == 7


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium; .ci/run does)")
def test_chromium_shows_the_drift_on_the_regressions_page(project, tmp_path):
    from playwright.sync_api import sync_playwright

    repo, _, db, _ = project
    site = tmp_path / "site"
    published = run_cli("publish", "-o", str(site), "--db", db, "--baseline", "v1.0", "--min-effect", THRESHOLD,
                        cwd=repo)
    assert published.returncode == 0, published.stderr
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
        page.goto((site / "index.html").as_uri())
        page.click("nav a[href$='regressions.html']")
        page.wait_for_selector("#drift tbody tr")
        rows = page.eval_on_selector_all("#drift tbody tr", "rs => rs.map(r => [r.dataset.verdict, r.innerText])")
        assert [v for v, _ in rows] == ["drifted", "drifted"]
        assert any("time_creep" in text and "+" in text for _, text in rows)
        assert "2 of 3 series beyond 5%" in page.text_content("#drift-summary")
        page.wait_for_selector("#regressions tr")  # the page's own table still fills beside the section
        browser.close()
    assert problems == []
