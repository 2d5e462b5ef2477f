"""Check that ``analysis.compare.compare_pair`` gives the same rows as another revision's (default: main's).

A refactor of the verdict must not change one bit of it. This script checks the reference revision out in a
temporary git worktree and imports its ``mmtrack.analysis.compare`` beside the working tree's (scripts/revision.py), and
compares the rows both give, field by field (NaN equals NaN):

* every consecutive pair of every series of the asv results in tests/data/asv-results (imported into a
  temporary SQLite store with ``mmtrack import-asv``), judged as ``mmtrack compare`` and the pages judge
  them: with the series' history, later commits and what each run says (``suite_runs`` / ``series_steps``),
  and as plain ``compare_pair`` calls with and without history and with ``p_value`` on and off;
* ``--random N`` randomised cases: medians, samples, histories with steps, later commits, frames,
  NaN / 0 / negative values, the three directions, code versions, statuses, ``p_value`` on and off.

Usage: ``PYTHONPATH=$PWD python3 -m scripts.check_compare_equivalence [--rev main] [--random 5000]``.
Exit 0 when every row is identical, 1 otherwise (the first differences are printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

from mmtrack.analysis import compare as new
from mmtrack.analysis.compare import ComparePolicy
from mmtrack.measure.metrics import Direction
from mmtrack.results import Measurement, MetricKey
from scripts.revision import reference

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "asv-results"


def reference_module(rev: str, module: str = "mmtrack.analysis.compare") -> Any:
    """``module`` (dotted) at ``rev``, from that revision's whole package in a git worktree."""
    return reference(rev, module)


def same(x: Any, y: Any) -> bool:
    """Equality, field by field, with NaN equal to NaN and -0.0 told from 0.0 (bit for bit)."""
    if type(x).__qualname__ != type(y).__qualname__:  # the reference module has its own Row class
        return False
    if isinstance(x, float):
        return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
    if dataclasses.is_dataclass(x):
        return all(same(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x))
    if isinstance(x, (tuple, list)):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    return bool(x == y)


def outcome(call: Any, *args: Any) -> Any:
    """What ``call(*args)`` gives: its row, or the exception it raised (type and message), which must match too."""
    try:
        return call(*args)
    except Exception as e:  # noqa: BLE001 - an input both versions fail on is the same behaviour
        return ("raised", type(e).__name__, str(e))


class Tally:
    def __init__(self) -> None:
        self.cases = 0
        self.raised = 0
        self.differences: list[str] = []

    def check(self, what: str, a: Any, b: Any) -> None:
        self.cases += 1
        self.raised += isinstance(a, tuple) and a[:1] == ("raised",)
        if not same(a, b):
            self.differences.append(f"{what}:\n  reference {a}\n  new       {b}")


# --------------------------------------------------------------------------- real asv results


def real_series(workdir: Path) -> Iterator[tuple[list[Any], list[Measurement]]]:
    """Each suite (machine, environment) of the imported asv results: its series' points."""
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store

    for project in sorted(p for p in DATA.iterdir() if p.is_dir()):
        db = f"sqlite:///{workdir / project.name}.db"
        subprocess.run([sys.executable, "-m", "mmtrack", "import-asv", str(project / "results"), "--db", db,
                        "--no-progress"], check=True, capture_output=True, cwd=ROOT)
        store = open_store(db)
        keys = q.list_series(store)
        suites: dict[tuple[str, str], list[Any]] = {}
        for key in keys:
            suites.setdefault((key.machine, key.environment), []).append(key)
        for suite in suites.values():
            yield [(key, q.series(store, key)) for key in suite]


def check_real(ref: Any, tally: Tally, policy: ComparePolicy) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for suite in real_series(Path(tmp)):
            columns = {}
            for key, pts in suite:
                ms = [p.measurement for p in pts]
                if ms:
                    columns[ms[0].case] = ([p.commit.sha for p in pts], *new.history_columns(ms), ms[0].direction)
            judged = {case: cols[0][1:] for case, cols in columns.items()}
            runs = {m.__name__: m.suite_runs(columns, judged, policy) for m in (ref, new)}
            for key, pts in suite:
                ms = [p.measurement for p in pts]
                if len(ms) < 2:
                    continue
                name = f"{key.benchmark}{key.params} {key.metric}"
                cases = {ref: ref.own(ms[0].case), new: ms[0].case}  # each side's runs are keyed by its own classes
                in_run = {m: [runs[m.__name__].get(cases[m], {}).get(p.commit.sha) for p in pts] for m in (ref, new)}
                for p_value in (True, False):
                    steps = [m.series_steps(ms, policy, last=len(ms), p_value=p_value, runs=in_run[m])
                             for m in (ref, new)]
                    for (j, a), (_, b) in zip(*steps):
                        tally.check(f"{name} steps at {j} p_value={p_value}", a, b)
                for j in range(1, len(ms)):
                    history = new.series_history(ms, j - 1, new.HISTORY_WINDOW)
                    later = new.series_later(ms, j, policy)
                    for h in (history, None):
                        for p_value in (True, False):
                            args = (ms[j - 1], ms[j], policy, h, later, p_value)
                            tally.check(f"{name} pair at {j} history={h is not None} p_value={p_value}",
                                        outcome(ref.compare_pair, *args), outcome(new.compare_pair, *args))


# --------------------------------------------------------------------------- randomised cases

