"""Every schema revision upgrades a store made at the revision before it, data intact."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from mmtrack.results import PRIMARY, ChangePoint, SeriesKey
from mmtrack.measure.metrics import Direction
from mmtrack.store import queries as q
from mmtrack.store.db import alembic_config, head_revision, open_store, upgrade
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, import_asv_results, record_engine_run
from test_store_support import CONDA, commit_info, engine_stats, store_url  # noqa: F401

REVISIONS = [r for r in ScriptDirectory.from_config(alembic_config()).walk_revisions() if r.down_revision]


def _snapshot(store):
    runs = q.runs(store)
    return {
        "runs": runs,
        "measurements": {r.id: q.measurements_for_run(store, r.id) for r in runs},
        "machines": q.list_machines(store),
        "benchmarks": q.list_benchmarks(store),
    }


def test_there_are_at_least_two_revisions_and_models_match_head(tmp_path):
    assert len(REVISIONS) >= 1 and head_revision() == REVISIONS[0].revision
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from mmtrack.store.models import Base

    s = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    with s.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    s.close()


@pytest.mark.parametrize("rev", REVISIONS, ids=lambda r: f"{r.down_revision}->{r.revision}")
def test_upgrade_from_previous_revision_keeps_data(store_url, tmp_path, rev, monkeypatch):
    if rev.down_revision < "0003":  # result.setup does not exist yet: write none
        monkeypatch.setattr("mmtrack.store.ingest.measurement_setup", lambda st: None)
    store = open_store(store_url, upgrade_schema=False)
    upgrade(store, rev.down_revision)
    assert store.current_revision() == rev.down_revision
    # data at the old revision: an asv history (a slice of the conda one) and an engine run
    results = tmp_path / "results"
    shutil.copytree(CONDA, results)
    for f in sorted((results / "benchmarkers-MacBook-Pro.local").glob("*-*.json"))[40:]:
        f.unlink()
    summary = import_asv_results(store, results)
    assert summary.imported == 40 and not summary.failed
    stats = engine_stats()
    run = RunRecord("m1", "py3.11", commit_info(1), datetime(2024, 1, 1, tzinfo=timezone.utc), suite="s")
    record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, stats=stats)])
    before = _snapshot(store)
    store.close()

    store = open_store(store_url)  # upgrades on first use
    assert store.current_revision() == head_revision()
    assert _snapshot(store) == before
    # the newer schema works on the old data
    key = SeriesKey("m1", "py3.11", stats.name, "{}", PRIMARY)
    cp = ChangePoint(key, Direction.LOWER, "regression", "a" * 40, "b" * 40, 1.0, 2.0, 2.0)
    q.save_change_points(store, [cp])
    assert q.load_change_points(store) == [cp]
    assert import_asv_results(store, results).unchanged == 40
    monkeypatch.undo()
    new_run = record_engine_run(
        store, RunRecord("m1", "py3.11", commit_info(2), datetime(2024, 1, 2, tzinfo=timezone.utc), suite="s"),
        [EngineCaseRecord(stats.name, stats.params, stats=stats)],
    )
    (setup,) = q.case_setups(store, new_run)
    assert setup.setup["domain"] == stats.domain.value and setup.setup["backend"] == stats.measurement_label
    store.close()


def test_downgrade_to_base_revision_and_back(tmp_path):
    url = f"sqlite:///{tmp_path / 'd.db'}"
    store = open_store(url)
    stats = engine_stats()
    run = RunRecord("m1", "py3.11", commit_info(1), datetime(2024, 1, 1, tzinfo=timezone.utc))
    record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, stats=stats)])
    before = _snapshot(store)
    base = REVISIONS[-1].down_revision
    with store.write() as conn:
        command.downgrade(alembic_config(conn), base)
    assert store.current_revision() == base
    with store.read() as conn:
        assert "change_point" not in inspect(conn).get_table_names()
    store.close()
    store = open_store(url)
    assert store.current_revision() == head_revision() and _snapshot(store) == before
    store.close()
