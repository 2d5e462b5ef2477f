"""Counts of two counting methods are never read as a code change: compare and the gate (the same rows), and bench's
choice of a baseline. Two real stored runs per case, in a real store; counts per op from the real engine."""

from __future__ import annotations

import dataclasses
import json

import pytest
from sqlalchemy import select, update

from conftest import run_cli
from mmtrack.analysis.baseline import CaseIdentity, RunIdentity, incompatibility
from mmtrack.commands.compare import CompareRequest, run_compare
from mmtrack.measure import conditions
from mmtrack.measure.metrics import BenchSampleResult, Direction, MetricValue
from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark
from mmtrack.store import models as m
from mmtrack.store import reads as q
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run
from test_store_support import commit_info, store, store_url  # noqa: F401

BENCH = "bench.Suite.time_work"


def _counted(instructions: float, method: str):
    """Engine statistics of a case counted under callgrind by ``method``: ``instructions`` per op, every sample."""
    def fn(_ctx, chunk_size, _chunk_num):
        metric = MetricValue("instructions", instructions, "instr/op", "callgrind", direction=Direction.LOWER)
        return BenchSampleResult(chunk_size, [metric])

    options = RunOptions(warm_up=0.001, duration=0.01, min_samples=3, max_samples=3, target_chunk=0.001)
    stats = run_benchmark(BenchSpec(name=BENCH, fn=fn, returns_sample=True, chunk_size=10), options)
    assert stats.conditions is not None
    stats.conditions = dataclasses.replace(stats.conditions, process_model=conditions.UNDER_CALLGRIND, method=method)
    return stats


def _stored(store, i: int, instructions: float, method: str) -> int:
    run = RunRecord(machine="ci", environment="callgrind-py", commit=commit_info(i), started_at=commit_info(i).date,
                    suite="benchmarks", host="ci-1", tool_versions={}, machine_info={})
    return record_engine_run(store, run, [EngineCaseRecord(BENCH, {}, version="v1",
                                                           stats=_counted(instructions, method))])


def _instructions_row(url: str, a: int, b: int):
    outcome = run_compare(CompareRequest(commit_info(a).sha, commit_info(b).sha, db=url, history=0))
    return next(r for r in outcome.comparison.rows if r.metric.name == "instructions")


def test_a_method_change_is_not_comparable_and_a_code_change_is(store, store_url):
    _stored(store, 1, 10_000, "callgrind 1")
    _stored(store, 2, 11_000, "callgrind 2")  # +10%: what a new method could move a count by
    _stored(store, 3, 12_100, "callgrind 2")  # +10% again, by the same method: a code change
    changed = _instructions_row(store_url, 1, 2)
    assert changed.verdict == "not comparable"
    assert changed.note == "measurement method changed (callgrind 1 → callgrind 2)"
    same = _instructions_row(store_url, 2, 3)
    assert same.verdict == "regressed" and same.state == "confirmed"


def test_the_gate_exits_0_across_a_method_change_and_1_on_a_code_change(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    from mmtrack.store.db import open_store

    s = open_store(url)
    for i, count, method in ((1, 10_000, "callgrind 1"), (2, 11_000, "callgrind 2"), (3, 12_100, "callgrind 2")):
        _stored(s, i, count, method)
    s.close()
    gate = ("--db", url, "--fail-on", "regression", "--format", "json")
    across = run_cli("compare", commit_info(1).sha, commit_info(2).sha, *gate)
    code = run_cli("compare", commit_info(2).sha, commit_info(3).sha, *gate)
    assert across.returncode == 0, across.stdout + across.stderr
    rows = json.loads(across.stdout)["rows"]
    assert {r["verdict"] for r in rows} == {"not comparable"}
    assert all(r["note"] == "measurement method changed (callgrind 1 → callgrind 2)" for r in rows)
    assert code.returncode == 1, code.stdout + code.stderr


def test_a_run_stored_before_methods_were_recorded_reads_as_method_1(store, store_url):
    old = _stored(store, 1, 10_000, "callgrind 2")
    with store.write() as conn:  # what a store written before this change holds: conditions without a method
        rid, setup = conn.execute(select(m.Result.id, m.Result.setup).where(m.Result.run_id == old)).one()
        legacy = {**setup, "conditions": {k: v for k, v in setup["conditions"].items() if k != "method"}}
        conn.execute(update(m.Result).where(m.Result.id == rid).values(setup=legacy))
    assert {x.method for x in q.measurements_for_run(store, old)} == {"callgrind 1"}
    _stored(store, 2, 11_000, "callgrind 2")
    _stored(store, 3, 11_000, "callgrind 1")
    assert _instructions_row(store_url, 1, 2).verdict == "not comparable"
    assert _instructions_row(store_url, 1, 3).verdict == "regressed"


@pytest.mark.parametrize("before", [{"method": "callgrind 1"}, {}])  # {}: stored before methods were recorded
def test_bench_skips_a_baseline_counted_by_another_method(before):
    def run(run_id: int, recorded: dict) -> RunIdentity:
        stored = {"process_model": conditions.UNDER_CALLGRIND, "python_build": "CPython 3.11.7", **recorded}
        case = CaseIdentity(BENCH, "{}", "1 ops", "cpu", "callgrind", "v1", conditions=conditions.comparable(stored))
        return RunIdentity(run_id, "ci-1", "benchmarks", {(BENCH, "{}"): case})

    now = run(2, {"method": "callgrind 2"})
    assert incompatibility(now, run(1, before)) == (
        f"{BENCH} was measured under another method (callgrind 1 → callgrind 2)")
    assert incompatibility(now, run(1, {"method": "callgrind 2"})) is None
