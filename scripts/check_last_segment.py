#!/usr/bin/env python3
"""Whether detect from the last stored step on (``mmtrack update``) stores what a detect of the whole series stores.

For every series, commit by commit over its newest ``--commits`` commits, as a nightly ``mmtrack update`` sees them:
detect the series one commit short (the stored change points), then with the new commit both ways, from the last
stored step on (:func:`mmtrack.analysis.series.kept_steps`) and whole, and compare the change points field by field.
Counts the cases searched from a kept step, and lists every one whose change points differ.

Usage: python -m scripts.check_last_segment (--db URL | RESULTS_DIR ...) [--commits 20]
(RESULTS_DIR: asv results folders, imported into a temporary store first).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from mmtrack.analysis.detect import DetectPolicy
from mmtrack.analysis.series import detect_values, kept_steps
from mmtrack.store import reads as q
from mmtrack.store.asv_import import import_asv_results
from mmtrack.store.db import open_store
from mmtrack.store.selection import series_keys


def _columns(url: str) -> list[Any]:
    store = open_store(url, existing=True)
    try:
        return [c.usable() for c in q.series_columns(store, series_keys(store), usable_only=False)]
    finally:
        store.close()


def _folder_columns(results: Path) -> list[Any]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'real.db'}"
        store = open_store(url)
        try:
            import_asv_results(store, results)
        finally:
            store.close()
        return _columns(url)


def _cases(cols: Any, commits: int, policy: DetectPolicy) -> Iterator[tuple[int, list[int] | None, bool]]:
    """(commits, kept steps or None, same change points) for each of the series' newest ``commits`` commits."""
    for n in range(max(policy.min_points + 1, len(cols.values) - commits + 1), len(cols.values) + 1):
        args = (cols.key, cols.shas[:n], cols.values[:n], cols.versions[:n], cols.direction, policy)
        stored = detect_values(cols.key, *(a[: n - 1] for a in args[1:4]), cols.direction, policy).changes
        kept = kept_steps(stored, cols.shas[:n], {cols.shas[n - 1]}, policy)
        if kept is None:
            yield n, None, True
            continue
        yield n, kept, detect_values(*args, kept_before=kept).changes == detect_values(*args).changes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="*", type=Path, help="asv results folders")
    ap.add_argument("--db", help="a store's URL instead")
    ap.add_argument("--commits", type=int, default=20, help="newest commits of each series to update with")
    args = ap.parse_args(argv)
    policy = DetectPolicy()
    sources = [(args.db, _columns(args.db))] if args.db else [(str(r), _folder_columns(r)) for r in args.results]
    failed = 0
    for name, columns in sources:
        cases = kept = differ = 0
        for cols in columns:
            for n, steps, same in _cases(cols, args.commits, policy):
                cases += 1
                kept += steps is not None
                if not same:
                    differ += 1
                    print(f"  differs: {cols.key} at {n} commits, kept steps {steps}")
        print(f"{name}: {len(columns)} series, {cases} updates, {kept} searched from a kept step, {differ} differ")
        failed += differ
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
