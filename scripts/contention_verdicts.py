"""Wall clock against CPU time under contention: identical code and a real 2x slowdown, measured while busy
processes share the measuring CPU, judged by the wall clock alone, by CPU time alone, and by mmtrack's rule
(the wall clock, or CPU time where a side waited for a CPU). Figures: docs/design/contention.md.

    PYTHONPATH=$PWD python3 -m scripts.contention_verdicts --trials 3 --load 1
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time

from mmtrack.analysis.compare import compare_measurements, compare_pair
from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark
from mmtrack.results import Measurement

BUSY = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass\n"
# (name, work factor before, busy processes before, work factor after, busy processes after (times --load))
SCENARIOS = (
    ("identical code, after side loaded", 1, 0, 1, 1),
    ("identical code, before side loaded", 1, 1, 1, 0),
    ("2x slowdown, before side loaded", 1, 1, 2, 0),
    ("2x slowdown, both sides loaded", 1, 1, 2, 1),
)


def work(factor: int):
    def bench(ctx, n, i):
        for _ in range(n * factor):  # twice the same work per op: exactly a 2x slowdown
            sum(range(200))
    return bench


@contextlib.contextmanager
def busy(cpu: int, count: int):
    """``count`` processes spinning on ``cpu`` for the length of the block."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY, str(cpu)]) for _ in range(count)]
    try:
        time.sleep(0.2 if procs else 0)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def measure(factor: int, cpu: int, load: int, options: RunOptions) -> list[Measurement]:
    with busy(cpu, load):
        stats = run_benchmark(BenchSpec("sum_range", work(factor)), options)
    return [Measurement.from_summary("sum_range", {}, m) for m in stats.tracked_metrics()]


def pick(measurements: list[Measurement], name: str) -> Measurement:
    return next(m for m in measurements if m.metric.name == name)


def trial(scenario, cpu: int, load: int, options: RunOptions) -> dict[str, str]:
    _, f_before, l_before, f_after, l_after = scenario
    before = measure(f_before, cpu, l_before * load, options)
    after = measure(f_after, cpu, l_after * load, options)
    wall = compare_pair(pick(before, "time_per_op"), pick(after, "time_per_op"))
    cpu_row = compare_pair(pick(before, "task-clock"), pick(after, "task-clock"))
    rule = next(r for r in compare_measurements(before, after).rows if r.metric.name == "time_per_op")
    ratios = [pick(side, "wall_per_cpu").median for side in (before, after)]
    return {"wall": f"{wall.verdict} x{wall.ratio:.2f}", "cpu": f"{cpu_row.verdict} x{cpu_row.ratio:.2f}",
            "rule": rule.verdict, "wall/cpu": f"{ratios[0]:.2f} / {ratios[1]:.2f}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--load", type=int, default=1, help="busy processes on the measuring CPU per loaded side")
    parser.add_argument("--duration", type=float, default=1.0, help="seconds of samples per side")
    args = parser.parse_args()
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    options = RunOptions(warm_up=0.2, duration=args.duration, min_samples=10, max_samples=50, target_chunk=0.02)
    print(f"load average before: {os.getloadavg()[0]:.2f}; measuring CPU {cpu}; {args.load} busy process(es) per loaded side")
    print("| scenario | trial | median wall/CPU time before / after | wall clock | CPU time | mmtrack's rule |")
    print("|---|---|---|---|---|---|")
    for scenario in SCENARIOS:
        for i in range(args.trials):
            r = trial(scenario, cpu, args.load, options)
            print(f"| {scenario[0]} | {i + 1} | {r['wall/cpu']} | {r['wall']} | {r['cpu']} | {r['rule']} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
