"""import-asv's columnar parse (issue 19): every stored row is what the results file says,
worked out case by case here the way the import did before it handled a file a column at a
time, on real MetPy results and on a file with every odd case (grids, failed and skipped
results, integers, infinite CIs, samples of several lengths)."""

from __future__ import annotations

import itertools
import json
import math
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from test_store_support import METPY, store, store_url  # noqa: F401

from mmtrack.asvbridge.results_file import read_benchmarks_json
from mmtrack.measure.stats import sample_stats, sample_stats_rows
from mmtrack.results import canonical_params
from mmtrack.store import asv_import, asv_rows
from mmtrack.store import models as m
from mmtrack.store.asv_import import import_asv_results
from mmtrack.store.asv_rows import parse_results_file

FINITE = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(FINITE, min_size=1, max_size=25), min_size=1, max_size=30))
def test_sample_stats_rows_equal_sample_stats(rows):
    cols = sample_stats_rows(rows)
    for i, values in enumerate(rows):
        expected = sample_stats(values)
        for key, col in cols.items():
            assert col[i] == expected[key], (key, values)
            assert type(col[i]) is float


COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
           "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def _odd_file(sha: str) -> dict:
    """A format 2 file as asv writes them, with every kind of case the import distinguishes."""
    rng = random.Random(sha)
    nan, inf = float("nan"), float("inf")

    def samples(n):
        return [rng.uniform(1e-6, 2e-6) for _ in range(n)]

    s1, s3, s10a, s10b = samples(1), samples(3), samples(10), samples(10)
    results = {
        # a 2 x 2 grid: ok with 10 samples, failed, skipped, ok with 3 samples and no quartiles
        "suite.Grid.time_grid": [
            [1.5e-6, None, nan, 1.6e-6], [["1", "2"], ["'a'", "'b'"]], "v-grid", 1700000000000, 2.5,
            [1.4e-6, None, None, 1.5e-6], [1.6e-6, None, None, 1.7e-6], [1.45e-6, None, None, None],
            [1.55e-6, None, None, None], [4, None, None, 2], [10, None, None, 3], [s10a, None, None, s3],
        ],
        # one sample: asv writes infinite CIs, there is no interval
        "suite.time_single": [[s1[0]], [], "v1", 1700000001000, 0.1, [-inf], [inf], [s1[0]], [s1[0]], [1], [1], [s1]],
        # integers where floats are usual, no samples recorded, no version (benchmarks.json's then)
        "suite.track_count": [[42], [], None, 1700000002000, 1, [40], [44], [41], [43], [1], [5]],
        "suite.mem_list": [[1024.0], [], "v3", None, None, [1000.0], [1100.0], [1010.0], [1090.0], [1], [2],
                           [[1000.0, 1048.0]]],
        "suite.time_failed": [[None], [], "v4", 1700000003000, 0.5],
        "suite.time_plain": [[s10b[4]], [], "v5", 1700000004000, 1.0, [s10b[0]], [s10b[9]], [s10b[2]], [s10b[7]],
                             [7], [10], [s10b]],
    }
    return {"commit_hash": sha, "env_name": "virtualenv-py3.12", "date": 1700000000000,
            "params": {"machine": "box", "python": "3.12"}, "python": "3.12", "requirements": {}, "env_vars": {},
            "result_columns": COLUMNS, "results": results, "durations": {}, "version": 2}


BENCHMARKS_JSON = {
    "suite.Grid.time_grid": {"type": "time", "unit": "seconds", "param_names": ["n", "label"], "version": "v-grid"},
    "suite.time_single": {"type": "time", "unit": "seconds", "version": "v1"},
    "suite.track_count": {"type": "track", "unit": "widgets", "version": "bj-version"},
    "suite.mem_list": {"type": "memory", "unit": "bytes", "version": "v3"},
    "suite.time_failed": {"type": "time", "unit": "seconds", "version": "v4"},
    "suite.time_plain": {"type": "time", "unit": "seconds", "version": "v5"},
    "version": 2,
}


@pytest.fixture
def results(tmp_path) -> Path:
    """Five real MetPy files (one machine) and three odd ones (another)."""
    folder = tmp_path / "results"
    metpy = folder / "Docker_Container"
    metpy.mkdir(parents=True)
    bj = json.loads((METPY / "benchmarks.json").read_text())
    bj.update(BENCHMARKS_JSON)
    (folder / "benchmarks.json").write_text(json.dumps(bj))
    for f in sorted((METPY / "Docker_Container").glob("*.json"))[:6]:
        shutil.copyfile(f, metpy / f.name)
    odd = folder / "box"
    odd.mkdir()
    for sha in ("a1" * 20, "b2" * 20, "c3" * 20):
        (odd / f"{sha[:8]}-virtualenv-py3.12.json").write_text(json.dumps(_odd_file(sha)))
    return folder


def _finite(v):
    return v if v is not None and math.isfinite(v) else None


