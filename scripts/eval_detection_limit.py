#!/usr/bin/env python3
"""Is "the smallest step a series can see" calibrated? A candidate limit against detect on real noise.

For each A/A series that ``scripts/eval_histories.py`` (issue 58's harness) draws from real CI noise, the first
100 commits are its history; a step is injected at commit 100 and ``W`` commits follow it (the confirmation
window). The candidate limit is ``max(min_effect, exp(c * sd) - 1)``, ``sd`` the series' robust between-commit
spread (``analysis.noise.segment_noise``, or with ``--spread block`` the spread of ``W``-commit medians). A step
counts as found where detect names a confirmed regression within one commit of it whose p-value passes the
suite's budget (BH at ``--fdr`` with 500 series, a lone step). Calibrated means: a step of twice the limit found
>= 80% of the time and half of it <= 20%, in every noise tier.

Usage: python3 scripts/eval_detection_limit.py --harness PATH/eval_histories.py [--window 5] [--c 3,5,7]
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

import numpy as np

from mmtrack.analysis.detect import DetectPolicy
from mmtrack.analysis.noise import segment_noise
from mmtrack.analysis.series import detect_values
from mmtrack.measure.metrics import Direction
from mmtrack.results import MetricKey, SeriesKey

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_alert_budget import load_harness, suites  # noqa: E402

HISTORY, SERIES = 100, 500
KEY = SeriesKey("m", "e", "b", "", MetricKey("timing", "t", "s"))


def spread(history: np.ndarray, how: str, window: int) -> float:
    if how == "block":
        blocks = np.array([np.median(history[i:i + window]) for i in range(history.size - window + 1)])
        dev = blocks - np.median(history)
        return float(1.4826 * np.median(np.abs(dev - np.median(dev))))
    noise = segment_noise(list(np.exp(history)))
    return noise.sd if noise else math.nan


def found(logv: np.ndarray, step: float, policy: DetectPolicy, fdr: float) -> bool:
    shas = [f"{i:040x}" for i in range(logv.size)]
    values = np.exp(logv + np.where(np.arange(logv.size) >= HISTORY, math.log1p(step), 0.0))
    report = detect_values(KEY, shas, list(values), [None] * logv.size, Direction.LOWER, policy)
    return any(c.kind == "regression" and abs(shas.index(c.after_sha) - HISTORY) <= 1
               and c.extra.get("state") != "suspected" and (c.p_value is None or c.p_value <= fdr / SERIES)
               for c in report.changes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--harness", type=Path, required=True)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--c", default="3,5,7")
    ap.add_argument("--spread", choices=("segment", "block"), default="segment")
    ap.add_argument("--fdr", type=float, default=0.001)
    args = ap.parse_args()
    h = load_harness(args.harness)
    aa, _, _ = suites(h, SERIES, 120, 58)
    policy = DetectPolicy()
    rows = []
    for s in aa:
        logv = s.logv[: HISTORY + args.window]
        rows.append((logv, spread(logv[:HISTORY], args.spread, args.window), h.tier_of(list(np.exp(s.logv)))))
    for c in (float(x) for x in args.c.split(",")):
        hits: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
        for logv, sd, tier in rows:
            limit = max(policy.min_effect, math.expm1(c * sd))
            for j, multiple in enumerate((0.5, 1.0, 2.0)):
                hits[tier][j] += found(logv, limit * multiple, policy, args.fdr)
            hits[tier][3] += 1
        hits["all"] = [sum(v[j] for v in list(hits.values())) for j in range(4)]
        print(f"window {args.window}, c {c:g} ({args.spread} spread): " + "; ".join(
            f"{t} (n={v[3]}): half {v[0] / v[3]:.2f}, at {v[1] / v[3]:.2f}, twice {v[2] / v[3]:.2f}"
            for t, v in sorted(hits.items())), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
