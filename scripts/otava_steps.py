#!/usr/bin/env python3
"""Apache Otava's change points for many series: run by scripts/eval_detect.py in Otava's own environment.

Reads a JSON list of series (per-commit values, oldest first) on stdin and writes, per series, the list of
[index, mean before, mean after] of the change points ``otava.analysis.compute_change_points`` finds with the
defaults of ``otava analyze`` (window 50, p-value 0.001, magnitude 0), as ``otava.series.Series.analyze`` calls it.

Setup (Otava needs its own numpy and scipy; keep it out of mmtrack's environment):
    python3 -m venv .venv-otava && .venv-otava/bin/pip install apache-otava==0.8.0
"""

import json
import sys

from otava.analysis import compute_change_points, fill_missing


def main() -> int:
    out = []
    for values in json.load(sys.stdin):
        values = list(values)
        fill_missing(values)
        points, _ = compute_change_points(values, window_len=50, max_pvalue=0.001, min_magnitude=0.0)
        out.append([[int(c.index), float(c.stats.mean_before()), float(c.stats.mean_after())] for c in points])
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
