"""Engine runs in, plain records out: series, commits, runs, change points."""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np
import pytest

from mmtrack.errors import UserError
from mmtrack.measure.metrics import Direction, MetricSummary
from mmtrack.results import PRIMARY, ChangePoint, Measurement, MetricKey, SeriesKey, canonical_params
from mmtrack.store import reads as q
from mmtrack.store import writes
from mmtrack.measure.stats import sample_stats
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run
from mmtrack.store.reads import columns, points
from test_store_support import commit_info, engine_stats, store, store_url  # noqa: F401

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def _record(store, i, stats, *, machine="m1", env="py3.11", dirty=False, failed=False, started=None):
    run = RunRecord(
        machine=machine,
        environment=env,
        commit=commit_info(i, dirty=dirty),
        started_at=started or T0.replace(minute=i % 60),
        suite="benchmarks",
        host="ci-1",
        tool_versions={"mmtrack": "0.1.0"},
        machine_info={"cpu": "test"},
    )
    cases = [EngineCaseRecord(stats.name, stats.params, version="v1", stats=stats)]
    if failed:
        cases.append(EngineCaseRecord("bench.Suite.track_broken", {}, status="failed", message="boom"))
    return record_engine_run(store, run, cases)


def test_engine_run_round_trips_every_metric(store):
    stats = engine_stats(params={"n": "10"})
    run_id = _record(store, 1, stats, failed=True)
    got = q.measurements_for_run(store, run_id)
    by_key = {(m.benchmark, m.metric): m for m in got}
    for s in stats.tracked_metrics():
        m = by_key[(stats.name, MetricKey(*s.key))]
        expected = Measurement.from_summary(stats.name, stats.params, s, version="v1")
        assert m.params == {"n": "10"} and m.version == "v1" and m.status == "ok"
        assert m.direction == s.direction and m.format == s.format and m.display_name == s.display_name
        assert m.samples == pytest.approx(s.values)
        for f in ("median", "mean", "p95", "min", "max", "q1", "q3", "count"):
            assert getattr(m, f) == pytest.approx(getattr(expected, f)), f
    broken = by_key[("bench.Suite.track_broken", PRIMARY)]
    assert broken.status == "failed" and broken.median is None and broken.samples == ()
    assert q.list_metrics(store, "bench.Suite.track_broken") == [PRIMARY]
    assert set(q.list_metrics(store, stats.name)) == {MetricKey(*s.key) for s in stats.tracked_metrics()}


def test_series_in_commit_date_order_and_dirty_runs_left_out(store):
    stats = engine_stats()
    # recorded out of order; commit i has date base + i hours
    for i in (3, 1, 2):
        _record(store, i, stats)
    _record(store, 4, stats, dirty=True)
    _record(store, 5, stats, machine="other")
    key = SeriesKey("m1", "py3.11", stats.name, canonical_params(stats.params), PRIMARY)
    pts = q.series(store, key)
    assert [p.commit.sha for p in pts] == [commit_info(i).sha for i in (1, 2, 3)]
    assert all(p.measurement.metric == PRIMARY and p.measurement.count == 5 for p in pts)
    assert pts[0].commit.date == commit_info(1).date and pts[0].commit.branches == ("main",)
    dirty = q.series(store, key, include_dirty=True)
    assert len(dirty) == 4 and dirty[-1].commit.dirty and dirty[-1].commit.short.endswith("+dirty")
    bare = q.series(store, key, with_samples=False)
    assert [p.measurement.median for p in bare] == [p.measurement.median for p in pts]
    assert all(p.measurement.samples == () for p in bare)
    other = SeriesKey("m1", "py3.11", stats.name, canonical_params(stats.params), MetricKey("memory", "bandwidth", "GiB/s"))
    assert [p.measurement.direction for p in q.series(store, other)] == [Direction.HIGHER] * 3