def _expected(doc: dict, benchmarks: dict) -> dict[tuple[str, str], tuple]:
    """(benchmark, params) -> (result row, measurement row), case by case as asv's format reads."""
    out = {}
    for name, values in doc["results"].items():
        row = dict(zip(doc["result_columns"], values))
        meta = benchmarks.get(name, {})
        grid = row.get("params") or []
        names = meta.get("param_names") or [f"param{i + 1}" for i in range(len(grid))]
        for i, combo in enumerate(itertools.product(*grid) if grid else [()]):
            def col(key):
                return row[key][i] if row.get(key) is not None else None

            value = col("result")
            status = "failed" if value is None else "skipped" if value != value else "ok"
            value = value if status == "ok" else None
            ci_low, ci_high, q1, q3 = (_finite(col(k)) for k in ("stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
                                                                  "stats_q_75"))
            result = (status, value, ci_low, ci_high, q1, q3, col("stats_number"), col("stats_repeat"),
                      row.get("duration"))
            samples = col("samples")
            mean = p95 = lo = hi = values_ = None
            mq1, mq3 = q1, q3
            count = 0 if status != "ok" else (col("stats_repeat") or 1)
            if status == "ok" and samples:
                s = sample_stats(samples)
                mean, p95, lo, hi, count, values_ = s["mean"], s["p95"], s["min"], s["max"], len(samples), samples
                if q1 is None or q3 is None:
                    mq1, mq3 = s["q1"], s["q3"]
            measure = (mean, value, p95, lo, hi, mq1, mq3, ci_low, ci_high, count, values_)
            out[(name, canonical_params(dict(zip(names, combo))))] = (result, measure)
    return out


def _stored(store, source: str) -> dict[tuple[str, str], tuple]:
    r, mt, b, run = (t.__table__ for t in (m.Result, m.Measurement, m.Benchmark, m.Run))
    query = (
        select(b.c.name, b.c.params, r.c.status, r.c.value, r.c.ci_low, r.c.ci_high, r.c.q1, r.c.q3, r.c.number,
               r.c.repeat, r.c.duration, mt.c.mean, mt.c.median, mt.c.p95, mt.c.min, mt.c.max, mt.c.q1, mt.c.q3,
               mt.c.ci_low, mt.c.ci_high, mt.c.count, mt.c["values"])
        .join(r, r.c.id == mt.c.result_id).join(b, b.c.id == r.c.benchmark_id).join(run, run.c.id == r.c.run_id)
        .where(run.c.source == source)
    )
    with store.read() as conn:
        return {(row[0], row[1]): (tuple(row[2:11]), tuple(row[11:21]) + (row[21],)) for row in conn.execute(query)}


@pytest.mark.parametrize("parse_ahead", [False, True], ids=["here", "worker"])
def test_every_stored_row_is_what_the_file_says(store, results, parse_ahead):
    summary = import_asv_results(store, results, parse_ahead=parse_ahead)
    assert summary.failed == [] and summary.imported == 9
    benchmarks = json.loads((results / "benchmarks.json").read_text())
    statuses = []
    for f in sorted(results.glob("*/*.json")):
        if f.name == "machine.json":
            continue
        expected = _expected(json.loads(f.read_text()), benchmarks)
        stored = _stored(store, f"asv:{f.parent.name}/{f.name}")
        assert stored == expected, f.name
        statuses += [result[0] for result, _ in stored.values()]
    assert len(statuses) == 6 * 128 + 3 * 9
    assert summary.results == {k: statuses.count(k) for k in ("ok", "failed", "skipped")}
    assert summary.results["skipped"] == 3 and summary.results["failed"] > 3  # MetPy has failed results too
    again = import_asv_results(store, results)
    assert again.unchanged == 9 and again.imported == 0


def test_usual_shape_and_case_by_case_give_the_same_columns(results, monkeypatch):
    """A file without parameter grids is flattened a column at a time (_AsvTable.add_all); the
    benchmark-by-benchmark path (add), which every other file takes, must give the same columns."""
    benchmarks = read_benchmarks_json(results / "benchmarks.json")
    files = sorted((results / "Docker_Container").glob("*.json"))
    plain = (results / "box" / "plain.json")
    doc = _odd_file("d4" * 20)
    del doc["results"]["suite.Grid.time_grid"]
    plain.write_text(json.dumps(doc))
    calls = []
    real = asv_rows._AsvTable.add_all
    monkeypatch.setattr(asv_rows._AsvTable, "add_all",
                        lambda self, *a: calls.append(real(self, *a)) or calls[-1])
    fast = [parse_results_file(f, benchmarks).rows for f in [*files, plain]]
    monkeypatch.setattr(asv_rows._AsvTable, "add_all", lambda self, *a: False)
    slow = [parse_results_file(f, benchmarks).rows for f in [*files, plain]]
    assert calls == [True] * 7  # MetPy's files (some benchmarks failed) and the plain one: a column at a time
    for a, b in zip(fast, slow):
        assert (a.benchmark, a.result, a.measured, a.position, a.metric, a.measure) == (
            b.benchmark, b.result, b.measured, b.position, b.metric, b.measure)


