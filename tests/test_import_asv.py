"""mmtrack import-asv on the two real asv histories, and on hand-made files of every kind."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from sqlalchemy import func, select

from mmtrack.results import PRIMARY, MetricKey, SeriesKey, canonical_params
from mmtrack.store import models as m
from mmtrack.store import reads as q
from mmtrack.store.asv_import import import_asv_results
from test_store_support import (  # noqa: F401
    CONDA,
    METPY,
    count_asv_results,
    mmtrack_cmd,
    store,
    store_url,
    subprocess_env,
)


def _table_counts(store) -> dict[str, int]:
    with store.read() as conn:
        out = {t: conn.execute(select(func.count()).select_from(getattr(m, t))).scalar_one()
               for t in ("Run", "Result", "Measurement", "Commit", "Benchmark")}
        for status in ("ok", "failed", "skipped"):
            out[status] = conn.execute(
                select(func.count()).select_from(m.Result).where(m.Result.status == status)
            ).scalar_one()
    return out


@pytest.mark.parametrize("folder", [METPY, CONDA], ids=["metpy", "conda"])
def test_real_history_counts_match_the_json(store, folder):
    expected = count_asv_results(folder)
    summary = import_asv_results(store, folder)
    assert summary.failed == []
    assert summary.files == summary.imported == expected["files"]
    assert summary.results == {k: expected[k] for k in ("ok", "failed", "skipped")}
    counts = _table_counts(store)
    assert counts["Run"] == expected["files"]
    assert {k: counts[k] for k in ("ok", "failed", "skipped")} == summary.results
    assert counts["Measurement"] == counts["Result"] == sum(summary.results.values())
    # idempotent: a second import adds nothing
    again = import_asv_results(store, folder)
    assert again.imported == 0 and again.unchanged == expected["files"] and again.failed == []
    assert _table_counts(store) == counts


def test_metpy_values_and_stats_as_in_the_file(store):
    import_asv_results(store, METPY)
    f = sorted((METPY / "Docker_Container").glob("0*.json"))[0]
    d = json.loads(f.read_text())
    name, row = next(iter(d["results"].items()))
    cols = dict(zip(d["result_columns"], row))
    got = [x for x in q.measurements_for_commit(store, d["commit_hash"]) if x.benchmark == name]
    assert len(got) == 1
    x = got[0]
    assert x.metric == PRIMARY and x.status == "ok" and x.version == cols["version"]
    assert x.median == cols["result"][0]
    assert (x.ci_low, x.ci_high, x.q1, x.q3) == (cols["stats_ci_99_a"][0], cols["stats_ci_99_b"][0],
                                                  cols["stats_q_25"][0], cols["stats_q_75"][0])
    assert x.count == cols["stats_repeat"][0]
    # one series per benchmark across the 59 commits, in commit-date order
    env = d["env_name"]
    pts = q.series(store, SeriesKey("Docker_Container", env, name, "{}", PRIMARY))
    dates = [p.commit.date for p in pts]
    assert len(pts) == 59 and dates == sorted(dates)


def test_conda_old_format_peakmem_and_time(store):
    import_asv_results(store, CONDA)
    metrics = set(q.list_metrics(store))
    assert metrics == {PRIMARY, MetricKey("memory", "peakmem", "bytes")}
    bench = {b.name: b for b in q.list_benchmarks(store)}
    assert bench["peakmem_create_python"].type == "peakmemory" and bench["peakmem_create_python"].unit == "bytes"
    assert bench["time_create_python"].type == "time"
    machine = "benchmarkers-MacBook-Pro.local"
    [env] = q.list_environments(store, machine=machine)
    pts = q.series(store, SeriesKey(machine, env.name, "peakmem_create_python", canonical_params({}),
                                    MetricKey("memory", "peakmem", "bytes")))
    assert len(pts) > 100 and all(p.measurement.median is None or p.measurement.median > 1e6 for p in pts)
    [info] = [x for x in q.list_machines(store) if x.name == machine]
    assert info.info["cpu"].startswith("Intel")


def test_cli_import_asv_prints_summary_and_is_idempotent(tmp_path):
    db = tmp_path / "s.db"
    env = subprocess_env()
    first = subprocess.run(mmtrack_cmd("import-asv", str(METPY), "--db", str(db)), capture_output=True, text=True,
                           env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "imported 59 new run(s)" in first.stdout and "7552 results (7441 ok, 111 failed, 0 skipped)" in first.stdout
    second = subprocess.run(mmtrack_cmd("import-asv", str(METPY), "--db", str(db)), capture_output=True, text=True,
                            env=env, cwd=tmp_path)
    assert second.returncode == 0 and "skipped 59 already imported" in second.stdout
    missing = subprocess.run(mmtrack_cmd("import-asv", str(tmp_path / "nope"), "--db", str(db)), capture_output=True,
                             text=True, env=env, cwd=tmp_path)
    assert missing.returncode == 2 and "not a directory" in missing.stderr and "Traceback" not in missing.stderr


def test_changed_file_replaces_its_run(store, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(METPY, results)
    import_asv_results(store, results)
    before = _table_counts(store)
    f = sorted((results / "Docker_Container").glob("0*.json"))[0]
    d = json.loads(f.read_text())
    name = next(iter(d["results"]))
    d["results"][name][0] = [None]  # the benchmark now failed
    f.write_text(json.dumps(d))
    s = import_asv_results(store, results)
    assert (s.imported, s.replaced, s.unchanged) == (0, 1, 58)
    after = _table_counts(store)
    assert after["Run"] == before["Run"] and after["Result"] == before["Result"]
    assert after["failed"] == before["failed"] + 1
    assert after["ok"] == before["ok"] - 1
