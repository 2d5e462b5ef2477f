"""A/B on a small real package: A/A false flags of `mmtrack continuous`, and its wall time beside `asv continuous`.

A throwaway git repo holds sortedcontainers (the installed release's source, Apache 2.0; its LICENSE is
copied beside it) as a setuptools project, with an asv suite of four benchmarks over it. Four commits:

  base      the release as it is
  comment   identical code, one comment added to ``sortedlist.py`` (an A/A pair with base)
  slow      ``SortedList.add`` does a little more work per call (a real slowdown of ``time_add``, about 6-10%)
  slower    twice that extra work (about 12%): a step clearly past the 5% threshold and its A/A-calibrated
            tolerance (6-7%), which judges the hit rate better than ``slow``'s step sitting on it

Experiments (each a fresh subprocess; environments cached after the first build):

  aa N      N runs of ``mmtrack continuous base comment`` at the defaults: runs that flag anything, either way
  peer N    N pairs, alternating: ``asv continuous base STEP`` (virtualenv, its own builds, factor 1.05 by default,
            mmtrack's) and ``mmtrack continuous base STEP`` at the same factor (``--step``: ``slower`` by default,
            or ``slow``); wall times (medians) and how often each flags ``time_add`` and anything else.
            ``--baseline DIR``: a third contender in every
            pair, the mmtrack of another checkout (e.g. ``git archive main``), so that today's code runs side by
            side with the change in one session; each pair rotates the order the contenders run in. ``--warm``: one
            untimed run of each contender first, so that no timed run builds an environment.

  profile   one ``mmtrack continuous base STEP`` on a fresh repo (the builds, the A/A calibration), then one more
            (all cached), each run's progress lines timed, so that the wall splits into start-up and builds, discovery
            and the first round-side, each round-side (with the number of benchmarks still open) and the A/A
            calibration and decision; ``--baseline DIR``: the same for that checkout's mmtrack right after, on the same
            repo (its cold run builds afresh)

  single N  N rounds, rotating the order: ``asv run`` and ``mmtrack run`` of the checked-out ``base`` (one commit,
            the repository's own ``existing`` environment for both, each result saved as the tool saves it); wall and
            CPU medians and their ratio; ``--baseline DIR``: that checkout's ``mmtrack run`` in every round too

  phases N  N rounds of one side's four benchmarks each way: ``asv run`` per round (before), asv's runner from
            this process with a fresh interpreter per benchmark, and with a fork server per round (now)

Usage: python -m scripts.eval_ab_peer aa peer profile phases single [--runs 10] [--peer-runs 3] [--factor 1.05] [--step slower]
       [--baseline DIR] [--warm] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.eval_ab import MACHINE, asv_virtualenv_config, base_env, continuous_runs, git, mmtrack

SUITE = '''\
import random

from sortedcontainers import SortedDict, SortedList


class SortedContainers:
    def setup(self):
        rng = random.Random(0)
        self.values = [rng.random() for _ in range(4000)]
        self.sorted = SortedList(self.values)
        self.mapping = SortedDict(zip(self.values, range(len(self.values))))

    def time_add(self):
        s = SortedList()
        for v in self.values:
            s.add(v)

    def time_contains(self):
        s = self.sorted
        for v in self.values:
            v in s

    def time_bisect(self):
        s = self.sorted
        for v in self.values:
            s.bisect_left(v)

    def time_dict_getitem(self):
        d = self.mapping
        for v in self.values:
            d[v]
'''

SETUP = ('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
         '[project]\nname = "sortedcontainers"\nversion = "2.4.0"\n\n'
         '[tool.setuptools]\npackages = ["sortedcontainers"]\n')
CONF = {"version": 1, "project": "sortedcontainers", "repo": ".", "branches": ["main"],
        "environment_type": "existing", "benchmark_dir": "benchmarks", "results_dir": ".asv/results",
        "html_dir": ".asv/html", "env_dir": ".asv/env"}
#: The slowdown: three more attribute reads and two calls per ``add``, as a careless refactor adds (about
#: 10% of ``time_add``, timed in one process).
ADD_LINE = "        _lists = self._lists\n"
SLOWER = "        _lists = self._lists\n        len(self._maxes)\n        len(self._lists)\n        self._len\n"
#: Twice the slowdown's extra work: about 12.5% of ``time_add`` in one process (6% for ``SLOWER``), 6 December 2026.
SLOWER_STILL = SLOWER + "        len(self._maxes)\n        len(self._lists)\n        self._load\n"


def source_of_release() -> Path:
    import sortedcontainers

    return Path(sortedcontainers.__file__).parent


#: ``--large``: a case of about 70 ms beside the 5 ms ``time_add`` (issue 61's networkx pair was 5 and 70 ms).
LARGE_CASE = '''

class SortedContainersLarge:
    def setup(self):
        rng = random.Random(1)
        self.values = [rng.random() for _ in range(50000)]

    def time_add_large(self):
        s = SortedList()
        for v in self.values:
            s.add(v)
'''


def make_repo(root: Path, env: dict, large: bool = False) -> tuple[Path, dict[str, str]]:
    """The repo and the shas of ``base``, ``comment``, ``slow`` and ``slower``."""
    repo = root / "sc"
    shutil.copytree(source_of_release(), repo / "sortedcontainers", ignore=shutil.ignore_patterns("__pycache__"))
    licence = next(source_of_release().parent.glob("sortedcontainers-*.dist-info/LICENSE"), None)
    if licence:
        shutil.copyfile(licence, repo / "LICENSE")
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench_sc.py").write_text(SUITE + (LARGE_CASE if large else ""))
    (repo / "pyproject.toml").write_text(SETUP)
    (repo / "asv.conf.json").write_text(json.dumps(CONF, indent=2))
    (repo / ".gitignore").write_text(".asv/\n.mmtrack/\n__pycache__/\n*.egg-info/\nbuild/\n")
    git(repo, env, "init", "-q", "-b", "main")
    shas = {}
    sortedlist = repo / "sortedcontainers" / "sortedlist.py"
    original = sortedlist.read_text()
    assert original.count(ADD_LINE) >= 1, "the release's SortedList.add changed: pick another line"
    for name, text in [("base", original), ("comment", "# identical code: only this comment differs\n" + original),
                       ("slow", original.replace(ADD_LINE, SLOWER, 1)),
                       ("slower", original.replace(ADD_LINE, SLOWER_STILL, 1))]:
        sortedlist.write_text(text)
        git(repo, env, "add", "-A")
        git(repo, env, "commit", "-q", "-m", name)
        shas[name] = git(repo, env, "rev-parse", "HEAD")
    return repo, shas


def asv_flags(stdout: str) -> list[str]:
    """The rows asv's compare table marks changed: "+" (slower) or "-" (faster) in the first column."""
    marked = []
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in ("+", "-"):
            marked.append(cells[0] + " " + next((c for c in reversed(cells) if c), ""))
    return marked