def test_commit_lookups_and_runs(store):
    stats = engine_stats()
    r1 = _record(store, 0xABC, stats, started=T0)
    r2 = _record(store, 0xABC, stats, started=T0.replace(hour=5))  # a later re-run of the same commit
    _record(store, 0xABD, stats, started=T0.replace(hour=6))
    sha = commit_info(0xABC).sha
    assert q.resolve_commit(store, sha).sha == sha
    assert q.resolve_commit(store, sha.upper()).sha == sha
    with pytest.raises(UserError, match="ambiguous"):
        q.resolve_commit(store, sha[:-1])
    with pytest.raises(UserError, match="not in the store"):
        q.resolve_commit(store, "ffff")
    ms = q.measurements_for_commit(store, sha)
    assert {m.metric for m in ms} == {MetricKey(*s.key) for s in stats.tracked_metrics()}
    assert len(ms) == len(stats.tracked_metrics())  # one per case and metric: the latest run wins
    listed = q.runs(store)
    assert [r.id for r in listed][:2] == [listed[0].id, r2] and listed[-1].id == r1
    assert listed[0].results == 1 and listed[0].tool_versions == {"mmtrack": "0.1.0"} and listed[0].host == "ci-1"
    assert [r.id for r in q.runs(store, commit=sha)] == [r2, r1]
    assert q.runs(store, machine="nope") == []
    assert [m.name for m in q.list_machines(store)] == ["m1"] and q.list_machines(store)[0].info == {"cpu": "test"}
    assert [e.name for e in q.list_environments(store)] == ["py3.11"]
    [b] = q.list_benchmarks(store)
    assert b.name == stats.name and b.versions == ("v1",) and b.type == "engine"


def test_measurements_for_commit_needs_a_machine_when_several(store):
    stats = engine_stats()
    _record(store, 7, stats, machine="a")
    _record(store, 7, stats, machine="b")
    with pytest.raises(UserError, match="--machine"):
        q.measurements_for_commit(store, commit_info(7).sha)
    assert q.measurements_for_commit(store, commit_info(7).sha, machine="a")


def test_change_points_save_replace_load(store):
    key = SeriesKey("m1", "py3.11", "b", "{}", PRIMARY)
    other = SeriesKey("m1", "py3.11", "c", '{"n":"1"}', MetricKey("memory", "bandwidth", "GiB/s"))
    cp = ChangePoint(key, Direction.LOWER, "regression", "a" * 40, "b" * 40, 1.0, 1.5, 1.5, 0.001, True, "edivisive",
                     {"window": 10})
    cp2 = ChangePoint(other, Direction.HIGHER, "improvement", "c" * 40, "d" * 40, 2.0, 3.0, 1.5)
    assert writes.save_change_points(store, [cp, cp2]) == 2
    assert q.load_change_points(store) == [cp, cp2]
    writes.save_change_points(store, [cp])  # re-detect one series: replaced, not duplicated
    assert q.load_change_points(store) == [cp, cp2]
    writes.save_change_points(store, [], replace=[key])  # the change went away
    assert q.load_change_points(store) == [cp2]
    assert q.load_change_points(store, series=other) == [cp2] and q.load_change_points(store, benchmark="b") == []


@pytest.mark.parametrize("values", [[1.0], [3.0, 1.0, 2.0], list(np.random.default_rng(1).lognormal(size=37))])
def test_sample_stats_agrees_with_metric_summary(values):
    s = MetricSummary.from_values("", "x", "s", values)
    st = sample_stats(values)
    for f in ("mean", "median", "p95", "min", "max", "count"):
        assert st[f] == pytest.approx(getattr(s, f), rel=1e-12), f
    q1, q3 = np.percentile(values, [25, 75])
    assert st["q1"] == pytest.approx(q1) and st["q3"] == pytest.approx(q3)
    assert not any(math.isnan(v) for v in st.values())


def test_series_builds_measurements_in_field_order():
    """series() builds Measurement positionally for speed; keep it in step with results.py."""
    import dataclasses

    assert tuple(f.name for f in dataclasses.fields(Measurement)) == points.MEASUREMENT_FIELDS


