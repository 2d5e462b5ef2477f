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
ASV_DATA = ROOT / "tests" / "data" / "asv-results"  # real asv results kept in the repository
METPY = ASV_DATA / "metpy" / "results"
CONDA = ASV_DATA / "conda" / "results"
PG_URL = os.environ.get("MMTRACK_TEST_PG")

BACKENDS = ["sqlite", "postgresql"]


def require_postgres() -> str:
    """The test server's URL. Without one a developer's run skips in one line; CI must never skip."""
    if PG_URL:
        return PG_URL
    if os.environ.get("CI"):
        pytest.fail("MMTRACK_TEST_PG is not set in CI: .ci/run starts a PostgreSQL server and sets it")
    pytest.skip("PostgreSQL: set MMTRACK_TEST_PG to a server's URL to run these (.ci/run starts one)")


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
    url = require_postgres()
    reset_postgres(url)
    return url


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


def engine_stats(name: str = "bench.Suite.track_sum", params: dict[str, str] | None = None, scale: float = 1.0,
                 items: dict | None = None):
    """Real BenchmarkStats from the engine: a small loop plus a custom metric per sample.
    ``items`` declares the "items" metric further (direction, display_name, format)."""
    from mmtrack.measure.metrics import BenchSampleResult, MetricValue
    from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark

    def fn(_ctx, chunk_size, chunk_num):
        total = 0
        for i in range(chunk_size):
            total += i
        return BenchSampleResult(chunk_size, [MetricValue("items", chunk_size * scale, "count", **(items or {})),
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


# -- a store written by an older mmtrack ---------------------------------------------------------

STORE_FIXTURE = ROOT / "tests" / "data" / "store-r0004.db"  # made by tests/data/make_store_r0004.py
STORE_FIXTURE_REVISION = "0004"
STORE_FIXTURE_SNAPSHOT = ROOT / "tests" / "data" / "store-r0004.snapshot.txt.gz"


def snapshot(store) -> list[str]:
    """Every record the read side returns, one line per call (dataclass reprs are exact for
    floats). Lines 0-5: machines, environments, benchmarks, metrics, commits, change points;
    then per run, latest first: the run, its measurements, its case setups."""
    from mmtrack.store import reads as q

    lines = [repr(q.list_machines(store)), repr(q.list_environments(store)), repr(q.list_benchmarks(store)),
             repr(q.list_metrics(store)), repr(q.commits(store)), repr(q.load_change_points(store))]
    for r in q.runs(store):
        lines += [repr(r), repr(q.measurements_for_run(store, r.id)), repr(q.case_setups(store, r.id))]
    return lines


def load_store_fixture(url: str) -> None:
    """Put the fixture store (revision 0004) at ``url``: a copy of the file for SQLite; for
    PostgreSQL, a store made at that revision and filled with the fixture's rows."""
    import shutil

    from sqlalchemy import MetaData, create_engine, make_url, text

    from mmtrack.store.db import open_store, upgrade

    if make_url(url).get_backend_name() == "sqlite":
        shutil.copy(STORE_FIXTURE, make_url(url).database)
        return
    source = create_engine(f"sqlite:///{STORE_FIXTURE}")
    store = open_store(url, upgrade_schema=False)
    upgrade(store, STORE_FIXTURE_REVISION)
    tables, target = MetaData(), MetaData()
    tables.reflect(source)
    target.reflect(store.engine)
    with source.connect() as src, store.engine.begin() as dst:
        for table in tables.sorted_tables:
            if table.name == "alembic_version":
                continue
            rows = [{k: v.replace(tzinfo=timezone.utc) if isinstance(v, datetime) else v  # stored as UTC
                     for k, v in r._mapping.items()} for r in src.execute(table.select())]
            if rows:
                dst.execute(target.tables[table.name].insert(), rows)
            if "id" in table.c:  # rows came with their ids: move the sequence past them
                dst.execute(text(f"SELECT setval(pg_get_serial_sequence('\"{table.name}\"', 'id'), "
                                 f"(SELECT COALESCE(max(id), 0) + 1 FROM \"{table.name}\"), false)"))
    source.dispose()
    store.close()


#: A writer process for the concurrency tests. argv: store URL, process number, runs, the tests folder,
#: a file whose appearance starts every writer at once, and optionally the machine name (default machine-N).
WRITER = r"""
import sys, time
from datetime import datetime, timezone
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from mmtrack.store.db import open_store
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run
from test_store_support import commit_info, engine_stats

url, proc, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
machine = sys.argv[6] if len(sys.argv) > 6 else f"machine-{proc}"
stats = engine_stats()
go = Path(sys.argv[5])
while not go.exists():
    time.sleep(0.005)
store = open_store(url)  # all processes race to create the schema, too
for i in range(runs):
    run = RunRecord(machine, "py", commit_info(proc * 100_000 + i), datetime.now(timezone.utc), host=f"proc-{proc}")
    record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, stats=stats)])
store.close()
"""