def peer(folder: Path, env: dict, repo: Path, shas: dict[str, str], runs: int, factor: float,
         baseline: Path | None = None, warm: bool = False) -> None:
    conf = asv_virtualenv_config(folder, repo, CONF)
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE], cwd=repo, env=env,
                   capture_output=True)
    asv_cmd = [sys.executable, "-m", "asv", "continuous", "--config", str(conf), "--machine", MACHINE,
               "--factor", str(factor), shas["base"], shas["step"]]
    contenders = {"asv": lambda: run_asv(asv_cmd, repo, env), "mmtrack": lambda: run_mmtrack(repo, env, shas, factor)}
    if baseline is not None:
        contenders["baseline"] = lambda: run_mmtrack(repo, {**env, "PYTHONPATH": str(baseline)}, shas, factor)
    rows: dict[str, list[dict]] = {name: [] for name in contenders}
    names = list(contenders)
    if warm:  # builds (and the A/A of a flagged benchmark) out of the timed pairs
        for name in names:
            print(f"  warm-up: {name} {contenders[name]()['wall']:.1f} s (not counted)", flush=True)
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            rows[name].append(contenders[name]())
            got = rows[name][-1]
            print(f"  pair {i + 1}: {name} {got['wall']:.1f} s, cpu {got['cpu']:.1f} s ({got['what']}) | load "
                  f"{got['load']:.1f}", flush=True)
    for name, got in rows.items():
        print(f"peer {name}: wall median {statistics.median(r['wall'] for r in got):.1f} s, cpu median "
              f"{statistics.median(r['cpu'] for r in got):.1f} s "
              f"({', '.join(format(r['wall'], '.1f') for r in got)}); time_add flagged {sum(r['hit'] for r in got)}/"
              f"{len(got)}; runs flagging another benchmark {sum(bool(r['other']) for r in got)}/{len(got)}; load "
              f"{min(r['load'] for r in got):.1f}-{max(r['load'] for r in got):.1f}")
    for name in names[1:]:
        ratio = statistics.median(r["wall"] for r in rows[name]) / statistics.median(r["wall"] for r in rows["asv"])
        cpu = statistics.median(r["cpu"] for r in rows[name]) / statistics.median(r["cpu"] for r in rows["asv"])
        print(f"peer: {name} / asv, medians: wall {ratio:.2f}, cpu {cpu:.2f}")


