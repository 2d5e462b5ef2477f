"""Fixtures and helpers shared by the store tests (no tests here).

``store_url`` yields a fresh SQLite file, and additionally an emptied
PostgreSQL database when ``MMTRACK_TEST_PG`` (a URL) is set.
"""

from __future__ import annotations

import json
import math
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MMTRACK_SHARED") or ROOT.parent / "shared")
ASV_DATA = SHARED / "data" / "asv-results"
METPY = ASV_DATA / "metpy" / "results"
CONDA = ASV_DATA / "conda" / ".asv" / "results"
PG_URL = os.environ.get("MMTRACK_TEST_PG")

BACKENDS = ["sqlite"] + (["postgresql"] if PG_URL else [])


def reset_postgres(url: str) -> None:
    from sqlalchemy import create_engine, text

    from mmtrack.store.db import normalize_url

    engine = create_engine(normalize_url(url))
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    reset_postgres(PG_URL)
    return PG_URL


@pytest.fixture
def store(store_url):
    from mmtrack.store.db import open_store

    s = open_store(store_url)
    yield s
    s.close()


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def mmtrack_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "mmtrack", *args]


def engine_stats(name: str = "bench.Suite.track_sum", params: dict[str, str] | None = None, scale: float = 1.0):
    """Real BenchmarkStats from the engine: a small loop plus a custom metric per sample."""
    from mmtrack.measure.metrics import BenchSampleResult, MetricValue
    from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark

    def fn(_ctx, chunk_size, chunk_num):
        total = 0
        for i in range(chunk_size):
            total += i
        return BenchSampleResult(chunk_size, [MetricValue("items", chunk_size * scale, "count"),
                                              MetricValue("bandwidth", 1.0 + chunk_num, "GiB/s", section="memory")])

    spec = BenchSpec(name=name, fn=fn, returns_sample=True, chunk_size=200, params=dict(params or {}))
    options = RunOptions(warm_up=0.001, duration=0.01, min_samples=5, max_samples=5, target_chunk=0.001)
    return run_benchmark(spec, options)


def commit_info(i: int, *, dirty: bool = False, base: datetime | None = None):
    from mmtrack.results import CommitInfo

    base = base or datetime(2024, 1, 1, tzinfo=timezone.utc)
    return CommitInfo(sha=f"{i:040x}", date=base + timedelta(hours=i), message=f"commit {i}", dirty=dirty,
                      branches=("main",))


def count_asv_results(results_dir: Path) -> dict[str, int]:
    """An independent count straight from the JSON: results by status and files.

    Format 2 rows hold a list per parameter combination (null = failed, NaN =
    skipped); format 1 holds a scalar or {"result": ...} per benchmark.
    """
    counts = {"files": 0, "ok": 0, "failed": 0, "skipped": 0}
    for machine in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        for f in sorted(machine.glob("*.json")):
            if f.name == "machine.json":
                continue
            d = json.loads(f.read_text())
            counts["files"] += 1
            for row in d["results"].values():
                if d["version"] == 2:
                    cols = dict(zip(d["result_columns"], row))
                    grid = cols.get("params") or []
                    n = math.prod(len(p) for p in grid) if grid else 1
                    values = cols.get("result") or [None] * n
                else:
                    values = row.get("result") if isinstance(row, dict) else row
                    values = values if isinstance(values, list) else [values]
                for v in values:
                    key = "failed" if v is None else "skipped" if math.isnan(v) else "ok"
                    counts[key] += 1
    return counts
