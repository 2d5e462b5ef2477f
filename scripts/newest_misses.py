#!/usr/bin/env python3
"""Where detect misses a step in the newest 2-5 commits, and which test of ``mmtrack/analysis/newest.py`` stops it.

Builds ``scripts.eval_detect``'s CI-runner groups for each seed (the same series as
``python3 -m scripts.eval_detect --ci-only --ci-series 60 --seed S``), runs detect on every newest 2-5 series and
replays the newest-commit rule's tests at each missed step's own commit, first failing test named. Prints one
row per measured tier and position. Usage: ``python3 -m scripts.newest_misses [SEED ...]`` (default 1 2 3 20260).
"""

from __future__ import annotations

import collections
import math
import sys

import numpy as np

from mmtrack.analysis import newest
from mmtrack.analysis.detect import DetectPolicy, find_steps
from mmtrack.analysis.noise import already_beyond, segment_noise
from mmtrack.analysis.policy import HISTORY_WINDOW, NEWEST_COMMITS, NEWEST_SEGMENT, UNSEEN_BAR, ComparePolicy
from scripts import ci_noise, eval_detect

REASONS = ("back", "back, joint evidence >= bar", "ends within", "visits", "already", "reached",
           "evidence under the bar", "3+ each held, under 2.0 or moved before", "segment < 30",
           "detect's own step in the newest 5")


def why_missed(values: list[float], at: int, start: int, policy: ComparePolicy) -> str:
    """The first of the newest-commit rule's tests that a step up at ``at`` fails (``start``: detect's last step)."""
    if start >= len(values) - NEWEST_COMMITS:
        return "detect's own step in the newest 5"
    history = values[max(0, at - HISTORY_WINDOW) : at]
    noise = segment_noise(history, policy.min_history)
    if at - start < NEWEST_SEGMENT or noise is None or noise.points < NEWEST_SEGMENT:
        return "segment < 30"
    logs = np.log(np.asarray(values, dtype=float))
    bar = math.log1p(policy.threshold)
    held = logs[at:] - noise.level
    if not newest._holds_the_move(float(np.median(logs[max(start, at - HISTORY_WINDOW) : at])), logs[at:],
                                  policy.threshold):
        strong = noise.held_evidence(held, policy.threshold, 1.0) >= UNSEEN_BAR
        return "back, joint evidence >= bar" if strong else "back"
    if not (held[0] > bar and held[-1] > bar):
        return "ends within"
    if newest._reached_before(noise, history, 1.0, bar):
        return "reached"
    if bool(np.all(held > bar)) and held.size >= 3:
        return "3+ each held, under 2.0 or moved before"
    if noise.visits(math.exp(noise.level + float(np.median(held)))):
        return "visits"
    if already_beyond(noise, history, 1.0, policy.threshold):
        return "already"
    return "evidence under the bar"


def tally(seeds: list[int]) -> tuple[collections.Counter, collections.Counter]:
    policy, detect = ComparePolicy(), DetectPolicy()
    found, missed = collections.Counter(), collections.Counter()
    for seed in seeds:
        groups = eval_detect.build_ci_suite(np.random.default_rng(seed), 60, 100, tol=3)
        for k in range(2, 6):
            for h in groups[f"newest {k} up 20%"]:
                values = [float(v) for v in h.medians]
                hit = eval_detect.score(eval_detect.regressions(eval_detect.mmtrack_detector(detect)(h)), h.truth).tp
                cell = (h.tier, k)  # type: ignore[attr-defined]
                found[cell, "total"] += 1
                if hit:
                    found[cell, "found"] += 1
                    continue
                steps = find_steps(values, detect, settle=True)
                missed[cell, why_missed(values, len(values) - k, steps[-1].index if steps else 0, policy)] += 1
    return found, missed


def main(argv: list[str] | None = None) -> int:
    seeds = [int(s) for s in (argv if argv is not None else sys.argv[1:])] or [1, 2, 3, 20260]
    found, missed = tally(seeds)
    print(f"newest 2-5 steps of 20% up, seeds {' '.join(map(str, seeds))}: misses by the first test that stops them")
    print("| tier, position | found | " + " | ".join(REASONS) + " |")
    print("|---" * (len(REASONS) + 2) + "|")
    for tier in ci_noise.TIERS:
        for k in range(2, 6):
            cell = (tier, k)
            row = [f"{found[cell, 'found']}/{found[cell, 'total']}"] + [str(missed[cell, r]) for r in REASONS]
            print(f"| {tier}, {k} | " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
