"""Issue 44's agreement target: does every change of 5% or more in ``est_cycles`` go the way wall-clock time goes?

One project made from the sortedcontainers 2.4.0 sdist with the 10-benchmark asv suite of
``scripts/callgrind_targets.py``, two commits with deliberate edits: commit A makes two operations do extra work
(``bisect_left``, ``irange``), commit B removes that and adds extra work to two others (``__contains__``,
``peekitem``). A -> B then holds two speed-ups and two slowdowns of about 2 times (``--small``: 20-50%).
A second project runs the engine benchmarks of the project's ``examples/`` (``basic``, ``throughput_units``,
``custom_metrics``) on a workload that its package holds: B doubles the CRC block and parses 70 lines instead
of 100 (the matrix size stays, an A/A row).

Both sides are measured A/B on this machine: ``continuous A B --instrument callgrind`` for ``est_cycles`` per op and
``continuous A B`` (asv's wall-clock defaults, both builds in one run) for time. For every benchmark whose
``est_cycles`` moved by 5% or more, the table says both directions and whether they agree.

    PYTHONPATH=$PWD python3 -m scripts.callgrind_agreement SDIST.tar.gz [--small] [--only examples]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from scripts.callgrind_targets import CONF, ROOT, commit, env_for, git, mmtrack, project

THRESHOLD = 0.05  # the target's "change of 5% or more"
# (file, anchor, extra work inserted before the anchor): the first occurrence is the method named.
CONTAINS = ("sortedlist.py", "        _maxes = self._maxes\n\n        if not _maxes:\n            return False\n")
BISECT = ("sortedlist.py", "        _maxes = self._maxes\n\n        if not _maxes:\n            return 0\n\n"
                           "        pos = bisect_left(_maxes, value)")
IRANGE = ("sortedlist.py", "        _maxes = self._maxes\n\n        if not _maxes:\n            return iter(())")
PEEKITEM = ("sorteddict.py", "        key = self._list[index]\n        return key, self[key]")
SLOWER_IN_A = [(BISECT, 40), (IRANGE, 2000)]
SLOWER_IN_B = [(CONTAINS, 40), (PEEKITEM, 60)]
LARGE = "sum(range({k}))"  # k additions in C: about 2 times the op with these k
# --small: a Python loop of k empty turns (--turns, irange 100 times as many): nearer the 5% line
SMALL = "for _ in range({k}): pass"


def small_edits(turns: int) -> tuple[list, list]:
    return [(BISECT, turns), (IRANGE, 100 * turns)], [(CONTAINS, turns), (PEEKITEM, turns)]
# The examples' workload constants, moved into the project's package so that a commit can change them.
EXAMPLES = {"basic.py": "BLOCK = 4096", "throughput_units.py": "LINES = 100", "custom_metrics.py": "N = 24"}
WORKLOAD_A = "BLOCK = 4096\nLINES = 100\nN = 24\n"
WORKLOAD_B = "BLOCK = 8192\nLINES = 70\nN = 24\n"


def edit(repo: Path, edits: list[tuple[tuple[str, str], int]], work: str) -> None:
    """Insert the statement ``work`` with its ``k`` before each anchor."""
    for (name, anchor), k in edits:
        source = repo / "sortedcontainers" / name
        text = source.read_text()
        assert anchor in text, f"{name}: anchor not found"
        source.write_text(text.replace(anchor, f"        {work.format(k=k)}\n{anchor}", 1))


def restore(repo: Path, sdist_repo: Path) -> None:
    for name in ("sortedlist.py", "sorteddict.py"):
        shutil.copy(sdist_repo / "sortedcontainers" / name, repo / "sortedcontainers" / name)


def direction(ratio: float) -> str:
    return "slower" if ratio > 1 else "faster" if ratio < 1 else "same"


def case(row: dict) -> str:
    """``time_contains``, or ``track_parse_csv(16)`` for a parameterised benchmark."""
    params = ", ".join(str(v) for v in (row.get("params") or {}).values())
    return row["benchmark"].rsplit(".", 1)[-1] + (f"({params})" if params else "")


def ratios(repo: Path, env: dict[str, str], a: str, b: str, metric: str, *options: str) -> tuple[dict, float]:
    """B/A per benchmark for ``metric`` from ``continuous A B``, and the seconds it took."""
    proc, took = mmtrack(repo, env, "continuous", a, b, *options, "--format", "json", "--no-save")
    if not proc.stdout.strip().startswith("{"):
        raise SystemExit(f"continuous {' '.join(options)} failed: {proc.stderr.strip()[-500:]}")
    rows = json.loads(proc.stdout)["rows"]
    got = {case(r): r["ratio"] for r in rows if r["metric"]["name"] == metric}
    if not got:
        raise SystemExit(f"no {metric} rows; metrics seen: {sorted({r['metric']['name'] for r in rows})}")
    return got, took


def sortedcontainers_pair(sdist: Path, base: Path, env: dict[str, str], turns: int) -> tuple[Path, str, str]:
    """``turns`` 0: the 2-times edits; else the loop of that many turns."""
    repo = project(sdist, base, env)
    pristine = base / "pristine"
    shutil.copytree(repo / "sortedcontainers", pristine / "sortedcontainers")
    in_a, in_b = small_edits(turns) if turns else (SLOWER_IN_A, SLOWER_IN_B)
    work = SMALL if turns else LARGE
    edit(repo, in_a, work)
    a = commit(repo, env, "A: extra work in bisect_left and irange", 1)
    restore(repo, pristine)
    edit(repo, in_b, work)
    return repo, a, commit(repo, env, "B: that removed; extra work in __contains__ and peekitem", 2)


def examples_pair(base: Path, env: dict[str, str]) -> tuple[Path, str, str]:
    repo = base / "examples-project"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "__init__.py").write_text("")
    for name, constant in EXAMPLES.items():
        text = (ROOT / "examples" / name).read_text()
        assert constant in text, f"examples/{name}: {constant!r} not found"
        name_only = constant.split(" = ")[0]
        (repo / "benchmarks" / f"bench_{name}").write_text(text.replace(constant, f"from workload import {name_only}"))
    (repo / "setup.py").write_text('from setuptools import setup\nsetup(name="workload", version="0", '
                                   'py_modules=["workload"])\n')
    (repo / "asv.conf.json").write_text(json.dumps({**CONF, "project": "workload"}, indent=2))
    (repo / ".gitignore").write_text(".asv/\n.mmtrack/\n__pycache__/\n*.egg-info/\nbuild/\n")
    git(repo, env, "init", "-q", "-b", "main")
    (repo / "workload.py").write_text(WORKLOAD_A)
    a = commit(repo, env, "A: the examples' workload", 1)
    (repo / "workload.py").write_text(WORKLOAD_B)
    return repo, a, commit(repo, env, "B: twice the CRC block, 70 lines of CSV", 2)


def agreement(label: str, repo: Path, env: dict[str, str], a: str, b: str, time_metric: str) -> None:
    print(f"## {label} (load at start {os.getloadavg()[0]:.1f})", flush=True)
    cycles, t1 = ratios(repo, env, a, b, "est_cycles", "--instrument", "callgrind")
    print(f"continuous --instrument callgrind: {t1:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    # No re-runs of undecided benchmarks alone: asv's -b of such a re-run matched no parameterised benchmark here.
    wall, t2 = ratios(repo, env, a, b, time_metric, "--max-rounds", "0")
    print(f"continuous (wall clock): {t2:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    print("| benchmark | est_cycles B/A | wall time B/A | agree |\n|---|---|---|---|")
    agree = disagree = 0
    for name, ratio in sorted(cycles.items()):
        if abs(ratio - 1) < THRESHOLD:
            continue
        timed = wall.get(name)
        same = timed is not None and direction(timed) == direction(ratio)
        agree, disagree = agree + same, disagree + (not same)
        shown = f"{timed:.3f} ({direction(timed)})" if timed is not None else "not measured"
        print(f"| {name} | {ratio:.3f} ({direction(ratio)}) | {shown} | {'yes' if same else 'NO'} |")
    small = {n: round(r, 4) for n, r in sorted(cycles.items()) if abs(r - 1) < THRESHOLD}
    print(f"agree {agree}, disagree {disagree}; under 5% in est_cycles (not judged): {small}")
    print(f"wall time B/A of those: { {n: round(wall[n], 3) for n in small if n in wall} }", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sdist", type=Path)
    parser.add_argument("--time-metric", default="time_per_op", help="the wall-clock metric continuous reports")
    parser.add_argument("--small", action="store_true", help="sortedcontainers edits of 20-50%%, not 2 times")
    parser.add_argument("--turns", type=int, default=4, help="--small's loop turns (4: 20-50%%, 1: 5-40%% here)")
    parser.add_argument("--only", choices=["sortedcontainers", "examples"], help="one project of the two")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="agreement-"))
    env = env_for(base / "home", base / "store.db")
    (base / "home").mkdir(parents=True)
    if args.only != "examples":
        repo, a, b = sortedcontainers_pair(args.sdist, base / "sc", env, args.turns if args.small else 0)
        agreement("sortedcontainers", repo, env, a, b, args.time_metric)
    if args.only != "sortedcontainers":
        repo, a, b = examples_pair(base / "ex", env)
        agreement("examples", repo, env, a, b, args.time_metric)
    print(f"load at end: {os.getloadavg()}")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
