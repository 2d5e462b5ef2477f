"""Issue 44's targets for --instrument callgrind on a real package: sortedcontainers 2.4.0 from its PyPI sdist.

A git project is made from the sdist with a 10-benchmark asv suite of asv ``time_`` benchmarks; a slowdown is
one extra attribute load in ``SortedList.__contains__`` (one benchmark's work grows by about 1%).

- gate: ``mmtrack run --instrument callgrind --fail-on regression`` at the commit before and at the slower
  commit, fresh store per trial: the slower commit must exit 1 naming only that benchmark;
- continuous: ``continuous BEFORE SLOWER --instrument callgrind --fail-on regression``, per trial;
- bisect: 64 commits, the slowdown at commit 37: ``bisect --instrument callgrind`` must name it, counting at
  most 7 commits;
- cost: the suite under ``run --instrument callgrind`` against ``run`` with asv's wall-clock defaults, in turns on
  fresh commits, medians of ``--cost-runs`` each (wall and CPU seconds, with the load);
- methods: the counts of one commit with the instrumentation switched on after start-up (vgdb) against
  instrumented from start-up (Valgrind's start-up simulated too), read back by ``compare --format json``.
- unused edit: ``continuous`` across an edit that no benchmark runs (an unused function): each case's move is
  memory layout's, the band the deterministic tolerance must clear (continuous trials print the same for the
  cases the slowdown does not touch).

    PYTHONPATH=$PWD python3 -m scripts.callgrind_targets SDIST.tar.gz --trials 3 --bisect-trials 1
    PYTHONPATH=$PWD python3 -m scripts.callgrind_targets SDIST.tar.gz --trials 0 --continuous-trials 0 \
        --bisect-trials 0 --cost-runs 3 --methods
(get the sdist with ``pip download --no-binary :all: --no-deps sortedcontainers==2.4.0``)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = '''\
from sortedcontainers import SortedDict, SortedList, SortedSet

DATA = [(i * 7919) % 10007 for i in range(2000)]
PROBES = DATA[::20]


class Lists:
    def setup(self):
        self.sl = SortedList(DATA)

    def time_contains(self):
        sl = self.sl
        for v in PROBES:
            v in sl

    def time_add_remove(self):
        sl = self.sl
        for v in PROBES:
            sl.add(v)
            sl.remove(v)

    def time_bisect(self):
        sl = self.sl
        for v in PROBES:
            sl.bisect_left(v)

    def time_index(self):
        sl = self.sl
        for v in PROBES[:20]:
            sl.index(v)

    def time_irange(self):
        list(self.sl.irange(100, 3000))

    def time_build(self):
        SortedList(DATA)


class Dicts:
    def setup(self):
        self.sd = SortedDict((v, v) for v in DATA)

    def time_getitem(self):
        sd = self.sd
        for v in PROBES:
            sd[v]

    def time_setitem(self):
        sd = SortedDict()
        for v in PROBES:
            sd[v] = v

    def time_peekitem(self):
        sd = self.sd
        for i in range(50):
            sd.peekitem(i)


class Sets:
    def time_union(self):
        SortedSet(DATA[:500]) | SortedSet(DATA[400:900])
'''
CONF = {"version": 1, "project": "sortedcontainers", "repo": ".", "branches": ["main"],
        "environment_type": "existing", "benchmark_dir": "benchmarks", "results_dir": ".asv/results",
        "html_dir": ".asv/html", "env_dir": ".asv/env"}
SLOWER = ("        _maxes = self._maxes\n\n        if not _maxes:\n            return False\n\n        pos = bisect_left(_maxes, value)",
          "        _maxes = self._maxes\n        _maxes = self._maxes\n\n        if not _maxes:\n            return False\n\n"
          "        pos = bisect_left(_maxes, value)")
TARGET = "time_contains"


def env_for(home: Path, db: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), MMTRACK_MACHINE="targets", MMTRACK_DB=f"sqlite:///{db}",
               PYTHONPATH=str(ROOT), ASV_PYTHONPATH=str(ROOT), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return env


def git(repo: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, env: dict[str, str], message: str, day: int) -> str:
    stamp = {"GIT_AUTHOR_DATE": f"@{1767225600 + 3600 * day} +0000", "GIT_COMMITTER_DATE": f"@{1767225600 + 3600 * day} +0000"}
    git(repo, {**env, **stamp}, "add", "-A")
    git(repo, {**env, **stamp}, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, env, "rev-parse", "HEAD")


def project(sdist: Path, where: Path, env: dict[str, str]) -> Path:
    with tarfile.open(sdist) as tar:
        tar.extractall(where, filter="data")
    repo = next(where.glob("sortedcontainers-*"))
    shutil.rmtree(repo / "sortedcontainers.egg-info", ignore_errors=True)
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench_sorted.py").write_text(SUITE)
    (repo / "asv.conf.json").write_text(json.dumps(CONF, indent=2))
    (repo / ".gitignore").write_text(".asv/\n.mmtrack/\n__pycache__/\n*.egg-info/\nbuild/\n")
    git(repo, env, "init", "-q", "-b", "main")
    return repo


def slow_down(repo: Path) -> None:
    source = repo / "sortedcontainers" / "sortedlist.py"
    text = source.read_text()
    assert text.count(SLOWER[0]) >= 1
    source.write_text(text.replace(SLOWER[0], SLOWER[1], 1))


# mmtrack with the worker instrumented from Valgrind's start-up, as before vgdb switched it on late.
FROM_START = ("import sys; from mmtrack.asvbridge.callgrind_pool import CallgrindSession; "
              "CallgrindSession.instrument_late = False; from mmtrack.cli import main; sys.argv[0] = 'mmtrack'; main()")


def mmtrack(repo: Path, env: dict[str, str], *args: str, from_start: bool = False
            ) -> tuple[subprocess.CompletedProcess, float]:
    t = time.monotonic()
    how = ["-c", FROM_START] if from_start else ["-m", "mmtrack"]
    proc = subprocess.run([sys.executable, *how, *args], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=3600)
    return proc, time.monotonic() - t


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def flagged(text: str) -> list[str]:
    line = next((x for x in text.splitlines() if "--fail-on regression" in x), "")
    return sorted(set(re.findall(r"bench_sorted\.\w+\.(\w+)", line)))


def gate_trial(sdist: Path, scratch: Path) -> str:
    env = env_for(scratch / "home", scratch / "store.db")
    (scratch / "home").mkdir(parents=True)
    repo = project(sdist, scratch, env)
    commit(repo, env, "sdist", 1)
    first, t1 = mmtrack(repo, env, "run", "--instrument", "callgrind", "--fail-on", "regression")
    commit(repo, env, "docs only", 2)
    same, _ = mmtrack(repo, env, "run", "--instrument", "callgrind", "--fail-on", "regression")
    slow_down(repo)
    commit(repo, env, "slower contains", 3)
    slower, _ = mmtrack(repo, env, "run", "--instrument", "callgrind", "--fail-on", "regression")
    ratio = re.search(r"time_contains.*instructions.*?×\s*([\d.]+)", slower.stdout)
    return (f"exit codes {first.returncode}/{same.returncode}/{slower.returncode} (want 0/0/1), flagged at the slower "
            f"commit: {flagged(slower.stdout)}, at the unchanged one: {flagged(same.stdout)}; "
            f"contains ratio {ratio.group(1) if ratio else '?'}; first run {t1:.0f} s")


def continuous_trial(repo: Path, env: dict[str, str], before: str, after: str) -> str:
    proc, t = mmtrack(repo, env, "continuous", before, after, "--instrument", "callgrind", "--fail-on", "regression",
                      "--format", "json", "--no-save")
    rows = json.loads(proc.stdout)["rows"] if proc.stdout.strip().startswith("{") else []
    bad = sorted({(r["benchmark"].rsplit(".", 1)[-1], r["metric"]["name"]) for r in rows
                  if r["verdict"] in ("regressed", "improved", "ambiguous")})
    ratio = next((r["ratio"] for r in rows if r["benchmark"].endswith(TARGET) and r["metric"]["name"] == "instructions"),
                 None)
    return (f"exit {proc.returncode} (want 1), flagged {bad}, contains instructions ×{ratio}, "
            f"unchanged cases' largest move {layout_move(rows)}, {t:.0f} s, load {os.getloadavg()[0]:.1f}")


def layout_move(rows: list[dict], target: str | None = TARGET) -> str:
    """The largest per-op instructions move of the cases the edit did not touch: the layout band to clear."""
    moves = [(abs(r["after"]["median"] / r["before"]["median"] - 1), r["benchmark"].rsplit(".", 1)[-1],
              r["after"]["median"] - r["before"]["median"]) for r in rows
             if r["metric"]["name"] == "instructions" and not (target and r["benchmark"].endswith(target))
             and (r["before"] or {}).get("median") and (r["after"] or {}).get("median") is not None]
    if not moves:
        return "?"
    share, case, per_op = max(moves)
    return f"{share:.4%} ({case}, {per_op:+,.1f} instr/op; {len(moves)} cases)"


def bisect_project(sdist: Path, scratch: Path) -> tuple[Path, dict[str, str], list[str]]:
    env = env_for(scratch / "home", scratch / "store.db")
    (scratch / "home").mkdir(parents=True)
    repo = project(sdist, scratch, env)
    shas = [commit(repo, env, "sdist", 0)]
    for i in range(1, 65):  # commits 1..64 after GOOD; the slowdown lands at 37
        if i == 37:
            slow_down(repo)
        (repo / "CHANGES.txt").write_text(f"change {i}\n")
        shas.append(commit(repo, env, f"change {i}", i))
    return repo, env, shas


def cost(sdist: Path, scratch: Path, runs: int) -> None:
    """The 10-benchmark suite under each instrument in turns, each run at a fresh commit (a per-commit CI run)."""
    env = env_for(scratch / "home", scratch / "store.db")
    (scratch / "home").mkdir(parents=True)
    repo = project(sdist, scratch, env)
    commit(repo, env, "sdist", 0)
    took: dict[str, list[tuple[float, float]]] = {"callgrind": [], "wall": []}
    for i in range(runs):
        for name in (("callgrind", "wall") if i % 2 == 0 else ("wall", "callgrind")):
            commit(repo, env, f"run {i} {name}", 2 * i + (name == "wall") + 1)
            load, cpu = os.getloadavg()[0], children_cpu()
            proc, wall = mmtrack(repo, env, "run", *(["--instrument", "callgrind"] if name == "callgrind" else []))
            took[name].append((wall, children_cpu() - cpu))
            print(f"cost run {i + 1} {name}: {wall:.1f} s wall, {took[name][-1][1]:.1f} s CPU, exit {proc.returncode}, "
                  f"load {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
    for name, got in took.items():
        print(f"cost {name}: median {statistics.median(w for w, _ in got):.1f} s wall "
              f"({min(w for w, _ in got):.1f}-{max(w for w, _ in got):.1f}), "
              f"median {statistics.median(c for _, c in got):.1f} s CPU, {len(got)} runs", flush=True)


def methods(sdist: Path, scratch: Path) -> None:
    """One code counted four times at four commits, instrumented from start-up (S) and switched on late (L) in
    turns, S L S L: compare's rows of S against S, L against L, then S against L (the first run in a fresh
    checkout is no reference: it reads sources that later runs find compiled)."""
    env = env_for(scratch / "home", scratch / "store.db")
    (scratch / "home").mkdir(parents=True)
    repo = project(sdist, scratch, env)
    shas = []
    for i, late in enumerate((False, True, False, True)):
        shas.append(commit(repo, env, f"run {i}", i + 1))
        mmtrack(repo, env, "run", "--instrument", "callgrind", from_start=not late)
    for label, a, b in (("S1 vs S2", 0, 2), ("L1 vs L2", 1, 3), ("S2 vs L2", 2, 3), ("S1 vs L1", 0, 1)):
        proc, _ = mmtrack(repo, env, "compare", shas[a], shas[b], "--format", "json")
        rows = [r for r in json.loads(proc.stdout)["rows"] if r["metric"]["section"] == "callgrind"]
        differ = [r for r in rows if r["before"]["median"] != r["after"]["median"]]
        print(f"methods {label}: {len(rows)} callgrind rows (10 cases), {len(differ)} differ", flush=True)
        for r in differ:
            before, after = r["before"]["median"], r["after"]["median"]
            change = f"{before:,.2f} -> {after:,.2f} ({after / before - 1:+.4%})"
            print(f"  {r['benchmark']} {r['metric']['name']}: {change}")


UNUSED = ("\n\ndef _unused_helper(values):\n    total = 0\n    for v in values:\n        total += v * 2\n"
          "    return total\n")


def unused_edit(sdist: Path, scratch: Path) -> str:
    """An edit that changes no benchmark's work: every case's move is the layout's, the band to clear."""
    env = env_for(scratch / "home", scratch / "store.db")
    (scratch / "home").mkdir(parents=True)
    repo = project(sdist, scratch, env)
    before = commit(repo, env, "sdist", 0)
    source = repo / "sortedcontainers" / "sortedlist.py"
    source.write_text(source.read_text() + UNUSED)
    after = commit(repo, env, "unused helper", 1)
    proc, t = mmtrack(repo, env, "continuous", before, after, "--instrument", "callgrind", "--fail-on", "regression",
                      "--format", "json", "--no-save")
    rows = json.loads(proc.stdout)["rows"] if proc.stdout.strip().startswith("{") else []
    every = [r for r in rows if r["metric"]["name"] == "instructions"]
    bad = sorted(r["benchmark"].rsplit(".", 1)[-1] for r in every
                 if r["verdict"] in ("regressed", "improved", "ambiguous"))
    return (f"exit {proc.returncode} (want 0), flagged {bad}, largest move {layout_move(every, target=None)}, "
            f"{t:.0f} s, load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sdist", type=Path)
    parser.add_argument("--trials", type=int, default=10, help="gate trials")
    parser.add_argument("--continuous-trials", type=int, default=10)
    parser.add_argument("--bisect-trials", type=int, default=5)
    parser.add_argument("--cost-runs", type=int, default=0, help="time the suite under each instrument this often")
    parser.add_argument("--methods", action="store_true", help="compare counts of late and start-up instrumentation")
    parser.add_argument("--unused-edit", action="store_true", help="continuous across an edit no benchmark runs")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="targets-"))
    print(f"load at start: {os.getloadavg()}", flush=True)
    for t in range(args.trials):
        print(f"gate trial {t + 1}: {gate_trial(args.sdist, base / f'gate{t}')}", flush=True)
    if args.methods:
        methods(args.sdist, base / "methods")
    if args.unused_edit:
        print(f"unused edit: {unused_edit(args.sdist, base / 'unused')}", flush=True)
    if args.cost_runs:
        cost(args.sdist, base / "cost", args.cost_runs)
    if args.continuous_trials or args.bisect_trials:
        repo, env, shas = bisect_project(args.sdist, base / "bisect")
    for t in range(args.continuous_trials):
        print(f"continuous trial {t + 1}: {continuous_trial(repo, env, shas[36], shas[37])}", flush=True)
    for t in range(args.bisect_trials):
        proc, took = mmtrack(repo, env, "bisect", shas[0], shas[64], "-b", TARGET, "--instrument", "callgrind",
                             "--format", "json")
        found = json.loads(proc.stdout) if proc.returncode == 0 else {}
        counted = proc.stderr.count("counting ")
        print(f"bisect trial {t + 1}: exit {proc.returncode}, culprit is commit 37: "
              f"{found.get('culprit') == shas[37]}, commits counted {counted}, {took:.0f} s"
              + ("" if proc.returncode == 0 else f" ({proc.stderr.strip().splitlines()[-1:]})"), flush=True)
    print(f"load at end: {os.getloadavg()}")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
