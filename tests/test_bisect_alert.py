"""``mmtrack bisect --alert ID`` (issue 59): an alert's range narrowed on this machine, the culprit written on it.

A real git repository holds abpkg over 60 commits; the 32nd triples its work. CI measured every third commit (asv
results written for those commits, as a CI runner named like this machine would have), so ``detect`` finds the step
between the 31st and the 34th commit: an alert over three commits. ``bisect --alert`` builds and measures them with
the real asv, names the 32nd, and writes it on the alert.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from doccheck import REPO, command_blocks
from test_ab import PKG, SUITE, package_project
from test_run_acceptance import MACHINE, asv_env, git
from test_store_support import store_url  # noqa: F401

from benchmarks.synthetic_history import write_asv_results
from mmtrack.analysis.alerts import Alert, AlertSeries
from mmtrack.errors import UserError
from mmtrack.measure.metrics import Direction, MetricFormat
from mmtrack.publish import SiteConfig
from mmtrack.publish.model import SiteModel
from mmtrack.results import CommitInfo, Measurement, MetricKey, SeriesKey, SeriesPoint

N = 60  # commits
STEP = 31  # the index of the commit that triples the work
START = datetime(2026, 1, 1, 12, tzinfo=timezone.utc)
BENCH = "bench_ab.Crunch.time_crunch"
TIME = MetricKey("timing", "time_per_op", "s")
GUIDE = REPO / "docs" / "guide" / "triage.md"


def ci_history(results: Path, shas: list[str], measured: list[int], machine: str = MACHINE,
               steps: tuple[int, ...] = (STEP,)) -> None:
    """asv results of the commits ``measured`` (indexes into ``shas``): time_crunch at 2 ms with a runner's 2% jitter,
    three times that from each index in ``steps`` on (what CI saw, whatever the code did)."""
    rng = np.random.default_rng(5)
    commits = [CommitInfo(sha, START + timedelta(hours=i)) for i, sha in enumerate(shas)]
    key = SeriesKey(machine, "virtualenv-py3.12", BENCH, "{}", TIME)
    points = []
    for i in measured:
        level = 2e-3 * 3.0 ** sum(i >= s for s in steps) * (1 + rng.uniform(-0.02, 0.02))
        points.append(SeriesPoint(commits[i], i + 1, Measurement(BENCH, {}, TIME, Direction.LOWER, median=level,
                                                                 q1=level * 0.99, q3=level * 1.01, count=10,
                                                                 format=MetricFormat.NUMBER)))
    model = SiteModel(series={key: points}, commits=[commits[i] for i in measured], change_points=[],
                      config=SiteConfig())
    write_asv_results(results, model, machine=machine)


def detected_alerts(root: Path, results: Path, env: dict) -> tuple[str, list[dict]]:
    db = f"sqlite:///{root / 'ci.db'}"
    for args in (("import-asv", str(results), "--db", db), ("detect", "--db", db, "--no-progress")):
        proc = run_cli(*args, env=env)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    listed = run_cli("alerts", "list", "--db", db, "--format", "json", env=env)
    return db, json.loads(listed.stdout)["alerts"]


def commit_at(repo: Path, env: dict, message: str, when: datetime) -> str:
    stamp = {"GIT_AUTHOR_DATE": when.isoformat(), "GIT_COMMITTER_DATE": when.isoformat()}
    git(repo, {**env, **stamp}, "add", "-A")
    git(repo, {**env, **stamp}, "commit", "-q", "-m", message)
    return git(repo, env, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """abpkg over 60 commits, three times the work from the 32nd (index 31)."""
    root = tmp_path_factory.mktemp("bisect-alert")
    (root / "home").mkdir()
    env = asv_env(root / "home")
    repo = package_project(root, env, "abpkg", {"bench_ab.py": SUITE})
    shas = []
    for i in range(N):
        work = 20000 if i < STEP else "60000  # three times"
        (repo / "abpkg" / "__init__.py").write_text(PKG.format(work=work) + "#" * (i + 1) + "\n")
        shas.append(commit_at(repo, env, f"commit {i}", START + timedelta(hours=i)))
    return {"repo": repo, "env": env, "shas": shas, "root": root}


def guide_commands(alert_id: str, db: str) -> list[str]:
    """docs/guide/triage.md's bisect block, for this alert and store (the guide's are MetPy's: 29fb, metpy.db)."""
    (block,) = [b for b in command_blocks(GUIDE) if b.marker == "run by tests/test_bisect_alert.py"]
    lines = [c.line for c in block.commands()]
    assert lines == ["mmtrack bisect --alert 29fb --db metpy.db", "mmtrack alerts show 29fb --db metpy.db"]
    return [line.replace("29fb", alert_id[:6]).replace("metpy.db", db) for line in lines]