def test_series_records_equal_the_per_run_records_null_samples_dropped(store):
    """series() builds its records on a fast path; they must equal what measurements_for_run builds."""
    from sqlalchemy import select, update

    from mmtrack.store import models as m

    stats = engine_stats()
    run_ids = [_record(store, i, stats) for i in (1, 2, 3)]
    second = select(m.Result.id).where(m.Result.run_id == run_ids[1]).scalar_subquery()
    with store.write() as conn:  # a non-finite engine sample is stored as null
        conn.execute(update(m.Measurement).where(m.Measurement.result_id == second).values(values=[1.0, None, 2.0]))
    key = SeriesKey("m1", "py3.11", stats.name, canonical_params(stats.params), PRIMARY)
    pts = q.series(store, key)
    expected = [next(x for x in q.measurements_for_run(store, r) if x.metric == PRIMARY) for r in run_ids]
    assert [p.measurement for p in pts] == expected and [p.run_id for p in pts] == run_ids
    assert pts[1].measurement.samples == (1.0, 2.0) and len(pts[0].measurement.samples) == 5
    assert [p.commit for p in pts] == [commit_info(i) for i in (1, 2, 3)]


def test_asv_rounds_store_the_samples_of_every_round(store):
    """Under asv with rounds=2 the spool pools both rounds' samples; the store keeps the pool,
    not the last round's statistics."""
    from sqlalchemy import select

    from mmtrack.asvbridge.spool import merge_metrics
    from mmtrack.store import models as m

    first, last = engine_stats(), engine_stats()
    pooled = merge_metrics(first.tracked_metrics(), last.tracked_metrics())
    run = RunRecord("m1", "py3.11", commit_info(1), T0, suite="benchmarks")
    run_id = record_engine_run(store, run, [EngineCaseRecord(last.name, last.params, stats=last, metrics=pooled)])
    got = {x.metric: x for x in q.measurements_for_run(store, run_id)}
    for s in pooled:
        assert got[MetricKey(*s.key)].samples == pytest.approx([v for v in s.values if math.isfinite(v)])
        assert got[MetricKey(*s.key)].count == s.count == 2 * last.samples
    with store.read() as conn:
        assert conn.execute(select(m.Result.repeat).where(m.Result.run_id == run_id)).scalar_one() == 2 * last.samples


def test_a_metric_declared_differently_keeps_its_declaration_per_point(store):
    """Direction, format and display name live on the series row: a run that declares a metric
    differently under the same code version gets a row of its own, and every point keeps the
    declaration it was measured with (also with dirty runs, the other optional column)."""
    plain = engine_stats()
    declared = engine_stats(items={"direction": Direction.HIGHER, "display_name": "Items done"})
    (items,) = [s for s in plain.tracked_metrics() if s.name == "items"]
    run_ids = [_record(store, 1, plain), _record(store, 2, declared), _record(store, 3, plain, dirty=True)]
    key = SeriesKey("m1", "py3.11", plain.name, "{}", MetricKey(*items.key))
    pts = q.series(store, key, include_dirty=True)
    assert [(p.measurement.direction, p.measurement.display_name) for p in pts] == [
        (items.direction, items.display_name), (Direction.HIGHER, "Items done"), (items.direction, items.display_name)]
    assert [p.commit.dirty for p in pts] == [False, False, True] and [p.run_id for p in pts] == run_ids
    expected = [next(x for x in q.measurements_for_run(store, r) if x.metric == key.metric) for r in run_ids]
    assert [p.measurement for p in pts] == expected
    assert [p.run_id for p in q.series(store, key)] == run_ids[:2]
    # one key, whatever the number of series rows behind it
    assert q.list_series(store, benchmark="track_sum").count(key) == 1


def test_list_series_lists_only_what_was_measured(store):
    a, b = engine_stats("bench.A.track_a"), engine_stats("bench.B.track_b")
    _record(store, 1, a, machine="m1")
    _record(store, 2, b, machine="m2", env="py3.12")
    keys = q.list_series(store)
    assert {(k.machine, k.environment, k.benchmark) for k in keys} == {
        ("m1", "py3.11", a.name), ("m2", "py3.12", b.name)}
    assert keys == sorted(keys, key=lambda k: (k.benchmark, k.params, k.metric, k.machine, k.environment))
    assert {k.metric for k in keys if k.benchmark == a.name} == {MetricKey(*s.key) for s in a.tracked_metrics()}
    assert {k.benchmark for k in q.list_series(store, machine="m2")} == {b.name}
    assert q.list_series(store, environment="py3.11", benchmark="B") == []


