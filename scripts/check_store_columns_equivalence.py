"""Check that ``store.reads.series_columns`` reads the same columns as another revision's (default: main's).

Imports each asv results folder of tests/data/asv-results into a SQLite store, copies it, and reads it through the
reference revision's module of ``series_columns`` (``mmtrack.store.reads.columns``, or ``mmtrack.store.queries``
before the store's reads were split; that revision's whole package from a git worktree, scripts/revision.py) and the
working tree's, one copy each, in the same sequence: every key, usable points only and every point, writing the
series cache (through ``store.writes`` since reads stopped writing) and reading it back, a few keys (the path that
reads by series id), keys in reverse with one unknown.
Compares every column (NaN equals NaN) and, at the end, the cache blobs both wrote.

Usage: ``PYTHONPATH=$PWD python3 -m scripts.check_store_columns_equivalence [--rev main]``; exit 1 on a difference.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mmtrack.results import MetricKey, SeriesKey
from mmtrack.store import reads as new
from mmtrack.store.db import open_store
from mmtrack.store.writes import keep_cached_columns
from scripts.check_compare_equivalence import DATA, ROOT, Tally, reference_module
from scripts.revision import has_module

#: Where ``series_columns`` lives: since issue 42's split of the store's reads, and before it.
SOURCES = ("mmtrack.store.reads.columns", "mmtrack.store.queries")


def _keeping_cache(module: Any, store: Any, keys: list[SeriesKey], usable_only: bool = True) -> Any:
    """A read that writes the series cache blobs it found due: ``series_columns(keep_cache=True)`` before reads
    stopped writing; since, the module's ``read_series_columns`` and the blobs written by ``store.writes``."""
    if not hasattr(module, "read_series_columns"):
        return module.series_columns(store, keys, keep_cache=True, usable_only=usable_only)
    done = module.read_series_columns(store, keys, usable_only=usable_only)
    if done.blobs_due:
        keep_cached_columns(store, done.blobs_due)
    return done.columns


def reads(module: Any, db: str) -> list[tuple[str, Any]]:
    store = open_store(db)
    keys = new.list_series(store)  # the keys to read, the same on both sides
    unknown = SeriesKey("nowhere", "none", "no.bench", "", MetricKey("", "time", "s"))
    out = [
        ("all, usable", module.series_columns(store, keys)),
        ("all, every point, keep cache", _keeping_cache(module, store, keys, usable_only=False)),
        ("all, usable, from cache", _keeping_cache(module, store, keys)),
        ("a few, every point", module.series_columns(store, keys[:3], usable_only=False)),
        ("reversed with unknown", module.series_columns(store, [unknown, *reversed(keys)])),
        ("only unknown", module.series_columns(store, [unknown])),
    ]
    with store.read() as conn:
        blobs = sorted(tuple(r) for r in conn.exec_driver_sql("SELECT * FROM series_cache"))
    return [*out, ("cache blobs", blobs)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="main")
    args = parser.parse_args()
    ref = reference_module(args.rev, next(p for p in SOURCES if has_module(args.rev, p)))
    tally, columns = Tally(), 0
    with tempfile.TemporaryDirectory() as tmp:
        for project in sorted(p for p in DATA.iterdir() if p.is_dir()):
            first, second = Path(tmp) / f"{project.name}-ref.db", Path(tmp) / f"{project.name}-new.db"
            subprocess.run([sys.executable, "-m", "mmtrack", "import-asv", str(project / "results"), "--db",
                            f"sqlite:///{first}", "--no-progress"], check=True, capture_output=True, cwd=ROOT)
            shutil.copy(first, second)
            for (what, a), (_, b) in zip(reads(ref, f"sqlite:///{first}"), reads(new, f"sqlite:///{second}")):
                tally.check(f"{project.name}: {what}", a, b)
                columns += len(a)
    print(f"{tally.cases} reads ({columns} series columns or cache rows) compared, "
          f"{len(tally.differences)} differences")
    for line in tally.differences[:5]:
        print(line[:2000])
    return 1 if tally.differences else 0


if __name__ == "__main__":
    sys.exit(main())
