"""import-asv on results written by a real asv run (every benchmark type, a parameter
grid, samples, failed and skipped cases, stats) and on asv's older format 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmtrack.results import PRIMARY, MetricKey, SeriesKey, canonical_params
from mmtrack.store import reads as q
from mmtrack.measure.stats import sample_stats
from mmtrack.store.asv_import import import_asv_results
from test_store_support import count_asv_results, store, store_url  # noqa: F401

BENCH = '''
class Kinds:
    params = ([1, 2], ["a", "b"])
    param_names = ["n", "label"]

    def setup(self, n, label):
        if n == 2 and label == "b":
            raise NotImplementedError  # asv skips this combination: NaN

    def time_sum(self, n, label):
        sum(range(100 * n))

    def track_value(self, n, label):
        if n == 1 and label == "b":
            raise ValueError("boom")  # asv: failed, null
        return n * 10.0

    track_value.unit = "widgets"

    def mem_list(self, n, label):
        return [0] * (1000 * n)

    def peakmem_list(self, n, label):
        [0] * (10000 * n)


def timeraw_import():
    return "import json"


def time_plain():
    sum(range(50))


def time_fails():
    raise RuntimeError("always")
'''

CONF = """{
    // asv allows comments here
    "version": 1,
    "project": "demo",
    "repo": ".",
    "branches": ["main"],
    "environment_type": "existing",
    "benchmark_dir": "benchmarks",
    "results_dir": "results",
    "html_dir": "html"
}
"""


@pytest.fixture(scope="module")
def asv_results(tmp_path_factory) -> Path:
    """Run real asv (existing environment, this Python) on a one-commit repository."""
    repo = tmp_path_factory.mktemp("asvrepo")
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench_all.py").write_text(BENCH)
    (repo / "asv.conf.json").write_text(CONF)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "benchmarks"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    # asv keeps machine entries in ~/.asv-machine.json: give it a HOME of the test's own holding a complete entry
    # (`asv machine --yes --machine X` writes a bare one), so no user's file is read or written.
    home = tmp_path_factory.mktemp("home")
    machine = {"machine": "testbox", "os": "Linux (test)", "arch": "x86_64", "cpu": "test CPU", "num_cpu": "2",
               "ram": "1000000"}
    (home / ".asv-machine.json").write_text(json.dumps({"testbox": machine, "version": 1}))
    env = {**os.environ, "HOME": str(home)}
    subprocess.run(
        [sys.executable, "-m", "asv", "run", "--python=same", f"--set-commit-hash={sha}", "--record-samples",
         "-a", "repeat=3", "-a", "number=2", "-a", "warmup_time=0", "--machine", "testbox"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # asv exits non-zero because time_fails fails, as intended
    results = repo / "results"
    assert len(list((results / "testbox").glob("*.json"))) == 2, "asv wrote no results"
    return results


def _results_file(results: Path) -> dict:
    [f] = [p for p in (results / "testbox").glob("*.json") if p.name != "machine.json"]
    return json.loads(f.read_text())


@pytest.mark.slow
def test_every_benchmark_type_from_a_real_asv_run(store, asv_results):
    expected = count_asv_results(asv_results)
    assert expected["skipped"] >= 1 and expected["failed"] >= 2  # the run did what the suite asks
    calls = []
    s = import_asv_results(store, asv_results, lambda done, total, path: calls.append((done, total)))
    assert s.failed == [] and s.imported == 1
    assert s.results == {k: expected[k] for k in ("ok", "failed", "skipped")}
    assert calls[0] == (0, 1) and calls[-1] == (1, 1)
    d = _results_file(asv_results)
    env, sha = d["env_name"], d["commit_hash"]
    ms = {(x.benchmark, x.params_key, x.metric): x for x in q.measurements_for_commit(store, sha)}

    def get(name, metric, **params):
        return ms[(f"bench_all.{name}", canonical_params({k: v for k, v in params.items()}), metric)]

    mem, peak = MetricKey("memory", "mem", "bytes"), MetricKey("memory", "peakmem", "bytes")
    widgets = MetricKey("track", "value", "widgets")
    # the parameter grid, one case per combination, values as asv wrote them (repr strings)
    cols = dict(zip(d["result_columns"], d["results"]["bench_all.Kinds.mem_list"]))
    assert [get("Kinds.mem_list", mem, n=n, label=lab).median for n in ("1", "2") for lab in ("'a'", "'b'")] == [
        v if v == v else None for v in cols["result"]]  # NaN (skipped) is stored as no value
    assert get("Kinds.mem_list", mem, n="2", label="'b'").status == "skipped"
    assert get("Kinds.peakmem_list", peak, n="2", label="'a'").median > 1e6
    assert get("Kinds.track_value", widgets, n="2", label="'a'").median == 20.0
    assert get("Kinds.track_value", widgets, n="1", label="'b'").status == "failed"
    assert get("Kinds.time_sum", PRIMARY, n="2", label="'b'").status == "skipped"
    assert get("time_fails", PRIMARY).status == "failed"
    # samples and stats columns, as in the file
    cols = dict(zip(d["result_columns"], d["results"]["bench_all.time_plain"]))
    plain = get("time_plain", PRIMARY)
    assert plain.samples == tuple(cols["samples"][0]) and plain.count == len(cols["samples"][0])
    assert plain.median == cols["result"][0]
    assert (plain.ci_low, plain.ci_high, plain.q1, plain.q3) == (
        cols["stats_ci_99_a"][0], cols["stats_ci_99_b"][0], cols["stats_q_25"][0], cols["stats_q_75"][0])
    st = sample_stats(cols["samples"][0])
    assert (plain.mean, plain.min, plain.max, plain.p95) == (st["mean"], st["min"], st["max"], st["p95"])
    raw = get("timeraw_import", PRIMARY)
    assert raw.status == "ok" and len(raw.samples) >= 3
    types = {b.name.rsplit(".", 1)[-1]: (b.type, b.unit) for b in q.list_benchmarks(store)}
    assert types["timeraw_import"] == ("time", "seconds") and types["track_value"] == ("track", "widgets")
    assert types["mem_list"] == ("memory", "bytes") and types["peakmem_list"] == ("peakmemory", "bytes")
    [run] = q.runs(store)
    assert run.suite == "demo" and run.kind == "asv" and run.machine == "testbox" and run.environment == env
    [machine] = q.list_machines(store)
    assert machine.info["num_cpu"] and "version" not in machine.info
    series = q.series(store, SeriesKey("testbox", env, "bench_all.Kinds.time_sum",
                                       canonical_params({"n": "1", "label": "'a'"}), PRIMARY))
    assert [p.commit.sha for p in series] == [sha]


def test_format_1_dict_rows_with_grid_stats_and_samples(store, tmp_path):
    """asv 0.3/0.4 wrote a dict per benchmark; asv's own converter reads it."""
    machine = tmp_path / "results" / "old-box"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text(json.dumps({"machine": "old-box", "cpu": "old", "version": 1}))
    sha = "ab" * 20
    v1 = {
        "version": 1,
        "commit_hash": sha,
        "date": 1500000000000,
        "env_name": "conda-py2.7",
        "python": "2.7",
        "requirements": {},
        "params": {"machine": "old-box", "python": "2.7"},
        "results": {
            "suite.time_grid": {
                "result": [0.5, None, float("nan")],
                "params": [["1", "2", "3"]],
                "stats": [{"ci_99": [0.4, 0.6], "q_25": 0.45, "q_75": 0.55, "number": 10, "repeat": 3}, None, None],
                "samples": [[0.4, 0.5, 0.6], None, None],
            },
            "suite.track_scalar": 42,
            "suite.mem_old": {"result": 1024},
        },
        "benchmark_version": {"suite.time_grid": "v-grid"},
        "started_at": {"suite.time_grid": 1500000001000},
        "ended_at": {"suite.time_grid": 1500000002000},
    }
    (machine / "deadbeef-conda-py2.7.json").write_text(json.dumps(v1))
    s = import_asv_results(store, tmp_path / "results")
    assert s.failed == [] and s.results == {"ok": 3, "failed": 1, "skipped": 1}
    ms = {(x.benchmark, x.params_key): x for x in q.measurements_for_commit(store, sha)}
    grid = ms[("suite.time_grid", canonical_params({"param1": "1"}))]
    assert (grid.median, grid.ci_low, grid.ci_high, grid.q1, grid.q3) == (0.5, 0.4, 0.6, 0.45, 0.55)
    assert grid.samples == (0.4, 0.5, 0.6) and grid.count == 3 and grid.version == "v-grid"
    assert ms[("suite.time_grid", canonical_params({"param1": "2"}))].status == "failed"
    assert ms[("suite.time_grid", canonical_params({"param1": "3"}))].status == "skipped"
    assert ms[("suite.track_scalar", "{}")].median == 42 and ms[("suite.track_scalar", "{}")].metric.section == "track"
    assert ms[("suite.mem_old", "{}")].metric == MetricKey("memory", "mem", "bytes")
    [run] = q.runs(store)
    assert run.tool_versions == {"asv_results_format": "1"}
    assert run.started_at.timestamp() == 1500000001.0
