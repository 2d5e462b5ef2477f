"""Reliability: concurrent writers on one SQLite file, an import killed midway, and
malformed results files (hypothesis)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from mmtrack.store import models as m
from mmtrack.store.db import open_store
from mmtrack.store.asv_import import import_asv_results
from test_store_support import WRITER, CONDA, METPY, ROOT, count_asv_results, mmtrack_cmd, subprocess_env



@pytest.mark.slow
def test_eight_processes_write_500_runs_each_into_one_sqlite_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, str(p), "500", str(ROOT / "tests"), str(go)],
            env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for p in range(8)
    ]
    time.sleep(0.5)
    go.touch()
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert "database is locked" not in err, err[-4000:]  # the whole traceback, to see which step
        assert p.returncode == 0, err[-4000:]
    store = open_store(url)
    with store.read() as conn:
        assert conn.execute(select(func.count()).select_from(m.Run)).scalar_one() == 4000
        per_host = dict(conn.execute(select(m.Run.host, func.count()).group_by(m.Run.host)).all())
        measurements = conn.execute(select(func.count()).select_from(m.Measurement)).scalar_one()
        metrics = conn.execute(select(func.count()).select_from(m.Metric)).scalar_one()
    assert per_host == {f"proc-{i}": 500 for i in range(8)}
    assert measurements == 4000 * metrics  # every run complete
    store.close()


def _counts(url: str) -> dict[str, int]:
    store = open_store(url)
    with store.read() as conn:
        out = {
            "runs": conn.execute(select(func.count()).select_from(m.Run)).scalar_one(),
            "sources": conn.execute(select(func.count(m.Run.source.distinct()))).scalar_one(),
            "results": conn.execute(select(func.count()).select_from(m.Result)).scalar_one(),
            "measurements": conn.execute(select(func.count()).select_from(m.Measurement)).scalar_one(),
            "orphans": conn.execute(
                select(func.count()).select_from(m.Result).where(~m.Result.run_id.in_(select(m.Run.id)))
            ).scalar_one(),
            "short_runs": 0,
        }
        per_run = dict(conn.execute(select(m.Result.run_id, func.count()).group_by(m.Result.run_id)).all())
        sources = dict(conn.execute(select(m.Run.id, m.Run.source)).all())
        if conn.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
    store.close()
    # every stored run holds every case of its file: nothing half-written
    for run_id, source in sources.items():
        name = source.split("/", 1)[1]
        d = json.loads((CONDA / "benchmarkers-MacBook-Pro.local" / name).read_text())
        expected = sum(len(v["result"]) if isinstance(v, dict) and isinstance(v.get("result"), list) else 1
                       for v in d["results"].values())
        out["short_runs"] += per_run.get(run_id, 0) != expected
    return out


@pytest.mark.slow
def test_import_killed_midway_leaves_a_consistent_store_and_rerun_completes(tmp_path):
    db = tmp_path / "kill.db"
    url = f"sqlite:///{db}"
    open_store(url).close()
    cmd = mmtrack_cmd("import-asv", str(CONDA), "--db", str(db), "--no-progress")
    proc = subprocess.Popen(cmd, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    probe = open_store(url)
    deadline = time.monotonic() + 120
    seen = 0
    while time.monotonic() < deadline and proc.poll() is None:
        with probe.read() as conn:
            seen = conn.execute(select(func.count()).select_from(m.Run)).scalar_one()
        if seen >= 20:
            break
        time.sleep(0.01)
    probe.close()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    total = count_asv_results(CONDA)
    after_kill = _counts(url)
    assert 20 <= after_kill["runs"] < total["files"], after_kill  # really killed midway
    assert after_kill["orphans"] == 0 and after_kill["short_runs"] == 0
    assert after_kill["measurements"] == after_kill["results"]

    rerun = subprocess.run(cmd, env=subprocess_env(), capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"skipped {after_kill['runs']} already imported" in rerun.stdout
    final = _counts(url)
    assert final["runs"] == final["sources"] == total["files"]  # no duplicates, nothing missing
    assert final["results"] == total["ok"] + total["failed"] + total["skipped"]
    assert final["orphans"] == 0 and final["short_runs"] == 0


# -- malformed results files -------------------------------------------------------------------------

GOOD = sorted((METPY / "Docker_Container").glob("0*.json"))[0]
BASE_TEXT = GOOD.read_text()
BASE = json.loads(BASE_TEXT)
FIRST = next(iter(BASE["results"]))
COLS = BASE["result_columns"]
HUGE = "__HUGE__"


def _doc(edit) -> bytes:
    d = json.loads(BASE_TEXT)
    edit(d)
    return json.dumps(d).replace(f'"{HUGE}"', "1e999").encode()


def _set_col(d, col, value):
    row = d["results"][FIRST]
    i = COLS.index(col)
    row.extend([None] * (i + 1 - len(row)))
    row[i] = value


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


# What breaks the file as a whole, and what breaks one benchmark's entry (FIRST's): a benchmark that
# cannot be read is left out, and the file's other benchmarks are imported.
FILE_WRONG_TYPES = st.one_of(
    st.sampled_from([[], "x", 3, None]).map(lambda v: _set("results", v)),
    st.sampled_from([123, None, ["a"], "not-a-sha!", ""]).map(lambda v: _set("commit_hash", v)),
    st.sampled_from(["result", [1, 2], None]).map(lambda v: _set("result_columns", v)),
    st.sampled_from([[1], "x"]).map(lambda v: _set("params", v)),
)
ROW_WRONG_TYPES = st.one_of(
    st.sampled_from(["str", 5, {"a": 1}]).map(lambda v: (lambda d: d["results"].__setitem__(FIRST, v))),
    st.sampled_from(["fast", [[1]], {"a": 1}, True, [True]]).map(lambda v: (lambda d: _set_col(d, "result", v))),
    st.sampled_from([5, ["x"]]).map(lambda v: (lambda d: _set_col(d, "version", v))),
    st.sampled_from(["yesterday", [1]]).map(lambda v: (lambda d: _set_col(d, "started_at", v))),
    st.sampled_from(["x", {"a": 1}, [["a"]], [[[1.0]]], [7]]).map(lambda v: (lambda d: _set_col(d, "samples", v))),
    st.sampled_from([["ten"], [1.5], "x", [-3]]).map(lambda v: (lambda d: _set_col(d, "stats_number", v))),
)
ROW_NAN_PLACES = st.sampled_from([
    lambda d: _set_col(d, "samples", [[1.0, float("nan")]]),
    lambda d: _set_col(d, "stats_number", [float("nan")]),
    lambda d: _set_col(d, "stats_repeat", [float("nan")]),
    lambda d: _set_col(d, "started_at", float("nan")),
    lambda d: _set_col(d, "duration", float("nan")),
])
HUGE_VALUES = st.one_of(st.just(HUGE), st.just(float("inf")), st.integers(10**309, 10**320), st.just(-(10**400)))
ROW_HUGE_PLACES = st.sampled_from([
    lambda v: (lambda d: _set_col(d, "result", [v])),
    lambda v: (lambda d: _set_col(d, "samples", [[1.0, v]])),
    lambda v: (lambda d: _set_col(d, "stats_number", [v])),
])
BAD_VERSIONS = st.one_of(
    st.integers().filter(lambda v: v not in (1, 2)), st.text(max_size=5), st.none(), st.just(True),
    st.floats(allow_nan=True).filter(lambda v: v not in (1.0, 2.0)),
)

MALFORMED_FILE = st.one_of(
    st.integers(1, len(BASE_TEXT) - 2).map(lambda n: ("truncated", BASE_TEXT[:n].encode())),
    FILE_WRONG_TYPES.map(lambda e: ("wrong type", _doc(e))),
    BAD_VERSIONS.map(lambda v: ("unknown version", _doc(_set("version", v)))),
    st.just(("NaN date", _doc(lambda d: d.__setitem__("date", float("nan"))))),
    HUGE_VALUES.map(lambda v: ("huge date", _doc(lambda d: d.__setitem__("date", v)))),
    st.binary(min_size=1, max_size=3).filter(lambda b: not _utf8(b)).map(
        lambda b: ("not UTF-8", BASE_TEXT.encode().replace(FIRST.encode(), FIRST.encode() + b, 1))),
)
MALFORMED_BENCHMARK = st.one_of(
    ROW_WRONG_TYPES.map(lambda e: ("wrong type", _doc(e))),
    ROW_NAN_PLACES.map(lambda e: ("NaN", _doc(e))),
    st.tuples(ROW_HUGE_PLACES, HUGE_VALUES).map(lambda pv: ("huge number", _doc(pv[0](pv[1])))),
    st.sampled_from(["\udcff", "\ud800x", "a\x00b"]).map(
        lambda bad: ("bad name", _doc(lambda d: d["results"].__setitem__(FIRST + bad, d["results"].pop(FIRST))))),
)
MALFORMED = st.one_of(MALFORMED_FILE.map(lambda c: (*c, "file")), MALFORMED_BENCHMARK.map(lambda c: (*c, "benchmark")))


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


FILE_NAMES = st.sampled_from([b"ffffffff-bad.json", b"\xff\xfe-bad.json", b"0\xc3(-bad.json"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(MALFORMED, FILE_NAMES)
def test_malformed_file_or_benchmark_gets_one_line_and_the_rest_is_imported(case, file_name):
    kind, content, scope = case
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        machine = results / "Docker_Container"
        machine.mkdir(parents=True)
        shutil.copyfile(METPY / "benchmarks.json", results / "benchmarks.json")
        shutil.copyfile(GOOD, machine / GOOD.name)
        bad = Path(os.fsdecode(os.fsencode(machine) + b"/" + file_name))
        bad.write_bytes(content)
        store = open_store(f"sqlite:///{tmp}/s.db")
        summary = import_asv_results(store, results)
        store.close()
    problems = summary.failed if scope == "file" else summary.left_out
    assert len(problems) == 1 and len(summary.failed) + len(summary.left_out) == 1, (kind, summary)
    [problem] = problems
    assert problem.path == os.fsencode(bad).decode("utf-8", "backslashreplace")
    line = str(problem)
    assert "\n" not in line and line.startswith(problem.path + ": ") and len(line) < len(problem.path) + 400
    n = len(BASE["results"])
    if scope == "file":  # only the good file is in
        assert summary.imported == 1 and summary.result_count == n
    else:  # both files are in, the bad one without its broken benchmark, which the line names
        assert summary.imported == 2 and summary.result_count == 2 * n - 1, (kind, summary.results)
        assert "benchmark" in line and f"other {n - 1} benchmark(s) imported" in line


def test_cli_reports_each_bad_file_on_one_line_and_exits_1(tmp_path):
    results = tmp_path / "results"
    machine = results / "Docker_Container"
    machine.mkdir(parents=True)
    shutil.copyfile(METPY / "benchmarks.json", results / "benchmarks.json")
    shutil.copyfile(GOOD, machine / GOOD.name)
    (machine / "aaaa-truncated.json").write_bytes(BASE_TEXT[:100].encode())
    (machine / "bbbb-version.json").write_bytes(_doc(_set("version", 99)))
    (machine / "cccc-huge.json").write_bytes(_doc(lambda d: _set_col(d, "result", [HUGE])))
    r = subprocess.run(mmtrack_cmd("import-asv", str(results), "--db", str(tmp_path / "s.db")),
                       env=subprocess_env(), capture_output=True, text=True)
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 3, r.stderr
    for name, why in (("aaaa-truncated.json", "not valid JSON"), ("bbbb-version.json", "unknown results format"),
                      ("cccc-huge.json", f"benchmark {FIRST!r} result is infinite")):
        [line] = [ln for ln in lines if name in ln]
        assert why in line and str(machine) in line
    # the file with one broken benchmark is imported without it
    assert "imported 2 new run(s)" in r.stdout and "2 file(s) failed, 1 benchmark(s) left out" in r.stdout
    assert f"{2 * len(BASE['results']) - 1} results" in r.stdout
    assert "Traceback" not in r.stderr
