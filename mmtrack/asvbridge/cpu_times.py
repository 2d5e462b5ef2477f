"""The CPU time of asv's ``time_`` samples, as :mod:`.round_server` wrote it, turned into the engine's metrics.

Each benchmark process writes one file per case (:func:`.round_server.record_cpu_times`); asv's ``rounds`` make
several per case, pooled here. A case gets its CPU time per op under the engine's counter name (``counters/task-clock``,
ns per op: what ``mmtrack bench`` records beside the wall clock) and, where it is a single-threaded CPU-bound op, its
wall/CPU ratio per sample (``timing/wall_per_cpu``): the reading on which :mod:`mmtrack.analysis.contention` judges a
case whose wall clock waited for a CPU on its CPU time.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from ..measure import contention
from ..measure.cputime import CPU_TIME_COUNTER
from ..measure.metrics import MetricSummary
from ..vocabulary import Direction

CaseIndex = tuple[str, int]  # (asv's benchmark name, its parameter combination's index)


def read(folder: Path) -> dict[CaseIndex, dict[str, list[float]]]:
    """Every case's samples in ``folder``: wall and CPU time per op (s) and voluntary switches per sample, pooled."""
    found: dict[CaseIndex, dict[str, list[float]]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            record: Any = json.loads(path.read_text())
            key = (str(record["name"]), int(record["param_index"]))
            columns = {k: [float(v) for v in record[k]] for k in ("wall", "cpu", "blocked")}
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a record that did not come whole: the case keeps asv's wall clock alone
        if len({len(v) for v in columns.values()}) != 1:
            continue
        pooled = found.setdefault(key, {"wall": [], "cpu": [], "blocked": []})
        for k, values in columns.items():
            pooled[k].extend(values)
    return found


def metrics(samples: dict[str, list[float]]) -> list[MetricSummary]:
    """CPU time per op (ns) and, for a single-threaded op that never blocked, wall/CPU time per sample."""
    wall, cpu = samples["wall"], samples["cpu"]
    if not cpu or min(cpu) <= 0:
        return []  # a clock too coarse for the op: no reading
    out = [MetricSummary.from_values("counters", CPU_TIME_COUNTER, f"{CPU_TIME_COUNTER}/op", [c * 1e9 for c in cpu],
                                     display_name="CPU time per op", direction=Direction.LOWER)]
    ratios = [w / c for w, c in zip(wall, cpu)]
    if cpu_bound(ratios, samples["blocked"]):
        out.append(MetricSummary.from_values(contention.SECTION, contention.NAME, contention.UNIT, ratios,
                                             display_name="wall / CPU time", direction=Direction.NEUTRAL))
    return out


def cpu_bound(ratios: list[float], blocked: list[float]) -> bool:
    """A single-threaded op that runs on the CPU for its whole span unless made to wait: the typical sample neither
    ran on several CPUs (wall under its CPU time) nor blocked (a voluntary switch: IO, a sleep, a lock). Only such an
    op's wall clock beyond its CPU time is waiting for a CPU."""
    return statistics.median(ratios) >= contention.MANY_CPUS_RATIO and statistics.median(blocked) == 0


__all__ = ["cpu_bound", "metrics", "read"]