def single(env: dict, repo: Path, shas: dict[str, str], runs: int, baseline: Path | None = None) -> None:
    """``mmtrack run`` beside ``asv run`` on one commit, rotating which goes first (see the module); ``baseline``: the
    mmtrack of that checkout too, in every round."""
    git(repo, env, "checkout", "-q", shas["base"])
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE], cwd=repo, env=env,
                   capture_output=True)
    mmtrack_run = [sys.executable, "-m", "mmtrack", "run", "--machine", MACHINE]
    contenders = {
        "asv": ([sys.executable, "-m", "asv", "run", "--machine", MACHINE, "--environment", "existing",
                 "--set-commit-hash", shas["base"]], env),
        "mmtrack": (mmtrack_run, env),
    }
    if baseline is not None:
        contenders["baseline"] = (mmtrack_run, {**env, "PYTHONPATH": str(baseline)})
    rows: dict[str, list[dict]] = {name: [] for name in contenders}
    names = list(contenders)
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            cmd, cmd_env = contenders[name]
            t, cpu = time.perf_counter(), children_cpu()
            proc = subprocess.run(cmd, cwd=repo, env=cmd_env, capture_output=True, text=True)
            got = {"wall": time.perf_counter() - t, "cpu": children_cpu() - cpu, "load": os.getloadavg()[0]}
            rows[name].append(got)
            print(f"  run {i + 1}: {name} {got['wall']:.2f} s, cpu {got['cpu']:.2f} s, exit {proc.returncode} | "
                  f"load {got['load']:.1f}", flush=True)
            if proc.returncode not in (0, 1):
                print(proc.stdout[-1500:], proc.stderr[-1500:], file=sys.stderr)
    med = {name: {k: statistics.median(r[k] for r in got) for k in ("wall", "cpu")} for name, got in rows.items()}
    for name, m in med.items():
        loads = [r["load"] for r in rows[name]]
        print(f"single {name}: wall median {m['wall']:.2f} s, cpu median {m['cpu']:.2f} s; load "
              f"{min(loads):.1f}-{max(loads):.1f}")
    for name in names[1:]:
        print(f"single: {name} / asv, medians: wall {med[name]['wall'] / med['asv']['wall']:.2f}, "
              f"cpu {med[name]['cpu'] / med['asv']['cpu']:.2f}")