def run_in_shell(line: str, repo: Path, env: dict) -> subprocess.CompletedProcess:
    """``line`` in bash, ``mmtrack`` meaning this checkout."""
    script = f'mmtrack() {{ "{sys.executable}" -m mmtrack "$@"; }}; {line}'
    return subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=1200)


@pytest.mark.slow
def test_bisect_alert_names_the_culprit_and_writes_it_on_the_alert(project, tmp_path):
    repo, shas, env = project["repo"], project["shas"], project["env"]
    ci_history(tmp_path / "results", shas, list(range(0, N, 3)))
    db, alerts = detected_alerts(tmp_path, tmp_path / "results", env)
    (alert,) = alerts
    assert (alert["before_sha"], alert["after_sha"]) == (shas[30], shas[33])  # three commits: CI measured every third
    assert alert["culprit"] is None
    bisect, show = (run_in_shell(line, repo, env) for line in guide_commands(alert["id"], db))
    assert bisect.returncode == 0, bisect.stdout[-3000:] + bisect.stderr[-3000:]
    assert (f"alert {alert['id']}: culprit {shas[STEP][:12]} (+" in bisect.stdout
            and f"written; `mmtrack alerts show {alert['id']}` shows it" in bisect.stdout), bisect.stdout
    assert show.returncode == 0, show.stderr
    assert f"culprit: {shas[STEP][:12]} (+" in show.stdout, show.stdout
    assert f"bisect on {MACHINE}, wall, 3 of 3 commits measured" in show.stdout, show.stdout
    culprit = json.loads(run_cli("alerts", "show", alert["id"], "--db", db, "--format", "json", env=env).stdout)[
        "culprit"]
    assert culprit["sha"] == shas[STEP] and culprit["benchmark"] == BENCH and culprit["metric"] == "time_per_op"
    assert culprit["ratio"] > 1.5 and culprit["verdict"].startswith("regressed")  # three times the work
    assert culprit["commits_in_range"] == 3 and culprit["commits_measured"] == 3  # GOOD, BAD, the midpoint: bad
    assert (culprit["instrument"], culprit["machine"]) == ("wall", MACHINE) and culprit["at"]
    # the culprit stays on the alert when detection runs again (its id and range unchanged)
    assert run_cli("detect", "--db", db, "--no-progress", env=env).returncode == 0
    again = json.loads(run_cli("alerts", "list", "--db", db, "--format", "json", env=env).stdout)["alerts"]
    assert [(a["id"], a["culprit"]["sha"]) for a in again] == [(alert["id"], shas[STEP])]
    # JSON, the environments built already; -b picks the series, --no-save keeps the A/B runs out, not the culprit
    proc = run_cli("bisect", "--alert", alert["id"], "-b", "time_crunch", "--rounds", "3", "--no-save", "--db", db,
                   "--format", "json", cwd=repo, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    assert found["written"] and found["bisect"]["culprit"] == shas[STEP] and found["commits_in_range"] == 3
    assert found["series"]["benchmark"] == BENCH and found["machine_class"] == MACHINE
    assert found["alert"]["culprit"]["sha"] == shas[STEP] and found["bisect"]["stored_pairs"] == []


def test_a_one_commit_alert_names_its_culprit_without_measuring(project, tmp_path):
    repo, shas, env = project["repo"], project["shas"], project["env"]
    ci_history(tmp_path / "results", shas, list(range(N)))
    db, (alert,) = detected_alerts(tmp_path, tmp_path / "results", env)
    assert (alert["before_sha"], alert["after_sha"]) == (shas[STEP - 1], shas[STEP])
    proc = run_cli("bisect", "--alert", alert["id"], "--db", db, cwd=repo, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"its range holds one commit, {shas[STEP][:12]} 'commit {STEP}': that commit is the culprit" in proc.stdout
    assert "bisecting" not in proc.stderr
    with sqlite3.connect(tmp_path / "ci.db") as con:  # nothing measured, nothing stored
        assert con.execute("select count(*) from ab_pair").fetchone() == (0,)
        assert con.execute("select culprit from alert").fetchall() == [(None,)]
    con.close()


def test_an_unknown_alert_is_one_line_and_exit_2(project, tmp_path):
    repo, shas, env = project["repo"], project["shas"], project["env"]
    ci_history(tmp_path / "results", shas, list(range(0, N, 3)))
    db, _ = detected_alerts(tmp_path, tmp_path / "results", env)
    for args in (("--alert", "nope"), ("--alert", "nope", shas[0], shas[1])):
        proc = run_cli("bisect", *args, "--db", db, cwd=repo, env=env)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
    proc = run_cli("bisect", "--db", db, cwd=repo, env=env)
    assert proc.returncode == 2 and "GOOD and BAD (two commits), or --alert ID" in proc.stderr


# --------------------------------------------------------------------------- which series, which metric


def _series(bench: str, machine: str, ratio: float, metric: str = "time_per_op") -> AlertSeries:
    key = SeriesKey(machine, "py3.12", bench, "{}", MetricKey("timing", metric, "s"))
    return AlertSeries(key, "regression" if ratio > 1 else "improvement", ratio, "a" * 40, "b" * 40)


ALERT = Alert("0123456789", "a" * 40, "b" * 40, (
    _series("m.T.time_small", "box", 1.1), _series("m.T.time_big", "box", 1.6), _series("m.T.time_fast", "box", 0.5),
    _series("m.T.time_small", "ci", 2.5), _series("m.T.time_other", "ci", 1.3)))


def test_the_series_bisected_is_the_largest_move_on_this_machines_class_or_the_one_b_picks():
    from mmtrack.commands.bisect_alert import alert_targets, bench_regex, bisect_metric

    on_box = alert_targets(ALERT, "box", None)
    assert [s.series.benchmark for s in on_box] == ["m.T.time_fast", "m.T.time_big", "m.T.time_small"]  # |log|
    assert alert_targets(ALERT, "ci", None)[0].series.benchmark == "m.T.time_small"
    assert alert_targets(ALERT, None, None)[0].ratio == 2.5  # a machine the store has not seen: every series
    assert [s.series.machine for s in alert_targets(ALERT, "box", "time_other")] == ["ci"]  # only there
    picked = alert_targets(ALERT, "box", "small|big")
    assert [s.series.benchmark for s in picked] == ["m.T.time_big", "m.T.time_small"]
    assert bench_regex(picked) == r"^(?:m\.T\.time_big|m\.T\.time_small)$"
    with pytest.raises(UserError, match="selects none of alert 0123456789's series"):
        alert_targets(ALERT, "box", "nothing")
    assert bisect_metric(on_box[0], None, "wall") == "time_per_op"
    assert bisect_metric(on_box[0], None, "callgrind") == "instructions"
    assert bisect_metric(on_box[0], "est_cycles", "callgrind") == "est_cycles"


# --------------------------------------------------------------------------- the culprit in the store and on the page


def test_a_culprit_written_on_an_alert_stays_through_updates_on_both_stores(tmp_path, store_url):  # noqa: F811
    """What bisect writes (every field, its time in UTC) reads back the same after two more detections."""
    from test_alerts import history, run_update

    from mmtrack.analysis.alerts import Culprit, culprit_columns
    from mmtrack.commands.alerts import AlertsRequest, list_alerts
    from mmtrack.store.alert_rows import record_culprit
    from mmtrack.store.db import open_store

    model, results = history(tmp_path)
    write_asv_results(results, model, commits=list(model.commits[:-2]))
    run_update(results, tmp_path / "site", store_url)
    target = list_alerts(AlertsRequest(db=store_url))[0]
    wrote = Culprit(target.after_sha, "m.T.time_x", '{"n": "10"}', "time_per_op", "box", 1.37,
                    "regressed", 5, 12, "callgrind", datetime(2026, 12, 7, 17, 0, tzinfo=timezone.utc))
    store = open_store(store_url)
    try:
        record_culprit(store, target.id, culprit_columns(wrote))
    finally:
        store.close()
    for commit in model.commits[-2:]:
        write_asv_results(results, model, commits=[commit])
        run_update(results, tmp_path / "site", store_url)
        now = {a.id: a for a in list_alerts(AlertsRequest(db=store_url))}
        assert now[target.id].culprit == wrote
        assert [a.culprit for a in now.values() if a.id != target.id] == [None] * (len(now) - 1)
    page = (tmp_path / "site" / "alerts.html").read_text()
    assert f"culprit {target.after_sha[:12]} +37.0% m.T.time_x (callgrind on box)" in page


def test_store_refuses_to_write_other_columns_as_a_culprit(tmp_path):
    from mmtrack.store.alert_rows import record_culprit
    from mmtrack.store.db import open_store

    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        with pytest.raises(ValueError, match="not culprit columns"):
            record_culprit(store, "x", {"state": "fixed"})
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_bisect_alert_under_callgrind_judges_a_time_alert_on_instructions(project, tmp_path):
    """A time series' alert bisected by counts: each commit counted once, the culprit written as callgrind's."""
    repo, shas, env = project["repo"], project["shas"], project["env"]
    ci_history(tmp_path / "results", shas, list(range(0, N, 3)))
    db, (alert,) = detected_alerts(tmp_path, tmp_path / "results", env)
    proc = run_cli("bisect", "--alert", alert["id"], "--instrument", "callgrind", "--db", db, "--format", "json",
                   cwd=repo, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    culprit = json.loads(proc.stdout)["alert"]["culprit"]
    assert (culprit["sha"], culprit["metric"], culprit["instrument"]) == (shas[STEP], "instructions", "callgrind")
    assert culprit["ratio"] > 2 and culprit["commits_measured"] == 2  # three times the work, counted
    assert proc.stderr.count("counting ") == 2  # GOOD and the midpoint: BAD is counted only if the search ends there


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_an_alert_with_no_step_on_this_machine_says_so_in_one_line_and_writes_nothing(project, tmp_path):
    """CI saw a step at the 23rd commit (a runner change, say) where the code did not change: nothing to bisect here.
    Counted under callgrind, so that a loaded machine cannot read the two builds as different."""
    repo, shas, env = project["repo"], project["shas"], project["env"]
    ci_history(tmp_path / "results", shas, list(range(0, N, 3)), steps=(22,))
    db, (alert,) = detected_alerts(tmp_path, tmp_path / "results", env)
    assert (alert["before_sha"], alert["after_sha"]) == (shas[21], shas[24])
    proc = run_cli("bisect", "--alert", alert["id"], "--instrument", "callgrind", "--db", db, cwd=repo, env=env,
                   timeout=1200)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: alert {alert['id']}: no step between {shas[21][:8]} and {shas[24][:8]} on this "
                           "machine") and last.endswith("nothing written to the alert"), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    shown = json.loads(run_cli("alerts", "show", alert["id"], "--db", db, "--format", "json", env=env).stdout)
    assert shown["culprit"] is None


def test_a_culprit_is_written_only_where_its_own_check_reads_the_alerts_move():
    from types import SimpleNamespace

    from mmtrack.commands.bisect_alert import unwritten

    slower = _series("m.T.time_big", "box", 1.6)

    def checked(verdict: str, ratio: float | None) -> SimpleNamespace:
        return SimpleNamespace(verdict=verdict, ratio=ratio, metric=TIME)

    assert unwritten(checked("regressed", 1.5), slower) == ""
    assert unwritten(checked("regressed (confirmed)", 1.01), slower) == ""
    assert "reads unchanged: not written" in unwritten(checked("unchanged", 1.02), slower)
    assert "reads ambiguous: not written" in unwritten(checked("ambiguous", 1.3), slower)
    assert "reads unknown: not written" in unwritten(checked("unknown", None), slower)
    assert "the other way from the alert's ×1.600" in unwritten(checked("improved", 0.7), slower)
