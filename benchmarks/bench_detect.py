"""Benchmark of ``mmtrack detect`` on a synthetic asv history in a SQLite store, old method beside the new one.

Run as a script (one detect pass takes seconds to minutes, which does not fit the engine's
calibrate/warm-up/many-samples model)::

    python3 benchmarks/bench_detect.py                    # 100 benchmarks x 1,000 commits x 5 metrics
    python3 benchmarks/bench_detect.py --quick            # 10 x 200 x 5

The history is the one ``benchmarks/bench_publish.py`` builds (``benchmarks/synthetic_history.py``),
written as an asv results folder and imported into SQLite (untimed). Then, interleaved,
``--repeat`` times, medians reported:

* the full ``run_detect`` (fetch, detect, store) with the default method (``rankseg``) over every series;
* the same over the first ``--old-series`` series with the new code and with the previous code path
  (one ``reads.series`` per series, ``edivisive`` at min effect 5% and alpha 3e-4, the same store
  write), side by side: the ratio of the two;
* ``run_detect(series=...)`` over ``--metrics`` series (one benchmark's), what ``mmtrack update``
  asks after a commit touched one benchmark.

Nothing runs at import (``mmtrack bench benchmarks`` and asv import this folder).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build(work: Path, url: str, args: argparse.Namespace):
    """The synthetic history as an asv results folder, imported into a SQLite store."""
    from bench_publish import _git_history, write_asv_folder

    from mmtrack.store.selection import series_keys
    from mmtrack.publish import SiteConfig
    from benchmarks.synthetic_history import synthetic_commits, synthetic_model
    from mmtrack.store.db import open_store
    from mmtrack.store.asv_import import import_asv_results

    commits = synthetic_commits(args.commits, seed=1)
    shas = _git_history(work / "asv" / "repo", commits)
    commits = [dataclasses.replace(c, sha=s) for c, s in zip(commits, shas)]
    cfg = SiteConfig(title="bench", commit_url="https://example.org/commit/")
    model = synthetic_model(args.benchmarks, args.commits, args.metrics, seed=1, commits=commits, config=cfg)
    write_asv_folder(work / "asv", model)
    store = open_store(url)
    t = time.perf_counter()
    import_asv_results(store, work / "asv" / "results")
    keys = series_keys(store)
    print(f"history: {len(keys)} series x {args.commits} commits imported into SQLite in "
          f"{time.perf_counter() - t:.1f} s (not timed)")
    return keys, store


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--benchmarks", type=int, default=100)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old-series", type=int, default=25, help="series timed with both the old and the new method")
    ap.add_argument("--quick", action="store_true", help="10 x 200 x 5, one repeat")
    ap.add_argument("--keep", type=Path,
                    help="keep the history in this folder and reuse it next time (the import is slow)")
    args = ap.parse_args(argv)
    if args.quick:
        args.benchmarks, args.commits, args.repeat = 10, 200, 1
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from mmtrack.analysis.series import detect_series
    from mmtrack.commands.detect import DetectRequest, policy_for, run_detect
    from mmtrack.store.selection import series_keys
    from mmtrack.store import reads as q
    from mmtrack.store import writes
    from mmtrack.store.db import open_store

    work = args.keep or Path(tempfile.mkdtemp(prefix="mmtrack-bench-detect-"))
    work.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{work / 'store.db'}"
    try:
        if args.keep and (work / "store.db").exists():
            store = open_store(url)
            keys = series_keys(store)
            print(f"history: {len(keys)} series reused from {work}")
        else:
            keys, store = _build(work, url, args)
        subset = keys[: args.old_series]
        touched = keys[: args.metrics]  # one benchmark's metrics (keys come sorted by benchmark)
        new = DetectRequest(db=url)
        old = DetectRequest(db=url, method="edivisive", min_effect=0.05, alpha=3e-4)

        def timed(request: DetectRequest, series=None) -> tuple[float, int]:
            t0 = time.perf_counter()
            if request is old:
                return previous(series), 0
            outcome = run_detect(request, store, series=series)
            return time.perf_counter() - t0, len(outcome.changes)

        def previous(series) -> float:
            """The previous code path: one query per series, E-Divisive, then the same store write."""
            t0 = time.perf_counter()
            policy = policy_for(old)
            reports = [detect_series(k, pts, policy) for k in series if (pts := q.series(store, k, with_samples=False))]
            writes.save_change_points(store, [c for r in reports for c in r.changes], replace=[r.series for r in reports])
            return time.perf_counter() - t0

        full, part_new, part_old, incr = [], [], [], []
        for r in range(args.repeat):
            full.append(timed(new))
            part_new.append(timed(new, subset))
            part_old.append(timed(old, subset))
            incr.append(timed(new, touched))
            print(f"  run {r + 1}: all {len(keys)} series {full[-1][0]:.2f} s ({full[-1][1]} change points); "
                  f"{len(subset)} series new {part_new[-1][0]:.2f} s, old {part_old[-1][0]:.2f} s; "
                  f"{len(touched)} touched series {incr[-1][0]:.3f} s")
        med = lambda xs: statistics.median(x[0] for x in xs)  # noqa: E731
        print(f"median of {args.repeat}: all series (rankseg) {med(full):.2f} s; on {len(subset)} series "
              f"old (edivisive) {med(part_old):.2f} s vs new {med(part_new):.2f} s = "
              f"{med(part_old) / med(part_new):.1f}x; "
              f"old extrapolated to all series {med(part_old) * len(keys) / len(subset):.0f} s; "
              f"{len(touched)} touched series {med(incr):.3f} s")
        store.close()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
