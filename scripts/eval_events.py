#!/usr/bin/env python3
"""detect on fleet histories (scripts/ci_noise.py: ci_fleet): change points that follow the run, not the code.

Each fleet holds code steps (true regressions and improvements) and run-date shifts (a machine's environments
moving from a date on, old commits re-measured after it included). detect runs on every series as
``mmtrack detect`` does (the kept run of each commit, in commit order), then groups what follows the run into
environment events (mmtrack.analysis.events). Scored per reported regression of 10% or more:
``code`` (a code step of its benchmark within +-tol commits), ``date`` (a shift of its machine/environment, the
same way, from before its first new commit's run; counted apart where the shift began within the tol commits before
it, the rest being later noise or misplaced code steps on the shifted level) or ``false``; "before" counts every
reported regression, "after" only those no event holds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from mmtrack.analysis.detect import DetectPolicy
from mmtrack.analysis.events import RunPoints, find_events, is_environment, mark_events
from mmtrack.analysis.placement import align_to_agreement
from mmtrack.analysis.series import detect_values
from mmtrack.measure.metrics import Direction
from mmtrack.results import MetricKey, SeriesKey
from scripts import ci_noise

METRIC = MetricKey("timing", "time", "s")


def _sha(c: int) -> str:
    return f"{c:040x}"


def detect_fleet(fleet: ci_noise.Fleet, policy: DetectPolicy, events: bool = True, align: bool = True):
    reports, runs, commits_of = [], {}, {}
    for (machine, env, bench), pts in fleet.runs.items():
        key = SeriesKey(machine, env, bench, "{}", METRIC)
        shas = [_sha(c) for c, _, _ in pts]
        values = [v for _, _, v in pts]
        reports.append(detect_values(key, shas, values, [None] * len(values), Direction.LOWER, policy))
        runs[key] = RunPoints(shas, np.array([float(d) for _, d, _ in pts]), np.array(values))
        commits_of[key] = shas
    position = {_sha(c): c for c in range(fleet.commits)}
    found = []
    if align:
        reports = align_to_agreement(reports, {k: (commits_of[k], list(runs[k].values)) for k in runs}, position)
    if events:
        found, held = find_events(reports, runs, position, commits_of)
        reports = mark_events(reports, held, found)
    return reports, found


def classify(fleet: ci_noise.Fleet, cp, tol: int) -> str:
    at = int(cp.extra["index"])
    k = cp.series
    for bench, c, size in fleet.steps:
        if bench == k.benchmark and abs(at - c) <= tol and (size > 0) == (cp.ratio > 1):
            return "code"
    day = {c: d for c, d, _ in fleet.runs[(k.machine, k.environment, k.benchmark)]}
    for sh in fleet.shifts:  # a shift of its place, the same way, in the run its first new commit kept
        if (sh.machine == k.machine and k.environment in sh.environments and (sh.size > 0) == (cp.ratio > 1)
                and day[at] >= sh.day):
            return "date"
    return "false"


def shift_began_near(fleet: ci_noise.Fleet, cp, tol: int) -> bool:
    """Whether a change point scored ``date`` sits where its shift began: one of the ``tol`` commits before it kept a
    run from before the shift's day (else it is a later step, noise or a misplaced code step, on the shifted level)."""
    at = int(cp.extra["index"])
    k = cp.series
    day = {c: d for c, d, _ in fleet.runs[(k.machine, k.environment, k.benchmark)]}
    return any(sh.machine == k.machine and k.environment in sh.environments and (sh.size > 0) == (cp.ratio > 1)
               and day[at] >= sh.day and min(day[c] for c in range(max(at - tol, 0), at)) < sh.day
               for sh in fleet.shifts if at > 0)