def children_cpu() -> float:
    """CPU seconds of this process's finished children (and theirs): a run's cost where the wall is the load's."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_asv(cmd: list[str], repo: Path, env: dict) -> dict:
    t, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    flags = asv_flags(proc.stdout)
    return {"wall": wall, "cpu": children_cpu() - cpu, "hit": any(f.startswith("+") and "time_add" in f for f in flags),
            "other": [f for f in flags if "time_add" not in f], "load": os.getloadavg()[0],
            "what": f"exit {proc.returncode}, flags {flags}"}


def run_mmtrack(repo: Path, env: dict, shas: dict[str, str], factor: float) -> dict:
    cpu = children_cpu()
    mm, wall = mmtrack(repo, env, "continuous", shas["base"], shas["step"], "--factor", str(factor),
                       "--format", "json", "--no-save")
    data = json.loads(mm.stdout) if mm.returncode in (0, 1) else {"rows": [], "ab": {}}
    changed = [(r["benchmark"].rsplit(".", 1)[-1], r["verdict"], round(r["ratio"] or 0, 3)) for r in data["rows"]
               if r["verdict"] in ("regressed", "improved")]
    add = next((r for r in data["rows"] if r["benchmark"].endswith("time_add")), None)
    if add and add["verdict"] != "regressed":  # a miss: what the slowed benchmark's row said
        changed.append(("time_add", add["verdict"], round(add["ratio"] or 0, 3), add.get("note", "")))
    return {"wall": wall, "cpu": children_cpu() - cpu,
            "hit": any(c[0] == "time_add" and c[1] == "regressed" for c in changed),
            "other": [c for c in changed if not c[0].startswith("time_add")], "rounds": data["ab"].get("rounds"),
            "load": os.getloadavg()[0],
            "what": f"exit {mm.returncode}, {data['ab'].get('rounds')} rounds, flags {changed}"}


def profile(env: dict, repo: Path, shas: dict[str, str], factor: float) -> None:
    """Where ``mmtrack continuous`` runs' wall goes, from their own progress lines (see the module): a cold run (no
    environment built, no A/A ratio kept), then a warm one."""
    args = [sys.executable, "-m", "mmtrack", "continuous", shas["base"], shas["step"], "--factor", str(factor),
            "--no-save", "--format", "json"]
    shutil.rmtree(repo / ".mmtrack", ignore_errors=True)
    for kind in ("cold: both builds, the A/A calibration of a flag", "warm: all cached"):
        print(f" {kind}", flush=True)
        timed_run(args, repo, env)


def timed_run(args: list[str], repo: Path, env: dict) -> None:
    t = time.perf_counter()
    proc = subprocess.Popen(args, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marks = [(time.perf_counter() - t, line.strip()) for line in proc.stderr]
    out = proc.stdout.read()
    proc.wait()
    wall = time.perf_counter() - t
    data = json.loads(out) if proc.returncode in (0, 1) else {"rows": [], "ab": {}}
    open_now, last = 4, (0.0, "start: mmtrack's import, git, the plan")
    for at, line in [*marks, (wall, "end")]:
        what = last[1] + (f" ({open_now} benchmarks)" if last[1].startswith("round ") else "")
        print(f"  {last[0]:6.2f} s +{at - last[0]:5.2f} s  {what}", flush=True)
        if "undecided after" in line or "benchmarks flagged" in line:
            open_now = int(line.split()[0])
        last = (at, line)
    flags = [(r["benchmark"].rsplit(".", 1)[-1], r["verdict"], round(r["ratio"] or 0, 3)) for r in data["rows"]
             if r["verdict"] != "unchanged"]
    print(f"profile: wall {wall:.1f} s, {data['ab'].get('rounds')} rounds, exit {proc.returncode}, not unchanged "
          f"{flags}; load {os.getloadavg()[0]:.1f}", flush=True)


def asv_run_round(plan, side, folder: Path):
    """One round of one side as every round ran before: an ``asv run`` of its own."""
    from mmtrack.ab import interleave
    from mmtrack.asvbridge import asvrun

    prepared = interleave.prepared_for(plan, side, folder)
    asvrun.ensure_machine(prepared)
    return interleave._run_asv_process(plan, side, prepared)


def phases(env: dict, repo: Path, shas: dict[str, str], runs: int) -> None:
    """Where a round of one side goes: the base's four benchmarks, one round at a time, by ``asv run`` (before) and
    by asv's runner from this process, each benchmark in a fresh interpreter (spawn) or a fork of the round's fork
    server (now), in rotating order; per round the wall time, the launch to the first benchmark's start and asv's
    own duration of each benchmark. The suite's one discovery is timed apart."""
    from dataclasses import replace

    from asv.results import Results

    from mmtrack.ab import interleave

    os.environ.update(env)  # the mmtrack under test runs in this process
    plan, top = interleave.make_plan(repo, None, MACHINE, None, 1)
    side = interleave.build_side(plan, top, shas["base"], "A")
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        interleave.discovered(plan, side)
        print(f"phases: one discovery of the suite {time.perf_counter() - t:.2f} s", flush=True)
        ways = {"asv run": lambda f: asv_run_round(plan, side, f),
                "in process, spawn": lambda f: interleave.run_once(
                    replace(plan, asv_args=("--launch-method", "spawn")), side, f),
                "in process, fork server": lambda f: interleave.run_once(plan, side, f)}
        got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
        names = list(ways)
        for i in range(runs):
            for name in names[i % len(names):] + names[:i % len(names)]:
                start, t = time.time(), time.perf_counter()
                collected = ways[name](Path(tmp) / f"{i}-{len(got[name])}-{name.replace(' ', '_')}")
                wall = time.perf_counter() - t
                res = Results.load(str(collected.results_file))
                first = min(res.started_at.values()) / 1000 - start
                per = statistics.mean(res.duration.values())
                got[name].append((wall, first, per))
                # What half the window would have read: the best of each benchmark's first half of samples.
                half = [min(c.samples[:len(c.samples) // 2]) / min(c.samples) for c in collected.cases
                        if len(c.samples) >= 4]
                print(f"  round {i + 1}: {name}: wall {wall:.2f} s, first benchmark starts after {first:.2f} s, "
                      f"{per:.2f} s a benchmark; best of the first half over the best: "
                      f"{', '.join(format(h, '.3f') for h in half)} | load {os.getloadavg()[0]:.1f}", flush=True)
    for name, rows in got.items():
        print(f"phases {name}: medians over {len(rows)}: wall {statistics.median(r[0] for r in rows):.2f} s, launch to "
              f"first benchmark {statistics.median(r[1] for r in rows):.2f} s, "
              f"{statistics.median(r[2] for r in rows):.2f} s a benchmark", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("experiments", nargs="+", choices=["aa", "peer", "profile", "phases", "single"])
    ap.add_argument("--runs", type=int, default=10, help="aa: A/A runs; single: rounds; phases: rounds")
    ap.add_argument("--peer-runs", type=int, default=3, help="asv / mmtrack pairs")
    ap.add_argument("--factor", type=float, default=1.05,
                    help="factor of both tools in the peer experiment")
    ap.add_argument("--step", choices=["slower", "slow"], default="slower",
                    help="peer, profile: the slowed commit (slower: about 12%%; slow: about 6-10%%)")
    ap.add_argument("--baseline", type=Path, help="peer, single: also run the mmtrack of this checkout in every pair")
    ap.add_argument("--warm", action="store_true", help="peer: one untimed run of each contender first (the builds)")
    ap.add_argument("--large", action="store_true", help="add a case of about 70 ms (time_add_large) to the suite")
    ap.add_argument("--keep", type=Path, help="keep the repo and each run's JSON under this folder")
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="mmtrack-eval-peer-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    # The mmtrack under test is this checkout's, whatever is installed.
    env = {**base_env(root / "home"), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    repo, shas = make_repo(root, env, args.large)
    shas["step"] = shas[args.step]
    print(f"python {sys.version.split()[0]}, cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; sortedcontainers "
          f"repo in {repo}: base {shas['base'][:8]}, comment {shas['comment'][:8]}, {args.step} {shas['step'][:8]}",
          flush=True)
    try:
        for exp in args.experiments:
            if exp == "aa":
                got = continuous_runs(repo, env, shas["base"], shas["comment"], args.runs, [])
                flagged = sum(bool(r["changed"]) for r in got)
                print(f"aa: {len(got)} runs; runs flagging any benchmark either way: {flagged}/{len(got)}; rounds "
                      f"{min(r['rounds'] for r in got)}-{max(r['rounds'] for r in got)}; wall median "
                      f"{statistics.median(r['wall'] for r in got):.1f} s; load "
                      f"{min(r['load'] for r in got):.1f}-{max(r['load'] for r in got):.1f}", flush=True)
            elif exp == "single":
                single(env, repo, shas, args.runs, args.baseline)
            elif exp == "phases":
                phases(env, repo, shas, args.runs)
            elif exp == "profile":
                for who, checkout in (("this checkout", None), ("baseline", args.baseline)):
                    if who == "this checkout" or checkout is not None:
                        print(f"profile of {who}:", flush=True)
                        profile({**env, "PYTHONPATH": str(checkout)} if checkout else env, repo, shas, args.factor)
            else:
                peer(root, env, repo, shas, args.peer_runs, args.factor, args.baseline, args.warm)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