def test_fast_constructors_build_the_same_frozen_records():
    """series() skips the frozen __init__ of its records; what it builds must be the real thing."""
    import dataclasses
    import pickle

    from mmtrack.results import CommitInfo, SeriesPoint

    fmt = Measurement.__dataclass_fields__["format"].default
    args = ("b", {"n": "1"}, PRIMARY, Direction.LOWER, "ok", 1.0, 1.5, 2.0, 0.5, 2.5,
            None, None, 0.9, 1.1, 3, (1.0, 2.0), "v1", fmt, "x", "callgrind 2")  # fmt: skip
    fast = points._new_measurement(*args)
    assert type(fast) is Measurement and fast == Measurement(*args)
    assert repr(fast) == repr(Measurement(*args))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.median = 3.0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(fast)) == fast
    assert dataclasses.replace(fast, median=3.0) == Measurement(*args[:5], 3.0, *args[6:])
    commit = points._new_commit("a" * 40, T0, "msg", False, ("main",))
    assert commit == CommitInfo("a" * 40, T0, "msg", False, ("main",)) and commit.short == "a" * 8
    point = points._new_point(commit, 7, fast)
    assert point == SeriesPoint(commit, 7, Measurement(*args)) and type(point) is SeriesPoint
    with pytest.raises(TypeError):
        points._new_commit("a" * 40, T0, "msg", False)  # every field must be given

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    with pytest.raises(TypeError):
        points._fast_constructor(NoSlots)


def test_engine_run_with_a_source_is_recorded_once(store):
    stats = engine_stats()
    run = RunRecord("m1", "py3.11", commit_info(9), T0, source="spool:abc")
    first = record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, stats=stats)])
    again = record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, stats=stats)])
    assert first == again and [r.id for r in q.runs(store)] == [first]


def test_series_gives_one_point_per_commit_its_latest_run(store):
    # mmtrack run records an asv run and an engine run of the same commit
    slow, fast = engine_stats(scale=2.0), engine_stats()
    _record(store, 1, slow, started=T0)
    latest = _record(store, 1, fast, started=T0.replace(hour=5))
    _record(store, 2, fast, started=T0.replace(hour=6))
    key = SeriesKey("m1", "py3.11", fast.name, canonical_params(fast.params), PRIMARY)
    pts = q.series(store, key)
    assert [p.commit.sha for p in pts] == [commit_info(1).sha, commit_info(2).sha]
    assert pts[0].run_id == latest
    every = q.series(store, key, per_commit=False)
    assert [p.commit.sha for p in every] == [commit_info(i).sha for i in (1, 1, 2)]


def test_newest_points_are_read_further_back_where_the_newest_runs_hold_too_few(store, monkeypatch):
    """Two runs of every commit (an asv run and an mmtrack run): the newest ``last + NEWEST_SLACK`` runs
    hold too few commits, so series_newest_many reads ``2 * last`` runs, then the series itself."""
    stats = engine_stats()
    for i in range(1, 7):
        _record(store, i, stats, started=T0.replace(hour=i))
        _record(store, i, engine_stats(scale=1.5), started=T0.replace(hour=i, minute=30))
    key = SeriesKey("m1", "py3.11", stats.name, canonical_params(stats.params), PRIMARY)
    monkeypatch.setattr(points, "NEWEST_SLACK", 0)
    depths: list[int] = []
    real = points._newest_in_runs
    monkeypatch.setattr(points, "_newest_in_runs", lambda *args: depths.append(args[5]) or real(*args))
    for last, read in ((1, [1]), (3, [3, 6]), (4, [4, 8]), (6, [6, 12]), (7, [7, 14])):
        depths.clear()
        assert q.series_newest_many(store, [key], last) == {key: q.series(store, key, last=last)}
        assert depths == read  # 6 commits, 12 runs: the newest 2k runs hold k of them
    assert [p.run_id for p in q.series_newest_many(store, [key], 7)[key]] == [p.run_id for p in q.series(store, key)]


