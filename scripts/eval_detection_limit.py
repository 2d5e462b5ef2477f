#!/usr/bin/env python3
"""Is the stated detection limit calibrated? Steps of half and twice each series' limit, injected into real histories.

For each real series (the per-commit medians of one benchmark, parameter, machine and environment of a results
folder, in commit-date order) a few positions are drawn at random; at each, the commits before it (at most 100) are
the history the limit is stated from (:func:`mmtrack.analysis.detection_limit.detection_limit`), and a step of half
and of twice that limit is added to the series' own next commits:

- *confirmed*: the step's commit and the ``confirm_window`` commits after it, run through detect
  (:func:`mmtrack.analysis.series.detect_values`); found where it names a regression within one commit of the step,
  not merely suspected, whose p-value passes the suite's budget for a lone step (``--fdr`` over ``--suite`` series);
- *one commit*: the step's commit alone, judged by the gate (``compare_pair`` with the history); found where it
  reads "regressed".

Calibrated means: twice the limit found >= 80% of the time, half of it <= 20%, in every noise tier (the
harness's tiers: between-commit robust CV under 3%, 3-10%, over 10%). Tuning histories and held-out ones are
reported apart; only the held-out ones count.

Usage: python3 scripts/eval_detection_limit.py [--tune openblas,kedro,flowkit] [--held-out sunpy,metpy,...]
       [--series 40] [--positions 2] [--seed 59]
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

import numpy as np

from mmtrack.analysis.detect import DetectPolicy
from mmtrack.analysis.detection_limit import detection_limit
from mmtrack.analysis.history_evidence import compare_pair
from mmtrack.analysis.policy import ComparePolicy
from mmtrack.analysis.series import detect_values
from mmtrack.measure.metrics import Direction
from mmtrack.results import Measurement, MetricKey, SeriesKey

sys.path.insert(0, str(Path(__file__).resolve().parent))
import eval_histories as harness  # noqa: E402  (the real histories' folders and readers)

TUNE = ("openblas", "kedro", "flowkit")
HELD_OUT = ("sunpy", "metpy", "numba", "conda", "casabench", "sunpy-runs")
#: Commits of history a limit is stated from (at most), and the fewest a series needs before a drawn position.
HISTORY, MIN_BEFORE = 100, 30
KEY = SeriesKey("m", "e", "b", "", MetricKey("timing", "t", "s"))
METRIC = MetricKey("detect", "median", "")
MULTIPLES = (0.5, 2.0)
#: Where no limit is stated (none found in 80% of the model's tries), how often a step this large is found anyway.
NO_LIMIT_CHECK = 1.0


def real_series(name: str) -> list[np.ndarray]:
    """Each series of a history as log medians in commit-date order (the first result of a date kept)."""
    points: dict[tuple, dict[float, float]] = collections.defaultdict(dict)
    for path, d in harness.results_files(harness.results_folder(harness.HISTORIES[name])):
        date = float(d.get("date") or 0)
        for bench, i, v, _ in harness._stats_of(d):
            points[(path.parent.name, d.get("env_name"), bench, i)].setdefault(date, v)
    return [np.log([by[d] for d in sorted(by)]) for _, by in sorted(points.items(), key=lambda kv: str(kv[0]))]


def found_confirmed(history: np.ndarray, after: np.ndarray, step: float, args) -> bool:
    logv = np.concatenate([history, after + step])
    shas = [f"{i:040x}" for i in range(logv.size)]
    report = detect_values(KEY, shas, list(np.exp(logv)), [None] * logv.size, Direction.LOWER, DetectPolicy())
    bar = args.fdr / args.suite
    return any(c.kind == "regression" and abs(shas.index(c.after_sha) - history.size) <= 1
               and c.extra.get("state") != "suspected" and (c.p_value is None or c.p_value <= bar)
               for c in report.changes)


def _bare(value: float) -> Measurement:
    return Measurement(benchmark="", params={}, metric=METRIC, direction=Direction.LOWER, median=value)


def found_one_commit(history: np.ndarray, value: float, step: float) -> bool:
    values = np.exp(history)
    row = compare_pair(_bare(float(values[-1])), _bare(math.exp(value + step)), ComparePolicy(),
                       history=list(values), later=(), p_value=False)
    return row.verdict == "regressed"


def trials(name: str, args, rng: np.random.Generator):
    """(tier, limit, found per limit kind and multiple) at the drawn positions of a sample of each tier of one
    history's series (``--series`` of each)."""
    window = ComparePolicy().confirm_window + 1
    by_tier = collections.defaultdict(list)  # every tier drawn, the noisy ones being few
    for s in real_series(name):
        if s.size >= MIN_BEFORE + window:
            by_tier[harness.tier_of(list(np.exp(s)))].append(s)
    for tier in sorted(by_tier):
        yield from _trials_of(by_tier[tier], window, args, rng)


