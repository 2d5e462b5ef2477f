#!/usr/bin/env python3
"""The per-commit gate on real asv histories, as they were recorded.

``scripts/eval_gate.py`` scores the gate on series whose truth it made; here nothing is known, so
this counts what the gate says on real results folders, and what the next commits then say of it.
Each folder is imported into a temporary SQLite store (``mmtrack import-asv``), and every commit of
every series from the ``--start``-th on is judged as ``mmtrack run`` judges its newest commit
(:func:`mmtrack.analysis.compare.compare_pair` with up to ``--window`` commits of history), then again
with the next ``confirm_window`` commits:

* flags as the newest commit, per 100 commits judged;
* of them, those the next commits **refute**: a blip, which as the newest commit was a false alarm
  (or a change reverted at once), and those they **confirm**;
* of each, how many ran with their own samples spread at least ``--wide`` times as wide as the
  window's usual (relative interquartile range against its median over the history): a disturbed
  run. On MetPy and conda almost none of the flags are: a disturbed run's wide confidence interval
  already overlaps the before commit's, and the samples' test leaves it ambiguous.

Usage: python -m scripts.eval_real [RESULTS_DIR ...] [--window 100] [--start 30] [--wide 3]
(default: the MetPy and conda folders in ``../shared/data/asv-results``).
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from mmtrack.analysis.compare import ComparePolicy, compare_pair, series_history, series_later
from mmtrack.asvbridge.results_folder import check_results_folder
from mmtrack.errors import UserError
from mmtrack.results import Measurement
from mmtrack.store import reads as q
from mmtrack.store.asv_import import import_asv_results
from mmtrack.store.db import open_store

FLAGS = ("regressed", "improved")


def relative_spread(m: Measurement) -> float | None:
    """The interquartile range of one commit's samples over their median; None without one."""
    if m.q1 is None or m.q3 is None or not m.median or m.median <= 0:
        return None
    return (m.q3 - m.q1) / m.median


def judge_folder(results: Path, window: int, start: int, wide: float) -> dict:
    """The tallies of one results folder (see the module docstring)."""
    policy = ComparePolicy()
    tally: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "real.db"))
        try:
            import_asv_results(store, results)
            keys = q.list_series(store)
            series = q.series_many(store, keys)
        finally:
            store.close()  # before the folder goes
        for points in series.values():
            ms = [p.measurement for p in points]
            spreads = [relative_spread(m) for m in ms]
            for j in range(start, len(ms) - policy.confirm_window):
                history = series_history(ms, j - 1, window)
                if len(history) < start:
                    continue
                tally["judged"] += 1
                newest = compare_pair(ms[j - 1], ms[j], policy, history, p_value=False)
                if newest.verdict not in FLAGS:
                    continue
                final = compare_pair(ms[j - 1], ms[j], policy, history, series_later(ms, j, policy), p_value=False)
                state = final.state or "left ambiguous"  # confirmed, refuted (unchanged) or still suspected
                usual = [s for s in spreads[max(0, j - window) : j] if s is not None]
                own = spreads[j]
                disturbed = bool(usual) and own is not None and own > wide * max(float(np.median(usual)), 1e-6)
                tally["flagged"] += 1
                tally[state] += 1
                tally[(state, "wide")] += disturbed
        tally["series"] = len(keys)
    return dict(tally)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shared = ROOT.parent / "shared" / "data" / "asv-results"
    ap.add_argument("folders", nargs="*", type=Path,
                    default=[shared / "metpy" / "results", shared / "conda" / ".asv" / "results"])
    ap.add_argument("--window", type=int, default=100, help="commits of history per verdict")
    ap.add_argument("--start", type=int, default=30, help="commits of history before the first commit judged")
    ap.add_argument("--wide", type=float, default=3.0, help="a disturbed run: samples this many times as spread")
    args = ap.parse_args(argv)
    if args.window < 5 or args.start < 5 or not args.wide > 1:
        ap.error("--window and --start must be at least 5, --wide above 1")
    try:
        for folder in args.folders:
            check_results_folder(folder)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"per-commit gate on real asv histories: {args.window} commits of history, judged from the "
          f"{args.start}th commit, then with the next {ComparePolicy().confirm_window}; a disturbed run's samples "
          f"spread >= {args.wide:g}x the window's usual")
    print(f"{'folder':<28}{'series':>7}{'judged':>8}{'flags/100':>10}{'confirmed':>11}{'refuted':>9}"
          f"{'other':>7}  disturbed among confirmed / refuted")
    for folder in args.folders:
        t = judge_folder(folder, args.window, args.start, args.wide)
        judged, flagged = t.get("judged", 0), t.get("flagged", 0)
        other = flagged - t.get("confirmed", 0) - t.get("refuted", 0)
        rate = 100 * flagged / judged if judged else math.nan
        name = "/".join(folder.parts[-3:])
        print(f"{name:<28}{t.get('series', 0):>7}{judged:>8}{rate:>10.2f}{t.get('confirmed', 0):>11}"
              f"{t.get('refuted', 0):>9}{other:>7}  {t.get(('confirmed', 'wide'), 0)} / {t.get(('refuted', 'wide'), 0)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
