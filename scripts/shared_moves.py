#!/usr/bin/env python3
"""How much of a CI machine's noise its runs share: for each results file (one run), the moves of its series from a
15-commit rolling median, and which of the large ones the same benchmark's other parameters (or the whole run) made
too. Evidence for docs/design/analysis.md: a lone series cannot tell such a burst from a step and its revert.

Usage: python -m scripts.shared_moves [RESULTS_DIR ...]   (default: OpenBLAS's three CI machines)
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

from scripts.eval_histories import SHARED

#: A move this large (log) from the rolling median is a burst worth explaining.
LARGE = 0.15
#: Another series shares a move when it moved the same way by at least this share of it.
SHARE = 0.5
WINDOW = 15


def runs_of(machine: Path) -> tuple[list[str], np.ndarray]:
    """The machine's series (benchmark, parameters) and their log values, one row per results file by date."""
    runs = []
    for path in machine.glob("*.json"):
        if path.name == "machine.json":
            continue
        d = json.loads(path.read_text())
        cols, values = d["result_columns"], {}
        for name, row in d["results"].items():
            r = dict(zip(cols, row))
            combos = list(itertools.product(*(r.get("params") or []))) or [()]
            for combo, v in zip(combos, r.get("result") or []):
                if isinstance(v, (int, float)) and v > 0 and math.isfinite(v):
                    values[(name, combo)] = math.log(v)
        runs.append((d["date"], values))
    runs.sort(key=lambda run: run[0])
    keys = sorted(set().union(*(v for _, v in runs)))
    table = np.array([[v.get(k, np.nan) for k in keys] for _, v in runs])
    return keys, table


def moves(table: np.ndarray) -> np.ndarray:
    """Each value's log distance from the median of the WINDOW commits around it (NaN where fewer than 5)."""
    out = np.full_like(table, np.nan)
    h = WINDOW // 2
    for i in range(table.shape[0]):
        window = table[max(0, i - h): i + h + 1]
        counts = np.sum(~np.isnan(window), axis=0)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a series absent from the whole window
            out[i] = np.where(counts >= 5, table[i] - np.nanmedian(window, axis=0), np.nan)
    return out


def shared(keys: list, res: np.ndarray) -> dict:
    family = collections.defaultdict(list)
    for j, (name, _) in enumerate(keys):
        family[name].append(j)
    whole_run = np.nanmedian(res, axis=1)
    large = np.argwhere(np.abs(np.nan_to_num(res)) > LARGE)
    by_family, by_run = [], []
    for i, j in large:
        move = res[i, j]
        others = [res[i, x] for x in family[keys[j][0]] if x != j and not np.isnan(res[i, x])]
        if others:
            by_family.append(np.mean([o * move > 0 and abs(o) >= SHARE * abs(move) for o in others]))
        by_run.append(whole_run[i] * move > 0 and abs(whole_run[i]) >= SHARE * abs(move))
    return {"series": len(keys), "runs": res.shape[0], "large_moves": int(len(large)),
            "shared_by_family": round(float(np.mean(by_family)), 2) if by_family else None,
            "shared_by_run": round(float(np.mean(by_run)), 2) if by_run else None}


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv] or sorted((SHARED / "openblas" / "results").glob("gha-*"))
    for folder in folders:
        keys, table = runs_of(folder)
        print(folder.name, json.dumps(shared(keys, moves(table))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
