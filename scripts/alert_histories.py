#!/usr/bin/env python3
"""Alerts on real histories: per store, change points -> alerts (series per alert), alerts an environment event
explains, and alerts per 100 commits.

Reads stores that ``mmtrack detect`` has run on (``scripts/eval_histories.py`` caches one per history under its
``--cache``: ``<history>-<code key>/store.db``); nothing is written.

Usage: python3 scripts/alert_histories.py STORE_DIR [STORE_DIR ...] (or --cache DIR --key KEY)
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from mmtrack.analysis.alert_queue import stored_alerts
from mmtrack.store import reads as q
from mmtrack.store.db import open_store


def summary(db: Path) -> dict:
    store = open_store(f"sqlite:///{db}", existing=True)
    try:
        changes = q.load_change_points(store)
        _, position = q.series_run_points(store, [])
        alerts = [a for a in stored_alerts(store) if a.active]
    finally:
        store.close()
    sizes = [len(a.series) for a in alerts]
    commits = len(position)
    return {
        "commits": commits, "change_points": len(changes),
        "suspected": sum(c.extra.get("state") == "suspected" for c in changes),
        "alerts": len(alerts), "regression_alerts": sum(a.kind == "regression" for a in alerts),
        "series_per_alert_median": statistics.median(sizes) if sizes else None,
        "series_per_alert_max": max(sizes, default=None),
        "explained": sum(a.explained for a in alerts),
        "partly_explained": sum(bool(a.events) and not a.explained for a in alerts),
        "multi_machine": sum(len(a.machines) > 1 for a in alerts),
        "alerts_per_100_commits": round(100 * len(alerts) / commits, 1) if commits else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="*", type=Path, help="folders holding a store.db")
    ap.add_argument("--cache", type=Path, help="eval_histories' cache: every <history>-<key>/store.db in it")
    ap.add_argument("--key", help="the code key of the stores to read from --cache")
    args = ap.parse_args()
    folders = list(args.stores)
    if args.cache:
        folders += sorted(p for p in args.cache.glob(f"*-{args.key or '*'}") if (p / "store.db").exists()
                          and not p.name.startswith(("injected", "aa-", "steps-")))
    print("| history | commits | change points (suspected) | alerts (regressions) | series per alert median / max "
          "| explained by events (partly) | on several machines | alerts per 100 commits |")
    print("|---|---|---|---|---|---|---|---|")
    for folder in folders:
        s = summary(folder / "store.db")
        name = folder.name.rsplit("-", 1)[0] if args.cache else folder.name
        print(f"| {name} | {s['commits']} | {s['change_points']} ({s['suspected']}) | {s['alerts']} "
              f"({s['regression_alerts']}) | {s['series_per_alert_median']} / {s['series_per_alert_max']} | "
              f"{s['explained']} ({s['partly_explained']}) | {s['multi_machine']} | {s['alerts_per_100_commits']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
