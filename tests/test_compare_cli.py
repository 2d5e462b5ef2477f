"""``mmtrack compare`` and ``mmtrack detect`` on real SQLite stores.

The main store is the real MetPy asv history (59 commits) imported with the real
``mmtrack import-asv``, after injecting known changes into a temporary copy:
- benchmark A: its last commit 1.5x slower (a regression for compare);
- benchmark B: its last 12 commits 1.5x slower (a lasting regression for detect);
- benchmark C: its code version changed on the last commit (not comparable).
A second store holds real engine runs on the commits of a real temporary git
repository, to resolve branches, tags and revisions through git.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from conftest import METPY_RESULTS, run_cli
from mmtrack.commands.compare import CompareRequest, policy_for, run_compare
from mmtrack.commands.detect import DetectRequest, run_detect
from mmtrack.errors import UserError
from mmtrack.store import reads as q
from mmtrack.store.db import open_store
from test_store_support import BACKENDS, require_postgres, reset_postgres

METPY = METPY_RESULTS



def _files_by_date(results: Path) -> list[tuple[int, Path, dict]]:
    out = []
    for f in results.glob("*/*.json"):
        if f.name == "machine.json":
            continue
        d = json.loads(f.read_text())
        out.append((d["date"], f, d))
    return sorted(out, key=lambda t: t[0])


def _scale(d: dict, bench: str, factor: float) -> None:
    cols = d["result_columns"]
    row = d["results"][bench]
    for col in ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75"):
        i = cols.index(col)
        if i < len(row) and row[i] is not None:  # asv leaves out a failed benchmark's trailing columns
            row[i] = [v * factor if v is not None else None for v in row[i]]


def _quiet_benchmarks(files: list[tuple[int, Path, dict]]) -> list[str]:
    """Benchmarks ok on every commit, quietest first (relative spread of the medians)."""
    values: dict[str, list[float]] = {}
    for _, _, d in files:
        i = d["result_columns"].index("result")
        for name, row in d["results"].items():
            v = row[i][0] if row[i] else None
            values.setdefault(name, []).append(v if v is not None else float("nan"))
    ok = {n: np.array(v) for n, v in values.items() if len(v) == len(files) and np.all(np.isfinite(v))}
    return sorted(ok, key=lambda n: float(np.std(np.log(ok[n][-30:]))))


def _metpy_copy(tmp: Path) -> list[tuple[int, Path, dict]]:
    """The real MetPy results copied under ``tmp``: (date, file, parsed JSON) of each, oldest first, for a
    test to change before :func:`_write_and_import`."""
    shutil.copytree(METPY, tmp / "results")
    return _files_by_date(tmp / "results")


def _write_and_import(tmp: Path, files: list[tuple[int, Path, dict]], db: str) -> list[str]:
    """Write the changed files back and import them with the real ``mmtrack import-asv``; their shas."""
    for _, f, d in files:
        f.write_text(json.dumps(d))
    proc = run_cli("import-asv", str(tmp / "results"), "--db", db, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return [d["commit_hash"] for _, _, d in files]


@pytest.fixture(scope="module", params=BACKENDS)
def metpy_store(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("metpy")
    files = _metpy_copy(tmp)
    a, b, c = _quiet_benchmarks(files)[:3]
    last = files[-1][2]
    _scale(last, a, 1.5)
    for _, _, d in files[-12:]:
        _scale(d, b, 1.5)
    last["results"][c][last["result_columns"].index("version")] = "changed-code-version"
    if request.param == "sqlite":
        db = str(tmp / "store.db")
    else:  # a real PostgreSQL server (MMTRACK_TEST_PG)
        db = require_postgres()
        reset_postgres(db)
    shas = _write_and_import(tmp, files, db)
    return {"db": db, "a": a, "b": b, "c": c, "shas": shas, "tmp": tmp}


def test_compare_injected_changes(metpy_store):
    s = metpy_store
    out = run_compare(CompareRequest(a=s["shas"][-2][:10], b=s["shas"][-1][:10], db=s["db"], fail_on=("suspected",)))
    verdicts = {r.benchmark: r for r in out.comparison.rows}
    assert verdicts[s["a"]].verdict == "regressed"
    assert verdicts[s["a"]].state == "suspected"  # the newest commit: no later commit to confirm it yet
    assert verdicts[s["a"]].ratio == pytest.approx(1.5, rel=0.01)
    assert verdicts[s["a"]].test == "quartiles"  # asv's files hold no samples: with history, their quartiles
    assert verdicts[s["a"]].history_z is not None and verdicts[s["a"]].history_z > 3
    assert verdicts[s["c"]].verdict == "not comparable"
    assert verdicts[s["b"]].verdict == "unchanged"  # both commits already at the new level
    assert s["a"] in [r.benchmark for r in out.failing] and out.exit_code == 1
    # every row covers the one metric asv records for these time benchmarks
    assert {r.metric.name for r in out.comparison.rows} == {"time_per_op"}
    # the default gate fails on confirmed regressions only: a suspected one does not fail it
    out = run_compare(CompareRequest(a=s["shas"][-2][:10], b=s["shas"][-1][:10], db=s["db"], fail_on=("regression",)))
    assert out.failing == [] and out.exit_code == 0


def test_later_commits_confirm_and_the_gate_fails_once_confirmed(metpy_store):
    s = metpy_store
    # B's step (its last 12 commits 1.5x slower), judged with the commits measured after it: confirmed
    out = run_compare(CompareRequest(a=s["shas"][-13][:10], b=s["shas"][-12][:10], db=s["db"], fail_on=("regression",)))
    row = next(r for r in out.comparison.rows if r.benchmark == s["b"])
    assert (row.verdict, row.state) == ("regressed", "confirmed")
    assert s["b"] in [r.benchmark for r in out.failing] and out.exit_code == 1
    # the per-commit gate four commits later: the step commit's suspicion is settled by this one
    out = run_compare(CompareRequest(a=s["shas"][-9][:10], b=s["shas"][-8][:10], db=s["db"], fail_on=("regression",)))
    settled = [r for r in out.comparison.decided if r.benchmark == s["b"]]
    assert [(r.verdict, r.state) for r in settled] == [("regressed", "confirmed")]
    assert s["b"] in [r.benchmark for r in out.failing] and out.exit_code == 1
    # one commit later it is not reported again
    out = run_compare(CompareRequest(a=s["shas"][-8][:10], b=s["shas"][-7][:10], db=s["db"], fail_on=("regression",)))
    assert not [r for r in out.comparison.decided if r.benchmark == s["b"]]


def test_a_pair_an_ab_run_settled_reads_as_it_did_and_fails_the_gate_once(metpy_store):
    """History alone only suspects; `mmtrack run --confirm` measured the pair A/B on the machine and stored its
    verdict. compare of that pair reads the A/B verdict (its evidence as the note). Four commits later history
    confirms the same step: that commit is not decided again, so the gate does not fail a second time, on a
    commit that did not cause it. A suspicion A/B refuted fails nothing, even with --fail-on suspected."""
    from sqlalchemy import delete

    from mmtrack.store.models import ABVerdict

    s = metpy_store
    shas = s["shas"]
    step = run_compare(CompareRequest(a=shas[-13][:10], b=shas[-12][:10], db=s["db"]))
    newest = run_compare(CompareRequest(a=shas[-2][:10], b=shas[-1][:10], db=s["db"]))
    b_row = next(r for r in step.comparison.rows if r.benchmark == s["b"])
    a_row = next(r for r in newest.comparison.rows if r.benchmark == s["a"])
    assert (a_row.verdict, a_row.state) == ("regressed", "suspected")

    def verdict(row, before, after, state, ratio):
        return ABVerdict(machine=step.before.machine, environment=step.before.environment, benchmark=row.benchmark,
                         params=row.params, section=row.metric.section, metric=row.metric.name, unit=row.metric.unit,
                         before_sha=before, after_sha=after, state=state, ratio=ratio, p_value=1e-6, rounds=6,
                         note="", created_at=datetime.now(timezone.utc))

    store = open_store(s["db"])
    try:
        with store.session() as session:
            session.add(verdict(b_row, shas[-13], shas[-12], "confirmed", 1.5))
            session.add(verdict(a_row, shas[-2], shas[-1], "refuted", 1.01))
            session.commit()
        out = run_compare(CompareRequest(a=shas[-13][:10], b=shas[-12][:10], db=s["db"]), store=store)
        row = next(r for r in out.comparison.rows if r.benchmark == s["b"])
        assert (row.verdict, row.state, row.note) == ("regressed", "confirmed", "A/B ×1.500, p=1e-06, 6 rounds")
        out = run_compare(CompareRequest(a=shas[-9][:10], b=shas[-8][:10], db=s["db"], fail_on=("regression",)),
                          store=store)
        assert not [r for r in out.comparison.decided if r.benchmark == s["b"]]
        assert s["b"] not in [r.benchmark for r in out.failing]
        out = run_compare(CompareRequest(a=shas[-2][:10], b=shas[-1][:10], db=s["db"], fail_on=("suspected",)),
                          store=store)
        row = next(r for r in out.comparison.rows if r.benchmark == s["a"])
        assert (row.verdict, row.state) == ("unchanged", "refuted")
        assert row.note == "suspected regressed; A/B ×1.010, p=1e-06, 6 rounds refuted it"
        assert s["a"] not in [r.benchmark for r in out.failing]
        # A verdict on another pair (A/B of the commit before A, say) is not this pair's.
        out = run_compare(CompareRequest(a=shas[-14][:10], b=shas[-12][:10], db=s["db"]), store=store)
        assert next(r for r in out.comparison.rows if r.benchmark == s["b"]).note != "A/B ×1.500, p=1e-06, 6 rounds"
    finally:
        with store.session() as session:
            session.execute(delete(ABVerdict))
            session.commit()
        store.close()
    # Without them, history decides the step there, as before (test_later_commits_confirm_and_the_gate_fails_once_confirmed).
    out = run_compare(CompareRequest(a=shas[-9][:10], b=shas[-8][:10], db=s["db"], fail_on=("regression",)))
    assert [(r.verdict, r.state) for r in out.comparison.decided if r.benchmark == s["b"]] == [("regressed", "confirmed")]


@pytest.fixture(scope="module")
def runner_store(tmp_path_factory):
    """The real MetPy history as if measured on CI runners: seven of its commits ran on a runner type that
    makes every benchmark 20% slower, and on the last commit the quietest benchmark steps up 20%, onto
    that level, while the run itself is on the usual runner."""
    tmp = tmp_path_factory.mktemp("runners")
    files = _metpy_copy(tmp)
    stepped = _quiet_benchmarks(files)[0]
    for _, _, d in [files[i] for i in (-50, -43, -36, -29, -22, -15, -8)]:
        for bench in d["results"]:
            _scale(d, bench, 1.2)
    _scale(files[-1][2], stepped, 1.2)
    db = str(tmp / "store.db")
    return {"db": db, "stepped": stepped, "shas": _write_and_import(tmp, files, db)}


def test_a_step_onto_a_runner_level_is_found_in_the_runs_frame(runner_store):
    """Alone, the step lands where seven commits of its history sit: within its own noise. Read across the
    run (every benchmark of the seven slow commits moved together), it is a suspected regression."""
    from mmtrack.analysis.compare import compare_measurements
    from mmtrack.commands.compare import policy_for, series_context

    s = runner_store
    request = CompareRequest(a=s["shas"][-2][:10], b=s["shas"][-1][:10], db=s["db"])
    out = run_compare(request)
    rows = {r.benchmark: r for r in out.comparison.rows}
    assert (rows[s["stepped"]].verdict, rows[s["stepped"]].state) == ("regressed", "suspected")
    assert rows[s["stepped"]].ratio == pytest.approx(1.2, rel=0.01)
    assert not [r for r in out.comparison.rows if r.verdict == "regressed" and r.benchmark != s["stepped"]]
    # The same history without the commits that align it: the series alone cannot tell.
    store = open_store(s["db"], existing=True)
    try:
        cases = {m.case for m in out.before.measurements} & {m.case for m in out.after.measurements}
        context = series_context(store, out.before, out.after, cases, request.history, policy_for(request))
    finally:
        store.close()
    assert context.labels is not None and context.labels.after == s["shas"][-1]
    alone = compare_measurements(out.before.measurements, out.after.measurements, policy_for(request),
                                 history=context.history, later=context.later)
    row = next(r for r in alone.rows if r.benchmark == s["stepped"])
    assert (row.verdict, row.note) == ("ambiguous", "within the series' own noise")


def test_compare_cli_formats_and_exit_codes(metpy_store):
    s = metpy_store
    a, b = s["shas"][-2][:8], s["shas"][-1][:8]
    proc = run_cli("compare", a, b, "--db", s["db"], "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    row = next(r for r in data["rows"] if r["benchmark"] == s["a"])
    assert row["verdict"] == "regressed" and row["mark"] == "+"
    proc = run_cli("compare", a, b, "--db", s["db"], "--format", "markdown", "--fail-on", "suspected")
    assert proc.returncode == 1
    assert proc.stdout.startswith("### :warning: Performance regression suspected")
    assert "regressed (suspected)" in proc.stdout
    assert "| `+` |" in proc.stdout and s["a"] in proc.stdout
    proc = run_cli("compare", a, b, "--db", s["db"], "--only-changed")
    assert proc.returncode == 0 and "regressed" in proc.stdout and "not comparable" in proc.stdout
    # a looser threshold for that benchmark turns the 1.5x into unchanged
    proc = run_cli("compare", a, b, "--db", s["db"], "--threshold-for", f"{s['a']}=0.6", "--format", "json",
                   "--fail-on", "regression")
    row = next(r for r in json.loads(proc.stdout)["rows"] if r["benchmark"] == s["a"])
    assert row["verdict"] == "unchanged" and row["threshold"] == 0.6


def test_compare_run_ids_and_history_off(metpy_store):
    s = metpy_store
    store = open_store(s["db"])
    try:
        runs = {r.commit.sha: r.id for r in q.runs(store)}
        out = run_compare(
            CompareRequest(a=f"run:{runs[s['shas'][-2]]}", b=f"#{runs[s['shas'][-1]]}", db=s["db"], history=0), store
        )
    finally:
        store.close()
    row = next(r for r in out.comparison.rows if r.benchmark == s["a"])
    assert row.verdict == "regressed" and row.history_z is None
    assert out.before.run_id == runs[s["shas"][-2]] and out.before.label.startswith("run ")


def test_bad_input_lists_nearest_names_and_exits_2(metpy_store):
    s = metpy_store
    a, b = s["shas"][-2][:8], s["shas"][-1][:8]
    proc = run_cli("compare", a, b, "--db", s["db"], "--machine", "Docker_Containr")
    assert proc.returncode == 2
    assert "unknown machine 'Docker_Containr'; nearest: Docker_Container" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_cli("compare", a, b, "--db", s["db"], "--metric", "time_per_opp")
    assert proc.returncode == 2 and "unknown metric 'time_per_opp'; nearest: time_per_op" in proc.stderr
    proc = run_cli("compare", "nosuchbranch", b, "--db", s["db"])
    assert proc.returncode == 2 and "unknown commit 'nosuchbranch'" in proc.stderr
    with pytest.raises(UserError, match=r"unknown run id 'run:999999'") as exc:
        run_compare(CompareRequest(a="run:999999", b=b, db=s["db"]))
    assert exc.value.exit_code == 2
    proc = run_cli("compare", a, b, "--db", s["db"], "--history", "-1")
    assert proc.returncode == 2 and "--history -1 is not a number of commits" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_cli("compare", a, b, "--db", s["db"], "--alpha", "-1")
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: --alpha -1 is not a significance level; give one between 0 and 1, e.g. 0.002")
    for bad in ("x=-1", "x=nan", "x=inf"):  # every threshold, the per-benchmark ones too
        proc = run_cli("compare", a, b, "--db", s["db"], "--threshold-for", bad)
        assert proc.returncode == 2 and proc.stderr.strip() == (
            f"error: --threshold-for '{bad}': {bad[2:]} is not a relative effect; give e.g. 'x=0.02' for 2%")
    # a valid one sets the samples' test with history and without
    policy = policy_for(CompareRequest(a=a, b=b, alpha=0.05))
    assert (policy.alpha, policy.history_alpha) == (0.05, 0.05)
    with pytest.raises(UserError, match="unknown environment"):
        run_compare(CompareRequest(a=a, b=b, db=s["db"], env="virtualenv-py3.11"))


def test_detect_finds_the_lasting_regression_and_stores_it(metpy_store):
    s = metpy_store
    proc = run_cli("detect", "--db", s["db"], "--fail-on", "regression")
    assert proc.returncode == 1, proc.stderr  # regressions persist to the latest commit
    assert "128 series (128 analysed, 0 too short" in proc.stdout
    assert "time_per_op [s]" in proc.stdout and "persists" in proc.stdout
    store = open_store(s["db"])
    try:
        stored = q.load_change_points(store, benchmark=s["b"])
        first_new = s["shas"][-12]
        hit = [c for c in stored if c.after_sha == first_new]
        assert len(hit) == 1 and hit[0].kind == "regression" and hit[0].persists
        assert hit[0].before_sha == s["shas"][-13]
        assert hit[0].ratio == pytest.approx(1.5, rel=0.1)
        total = len(q.load_change_points(store))
        # run again over one benchmark: its findings are replaced, not piled up
        out = run_detect(DetectRequest(db=s["db"], benchmark=f"^{s['b']}$"), store)
        assert [r.series.benchmark for r in out.reports] == [s["b"]]
        assert len(q.load_change_points(store)) == total
        # dry run stores nothing
        out = run_detect(DetectRequest(db=s["db"], benchmark=f"^{s['b']}$", store_results=False), store)
        assert out.stored is None and out.changes
    finally:
        store.close()
    proc = run_cli("detect", "--db", s["db"], "--dry-run", "--format", "json", "-b", s["b"], "--no-progress")
    data = json.loads(proc.stdout)
    assert data["stored"] is None and data["series"][0]["changes"][0]["after_sha"] == s["shas"][-12]
    proc = run_cli("detect", "--db", s["db"], "--dry-run", "-b", "no_such_bench")
    assert proc.returncode == 2 and "unknown benchmark" in proc.stderr


def test_detect_bulk_read_matches_the_per_series_read_and_limits_to_given_series(metpy_store):
    from mmtrack.analysis.series import detect_series

    s = metpy_store
    store = open_store(s["db"])
    try:
        keys = q.list_series(store)
        cols = q.series_columns(store, keys)
        assert [c.key for c in cols] == keys
        for key, c in list(zip(keys, cols))[:20]:
            pts = [p for p in q.series(store, key, with_samples=False) if p.measurement.status == "ok"]
            assert c.shas == [p.commit.sha for p in pts] and c.values == [p.measurement.median for p in pts]
            assert detect_series(key, pts).changes == run_detect(
                DetectRequest(db=s["db"], store_results=False), store, series=[key]).reports[0].changes
        total = len(q.load_change_points(store))
        mine = [k for k in keys if k.benchmark == s["b"]]
        out = run_detect(DetectRequest(db=s["db"]), store, series=mine)  # what `mmtrack update` asks
        assert [r.series for r in out.reports] == mine and out.changes
        assert len(q.load_change_points(store)) == total  # only those series' findings replaced
    finally:
        store.close()


@pytest.mark.parametrize("args, words", [
    (["--alpha", "-1"], "--alpha -1 is out of range"),
    (["--alpha", "1.5"], "--alpha 1.5 is out of range"),
    (["--min-effect", "-0.1"], "--min-effect -0.1 is out of range"),
    (["--min-effect", "nan"], "--min-effect nan is out of range"),
])
def test_detect_knobs_are_validated(tmp_path, args, words):
    proc = run_cli("detect", "--db", str(tmp_path / "empty.db"), *args)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_detect_reports_too_short(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(METPY, results)
    for _, f, _ in _files_by_date(results)[5:]:
        f.unlink()
    db = tmp_path / "short.db"
    assert run_cli("import-asv", str(results), "--db", str(db), "--no-progress").returncode == 0
    out = run_detect(DetectRequest(db=str(db)))
    assert out.reports and all(r.status == "too_short" for r in out.reports)
    assert out.changes == [] and out.exit_code == 0
    proc = run_cli("detect", "--db", str(db), "--dry-run")
    assert proc.returncode == 0 and "too short for rankseg+mannwhitney: fewer than 8 commits" in " ".join(proc.stdout.split())
    assert "benchmark / metric" not in proc.stdout  # no change point: the summary, not an empty table


# --------------------------------------------------------------------------- git-resolved commits


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def git_store(tmp_path_factory):
    from test_store_support import engine_stats

    from mmtrack.results import CommitInfo
    from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run

    repo = tmp_path_factory.mktemp("repo")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    shas = []
    for i in range(3):
        (repo / "f.txt").write_text(str(i))
        _git(repo, "add", "f.txt")
        _git(repo, "commit", "-q", "-m", f"c{i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
        if i == 0:
            _git(repo, "tag", "v1")
    _git(repo, "branch", "feature", shas[1])
    db = repo / ".mmtrack" / "mmtrack.db"
    db.parent.mkdir()
    store = open_store(str(db))
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        for i, sha in enumerate(shas):
            stats = engine_stats(name="bench.Suite.time_loop", scale=1.0)
            run = RunRecord(machine="ci-1", environment="py3", commit=CommitInfo(sha, t0 + timedelta(hours=i)),
                            started_at=t0 + timedelta(hours=i))
            record_engine_run(store, run, [EngineCaseRecord(stats.name, {}, version="v1", stats=stats)])
    finally:
        store.close()
    return {"repo": repo, "db": str(db), "shas": shas}


def test_commits_resolved_through_git(git_store):
    g = git_store
    out = run_compare(CompareRequest(a="v1", b="main", db=g["db"], cwd=g["repo"]))
    assert out.before.commit.sha == g["shas"][0] and out.after.commit.sha == g["shas"][2]
    metrics = {r.metric for r in out.comparison.rows}
    assert len(metrics) >= 3  # time per op, throughput and the custom metrics of the engine run
    out = run_compare(CompareRequest(a="HEAD~1", b="feature", db=g["db"], cwd=g["repo"]))
    assert out.before.commit.sha == g["shas"][1] == out.after.commit.sha
    assert all(r.verdict in ("unchanged", "ambiguous") for r in out.comparison.rows)
    # the default store of the project (.mmtrack/mmtrack.db) and git refs from the cwd
    proc = run_cli("compare", "v1", "main", "--format", "json", cwd=g["repo"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["before"] == g["shas"][0][:8]
    proc = run_cli("compare", "mian", "main", cwd=g["repo"])
    assert proc.returncode == 2 and "unknown commit 'mian'; nearest: main" in proc.stderr
    # a git commit with no runs in the store
    (g["repo"] / "f.txt").write_text("new")
    _git(g["repo"], "commit", "-qam", "unmeasured")
    with pytest.raises(UserError, match="has no runs in the store"):
        run_compare(CompareRequest(a="v1", b="HEAD", db=g["db"], cwd=g["repo"]))
    _git(g["repo"], "reset", "-q", "--hard", "HEAD~1")