def test_a_file_that_fails_to_store_loses_only_itself(tmp_path):
    """Files are written many per transaction without a savepoint each: one that the database
    refuses (a grid listing a value twice makes two results of one benchmark) rolls the batch
    back, and the others are written again and kept."""
    from mmtrack.store.db import open_store

    folder = tmp_path / "results"
    box = folder / "box"
    box.mkdir(parents=True)
    (folder / "benchmarks.json").write_text(json.dumps(BENCHMARKS_JSON))
    bad = _odd_file("b2" * 20)
    bad["results"]["suite.Grid.time_grid"][1] = [["1", "1"], ["'a'", "'b'"]]
    for sha, doc in (("a1" * 20, _odd_file("a1" * 20)), ("b2" * 20, bad), ("c3" * 20, _odd_file("c3" * 20))):
        (box / f"{sha[:8]}-virtualenv-py3.12.json").write_text(json.dumps(doc))
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        summary = import_asv_results(store, folder)
        assert summary.imported == 2 and summary.result_count == 18
        [problem] = summary.failed
        assert problem.path.endswith("b2b2b2b2-virtualenv-py3.12.json")
        assert "not stored: IntegrityError" in problem.message
        for sha in ("a1" * 20, "c3" * 20):
            assert len(_stored(store, f"asv:box/{sha[:8]}-virtualenv-py3.12.json")) == 9
        with store.read() as conn:
            assert conn.execute(select(m.Run.__table__.c.source)).scalars().all().__len__() == 2
        again = import_asv_results(store, folder)
        assert again.unchanged == 2 and again.imported == 0 and len(again.failed) == 1
    finally:
        store.close()


def test_a_run_row_the_database_refuses_loses_only_its_file(tmp_path):
    """On SQLite a file's run row is inserted through the driver's cursor, not SQLAlchemy's execute: the
    driver's refusal (here a trigger's) must still reach the batches as SQLAlchemy's error, so that only
    that file is lost and the import goes on."""
    from mmtrack.store.db import open_store

    folder = tmp_path / "results"
    box = folder / "box"
    box.mkdir(parents=True)
    (folder / "benchmarks.json").write_text(json.dumps(BENCHMARKS_JSON))
    for sha in ("a1" * 20, "b2" * 20, "c3" * 20):
        (box / f"{sha[:8]}-virtualenv-py3.12.json").write_text(json.dumps(_odd_file(sha)))
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        with store.write() as conn:
            conn.exec_driver_sql("CREATE TRIGGER refuse BEFORE INSERT ON run WHEN NEW.source LIKE '%b2b2b2b2%' "
                                 "BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END")
        summary = import_asv_results(store, folder)
        assert summary.imported == 2
        [problem] = summary.failed
        assert problem.path.endswith("b2b2b2b2-virtualenv-py3.12.json")
        assert "not stored: IntegrityError" in problem.message and "refused by a test trigger" in problem.message
        for sha in ("a1" * 20, "c3" * 20):
            assert len(_stored(store, f"asv:box/{sha[:8]}-virtualenv-py3.12.json")) == 9
    finally:
        store.close()


def test_a_parse_worker_that_dies_costs_only_its_speed(tmp_path, monkeypatch):
    """The worker that parses ahead is killed early on: this process parses the rest itself."""
    import multiprocessing
    import os
    import signal

    from mmtrack.store.db import open_store

    folder = tmp_path / "results"
    box = folder / "box"
    box.mkdir(parents=True)
    (folder / "benchmarks.json").write_text(json.dumps(BENCHMARKS_JSON))
    shas = [f"{i:040x}" for i in range(40)]
    for sha in shas:
        (box / f"{sha[-8:]}-virtualenv-py3.12.json").write_text(json.dumps(_odd_file(sha)))
    here = []
    real = asv_import._read_and_parse
    monkeypatch.setattr(asv_import, "_read_and_parse", lambda item, b: here.append(item) or real(item, b))
    killed = []

    def progress(done, total, path):
        if done == 1 and not killed:
            [worker] = multiprocessing.active_children()
            os.kill(worker.pid, signal.SIGKILL)
            killed.append(worker.pid)

    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        summary = import_asv_results(store, folder, progress, parse_ahead=True)
        assert killed and summary.failed == [] and summary.imported == 40 and summary.result_count == 40 * 9
        assert 0 < len(here) < 40  # the worker parsed the first files, this process the rest
        for sha in shas:
            assert len(_stored(store, f"asv:box/{sha[-8:]}-virtualenv-py3.12.json")) == 9
    finally:
        store.close()
    assert multiprocessing.active_children() == []
