"""What SQLite's inserts of an asv import cost, by insert order and schema setting: the figures behind the
sorted measurement insert of ``import-asv`` (docs/design/archive/nightly-update-profile.md, "The cold path").

Run as a script (plain ``sqlite3`` on this store's schema, one result and one measurement row per run and
series, as an asv history of one case per benchmark writes them; CPU seconds of this process)::

    python3 benchmarks/insert_order.py                  # 999 runs x 500 series, every variant
    python3 benchmarks/insert_order.py --runs 100       # a smoke run
"""

from __future__ import annotations

import argparse
import operator
import sqlite3
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENT = ('INSERT INTO measurement (series_id, result_id, position, mean, median, p95, min, max, q1, q3,'
               ' ci_low, ci_high, count, "values") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
RESULT = ("INSERT INTO result (id, run_id, benchmark_id, status, message, value, ci_low, ci_high, q1, q3, number,"
          " repeat, started_at, duration) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
VARIANTS = {  # name: (sorted per batch, foreign keys, index built after the load, page cache KiB)
    "as the import wrote them": (False, True, False, 32000),
    "foreign keys off": (False, False, False, 32000),
    "sorted by series per batch": (True, True, False, 32000),
    "sorted, foreign keys off": (True, False, False, 32000),
    "sorted, foreign keys off, index after": (True, False, True, 32000),
    "page cache 200 MB": (False, True, False, 200000),
}


def _schema(work: Path) -> list[str]:
    """The store's CREATE statements, from a fresh store made by mmtrack."""
    sys.path.insert(0, str(ROOT))
    from mmtrack.store.db import open_store

    open_store(f"sqlite:///{work / 'schema.db'}").close()
    with sqlite3.connect(work / "schema.db") as conn:
        return [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL"
                                           " AND name NOT LIKE 'sqlite_%' AND name != 'alembic_version'")]


def _load(path: Path, schema: list[str], runs: int, series: int, batch: int, variant: tuple) -> float:
    """CPU seconds to insert ``runs`` runs of ``series`` series, ``batch`` runs a transaction."""
    sort, foreign_keys, index_after, cache = variant
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode = WAL", "synchronous = NORMAL", f"cache_size = -{cache}",
                   f"foreign_keys = {'ON' if foreign_keys else 'OFF'}", "wal_autocheckpoint = 16384"):
        conn.execute(f"PRAGMA {pragma}")
    late = [s for s in schema if index_after and "ix_measurement_result_id" in s]
    for statement in schema:
        if statement not in late:
            conn.execute(statement)
    conn.execute("INSERT INTO machine (id, name, info) VALUES (1, 'm', '{}')")
    conn.execute("INSERT INTO environment (id, name, info) VALUES (1, 'e', '{}')")
    conn.execute("INSERT INTO metric (id, section, name, unit) VALUES (1, 'timing', 'time_per_op', 's')")
    conn.executemany("INSERT INTO benchmark (id, name, params, version, unit, type) VALUES (?, ?, '{}', 'v', 's', 'time')",
                     [(i, f"b{i}") for i in range(1, series + 1)])
    conn.executemany("INSERT INTO series (id, machine_id, environment_id, benchmark_id, metric_id, direction, format,"
                     " display_name, changes, appends) VALUES (?, 1, 1, ?, 1, 'lower', 'number', '', 1, 0)",
                     [(i, i) for i in range(1, series + 1)])
    samples = struct.pack("<10d", *range(10))
    held: list[tuple] = []
    cpu = time.process_time()
    conn.execute("BEGIN")
    for run in range(1, runs + 1):
        first = (run - 1) * series + 1
        conn.execute('INSERT INTO "commit" (id, sha, date, message, branches) VALUES (?, ?, ?, ?, ?)',
                     (run, f"{run:040x}", "2025-01-01 00:00:00", "m", "[]"))
        conn.execute("INSERT INTO run (id, started_at, machine_id, environment_id, commit_id, dirty, tool_versions,"
                     " kind, suite, host) VALUES (?, '2025-01-01 00:00:00', 1, 1, ?, 0, '{}', 'asv', 's', 'h')", (run, run))
        conn.executemany(RESULT, [(first + i, run, i + 1, "ok", None, 1.0, 0.9, 1.1, 0.95, 1.05, 1, 10,
                                   "2025-01-01 00:00:00.000000", 1.0) for i in range(series)])
        rows = [(i + 1, first + i, 0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10, samples) for i in range(series)]
        if sort:
            held.extend(rows)
        else:
            conn.executemany(MEASUREMENT, rows)
        if run % batch == 0 or run == runs:
            held.sort(key=operator.itemgetter(0))
            conn.executemany(MEASUREMENT, held)
            held = []
            conn.execute("COMMIT")
            conn.execute("BEGIN")
    conn.execute("COMMIT")
    for statement in late:
        conn.execute(statement)
    conn.close()
    return time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=999)
    ap.add_argument("--series", type=int, default=500)
    ap.add_argument("--batch", type=int, default=64, help="runs a transaction (import-asv: 64 files)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mmtrack-insert-order-") as tmp:
        work = Path(tmp)
        schema = _schema(work)
        for i, (name, variant) in enumerate(VARIANTS.items()):
            secs = _load(work / f"load{i}.db", schema, args.runs, args.series, args.batch, variant)
            print(f"{name:40s} {secs:6.2f} CPU s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
