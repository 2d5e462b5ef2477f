#!/usr/bin/env python3
"""The suite's false-alarm budget on real noise: false alerts per commit and recall, before and after it.

Reads what ``scripts/eval_histories.py`` (issue 58's harness) cached for its injected suites (500 A/A and 500
stepped series of real CI noise, 120 commits each, detected through the CLI without a budget) and applies the
budget (:mod:`mmtrack.analysis.budget`) at several levels to the same change points: each commit is a family
of the 500 series. Per level: the whole A/A suite's commits with a false change point (any state, as the harness
counts them) and with a false *alert* (confirmed change points: suspected ones form none), per commit; and the
recall of the 10% and 20% steps 2-5 commits before the newest, and of every step, within one commit.

Usage: python3 scripts/eval_alert_budget.py --harness PATH/eval_histories.py --cache DIR [--levels 0.05,0.01]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np

from mmtrack.analysis.budget import bh_kept


def load_harness(path: Path):
    spec = importlib.util.spec_from_file_location("eval_histories", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["eval_histories"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def suites(h, n: int, length: int, seed: int):
    """The harness's suites, drawn as its ``injection`` draws them (same seed, same order)."""
    pools = h.noise_pools({name: h.HISTORIES[name] for name in h.NOISE_HISTORIES})
    rng = np.random.default_rng(seed)
    aa = h.make_suite(rng, pools, n, length, stepped=False)
    steps = h.make_suite(rng, pools, n, length, stepped=True)
    digest = __import__("hashlib").sha1(b"".join(x.logv.tobytes() + x.spreads.tobytes() for x in aa + steps))
    return aa, steps, digest.hexdigest()[:10]


def budgeted(detect: dict, q: float | None, n_series: int) -> dict:
    """The detect JSON with the change points BH at ``q`` holds back removed (every commit: ``n_series`` tests)."""
    if q is None:
        return detect
    by_commit: dict[str, list[dict]] = {}
    for s in detect["series"]:
        for c in s["changes"]:
            if c["p_value"] is not None:
                by_commit.setdefault(c["after_sha"], []).append(c)
    dropped = set()
    for cs in by_commit.values():
        for c, keep in zip(cs, bh_kept([c["p_value"] for c in cs], n_series, q)):
            if not keep:
                dropped.add(id(c))
    return {**detect, "series": [{**s, "changes": [c for c in s["changes"] if id(c) not in dropped]}
                                 for s in detect["series"]]}


def alerts_only(detect: dict) -> dict:
    return {**detect, "series": [{**s, "changes": [c for c in s["changes"] if c["state"] != "suspected"]}
                                 for s in detect["series"]]}


def step_recall(h, steps, detect: dict, size: float) -> float:
    """Every step of ``size`` (anywhere) found within the harness's tolerance, its way."""
    place = {h.injected_commit(j): j for j in range(steps[0].logv.size)}
    got = {s["benchmark"]: [(place[c["after_sha"]], c["kind"]) for c in s["changes"] if c["after_sha"] in place]
           for s in detect["series"]}
    hits = total = 0
    for s in steps:
        if abs(math.exp(abs(s.step)) - 1 - size) > 1e-9:
            continue
        want = "regression" if s.step > 0 else "improvement"
        total += 1
        hits += any(k == want and abs(p - s.step_at) <= h.TOLERANCE for p, k in got.get(s.name, []))
    return hits / total if total else math.nan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--harness", type=Path, required=True, help="scripts/eval_histories.py")
    ap.add_argument("--cache", type=Path, required=True, help="the harness's --cache folder, run already")
    ap.add_argument("--key", help="the code key of the harness's run (default: the only one cached)")
    ap.add_argument("--levels", default="0.05,0.02,0.01,0.005,0.001")
    ap.add_argument("--series", type=int, default=500)
    ap.add_argument("--length", type=int, default=120)
    ap.add_argument("--seed", type=int, default=58)
    args = ap.parse_args()
    h = load_harness(args.harness)
    aa, steps, digest = suites(h, args.series, args.length, args.seed)
    base = args.cache / f"injected-{args.series}x{args.length}-{digest}"
    key = args.key or sorted(p.name.split("-", 1)[1] for p in base.glob("aa-*"))[0]
    aa_d = json.loads((base / f"aa-{key}" / "detect.json").read_text())
    st_d = json.loads((base / f"steps-{key}" / "detect.json").read_text())
    print(f"suites {base.name}, detected by code {key}: {len(aa)} A/A and {len(steps)} stepped series, "
          f"{args.length} commits")
    print("| budget | false cp commits /commit | false alerts /commit | recall 10% newest | recall 20% newest "
          "| recall 10% any | recall 20% any |")
    print("|---|---|---|---|---|---|---|")
    for q in [None, *(float(x) for x in args.levels.split(","))]:
        a, s = budgeted(aa_d, q, len(aa)), budgeted(st_d, q, len(steps))
        score = h.score_injection(aa, a, steps, s)
        alerts = h.score_injection(aa, alerts_only(a), steps, s)["suite_false_alerts_per_commit"]
        row = score["all"]
        print(f"| {'none' if q is None else f'BH q={q:g}'} | {score['suite_false_alerts_per_commit']:.3f} | "
              f"{alerts:.3f} | {row['recall_newest_10%']:.2f} | {row['recall_newest_20%']:.2f} | "
              f"{step_recall(h, steps, s, 0.10):.2f} | {step_recall(h, steps, s, 0.20):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