def score(seeds: list[int], policy: DetectPolicy, tol: int, **fleet_args) -> dict[str, float]:
    tally = {f"{when} {what}": 0 for when in ("before", "after") for what in ("code", "date", "false", "date near")}
    true_steps = found_steps = found_steps_before = 0
    exact = {"detect alone": 0, "aligned": 0}
    shifts = shifts_found = events_total = 0
    seconds = 0.0
    for seed in seeds:
        fleet = ci_noise.ci_fleet(np.random.default_rng(seed), **fleet_args)
        t0 = time.perf_counter()
        reports, events = detect_fleet(fleet, policy)
        seconds += time.perf_counter() - t0
        alone, _ = detect_fleet(fleet, policy, events=False, align=False)
        for name, rs in (("detect alone", alone), ("aligned", reports)):
            exact[name] += sum(int(c.extra["index"]) == at for bench, at, _ in fleet.steps for r in rs
                               if r.series.benchmark == bench for c in r.changes)
        events_total += len(events)
        for when, rs in (("before", alone), ("after", reports)):  # before: detect as on main, each series alone
            for c in (c for r in rs for c in r.changes):
                if c.kind == "regression" and c.ratio >= 1.10 and not is_environment(c):
                    what = classify(fleet, c, tol)
                    tally[f"{when} {what}"] += 1
                    tally[f"{when} date near"] += what == "date" and shift_began_near(fleet, c, tol)
        for bench, at, size in fleet.steps:
            for r, a in zip(reports, alone):
                if r.series.benchmark != bench:
                    continue
                true_steps += 1
                found_steps_before += any(abs(int(c.extra["index"]) - at) <= tol and (c.ratio > 1) == (size > 0)
                                          for c in a.changes)
                found_steps += any(abs(int(c.extra["index"]) - at) <= tol and (c.ratio > 1) == (size > 0)
                                   and not is_environment(c) for c in r.changes)
        for sh in fleet.shifts:
            shifts += 1
            shifts_found += any(e.machine == sh.machine and set(sh.environments) & set(e.environments) for e in events)
    out: dict[str, float] = {}
    for when in ("before", "after"):
        n = sum(tally[f"{when} {w}"] for w in ("code", "date", "false"))
        out[f"{when}: regressions >= 10% reported"] = n
        out[f"{when}: precision (code steps)"] = tally[f"{when} code"] / n if n else 1.0
        out[f"{when}: share following the run date"] = tally[f"{when} date"] / n if n else 0.0
        out[f"{when}: ... where the shift began (+-tol commits)"] = tally[f"{when} date near"] / n if n else 0.0
    out["code steps found per series, before"] = found_steps_before / max(true_steps, 1)
    out["code steps found per series, after (not put in an event)"] = found_steps / max(true_steps, 1)
    for name, n in exact.items():
        out[f"code steps placed on their own commit, {name}"] = n / max(true_steps, 1)
    out["run-date shifts reported as an event"] = shifts_found / max(shifts, 1)
    out["events per fleet"] = events_total / len(seeds)
    out["s per fleet (detect + events)"] = seconds / len(seeds)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--seed", type=int, default=4300)
    ap.add_argument("--tolerance", type=int, default=3)
    ap.add_argument("--benchmarks", type=int, default=30)
    ap.add_argument("--commits", type=int, default=120)
    ap.add_argument("--rerun-rate", type=float, default=0.15)
    ap.add_argument("--late-rate", type=float, default=0.05)
    ap.add_argument("--shifts", type=int, default=2, help="run-date shifts per fleet (0: code steps and noise only)")
    ap.add_argument("--code-steps", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    seeds = list(range(args.seed, args.seed + args.seeds))
    out = score(seeds, DetectPolicy(), args.tolerance, benchmarks=args.benchmarks, commits=args.commits,
                rerun_rate=args.rerun_rate, late_rate=args.late_rate, shifts=args.shifts, code_steps=args.code_steps)
    print(f"fleets: {args.seeds} seeds from {args.seed}, 2 machines x 3 environments x {args.benchmarks} benchmarks, "
          f"{args.commits} commits, {args.shifts} shifts, {args.code_steps} code steps, re-run rate {args.rerun_rate}, "
          f"late rate {args.late_rate}, +-{args.tolerance} commits")
    for k, v in out.items():
        print(f"{k:<58}{v:10.3f}" if isinstance(v, float) else f"{k:<58}{v:10d}")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "figures": out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