def test_newest_points_read_the_newest_last_runs_first_then_the_slack(store, monkeypatch):
    """Every series in every run (the nightly case): the newest ``last`` runs alone; two runs of every commit: then
    ``last + NEWEST_SLACK`` runs, which hold enough commits."""
    stats = engine_stats()
    for i in range(1, 13):
        _record(store, i, stats, started=T0.replace(hour=i))
    key = SeriesKey("m1", "py3.11", stats.name, canonical_params(stats.params), PRIMARY)
    depths: list[int] = []
    real = points._newest_in_runs
    monkeypatch.setattr(points, "_newest_in_runs", lambda *args: depths.append(args[5]) or real(*args))
    assert q.series_newest_many(store, [key], 3) == {key: q.series(store, key, last=3)}
    assert depths == [3]
    for i in range(10, 13):  # a second run of the three newest commits
        _record(store, i, engine_stats(scale=1.5), started=T0.replace(hour=i, minute=30))
    depths.clear()
    assert q.series_newest_many(store, [key], 3) == {key: q.series(store, key, last=3)}
    assert depths == [3, 3 + points.NEWEST_SLACK]


@pytest.mark.parametrize("packed", [
    [5, 0, 3, 1, 4, 2],  # dense and distinct: placed by the table
    [2, 0, 2, 1, 0, 1],  # repeats: the stable sort
    [10**9, 3, 7],  # sparse: the stable sort
    [],
])
def test_the_columns_packed_order_is_the_stable_sort(packed):
    values = np.array(packed, dtype=np.int64)
    assert columns._packed_order(values).tolist() == np.argsort(values, kind="stable").tolist()


def test_bulk_reads_equal_the_per_series_read(store):
    """series_many (publish) and series_columns (detect) read many series at once: per key the
    same points as ``series``, with several series rows behind a key, two runs of one commit, a
    dirty run, a failed case and a second machine in the store."""
    plain, declared = engine_stats(), engine_stats(items={"direction": Direction.HIGHER, "display_name": "Items"})
    _record(store, 1, plain, failed=True)
    _record(store, 2, declared, started=T0.replace(hour=1))
    _record(store, 2, plain, started=T0.replace(hour=2), failed=True)  # the latest run of commit 2
    _record(store, 3, plain, dirty=True)
    _record(store, 4, engine_stats(scale=3.0))
    _record(store, 4, plain, machine="other")
    keys = q.list_series(store)
    assert len(keys) > 4
    for batch in (1, 200):
        many = q.series_many(store, keys, batch=batch)
        assert list(many) == keys
        assert many == {k: q.series(store, k, with_samples=False) for k in keys}
    for last in (1, 2, 3, 10):  # from the newest runs alone (1, 2), or read whole where they do not hold enough
        assert q.series_newest_many(store, keys, last) == {k: q.series(store, k, last=last) for k in keys}
        for k in keys:
            assert q.series(store, k, last=last) == q.series(store, k)[-last:]  # the LIMIT read of series()
    for subset in (keys, keys[:1], keys[::-1]):
        cols = q.series_columns(store, subset)
        assert [c.key for c in cols] == subset
        for c in cols:
            ok = [p for p in q.series(store, c.key, with_samples=False)
                  if p.measurement.status == "ok" and p.measurement.median is not None]
            assert c.shas == [p.commit.sha for p in ok] and c.values == [p.measurement.median for p in ok]
            assert c.versions == [p.measurement.version for p in ok]
    assert any(c.shas for c in q.series_columns(store, keys))
    for c in q.series_columns(store, keys, usable_only=False):  # every point, None where it failed (the pages' history)
        pts = q.series(store, c.key, with_samples=False)
        assert c.shas == [p.commit.sha for p in pts] and c.versions == [p.measurement.version for p in pts]
        assert c.values == [p.measurement.median if p.measurement.status == "ok" else None for p in pts]
        assert None in c.values or all(p.measurement.status == "ok" for p in pts)
    assert any(None in c.values for c in q.series_columns(store, keys, usable_only=False))


