"""Per-op instruction counts by two readings of the same regions, to choose how to cancel the markers' overhead.

Runs itself under valgrind (mmtrack's callgrind options) on the A/A script's suite and prints, per case:
one region of n ops divided by n, against (region of 2n - region of n) / n, and the markers' own count
(the 1-op probe region less one op).

    PYTHONPATH=$PWD python3 -m scripts.callgrind_methods
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def _inside(suite: Path) -> None:
    from mmtrack.asvbridge.discover import discover
    from mmtrack.asvbridge.session import expand
    from mmtrack.measure import callgrind

    callgrind.profiles_at(os.environ["PROFILES"])
    for case in expand(discover(suite).benchmarks):
        owner = case.benchmark.owner()
        owner.setup()
        spec = case.benchmark.declaration.spec(owner, (), case.benchmark.name, [])
        runner = callgrind.CallgrindRunner(spec, callgrind.default_options())
        runner.run()
        probe, one, two = runner.backend.regions[-3:]
        per_region = one.counts.ir / one.ops
        per_diff = (two.counts.ir - one.counts.ir) / (two.ops - one.ops)
        print(f"{case.benchmark.name:28} n={one.ops:6}  markers {probe.counts.ir - per_diff:8,.0f}  "
              f"C(n)/n {per_region:10,.1f}  (C(2n)-C(n))/n {per_diff:10,.1f}  "
              f"overhead in C(n)/n {per_region / per_diff - 1:+.3%}", flush=True)


def main() -> None:
    if len(sys.argv) > 1:
        _inside(Path(sys.argv[1]))
        return
    from mmtrack.asvbridge.callgrind_pool import worker_environment
    from mmtrack.measure.callgrind import valgrind_args
    from scripts.callgrind_aa import SUITE

    scratch = Path(tempfile.mkdtemp(prefix="methods-"))
    suite = scratch / "bench_methods.py"
    suite.write_text(SUITE)
    env = dict(worker_environment(), PROFILES=str(scratch / "callgrind.out"))
    subprocess.run([*valgrind_args(scratch / "callgrind.out"), sys.executable, __file__, str(suite)],
                   env=env, check=True, cwd=scratch)


if __name__ == "__main__":
    main()