SPECIAL = [math.nan, 0.0, -1.0, -0.5, math.inf, 1e-300, 1e300]
METRICS = [MetricKey("", "time", "s"), MetricKey("counters", "instructions", "count"),
           MetricKey("counters", "cycles", "count"), MetricKey("", "rate", "1/s")]


def level_walk(rng: random.Random, centre: float, n: int) -> list[float]:
    """A series of ``n`` medians around ``centre`` with noise, runner levels and steps, now and then a special value."""
    out, level = [], centre
    noise = rng.choice([0.0, 0.001, 0.01, 0.05, 0.2])
    levels = [centre * f for f in (1.0, rng.uniform(0.7, 1.4), rng.uniform(0.9, 1.1))]
    for _ in range(n):
        if rng.random() < 0.08:
            level *= rng.choice([0.5, 0.8, 0.9, 1.1, 1.25, 2.0])
        value = (rng.choice(levels) / centre if rng.random() < 0.3 else 1.0) * level * math.exp(rng.gauss(0, noise))
        if rng.random() < 0.03:
            value = rng.choice(SPECIAL)
        out.append(value)
    return out


def random_measurement(rng: random.Random, median: float | None, metric: MetricKey, direction: Direction,
                       version: str | None) -> Measurement:
    status = rng.choices(["ok", "failed", "skipped"], [0.94, 0.04, 0.02])[0]
    if rng.random() < 0.03:
        median = None
    kind = rng.random()
    samples: tuple[float, ...] = ()
    q1 = q3 = lo = hi = None
    count = 0
    if median is not None and math.isfinite(median):
        spread = abs(median) * rng.choice([0.0, 0.001, 0.02, 0.1]) or rng.choice([0.0, 1e-9])
        if kind < 0.45:
            samples = tuple(rng.gauss(median, spread) for _ in range(rng.choice([1, 3, 5, 8, 10, 20])))
            if rng.random() < 0.05:
                samples = (*samples, math.nan)
            count = len(samples)
        if kind < 0.8 and rng.random() < 0.7:
            q1, q3 = median - spread * rng.uniform(0.3, 1), median + spread * rng.uniform(0.3, 1)
            count = count or rng.choice([1, 5, 10, 50])
        if kind < 0.8 and rng.random() < 0.6:
            lo, hi = median - 2 * spread, median + 2 * spread
    return Measurement("bench.case", {"n": "1"}, metric, direction, status=status, median=median, q1=q1, q3=q3,
                       ci_low=lo, ci_high=hi, count=count, samples=samples, version=version)


def random_policy(rng: random.Random) -> ComparePolicy:
    return ComparePolicy(threshold=rng.choice([0.0, 0.02, 0.05, 0.1, 0.3]), history_z=rng.choice([2.0, 4.0]),
                         history_gap=rng.choice([1.5, 2.5]), min_history=rng.choice([3, 5]),
                         confirm_window=rng.choice([2, 4]), confirm_agree=rng.choice([1, 2]))


def random_case(rng: random.Random) -> tuple[Any, ...]:
    metric = rng.choice(METRICS)
    direction = rng.choice(list(Direction))
    centre = rng.choice([1e-6, 0.01, 1.0, 1000.0, 5e6])
    series = level_walk(rng, centre, rng.randint(2, 80))
    history_n = rng.randint(0, len(series) - 2)
    history = series[: history_n + 1] if rng.random() < 0.85 else None
    if history is not None:
        history = [v for v in history if v == v] if rng.random() < 0.7 else history
    before_median = series[history_n] if rng.random() < 0.9 else rng.choice(SPECIAL)
    after_median = series[history_n + 1] * rng.choice([1.0, 1.0, 1.0, 0.5, 1.15, 2.0, -1.0])
    later_values = level_walk(rng, after_median if after_median and math.isfinite(after_median) else centre,
                              rng.randint(0, 6))
    versions = ["v1", "v1", "v1", "v2", None]
    before = random_measurement(rng, before_median, metric, direction, rng.choice(versions[:3] + [None]))
    after = random_measurement(rng, after_median, metric, direction, rng.choice(versions))
    sides = rng.random()
    if sides < 0.02:
        before = None
    elif sides < 0.04:
        after = None
    frame = rng.choice([1.0, 1.0, 1.0, 0.9, 1.005, 1.2, 1.02])
    return before, after, random_policy(rng), history, later_values, rng.random() < 0.5, frame


def check_random(ref: Any, tally: Tally, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(n):
        case = random_case(rng)
        tally.check(f"random case {i} (seed {seed})", outcome(ref.compare_pair, *case),
                    outcome(new.compare_pair, *case))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="main", help="the reference revision (default: main)")
    parser.add_argument("--random", type=int, default=5000, help="randomised cases (default: 5000)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-real", action="store_true", help="skip the asv results")
    args = parser.parse_args()
    ref = reference_module(args.rev)
    real, rand = Tally(), Tally()
    if not args.no_real:
        check_real(ref, real, ComparePolicy())
    check_random(ref, rand, args.random, args.seed)
    for label, tally in (("asv results", real), ("randomised", rand)):
        print(f"{label}: {tally.cases} cases compared ({tally.raised} raised the same exception in both), "
              f"{len(tally.differences)} differences")
        for line in tally.differences[:5]:
            print(line)
    return 1 if real.differences or rand.differences else 0


if __name__ == "__main__":
    sys.exit(main())
