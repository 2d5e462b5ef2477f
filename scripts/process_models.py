"""Per-sample harness overhead under each process model, side by side (issue 15).

Runs ``mmtrack bench benchmarks -b harness`` in rounds, interleaving:

- ``baseline``: another mmtrack source tree (``--baseline DIR``, e.g. ``git archive main``), in-process:
  the runner as it was before worker processes;
- ``in-process``: this tree with ``--in-process``;
- ``worker``: this tree, default (a worker process per case).

Each run writes its JSON report (``MMTRACK_OUTPUT``); the script prints, per model, the median over
rounds of each run's median ``wallclock_overhead_ns`` and ``perf_overhead_ns``, and the ratio to the
baseline. Usage::

    python -m scripts.process_models --baseline /tmp/mmtrack-main --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
METRICS = ("wallclock_overhead_ns", "perf_overhead_ns")


def run_once(source: Path, extra: list[str], report: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(source), MMTRACK_OUTPUT=str(report), COLUMNS="160")
    cmd = [sys.executable, "-m", "mmtrack", "bench", str(HERE / "benchmarks"), "-b", "harness",
           "--no-save", "--compare", "none", "--duration", "2", "--warm-up", "0.5", *extra]
    proc = subprocess.run(cmd, cwd=source, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    (result,) = json.loads(report.read_text())["results"]
    return {m["name"]: m["median"] for m in result["stats"]["metrics"] if m["name"] in METRICS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="an mmtrack source tree to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    models = {"baseline": (args.baseline.resolve(), []), "in-process": (HERE, ["--in-process"]), "worker": (HERE, [])}
    seen: dict[str, dict[str, list[float]]] = {m: {k: [] for k in METRICS} for m in models}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(models) if r % 2 == 0 else list(reversed(models))  # no model always goes first
            for name in order:
                source, extra = models[name]
                got = run_once(source, extra, Path(tmp) / f"{name}-{r}.json")
                for k, v in got.items():
                    seen[name][k].append(v)
                print(f"round {r + 1} {name:10s} " + "  ".join(f"{k}={v:.1f}" for k, v in got.items()), flush=True)
    base = {k: statistics.median(v) for k, v in seen["baseline"].items() if v}
    print(f"\nmedian over {args.rounds} rounds (each round's value: that run's median over samples)")
    for name in models:
        cells = []
        for k, values in seen[name].items():
            if values:
                med = statistics.median(values)
                cells.append(f"{k} {med:.1f} ns (x{med / base[k]:.2f} vs baseline)" if k in base else f"{k} {med:.1f}")
        print(f"  {name:10s} " + "; ".join(cells))


if __name__ == "__main__":
    main()
