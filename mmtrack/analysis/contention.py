"""Verdicts on CPU time where the wall clock was contended.

On a machine whose other tenants take the CPU, a case's wall time measures its waiting too: identical code
reads slower, and a real slowdown can read as none. The engine records, beside the wall clock, each
single-threaded CPU-domain case's wall time over its CPU time (``timing/wall_per_cpu``,
:mod:`mmtrack.measure.contention`); ``mmtrack run`` and the A/B rounds record the same for asv's ``time_``
benchmarks that neither ran threads nor blocked (:mod:`mmtrack.asvbridge.cpu_times`). Where either side waited for
a CPU, the case's wall-clock rows (time per op, throughput) take the verdict of its CPU time per op
(``counters/task-clock``), and say so. Other cases (threads, IO and GPU domains, asv benchmarks that block or time
themselves) record no ratio and keep the wall clock.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

from ..measure import contention as engine
from ..measure.cputime import CPU_TIME_COUNTER
from ..results import Measurement, MetricKey
from ..vocabulary import Direction

Case = tuple[str, str, MetricKey]  # compare.Case (compare imports this module)
Row = Any  # compare.Row, a frozen dataclass

WALL_CLOCK_METRICS = ("time_per_op", "throughput")  # section "timing": the rows the wall clock decides
CPU_TIME = ("counters", CPU_TIME_COUNTER)
#: Verdicts that compared two numbers: the only CPU-time verdicts a wall-clock row can take.
COMPARED = ("improved", "regressed", "unchanged", "ambiguous")


def waited(m: Measurement | None) -> float | None:
    """The side's mean wall/CPU ratio where it says the case waited for a CPU, else None (the mean, as
    :func:`mmtrack.measure.contention.waited` reads it)."""
    ratio = None if m is None or m.status != "ok" else m.mean if m.mean is not None else m.median
    return float(ratio) if ratio is not None and engine.waited(float(ratio)) else None


def contention_note(before: float | None, after: float | None) -> str:
    """Which side waited, and how long its wall time was against its CPU time."""
    sides = [f"{side} {r:.2f}x" for side, r in (("before", before), ("after", after)) if r is not None]
    return f"wall clock waited for a CPU (wall/CPU time {', '.join(sides)}); judged on CPU time"


def on_cpu_time(wall: Row, cpu: Row, note: str) -> Row:
    """The wall-clock row with the CPU-time row's verdict, its ratio turned to the wall row's direction."""
    ratio = cpu.ratio
    if ratio and wall.direction is Direction.HIGHER:  # throughput: fewer ops per second when CPU time grows
        ratio = 1.0 / ratio
    return dataclasses.replace(
        wall, verdict=cpu.verdict, ratio=ratio, p_value=cpu.p_value, test=cpu.test, threshold=cpu.threshold,
        history_z=cpu.history_z, state=cpu.state, near_threshold=cpu.near_threshold,
        note=note + (f": {cpu.note}" if cpu.note else ""))


def read_cpu_time_where_contended(
    rows: Sequence[Row], before: Mapping[Case, Measurement], after: Mapping[Case, Measurement]
) -> tuple[Row, ...]:
    """``rows`` with each contended case's wall-clock rows judged on its CPU time (see the module's docstring)."""
    ratios = _contention(before, after)
    # First: a wall-clock row judged on CPU time takes the CPU-time row's state too.
    rows = at_most_suspected(doubted_where_the_run_waited(rows, ratios, before, after))
    return _on_cpu_time_where_waited(rows, ratios)


def judged_on_cpu_time_where_waited(
    rows: Sequence[Row], before: Mapping[Case, Measurement], after: Mapping[Case, Measurement]
) -> tuple[Row, ...]:
    """``rows`` whose verdicts another rule gave (the A/B rounds' :func:`mmtrack.ab.rule.decide`), each contended
    case's wall-clock rows taking its CPU-time row's verdict: the rounds judge CPU time as they judge the wall clock,
    and a row keeps its own state (the rounds are the re-run that a software counter's one-run move awaits)."""
    states = {(r.benchmark, r.params, r.metric): r.state for r in rows}
    return tuple(dataclasses.replace(r, state=states[(r.benchmark, r.params, r.metric)])
                 for r in _on_cpu_time_where_waited(rows, _contention(before, after)))


def _on_cpu_time_where_waited(rows: Sequence[Row], ratios: Mapping[tuple[str, str], tuple[float | None, float | None]]
                              ) -> tuple[Row, ...]:
    by_case = {(r.benchmark, r.params, r.metric.section, r.metric.name): r for r in rows}
    out = []
    for row in rows:
        sides = ratios.get((row.benchmark, row.params))
        cpu = by_case.get((row.benchmark, row.params, *CPU_TIME))
        if (sides is None or row.metric.section != engine.SECTION or row.metric.name not in WALL_CLOCK_METRICS
                or row.verdict not in COMPARED or cpu is None or cpu.verdict not in COMPARED):
            out.append(row)
            continue
        out.append(on_cpu_time(row, cpu, contention_note(*sides)))
    return tuple(out)


#: The kernel's software counters: what the scheduler and the allocator did to the run as much as what the code did.
SCHEDULED_COUNTERS = frozenset({CPU_TIME_COUNTER, "page-faults", "context-switches", "cpu-migrations"})


def at_most_suspected(rows: Sequence[Row]) -> tuple[Row, ...]:
    """``rows`` with each move of a software counter judged on two runs alone (no history: state None) suspected: one
    run of identical code moves them (task-clock 1.63 → 3.46 µs/op beside other tenants), so a re-run must agree."""
    return tuple(
        dataclasses.replace(row, state="suspected",
                            note="; ".join(filter(None, [row.note, "one run of a software counter: a re-run must agree"])))
        if row.verdict in MOVED and row.state is None and row.metric.section == CPU_TIME[0]
        and row.metric.name in SCHEDULED_COUNTERS else row
        for row in rows
    )


#: The verdicts a contended run cannot give a case that has no CPU time of its own.
MOVED = ("regressed", "improved")
#: asv's ``mem_``/``peakmem_`` sizes and its non-time ``track_`` values (asvbridge/results_file.py's sections).
UNTIMED_SECTIONS = frozenset({"memory", "track"})


def doubted_where_the_run_waited(
    rows: Sequence[Row], ratios: Mapping[tuple[str, str], tuple[float | None, float | None]],
    before: Mapping[Case, Measurement], after: Mapping[Case, Measurement],
) -> tuple[Row, ...]:
    """``rows`` with each move of a case that records no wall/CPU ratio (threads, IO and GPU domains, custom backends,
    asv's own timings) read ambiguous where other cases of either run waited for a CPU: the machine moved it as much
    as the code, and it has no CPU time to be judged on. So does a custom metric (a time or rate the benchmark took
    itself) of a case that waited. Deterministic counts and verdicts history judged (a state) keep theirs."""
    worst = [max((pair[i] for pair in ratios.values() if pair[i] is not None), default=None) for i in (0, 1)]
    if worst == [None, None]:
        return tuple(rows)
    own = {(b, p) for side in (before, after) for (b, p, metric) in side
           if (metric.section, metric.name) == (engine.SECTION, engine.NAME)}
    note = (f"the run waited for a CPU (wall/CPU time up to {max(r for r in worst if r is not None):.2f}x in other "
            "cases) and this case has no CPU time of its own to judge on")
    waited_note = "the case waited for a CPU and this metric of its own has no CPU time to judge on"

    def doubt(row: Row) -> str:
        if row.verdict not in MOVED or row.test == "deterministic" or row.state is not None:
            return ""  # history's verdicts (a state) weigh the run themselves
        if row.metric.section in UNTIMED_SECTIONS:
            return ""  # asv's memory and track values: no clock for the machine to move
        if (row.benchmark, row.params) not in own:
            return note
        custom = row.metric.section not in (engine.SECTION, CPU_TIME[0])  # a metric the benchmark timed itself
        return waited_note if custom and (row.benchmark, row.params) in ratios else ""

    return tuple(dataclasses.replace(row, verdict="ambiguous", state=None, note=why) if (why := doubt(row)) else row
                 for row in rows)


def _contention(before: Mapping[Case, Measurement], after: Mapping[Case, Measurement]
                ) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    """(benchmark, params) -> each side's wall/CPU ratio where it waited (None where not), for contended cases."""
    found: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for side, measurements in enumerate((before, after)):
        for (benchmark, params, metric), m in measurements.items():
            if (metric.section, metric.name) != (engine.SECTION, engine.NAME) or (r := waited(m)) is None:
                continue
            pair = list(found.get((benchmark, params), (None, None)))
            pair[side] = r
            found[(benchmark, params)] = (pair[0], pair[1])
    return found


__all__ = ["at_most_suspected", "contention_note", "doubted_where_the_run_waited", "judged_on_cpu_time_where_waited",
           "on_cpu_time", "read_cpu_time_where_contended", "waited"]
