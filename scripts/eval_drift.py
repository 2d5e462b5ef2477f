#!/usr/bin/env python3
"""Drift since a baseline on real noise: false drift on A/A series, recall on creeping and stepped ones.

Draws the suites of ``scripts/eval_histories.py`` (series of real CI noise bootstrapped from the asv histories, 120
commits each, every noise tier), takes commit ``--baseline`` as the release, and judges each series' drift since it
(:func:`mmtrack.analysis.drift.series_drift`) at each ``--thresholds``:

- A/A: no move; a ``drifted`` or ``improved`` verdict is a false drift.
- creep: the A/A noise with four steps of ``--creep`` each after the baseline, every one under the threshold alone.
- steps: the harness's stepped suite; a step after the baseline at least the threshold should drift its way.

Usage: python3 -m scripts.eval_drift [--series 500] [--baseline 40] [--thresholds 0.05,0.1] [--creep 0.03]
"""

from __future__ import annotations

import argparse
import collections
import math

import numpy as np

from mmtrack.analysis.drift import WINDOW, series_drift
from mmtrack.results import MetricKey, SeriesKey
from mmtrack.vocabulary import Direction

KEY = SeriesKey("injected", "env", "inject", "{}", MetricKey("timing", "time_per_op", "s"))


def drawn(series: int, length: int, seed: int):
    from scripts import eval_histories as h

    pools = h.noise_pools({name: h.HISTORIES[name] for name in h.NOISE_HISTORIES})
    rng = np.random.default_rng(seed)
    return h, h.make_suite(rng, pools, series, length, stepped=False), h.make_suite(rng, pools, series, length,
                                                                                   stepped=True)


def verdict(logv: np.ndarray, baseline: int, threshold: float) -> str:
    shas = [str(i) for i in range(logv.size)]
    return series_drift(KEY, shas, list(np.exp(logv)), [None] * logv.size, Direction.LOWER, shas[baseline],
                        threshold).verdict


def creeping(logv: np.ndarray, baseline: int, step: float) -> np.ndarray:
    """Four steps of ``step`` (relative) up, spread evenly between the baseline and the newest 10 commits."""
    places = np.linspace(baseline + 5, logv.size - 10, 4).astype(int)
    return logv + sum(np.where(np.arange(logv.size) >= p, math.log1p(step), 0.0) for p in places)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=500)
    ap.add_argument("--length", type=int, default=120)
    ap.add_argument("--seed", type=int, default=58)
    ap.add_argument("--baseline", type=int, default=40)
    ap.add_argument("--thresholds", default="0.05,0.1")
    ap.add_argument("--creep", type=float, default=0.03)
    args = ap.parse_args()
    h, aa, steps = drawn(args.series, args.length, args.seed)
    tiers = [h.tier_of(list(np.exp(s.logv))) for s in aa]
    print(f"{len(aa)} A/A and {len(steps)} stepped series of {args.length} commits, baseline at commit "
          f"{args.baseline}; tiers {dict(collections.Counter(tiers))}")
    print(f"| threshold | false drift A/A (quiet / mid / noisy) | creep 4x{args.creep:.0%} found (same tiers) | steps "
          f">= threshold, {WINDOW}+ commits old, found (same tiers) |")
    print("|---|---|---|---|")
    for threshold in (float(t) for t in args.thresholds.split(",")):
        false = collections.Counter(t for s, t in zip(aa, tiers)
                                    if verdict(s.logv, args.baseline, threshold) in ("drifted", "improved"))
        by_tier = " / ".join(f"{false[t]}/{tiers.count(t)}" for t in ("quiet", "mid", "noisy"))
        creep = collections.Counter(t for s, t in zip(aa, tiers) if verdict(
            creeping(s.logv, args.baseline, args.creep), args.baseline, threshold) == "drifted")
        creep_tiers = " / ".join(f"{creep[t]}/{tiers.count(t)}" for t in ("quiet", "mid", "noisy"))
        judged = [s for s in steps if args.baseline < s.step_at <= args.length - WINDOW
                  and math.expm1(abs(s.step)) >= threshold - 1e-9]
        step_tiers = [h.tier_of(list(np.exp(s.logv - np.where(np.arange(s.logv.size) >= s.step_at, s.step, 0.0))))
                      for s in judged]
        found = collections.Counter(t for s, t in zip(judged, step_tiers) if verdict(s.logv, args.baseline, threshold)
                                    == ("drifted" if s.step > 0 else "improved"))
        found_tiers = " / ".join(f"{found[t]}/{step_tiers.count(t)}" for t in ("quiet", "mid", "noisy"))
        print(f"| {threshold:g} | {sum(false.values())}/{len(aa)} ({by_tier}) | {sum(creep.values())}/{len(aa)} "
              f"({creep_tiers}) | {sum(found.values())}/{len(judged)} ({found_tiers}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
