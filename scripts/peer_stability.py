"""Peer check: the same four workloads through ``mmtrack bench`` and pyperf, interleaved.

    python -m scripts.peer_stability [--runs N] [--workloads sort20,json_dumps,...] [--json out.json]
                                     [--baseline LABEL=DIR] [--processes 1,4] [--agree alloc_100k=0.05]

Each round runs every workload once through each tool, each run a fresh process
(``python -m mmtrack bench`` with its default budget; a pyperf script with ``--fast``),
alternating which tool goes first, so a drift of the machine hits both tools alike.
It prints, per workload and tool:

- value: the median over runs of each run's headline figure (mmtrack: median time per op;
  pyperf: mean, as ``pyperf show`` prints it), and the mmtrack/pyperf ratio;
- like for like: the median over runs of each run's median time per op, for both tools, and
  that ratio. The headlines are different statistics: on allocation-heavy code the GC's full
  collections make a long right tail, so a mean sits several % above a median of the same
  samples. Agreement of the measurement is judged on this ratio (``--agree``);
- run-to-run CV: standard deviation over mean of the N per-run values;
- within-run CV: the median over runs of each run's own sample CV;
- A/A flags: consecutive run pairs of unchanged code that the tool's own comparison flags
  (mmtrack: ``compare_pair`` regressed/improved with the default policy; ambiguous counted
  apart; pyperf: ``compare_to``'s significance test);
- whether the run-to-run spread is dominated by between-process variation: the observed
  run-to-run CV of the medians against what the within-run noise alone would give
  (1.25 x within CV / sqrt(samples), the standard error of a median).

For the memory-bound workload the mmtrack runs also record the transparent huge pages the
64 MB array got (AnonHugePages after setup), to see whether THP state explains the spread.
``--baseline LABEL=DIR`` adds a third tool, ``mmtrack@LABEL``: the mmtrack package found in DIR
(e.g. ``git worktree add /tmp/base main``), interleaved with the two others, to check a change
of the engine against its own past and pyperf in one run. ``--processes 1,4`` adds a tool
``mmtrack -pN`` per value: ``mmtrack bench --processes N``, interleaved with the others; its
``said between?`` column counts the runs whose own report said the CV was dominated by
between-process variation.
Needs pyperf (``pip install 'mmtrack[peer]'``). Timings on a shared machine are noisy:
say so when quoting them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mmtrack.measure.stats import between_process_dominated

WORKLOADS_PY = '''
"""The four peer workloads: a factory per name returns a zero-argument callable (one op)."""
import json
import random


class Small:
    def __init__(self, i):
        self.i = i


def sort20():
    data = [random.Random(1).random() for _ in range(20)]
    return lambda: sorted(data)


def json_dumps():
    obj = {f"key{i}": [i, str(i), float(i) / 3, None, True, {"n": i}] for i in range(25)}
    return lambda: json.dumps(obj)


def alloc_100k():
    return lambda: [Small(i) for i in range(100_000)]


def numpy_sum_64mb():
    import numpy as np

    arr = np.ones(8 * 1024 * 1024)  # 64 MB of float64, faulted in by the fill
    return arr.sum


def anon_huge_kb():
    try:
        for line in open("/proc/self/smaps_rollup"):
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1])
    except OSError:
        return None


FACTORIES = {f.__name__: f for f in (sort20, json_dumps, alloc_100k, numpy_sum_64mb)}
'''

MMTRACK_CASE = '''
class Peer_{name}:
    def setup(self):
        self.fn = peer_workloads.FACTORIES["{name}"]()
        thp = os.environ.get("PEER_THP_FILE")
        if thp:
            with open(thp, "w") as f:
                f.write(str(peer_workloads.anon_huge_kb()))

    @mmtrack.bench()
    def track_{name}(self, ctx, chunk_size, chunk_num):
        fn = self.fn
        for _ in range(chunk_size):
            fn()
'''

PYPERF_SCRIPT = '''
import sys
sys.path.insert(0, {dir!r})
import pyperf
import peer_workloads

runner = pyperf.Runner()
runner.bench_func({name!r}, peer_workloads.FACTORIES[{name!r}]())
'''

TOOLS = ("mmtrack", "pyperf")


@dataclass
class Run:
    value: float  # the tool's headline, seconds per op
    samples: list[float]  # per-sample (mmtrack) or per-value (pyperf) seconds per op
    within_cv: float
    extra: dict = field(default_factory=dict)


def write_suite(root: Path, names: list[str]) -> None:
    (root / "peer_workloads.py").write_text(WORKLOADS_PY)
    suite = root / "benchmarks"
    suite.mkdir()
    cases = "".join(MMTRACK_CASE.format(name=n) for n in names)
    (suite / "bench_peer.py").write_text("import os\n\nimport mmtrack\nimport peer_workloads\n" + cases)
    for n in names:
        (root / f"pyperf_{n}.py").write_text(PYPERF_SCRIPT.format(dir=str(root), name=n))


def run_mmtrack(root: Path, name: str, index: int, tree: Path | None = None, processes: int | None = None) -> Run:
    label = ("base" if tree else "new") + (f"-p{processes}" if processes else "")
    out = root / f"mmtrack-{label}-{name}-{index}.json"
    thp = root / f"thp-{label}-{name}-{index}.txt"
    path = [str(tree)] if tree else []  # a baseline checkout's mmtrack goes first on the path
    env = {**os.environ, "MMTRACK_OUTPUT": str(out), "PEER_THP_FILE": str(thp),
           "PYTHONPATH": os.pathsep.join(filter(None, [*path, str(root), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "mmtrack", "bench", "benchmarks", "-k", f"track_{name}$", "--no-save", "--compare", "none"]
    if processes:
        cmd += ["--processes", str(processes)]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"mmtrack bench failed on {name}: {proc.stdout[-800:]}{proc.stderr[-800:]}")
    stats = json.loads(out.read_text())["results"][0]["stats"]
    per_op = [d / o for d, o in zip(stats["durations"], stats["operations"])]
    extra = {"chunk_size": stats["chunk_size"], "conditions": stats.get("conditions")}
    faults = next((c["per_op"] for c in stats["counters"] if c["name"] == "page-faults"), None)
    if faults is not None:  # software counter: how much memory each op faulted in (heap state)
        extra["page_faults_per_op"] = faults
    if thp.exists():
        extra["anon_huge_kb"] = thp.read_text().strip()
    if stats.get("process_spread"):
        extra["said_between"] = stats["process_spread"]["dominated"]
    return Run(stats["latency"]["median"], per_op, stats["latency"]["cv"], extra)


def run_pyperf(root: Path, name: str, index: int) -> Run:
    import pyperf

    out = root / f"pyperf-{name}-{index}.json"
    proc = subprocess.run([sys.executable, str(root / f"pyperf_{name}.py"), "--fast", "--quiet", "-o", str(out)],
                          cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"pyperf failed on {name}: {proc.stdout[-800:]}{proc.stderr[-800:]}")
    bench = pyperf.Benchmark.load(str(out))
    values = list(bench.get_values())
    return Run(bench.mean(), values, statistics.stdev(values) / statistics.mean(values), {})


def mmtrack_flag(before: Run, after: Run) -> str:
    from mmtrack.analysis.compare import compare_pair
    from mmtrack.measure.metrics import Direction
    from mmtrack.results import PRIMARY, Measurement

    def measurement(r: Run) -> Measurement:
        s = sorted(r.samples)
        return Measurement("peer", {}, PRIMARY, Direction.LOWER, median=r.value, min=s[0], max=s[-1],
                           count=len(s), samples=tuple(r.samples))

    return compare_pair(measurement(before), measurement(after)).verdict


def pyperf_flag(before: Run, after: Run) -> bool:
    from pyperf._utils import is_significant  # what `pyperf compare_to` uses

    return bool(is_significant(before.samples, after.samples)[0])


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else math.nan


def summarize(name: str, tool: str, runs: list[Run]) -> dict:
    values = [r.value for r in runs]
    within = statistics.median(r.within_cv for r in runs)
    n_samples = statistics.median(len(r.samples) for r in runs)
    row = {
        "workload": name, "tool": tool, "runs": len(runs), "value_s": statistics.median(values),
        "median_s": statistics.median(statistics.median(r.samples) for r in runs),
        "medians_s": [statistics.median(r.samples) for r in runs],
        "run_to_run_cv": cv(values), "within_run_cv": within,
        "between_process_dominated": between_process_dominated(values, within, n_samples),
        "values_s": values,
    }
    pairs = list(itertools.pairwise(runs))
    if tool.startswith("mmtrack"):
        verdicts = [mmtrack_flag(a, b) for a, b in pairs]
        row["aa_flags"] = sum(v in ("regressed", "improved") for v in verdicts)
        row["aa_ambiguous"] = sum(v == "ambiguous" for v in verdicts)
        row["chunk_sizes"] = [r.extra.get("chunk_size") for r in runs]
        row["anon_huge_kb"] = [r.extra.get("anon_huge_kb") for r in runs]
        row["page_faults_per_op"] = [r.extra.get("page_faults_per_op") for r in runs]
        row["conditions"] = runs[-1].extra.get("conditions")
        said = [r.extra["said_between"] for r in runs if "said_between" in r.extra]
        if said:
            row["said_between"] = f"{sum(said)}/{len(said)}"
    else:
        row["aa_flags"] = sum(pyperf_flag(a, b) for a, b in pairs)
    row["aa_pairs"] = len(pairs)
    return row


def ratio_interval(runs: list[Run], peer: list[Run], draws: int = 2000) -> tuple[float, float]:
    """A bootstrap 95% interval of the like-for-like ratio (median over runs of each run's median),
    resampling each tool's runs: how far the run-to-run spread lets that ratio be pinned down."""
    import random

    rng = random.Random(20261203)
    mine = [statistics.median(r.samples) for r in runs]
    theirs = [statistics.median(r.samples) for r in peer]
    ratios = sorted(statistics.median(rng.choices(mine, k=len(mine))) / statistics.median(rng.choices(theirs, k=len(theirs)))
                    for _ in range(draws))
    return ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def fmt_time(seconds: float) -> str:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds * 1e9:.1f} ns"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per tool and workload (default 5)")
    parser.add_argument("--workloads", default="sort20,json_dumps,alloc_100k,numpy_sum_64mb")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--baseline", metavar="LABEL=DIR", help="also run the mmtrack package in DIR")
    parser.add_argument("--processes", default="", metavar="N,...",
                        help="also run mmtrack bench --processes N, as a tool of its own per value")
    parser.add_argument("--agree", action="append", default=[], metavar="WORKLOAD=TOL",
                        help="exit 1 unless every mmtrack tool's like-for-like ratio to pyperf on WORKLOAD "
                             "is within TOL of 1 (e.g. alloc_100k=0.05); repeatable")
    args = parser.parse_args()
    names = args.workloads.split(",")
    agree = {}
    for item in args.agree:
        workload, _, tol = item.partition("=")
        try:
            agree[workload] = float(tol)
        except ValueError:
            raise SystemExit(f"--agree {item}: give WORKLOAD=TOL, e.g. alloc_100k=0.05") from None
        if workload not in names or not 0 < agree[workload] < 1:
            raise SystemExit(f"--agree {item}: WORKLOAD must be one of --workloads and 0 < TOL < 1")
    tools = list(TOOLS)
    trees: dict[str, Path | None] = {"mmtrack": None}
    processes: dict[str, int] = {}
    for value in filter(None, args.processes.split(",")):
        if not value.isdigit() or int(value) < 1:
            raise SystemExit(f"--processes {args.processes}: give whole numbers >= 1, e.g. 1,4")
        tool = f"mmtrack -p{int(value)}"
        trees[tool], processes[tool] = None, int(value)
        tools.append(tool)
    if args.baseline:
        label, _, tree = args.baseline.partition("=")
        if not (Path(tree) / "mmtrack" / "__init__.py").is_file():
            raise SystemExit(f"--baseline {args.baseline}: no mmtrack package in {tree}; give LABEL=DIR of a checkout")
        trees[f"mmtrack@{label}"] = Path(tree).resolve()
        tools.append(f"mmtrack@{label}")
    runs: dict[tuple[str, str], list[Run]] = {(n, t): [] for n in names for t in tools}
    with tempfile.TemporaryDirectory(prefix="peer-stability-") as tmp:
        root = Path(tmp)
        write_suite(root, names)
        for i in range(args.runs):
            for j, name in enumerate(names):
                order = tools if (i + j) % 2 == 0 else tools[::-1]  # alternate who goes first
                for tool in order:
                    if tool == "pyperf":
                        run = run_pyperf(root, name, i)
                    else:
                        run = run_mmtrack(root, name, i, trees[tool], processes.get(tool))
                    runs[(name, tool)].append(run)
                    print(f"round {i + 1}/{args.runs} {name:15s} {tool:13s} {fmt_time(run.value)}", file=sys.stderr)
    rows = [summarize(n, t, runs[(n, t)]) for n in names for t in tools]
    print(f"{'workload':15s} {'tool':13s} {'value':>11s} {'ratio':>6s} {'median':>11s} {'ratio':>6s} {'run CV':>7s} "
          f"{'within':>7s} {'A/A flags':>9s}  between-process?  said between?")
    disagree = []
    for row in rows:
        peer = next(r for r in rows if r["workload"] == row["workload"] and r["tool"] == "pyperf")
        ratio = row["value_s"] / peer["value_s"]
        row["like_for_like_ratio"] = like = row["median_s"] / peer["median_s"]
        tol = agree.get(row["workload"])
        if tol is not None and row["tool"] != "pyperf" and abs(like - 1) > tol:
            disagree.append(f"{row['workload']} {row['tool']}: median {like:.3f}x pyperf's, outside 1 ± {tol:g}")
        flags = f"{row['aa_flags']}/{row['aa_pairs']}"
        if "aa_ambiguous" in row:
            flags += f" (+{row['aa_ambiguous']}?)"
        print(f"{row['workload']:15s} {row['tool']:13s} {fmt_time(row['value_s']):>11s} {ratio:6.3f} "
              f"{fmt_time(row['median_s']):>11s} {like:6.3f} "
              f"{row['run_to_run_cv']:7.2%} {row['within_run_cv']:7.2%} {flags:>9s}  "
              f"{'yes' if row['between_process_dominated'] else 'no':16s}  {row.get('said_between', '')}")
    for row in rows:
        faults = [f for f in row.get("page_faults_per_op", []) if f is not None]
        if faults:
            print(f"{row['workload']} {row['tool']}: page faults per op, median over runs {statistics.median(faults):,.0f}"
                  f" (runs: {', '.join(f'{f:,.0f}' for f in faults)})")
        if row["tool"].startswith("mmtrack") and row["workload"] == "numpy_sum_64mb":
            pairs = ", ".join(f"{fmt_time(v)} @ {kb} kB THP" for v, kb in zip(row["values_s"], row["anon_huge_kb"]))
            print(f"numpy_sum_64mb per {row['tool']} run (value @ AnonHugePages): {pairs}")
    if rows and rows[0].get("conditions"):
        c = rows[0]["conditions"]
        print(f"mmtrack measured: {c['process_model']}, {c['python_build']}, GIL {'on' if c['gil_enabled'] else 'off'}, "
              f"GC {'on' if c['gc_enabled'] else 'off'}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    for workload, tol in agree.items():
        peer = runs[(workload, "pyperf")]
        for tool in (t for t in tools if t != "pyperf"):
            low, high = ratio_interval(runs[(workload, tool)], peer)
            print(f"{workload} {tool}: median / pyperf's 95% interval over runs {low:.3f}-{high:.3f} "
                  f"(a tolerance of {tol:g} can be {'checked' if high - low <= 2 * tol else 'neither shown nor refuted'} "
                  f"with {len(peer)} runs here)")
        if not any(d.startswith(workload + " ") for d in disagree):
            print(f"{workload}: every mmtrack tool's median within 1 ± {tol:g} of pyperf's")
    if disagree:
        raise SystemExit("disagree: " + "; ".join(disagree))


if __name__ == "__main__":
    main()
