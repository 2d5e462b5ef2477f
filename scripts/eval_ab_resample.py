"""How often A/B's verdict flags identical code, and finds a change, on real round bests; prints rates.

Reads the runs that ``scripts/eval_ab.py aa --keep DIR`` saved (``DIR/aa/run*.json``: every round's best
per side and metric). The rounds of one timing metric of one A/A run, both sides pooled, are a sample of
what this machine does to that code in that stretch of time. Each draw takes one such pool, splits
``--rounds`` + ``--rounds`` of its rounds at random between A and B, multiplies B's by ``--change``, and
judges them with :func:`mmtrack.ab.interleave.judge`, as ``mmtrack continuous`` does: once as it is
and once without :func:`~mmtrack.ab.rule.slower_side_stray`. A random split is the null that
interleaving aims at (a neighbour's load falls on either side alike), and thousands of draws show rates
that a few dozen live runs cannot.

Usage: python -m scripts.eval_ab_resample DIR [DIR ...] [--rounds 4] [--change 1.0] [--threshold 0.05] [--draws 20000]
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from mmtrack.ab import interleave
from mmtrack.ab import rule as ab_rule
from mmtrack.ab.interleave import ABResult, PooledCase, Side
from mmtrack.analysis.compare import ComparePolicy
from mmtrack.measure.metrics import Direction
from mmtrack.results import CommitInfo, MetricKey


def pools(folders: list[Path]) -> list[list[float]]:
    """Per A/A run and timing metric (lower is better): both sides' round bests."""
    out = []
    for folder in folders:
        for path in sorted(folder.glob("**/run*.json")):
            for entry in json.loads(path.read_text())["ab"]["round_bests"]:
                if entry["metric"].startswith("time") or "time_per_op" in entry["metric"]:
                    out.append(entry["A"] + entry["B"])
    return out


def side(label: str, bests: list[float]) -> Side:
    commit = CommitInfo(sha=label * 40)
    case = PooledCase("b.time_x", {}, unit="seconds", rounds=len(bests))
    key = MetricKey("", "time", "s")
    case.round_bests[key], case.directions[key] = list(bests), Direction.LOWER
    result = Side(label, commit, env=None)  # type: ignore[arg-type]  # judge reads no environment
    result.cases[("b.time_x", "{}")] = case
    return result


def verdict(a: list[float], b: list[float], threshold: float) -> str:
    result = ABResult(side("a", a), side("b", b), len(a), list("AB" * len(a)), "box", datetime.now(timezone.utc))
    (row,) = interleave.judge(result, ComparePolicy(threshold=threshold)).rows
    return row.verdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=4, help="rounds per side in each draw")
    ap.add_argument("--change", type=float, default=1.0, help="B's rounds times this (1.0: identical code)")
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--draws", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    usable = [p for p in pools(args.folders) if len(p) >= 2 * args.rounds]
    if not usable:
        raise SystemExit(f"no run with {args.rounds} rounds per side under {args.folders}")
    rng = random.Random(args.seed)
    draws = []
    for _ in range(args.draws):
        rounds = rng.sample(rng.choice(usable), 2 * args.rounds)
        draws.append((rounds[: args.rounds], [v * args.change for v in rounds[args.rounds :]]))
    stray_rule = ab_rule.slower_side_stray
    counts = {}
    for name, rule in (("as it is", stray_rule), ("without slower_side_stray", lambda *_: "")):
        ab_rule.slower_side_stray = rule
        counts[name] = Counter(verdict(a, b, args.threshold) for a, b in draws)
    ab_rule.slower_side_stray = stray_rule
    print(f"{len(usable)} pools of round bests; {args.draws} draws of {args.rounds} + {args.rounds} rounds, "
          f"B x{args.change}, threshold {args.threshold}")
    for name, c in counts.items():
        print(f"  {name:26s} " + "  ".join(f"{v} {c[v] / args.draws:.4f}"
                                          for v in ("regressed", "improved", "ambiguous", "unchanged")))


if __name__ == "__main__":
    main()
