"""Stores written by older mmtrack versions upgrade with every record intact.

The fixture ``tests/data/store-r0004.db`` was written by mmtrack at revision 0004
(asv imports in both results formats, engine runs with counters, custom metrics and a
null sample, a dirty run, a change point); its golden snapshot holds every record the
queries of that version returned. Older revisions are reached by downgrading it.
"""

from __future__ import annotations

import gzip
import shutil
from datetime import datetime, timezone

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from mmtrack.measure.metrics import Direction
from mmtrack.results import PRIMARY, ChangePoint, SeriesKey
from mmtrack.store import reads as q
from mmtrack.store import writes
from mmtrack.store.db import alembic_config, head_revision, open_store
from mmtrack.store.asv_import import import_asv_results
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run
from mmtrack.store.reads import points as point_reads
from test_store_support import (  # noqa: F401
    CONDA,
    STORE_FIXTURE_REVISION,
    STORE_FIXTURE_SNAPSHOT,
    commit_info,
    engine_stats,
    load_store_fixture,
    snapshot,
    store_url,
)

REVISIONS = [r for r in ScriptDirectory.from_config(alembic_config()).walk_revisions() if r.down_revision]
GOLDEN = gzip.decompress(STORE_FIXTURE_SNAPSHOT.read_bytes()).decode().splitlines()
CHANGE_POINTS_LINE = 5  # see test_store_support.snapshot


def test_models_match_head(tmp_path):
    # db.SCHEMA_HEAD is a constant (no Alembic import per command): it must name Alembic's head
    assert head_revision() == REVISIONS[0].revision == ScriptDirectory.from_config(alembic_config()).get_current_head()
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from mmtrack.store.models import Base

    s = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    with s.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    s.close()


def test_store_fixture_is_at_its_revision(tmp_path):
    url = f"sqlite:///{tmp_path / 'f.db'}"
    load_store_fixture(url)
    store = open_store(url, upgrade_schema=False)
    assert store.current_revision() == STORE_FIXTURE_REVISION
    store.close()


def test_old_store_upgrades_with_every_record_intact(store_url, tmp_path):
    load_store_fixture(store_url)
    store = open_store(store_url)  # upgrades on first use
    assert store.current_revision() == head_revision()
    assert snapshot(store) == GOLDEN
    # the new schema takes new data beside the old
    results = tmp_path / "results"
    shutil.copytree(CONDA, results)
    for f in sorted((results / "benchmarkers-MacBook-Pro.local").glob("*-*.json"))[12:]:
        f.unlink()
    assert import_asv_results(store, results).unchanged == 12
    stats = engine_stats()
    new_run = record_engine_run(
        store, RunRecord("m1", "py3.11", commit_info(3), datetime(2024, 1, 3, tzinfo=timezone.utc), suite="s"),
        [EngineCaseRecord(stats.name, stats.params, stats=stats)],
    )
    (setup,) = q.case_setups(store, new_run)
    assert setup.setup["domain"] == stats.domain.value
    points = q.series(store, SeriesKey("m1", "py3.11", stats.name, "{}", PRIMARY))
    assert [p.commit.sha for p in points] == [commit_info(i).sha for i in (1, 2, 3)]
    (primary,) = [s for s in stats.tracked_metrics() if s.key == (PRIMARY.section, PRIMARY.name, PRIMARY.unit)]
    assert points[-1].measurement.samples == primary.values  # float64 in, float64 out
    key = SeriesKey("m1", "py3.11", stats.name, "{}", PRIMARY)
    cp = ChangePoint(key, Direction.LOWER, "improvement", "c" * 40, "d" * 40, 2.0, 1.0, 0.5)
    writes.save_change_points(store, [cp])
    assert q.load_change_points(store) == [cp]
    store.close()


def test_head_downgrades_to_the_fixture_revision_and_back(store_url):
    """The newest revision's downgrade keeps every record, on both databases."""
    load_store_fixture(store_url)
    store = open_store(store_url)
    with store.write() as conn:
        command.downgrade(alembic_config(conn), STORE_FIXTURE_REVISION)
    assert store.current_revision() == STORE_FIXTURE_REVISION
    store.close()
    store = open_store(store_url)
    assert store.current_revision() == head_revision() and snapshot(store) == GOLDEN
    store.close()


@pytest.mark.parametrize("rev", REVISIONS[1:], ids=lambda r: f"{r.down_revision}->head")
def test_store_at_each_older_revision_upgrades(tmp_path, rev):
    """The fixture (written at 0004) upgraded to head, taken down to each older revision (the downgrades
    keep data) and back up."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    load_store_fixture(url)
    store = open_store(url)
    with store.write() as conn:
        command.downgrade(alembic_config(conn), rev.down_revision)
    assert store.current_revision() == rev.down_revision
    store.close()
    store = open_store(url)
    assert store.current_revision() == head_revision()
    assert held_by(snapshot(store), rev.down_revision) == held_by(GOLDEN, rev.down_revision)
    store.close()


def held_by(lines: list[str], revision: str) -> list[str]:
    """The snapshot lines a store at ``revision`` can hold: engine setups need 0003
    (result.setup), change points 0002."""
    out = list(lines)
    if revision < "0003":
        out = [line for i, line in enumerate(out) if i < 6 or (i - 6) % 3 != 2]  # the case-setup lines
    if revision < "0002":
        out[CHANGE_POINTS_LINE] = "[]"
    return out


def test_downgrade_to_base_revision_and_back(tmp_path):
    url = f"sqlite:///{tmp_path / 'd.db'}"
    store = open_store(url)
    stats = engine_stats()
    run = RunRecord("m1", "py3.11", commit_info(1), datetime(2024, 1, 1, tzinfo=timezone.utc))
    record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, stats=stats)])
    before = snapshot(store)
    base = REVISIONS[-1].down_revision
    with store.write() as conn:
        command.downgrade(alembic_config(conn), base)
    assert store.current_revision() == base
    with store.read() as conn:
        assert "change_point" not in inspect(conn).get_table_names()
    store.close()
    store = open_store(url)
    assert store.current_revision() == head_revision()
    assert held_by(snapshot(store), base) == held_by(before, base)
    store.close()


def test_upgraded_store_reads_a_series_as_one_key_range(tmp_path):
    """After 0005 the measurement table is keyed by (series, result) with no rowid, and the
    series query reads one range of that key (not a lookup per run)."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    load_store_fixture(url)
    store = open_store(url)
    with store.read() as conn:
        ddl = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'measurement'").scalar()
        compiled = point_reads._series_sql(conn.dialect, 1, False, True)
        plan = [r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", (1,)).all()]
    assert "WITHOUT ROWID" in ddl and "PRIMARY KEY (series_id, result_id)" in ddl
    assert plan[0].startswith("SEARCH measurement USING PRIMARY KEY (series_id=?)"), plan
    store.close()
