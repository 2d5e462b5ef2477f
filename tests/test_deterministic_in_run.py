"""A deterministic count in a run whose wall clock moved as a whole: the whole-run rules (shift, frames), made
for noisy wall-clock series on CI runners, never withdraw or alter a count's verdict, and counts never dilute
the wall clock's shift.

A real SQLite store, written through the store's write path: 13 commits of a 12-benchmark suite, each case
with its wall time per op (1% noise) and its callgrind counts. At commit 8 a change to everything: every wall
time x1.3, every instruction count x1.02, est_cycles x1.08. The gate (``mmtrack compare`` of a commit against
the one before, with history) judges commit 8 as it lands, again once four later commits are stored, and
commit 12, which settles commit 8's suspicions.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from mmtrack.analysis.compare import series_steps, suite_runs
from mmtrack.analysis.gate import failing_rows
from mmtrack.commands.compare import CompareRequest, run_compare
from mmtrack.measure.metrics import Direction, MetricSummary
from mmtrack.results import CommitInfo, SeriesKey
from mmtrack.store import reads
from mmtrack.store.db import open_store
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run

COMMITS, CASES, STEP = 13, 12, 8
SHAS = [f"{i + 1:040x}" for i in range(COMMITS)]
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _case(rng: np.random.Generator, c: int, k: int) -> EngineCaseRecord:
    changed = k >= STEP
    times = list(1e-3 * (1 + c / 10) * (1.3 if changed else 1.0) * (1 + rng.normal(0, 0.01, 10)))
    instructions = 1_000_000.0 * (1 + c) * (1.02 if changed else 1.0)
    cycles = 1.5 * 1_000_000.0 * (1 + c) * (1.08 if changed else 1.0)
    metrics = [MetricSummary.from_values("timing", "time_per_op", "s", times),
               MetricSummary.from_values("callgrind", "instructions", "instr/op", [instructions] * 3,
                                         direction=Direction.LOWER),
               MetricSummary.from_values("callgrind", "est_cycles", "cycles/op", [cycles] * 3,
                                         direction=Direction.LOWER)]
    return EngineCaseRecord(f"bench.Suite.time_{c:02d}", {}, version="v1", metrics=metrics)


def _record(db: str, commits: range) -> None:
    rng = np.random.default_rng(4400 + commits.start)
    store = open_store(db)
    try:
        for k in commits:
            when = T0 + timedelta(hours=k)
            run = RunRecord(machine="ci", environment="py3.11", commit=CommitInfo(SHAS[k], when), started_at=when)
            record_engine_run(store, run, [_case(rng, c, k) for c in range(CASES)])
    finally:
        store.close()


def _gate(db: str, at: int):
    """``mmtrack run``'s gate at commit ``at``: compare with the commit before, history on."""
    return run_compare(CompareRequest(a=SHAS[at - 1], b=SHAS[at], db=db)).comparison


def _by_metric(rows, name: str) -> list:
    return [r for r in rows if r.metric.name == name]


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    db = str(tmp_path_factory.mktemp("deterministic-run") / "store.db")
    _record(db, range(0, STEP + 1))
    as_it_lands = _gate(db, STEP)
    _record(db, range(STEP + 1, COMMITS))
    return {"db": db, "landed": as_it_lands, "later": _gate(db, STEP), "settling": _gate(db, COMMITS - 1)}


@pytest.mark.parametrize("when", ["landed", "later"])
def test_every_count_is_confirmed_at_its_commit_whatever_the_run_did(gated, when):
    rows = gated[when].rows
    counts = _by_metric(rows, "instructions")
    assert len(counts) == CASES
    assert {(r.verdict, r.state, r.test) for r in counts} == {("regressed", "confirmed", "deterministic")}
    assert all("whole run" not in r.note for r in counts)
    assert failing_rows(gated[when], ["regression"])
    # est_cycles stays what its own rule says (suspected: memory layout), never the run's "ambiguous"
    cycles = _by_metric(rows, "est_cycles")
    assert {(r.verdict, r.state) for r in cycles} == {("regressed", "suspected")}


def test_the_wall_clocks_shift_is_read_from_wall_clock_series_alone(gated):
    """Counts moved 2% and est_cycles 8%; the wall clock 30%. Were they in the median, the run would read
    about x1.08 (24 count series against 12 timed ones), and no wall-clock row would be the run's."""
    times = _by_metric(gated["landed"].rows, "time_per_op")
    assert times and all(r.verdict == "ambiguous" for r in times)
    moved = [float(m) for r in times for m in re.findall(r"whole run moved ×([\d.]+)", r.note)]
    assert len(moved) == CASES and all(1.25 < m < 1.35 for m in moved), [r.note for r in times]
    assert all(f"median of {CASES} series" in r.note for r in times)


def test_the_settling_commit_decides_no_count_again(gated):
    """Commit 12 settles what commit 8 left suspected: wall-clock rows only. The counts failed the gate once,
    at commit 8; they neither fail it again nor come back withdrawn."""
    decided = gated["settling"].decided
    assert all(r.metric.section != "callgrind" for r in decided), [(r.benchmark, r.metric, r.note) for r in decided]
    assert not [r for r in gated["settling"].rows if r.metric.section == "callgrind" and r.verdict != "unchanged"]


def test_the_pages_verdicts_on_counts_ignore_the_runs_shift_too(gated):
    """The pages judge each commit with what its run says (``suite_runs``, then ``series_steps``)."""
    store = open_store(gated["db"])
    try:
        keys = reads.list_series(store)
        points = {k: reads.series(store, k) for k in keys}
    finally:
        store.close()
    columns = {(k.benchmark, k.params, k.metric): ([p.commit.sha for p in pts], [p.measurement.median for p in pts],
                                                    [p.measurement.version for p in pts], pts[-1].measurement.direction)
               for k, pts in points.items()}
    runs = suite_runs(columns, {case: [SHAS[STEP]] for case in columns})
    counted = 0
    for key, pts in points.items():
        if key.metric.name != "instructions":
            continue
        case = (key.benchmark, key.params, key.metric)
        in_run = [runs[case].get(p.commit.sha) for p in pts]
        steps = dict(series_steps([p.measurement for p in pts], runs=in_run, last=COMMITS))
        assert (steps[STEP].verdict, steps[STEP].state) == ("regressed", "confirmed"), steps[STEP].note
        counted += 1
    assert counted == CASES
    assert isinstance(keys[0], SeriesKey)