def _trials_of(series: list[np.ndarray], window: int, args, rng: np.random.Generator):
    for k in rng.permutation(len(series))[: args.series]:
        logv = series[int(k)]
        for p in rng.integers(MIN_BEFORE, logv.size - window + 1, size=args.positions):
            history = logv[max(0, p - HISTORY): p]
            limit = detection_limit(list(np.exp(history)), series=args.suite, fdr=args.fdr)
            if limit is None:
                continue
            hits = {"big": None if math.isfinite(limit.confirmed) else
                    found_confirmed(history, logv[p: p + window], math.log1p(NO_LIMIT_CHECK), args)}
            for kind, size in (("confirmed", limit.confirmed), ("one_commit", limit.one_commit)):
                for m in MULTIPLES:
                    if not math.isfinite(size):
                        hits[kind, m] = None
                        continue
                    step = math.log1p(size * m)
                    hits[kind, m] = (found_confirmed(history, logv[p: p + window], step, args) if kind == "confirmed"
                                     else found_one_commit(history, float(logv[p]), step))
            yield harness.tier_of(list(np.exp(history))), limit, hits


def table(label: str, rows: list) -> str:
    out = [f"\n{label}", "| tier | tries | confirmed limit, median | ½× found | 2× found | no limit "
           "| no limit: 100% found | one-commit limit, median | ½× found | 2× found |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for tier in (*(t for t, _ in harness.TIER_CUTS), "all"):
        mine = [r for r in rows if tier in (r[0], "all")]
        if not mine:
            continue
        cells = [tier, str(len(mine))]
        for kind in ("confirmed", "one_commit"):
            sizes = [getattr(r[1], kind) for r in mine if math.isfinite(getattr(r[1], kind))]
            cells.append(f"{np.median(sizes):.1%}" if sizes else "-")
            for m in MULTIPLES:
                got = [r[2][kind, m] for r in mine if r[2][kind, m] is not None]
                cells.append(f"{np.mean(got):.0%} ({len(got)})" if got else "-")
            if kind == "confirmed":
                big = [r[2]["big"] for r in mine if r[2]["big"] is not None]
                cells += [str(len(big)), f"{np.mean(big):.0%}" if big else "-"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tune", default=",".join(TUNE))
    ap.add_argument("--held-out", default=",".join(HELD_OUT))
    ap.add_argument("--series", type=int, default=40, help="series drawn per history")
    ap.add_argument("--positions", type=int, default=2, help="step positions drawn per series")
    ap.add_argument("--suite", type=int, default=500, help="series in the suite the budget divides among")
    ap.add_argument("--fdr", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=59)
    args = ap.parse_args()
    for label, names in (("tuning", args.tune), ("held out", args.held_out)):
        rows, per = [], []
        for name in filter(None, names.split(",")):
            try:
                got = list(trials(name, args, np.random.default_rng([args.seed, len(name)])))
            except FileNotFoundError:
                print(f"{name}: not found, skipped", file=sys.stderr)
                continue
            rows += got
            per.append(f"{name} {len(got)}")
        print(table(f"{label} histories ({', '.join(per)} tries)", rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
