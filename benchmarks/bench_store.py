"""bench_store: the history store's two speed targets.

- ``StoreImport.track_import_asv``: importing real asv results folders (the
  MetPy and conda histories under ``../shared/data/asv-results``) into a fresh
  SQLite store. One operation is one results file; the rate reads files/s.
  Target: at least 200 files/s.
- ``StoreSeries.track_fetch_series``: fetching one series (one benchmark, one
  metric, 10,000 commits, 10 samples per point) as ``SeriesPoint`` records from
  a SQLite store that also holds 19 other series of 10,000 commits, with and
  without the per-sample values. One operation is one fetch. Target: 50 ms or
  less.

Run with ``python3 -m mmtrack bench benchmarks -b store``.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import mmtrack
from mmtrack import BenchSampleResult

HISTORIES = {"metpy": "metpy/results", "conda": "conda/.asv/results"}
COMMITS = 10_000
SERIES = 20  # series in the store; one is fetched


def _shared() -> Path:
    env = os.environ.get("MMTRACK_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


_scratch: list[tuple[str, object]] = []


def _fresh_store(_chunk_size: int):
    """A new, empty SQLite store per sample, made (and the last one closed) outside the timed
    region: closing checkpoints the WAL into the database file, a one-off cost per process."""
    from mmtrack.store.db import open_store

    while _scratch:
        tmp, store = _scratch.pop()
        store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix="mmtrack-bench-")
    store = open_store(f"sqlite:///{tmp}/store.db")
    _scratch.append((tmp, store))
    return store


class StoreImport:
    params = list(HISTORIES)
    param_names = ["history"]

    def setup(self, history):
        from mmtrack.asvbridge.results_folder import find_results_files

        self.results = _shared() / "data" / "asv-results" / HISTORIES[history]
        if not self.results.is_dir():
            raise NotImplementedError(f"{self.results} is missing")  # asv: skipped
        self.files = len(find_results_files(self.results))

    @mmtrack.bench_sample(
        chunk_size=1,
        context=_fresh_store,
        throughput=mmtrack.Throughput.per_operation(1, "files"),
    )
    def track_import_asv(self, store, chunk_size, chunk_num):
        from mmtrack.store.asv_import import import_asv_results

        summary = import_asv_results(store, self.results)
        assert summary.imported == self.files and not summary.failed
        return BenchSampleResult(self.files)


def build_series_store(path: Path, commits: int = COMMITS, series: int = SERIES, samples: int = 10):
    """A store with ``series`` benchmarks measured on ``commits`` commits (bulk-written)."""
    from sqlalchemy import insert

    from mmtrack.results import PRIMARY
    from mmtrack.store import models as m
    from mmtrack.store.db import open_store

    store = open_store(f"sqlite:///{path}")
    rng = random.Random(1)
    t0 = datetime(2020, 1, 1, tzinfo=timezone.utc)
    with store.write() as conn:
        conn.execute(insert(m.Machine), [{"id": 1, "name": "ci", "info": {}}])
        conn.execute(insert(m.Environment), [{"id": 1, "name": "py3.12", "info": {}}])
        conn.execute(insert(m.Metric), [{"id": 1, "section": PRIMARY.section, "name": PRIMARY.name,
                                         "unit": PRIMARY.unit}])
        conn.execute(insert(m.Benchmark), [{"id": b + 1, "name": f"suite.time_{b}", "params": "{}",
                                            "version": "v1", "unit": "seconds", "type": "time"}
                                           for b in range(series)])
        conn.execute(insert(m.Commit), [{"id": c + 1, "sha": f"{c:040x}", "date": t0 + timedelta(hours=c),
                                         "branches": ["main"]} for c in range(commits)])
        conn.execute(insert(m.Run), [{"id": c + 1, "started_at": t0 + timedelta(hours=c, minutes=5),
                                      "machine_id": 1, "environment_id": 1, "commit_id": c + 1, "dirty": False,
                                      "tool_versions": {}, "kind": "asv", "suite": "bench", "host": "ci"}
                                     for c in range(commits)])
        conn.execute(insert(m.Series), [{"id": b + 1, "machine_id": 1, "environment_id": 1, "benchmark_id": b + 1,
                                         "metric_id": 1, "direction": "lower", "format": "number", "display_name": ""}
                                        for b in range(series)])
        results, measurements = [], []
        for c in range(commits):  # in run order, as runs arrive
            for b in range(series):
                rid = c * series + b + 1
                values = sorted(1e-3 * (1 + 0.02 * rng.random()) for _ in range(samples))
                median = values[samples // 2]
                results.append({"id": rid, "run_id": c + 1, "benchmark_id": b + 1, "status": "ok", "value": median,
                                "number": 1, "repeat": samples})
                measurements.append({"series_id": b + 1, "result_id": rid, "position": 0, "median": median,
                                     "mean": sum(values) / samples, "p95": values[-1], "min": values[0],
                                     "max": values[-1], "count": samples, "values": values})
        conn.execute(insert(m.Result), results)
        conn.execute(insert(m.Measurement), measurements)
    return store


class StoreSeries:
    params = [True, False]
    param_names = ["with_samples"]

    def setup(self, with_samples):
        from mmtrack.results import PRIMARY, SeriesKey

        self.tmp = tempfile.mkdtemp(prefix="mmtrack-bench-series-")
        self.store = build_series_store(Path(self.tmp) / "series.db")
        self.key = SeriesKey("ci", "py3.12", f"suite.time_{SERIES // 2}", "{}", PRIMARY)
        self.with_samples = with_samples

    def teardown(self, with_samples):
        self.store.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @mmtrack.bench()
    def track_fetch_series(self, ctx, chunk_size, chunk_num):
        from mmtrack.store.reads import series

        for _ in range(chunk_size):
            points = series(self.store, self.key, with_samples=self.with_samples)
            assert len(points) == COMMITS
