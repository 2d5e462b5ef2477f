"""A/A under --instrument callgrind: one suite measured N times while other processes load every core.

Prints, per case, how many distinct instruction counts the runs read and how far est_cycles spread;
every other run measures a copy of the suite from a longer folder path (another checkout, as a
`continuous` build is), which calibrates the deterministic tolerance (docs/design/callgrind.md).

    PYTHONPATH=$PWD python3 -m scripts.callgrind_aa --runs 10 --load 2
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

from mmtrack.asvbridge.callgrind_pool import CallgrindSession
from mmtrack.asvbridge.discover import discover
from mmtrack.asvbridge.session import Status, expand
from mmtrack.measure.runner import RunOptions

SUITE = textwrap.dedent('''
    import json
    import re
    import zlib

    import mmtrack

    DOC = {"name": "mmtrack", "values": list(range(50)), "nested": {"a": [1.5, 2.5], "b": None}}
    LINE = "2026-12-06 03:17:22 ERROR worker 17 failed: status=3 after 12.5 s"

    class Cpu:
        def setup(self):
            self.data = list(range(300))[::-1]
            self.block = bytes(range(256)) * 16
            self.rx = re.compile(r"(\\d+)-(\\d+)-(\\d+) .* status=(\\d+)")

        @mmtrack.bench()
        def track_sorted(self, ctx, chunk_size, chunk_num):
            for _ in range(chunk_size):
                sorted(self.data)

        @mmtrack.bench()
        def track_json(self, ctx, chunk_size, chunk_num):
            for _ in range(chunk_size):
                json.loads(json.dumps(DOC))

        @mmtrack.bench()
        def track_regex(self, ctx, chunk_size, chunk_num):
            for _ in range(chunk_size):
                self.rx.match(LINE)

        @mmtrack.bench()
        def track_dict(self, ctx, chunk_size, chunk_num):
            for i in range(chunk_size):
                d = {str(k): k for k in range(20)}
                d.get(str(i % 20))

        @mmtrack.bench()
        def track_crc32(self, ctx, chunk_size, chunk_num):
            for _ in range(chunk_size):
                zlib.crc32(self.block)
''')


def _spin() -> None:
    while True:
        pass


def measure(path: Path) -> tuple[dict[str, dict[str, float]], float]:
    started = time.monotonic()
    session = CallgrindSession(RunOptions(), 300, lambda *a: None)
    try:
        outcomes = [session.run_case(c) for c in expand(discover(path).benchmarks)]
    finally:
        session.close()
    got = {}
    for o in outcomes:
        assert o.status is Status.OK, o.message
        got[o.full_name] = {m.key[1]: m.median for m in o.stats.metrics if m.key[0] == "callgrind"}
    return got, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the runs")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="aa-"))
    here = scratch / "bench_aa.py"
    moved = scratch / "another" / "much" / "longer" / "checkout" / "folder" / "bench_aa.py"
    moved.parent.mkdir(parents=True)
    for p in (here, moved):
        p.write_text(SUITE)
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
    for s in spinners:
        s.start()
    runs, walls = [], []
    try:
        for i in range(args.runs):
            got, wall = measure(moved if i % 2 else here)
            runs.append(got)
            walls.append(wall)
            print(f"run {i + 1}: {wall:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        for s in spinners:
            s.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{args.runs} runs ({args.load} busy processes beside them), wall {min(walls):.1f}-{max(walls):.1f} s")
    for name in runs[0]:
        for metric in ("instructions", "est_cycles"):
            same = [r[name][metric] for r in runs[0::2]]
            other = [r[name][metric] for r in runs[1::2]]
            allv = same + other
            spread = (max(allv) - min(allv)) / min(allv)
            print(f"{name:34} {metric:12} same folder: {len(set(same))} distinct, "
                  f"moved folder: {len(set(other))} distinct, all runs: spread {spread:.4%} "
                  f"({min(allv):,.1f} .. {max(allv):,.1f})")


if __name__ == "__main__":
    main()