def _columns_as_series_reads_them(store, cols) -> None:
    for c in cols:
        ok = [p for p in q.series(store, c.key, with_samples=False)
              if p.measurement.status == "ok" and p.measurement.median is not None]
        assert c.shas == [p.commit.sha for p in ok] and c.values == [p.measurement.median for p in ok]


def _cache_rows(store) -> dict[int, tuple[int, int, int]]:
    with store.read() as conn:
        return {r[0]: tuple(r[1:]) for r in q.fetch_sql(conn, "SELECT series_id, changes, appends, max_run_id FROM series_cache")}


def test_a_read_writes_no_cache_blob_and_names_the_ones_due(store):
    """Reads never write: ``series_columns`` leaves series_cache as it was, and says which blobs are due;
    ``writes.series_columns_keeping_cache`` writes exactly those, the same columns read."""
    for i in (1, 2):
        _record(store, i, engine_stats())
    keys = q.list_series(store)
    done = q.read_series_columns(store, keys)
    assert not _cache_rows(store) and done.blobs_due
    assert q.series_columns(store, keys) == done.columns and not _cache_rows(store)
    kept = writes.series_columns_keeping_cache(store, keys)
    assert kept == done.columns and set(_cache_rows(store)) == set(done.blobs_due)
    assert not q.read_series_columns(store, keys).blobs_due  # every blob current now


def test_detect_cache_gives_what_the_measurement_table_gives(store, monkeypatch):
    """writes.series_columns_keeping_cache keeps each series row's columns in series_cache: a series
    whose counters did not move is read from its blob, one that only gained newer points from its blob
    plus the new runs, and any other write (an older commit, a second run of a commit, a dirty run, a
    failed case) rereads it whole. Every read equals the per-series read."""
    plain = engine_stats()
    for i in (1, 2, 3):
        _record(store, i, plain, failed=True)
    keys = q.list_series(store)
    _columns_as_series_reads_them(store, writes.series_columns_keeping_cache(store, keys))
    first = _cache_rows(store)
    assert first and all(max_run > 0 for _, _, max_run in first.values())

    # a blob whose counters match is what is read: a median changed behind the counters' back stays unseen
    with store.write() as conn:
        conn.exec_driver_sql("UPDATE measurement SET median = median * 2")
    stale = q.series_columns(store, keys)
    with store.write() as conn:
        conn.exec_driver_sql("UPDATE measurement SET median = median / 2")
    _columns_as_series_reads_them(store, stale)

    # a newer commit: an append, read from the blob plus the new run; the blob is rewritten only once
    # CACHE_TAIL points have piled up behind it
    newest = _record(store, 9, engine_stats(scale=2.0), failed=True)
    cols = writes.series_columns_keeping_cache(store, keys)
    _columns_as_series_reads_them(store, cols)
    assert max(c.values[-1] / c.values[0] for c in cols if c.values and c.values[0] > 0) > 1.5
    assert _cache_rows(store) == first
    monkeypatch.setattr(columns, "CACHE_TAIL", 1)
    _columns_as_series_reads_them(store, writes.series_columns_keeping_cache(store, keys))
    assert {sid: row[2] for sid, row in _cache_rows(store).items()} == {sid: newest for sid in first}

    # writes that are not appends: an older commit, a second run of a commit, a dirty run
    _record(store, 5, engine_stats(scale=3.0))
    _columns_as_series_reads_them(store, writes.series_columns_keeping_cache(store, keys))
    _record(store, 9, plain, started=T0.replace(hour=5))
    _columns_as_series_reads_them(store, writes.series_columns_keeping_cache(store, keys))
    _record(store, 10, engine_stats(scale=4.0), dirty=True)
    cols = writes.series_columns_keeping_cache(store, keys)
    _columns_as_series_reads_them(store, cols)
    _columns_as_series_reads_them(store, q.series_columns(store, keys))  # from the blobs just written
    with store.read() as conn:
        counters = {r[0]: (r[1], r[2]) for r in q.fetch_sql(conn, "SELECT id, changes, appends FROM series")}
    assert {sid: row[:2] for sid, row in _cache_rows(store).items()} == counters
