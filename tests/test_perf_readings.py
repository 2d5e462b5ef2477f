"""Hardware-counter arithmetic on readings in the kernel's read format.

This machine has no hardware PMU, so hardware values cannot be produced here.
These tests feed ``LinuxPerfBackend.collect`` -- the same code that runs on a
machine with a PMU -- with reads laid out as ``read(2)`` returns them for
``PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID``:
``nr, time_enabled, time_running, (value, id) * nr``, cumulative since open.
"""

from __future__ import annotations

import math
import struct

import pytest
from rich.console import Console

from mmtrack.measure.backend import Results
from mmtrack.measure.perf import LinuxPerfBackend, OpenReport, _Group
from mmtrack.measure.report import counter_table
from mmtrack.measure.stats import summarize_counters

HW = ("cycles", "instructions", "branches", "branch-misses")


def read(enabled: int, running: int, values: list[int]) -> tuple[int, ...]:
    """One cumulative group read; ids are 100, 101, ..."""
    out = [len(values), enabled, running]
    for i, v in enumerate(values):
        out += [v, 100 + i]
    return tuple(out)


def raw(reading: tuple[int, ...]) -> bytes:
    return struct.pack(f"={len(reading)}Q", *reading)


def replay_backend(groups: list[tuple[tuple[str, ...], list[tuple[int, ...]]]]):
    """A backend over recorded groups; returns it and a function feeding one sample."""
    built = [_Group.replay(names, read(0, 0, [0] * len(names))) for names, _ in groups]
    b = LinuxPerfBackend.__new__(LinuxPerfBackend)
    opened = tuple(n for names, _ in groups for n in names)
    b._adopt(built, OpenReport("perf event group" if len(built) == 1 else "perf event groups", opened, {}, False, None))

    def sample(i: int, ops: int) -> Results:
        raws = [raw(reads[i]) for _, reads in groups]  # what end() would have read
        b._raw = raws[0] if b._single is not None else raws
        r = Results()
        b.collect(1e-3, ops, i, r, [])
        return r

    return b, sample


def test_unmultiplexed_sample_is_the_plain_difference_between_reads():
    reads = [read(1_000, 1_000, [5_000, 10_000, 2_000, 20]), read(3_000, 3_000, [15_000, 40_000, 6_000, 50])]
    _, sample = replay_backend([(HW, reads)])
    first, second = sample(0, 10), sample(1, 10)
    assert first.counters == {"cycles": 5_000, "instructions": 10_000, "branches": 2_000, "branch-misses": 20}
    assert second.counters == {"cycles": 10_000, "instructions": 30_000, "branches": 4_000, "branch-misses": 30}
    assert (second.time_enabled_ns, second.time_running_ns) == (2_000, 2_000)


def test_multiplexed_values_scale_by_enabled_over_running():
    # The group ran a quarter of the time it was enabled: every value is scaled by 4.
    reads = [read(8_000, 2_000, [1_000, 1_500, 400, 10])]
    b, sample = replay_backend([(HW, reads)])
    r = sample(0, 1)
    assert r.counters == {"cycles": 4_000, "instructions": 6_000, "branches": 1_600, "branch-misses": 40}
    assert (r.time_enabled_ns, r.time_running_ns) == (8_000, 2_000)
    assert b.coverage_pct == pytest.approx(25.0)
    assert b.describe() == "host PMU (perf event group): coverage=25.0%"


def test_a_group_that_never_ran_leaves_its_counters_out_of_that_sample():
    reads = [read(1_000, 1_000, [100, 200, 30, 1]), read(2_000, 1_000, [100, 200, 30, 1])]
    _, sample = replay_backend([(HW, reads)])
    sample(0, 1)
    r = sample(1, 1)  # enabled another 1000 ns, running 0 more: never on the PMU
    assert r.counters == {} and (r.time_enabled_ns, r.time_running_ns) == (1_000, 0)


def test_coverage_is_the_worst_group_and_each_group_scales_alone():
    hw = [read(10_000, 5_000, [2_000, 3_000, 500, 5])]
    sw = [read(10_000, 10_000, [9_000, 3])]
    b, sample = replay_backend([(HW, hw), (("task-clock", "page-faults"), sw)])
    r = sample(0, 1)
    assert r.counters["cycles"] == 4_000 and r.counters["task-clock"] == 9_000
    assert (r.time_enabled_ns, r.time_running_ns) == (10_000, 5_000)
    assert b.describe().startswith("host PMU (perf event groups): coverage=50.0%")
    assert b.measurement_label == "timing + PMU"


def test_per_op_ipc_and_coverage_through_stats_and_report():
    reads = [
        read(4_000, 2_000, [1_000, 2_000, 500, 10]),  # scaled x2: 2000 cycles, 4000 instructions
        read(8_000, 6_000, [2_000, 4_000, 1_000, 20]),  # this sample scaled x1: 1000, 2000
    ]
    _, sample = replay_backend([(HW, reads)])
    samples = [sample(0, 100), sample(1, 100)]
    summary = summarize_counters(
        [s.counters for s in samples], [100, 100], [(s.time_enabled_ns, s.time_running_ns) for s in samples]
    )
    by = {c.name: c for c in summary}
    assert by["cycles"].total == 3_000 and by["cycles"].per_op == pytest.approx(15.0)
    assert by["instructions"].per_sample_per_op == (40.0, 20.0)
    assert by["branch-misses"].per_op == pytest.approx(30 / 200)
    assert by["cycles"].coverage_pct == pytest.approx(75.0)  # mean of 50% and 100%
    console = Console(width=120, record=True)
    console.print(counter_table(summary))
    text = console.export_text()
    assert "instructions/op" in text and "IPC" in text and "2.000" in text  # 6000 / 3000
    assert "75.0%" in text
    assert not math.isnan(by["branches"].per_op)


def test_ipc_row_compares_like_with_like_when_groups_miss_samples():
    # cycles (group A) read in both samples, instructions (group B) in the first only.
    summary = summarize_counters(
        [{"cycles": 1_000, "instructions": 900}, {"cycles": 1_000}], [10, 10], [(1, 1), (1, 1)]
    )
    console = Console(width=120, record=True)
    console.print(counter_table(summary))
    ipc_line = next(line for line in console.export_text().splitlines() if "IPC" in line)
    assert "0.900" in ipc_line  # not 0.450 from the raw totals
