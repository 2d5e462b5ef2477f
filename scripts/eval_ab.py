"""Evaluate same-machine A/B (mmtrack continuous, bisect) on a small real package; prints figures.

A throwaway git repo holds ``tinypkg`` (a setuptools package: three pure-Python
kernels of a few ms) and an asv suite over it: three plain ``time_`` benchmarks
and one engine benchmark with a custom metric. Experiments (each a fresh
``mmtrack continuous`` subprocess, environments cached after the first build):

  aa        two commits with identical code, N runs at the defaults: how many flag a regression
  slow10    one kernel 10% slower: how often it is flagged, and whether anything else is
  slow5     one kernel 5% slower, with --rounds R and --factor F
  asv       wall time of `asv continuous` against `mmtrack continuous` on the same commits
  bisect    64 commits, 10% slowdown at commit 37: culprit found, builds used

``--neighbour`` runs a bursty tenant beside every experiment, as a CI runner's neighbours
are: one process that alternates, at random, 0.3-4 s of memory streaming or of a pure-Python
loop with 0.3-4 s of sleep.

Usage: python -m scripts.eval_ab aa slow10 [--runs 10] [--rounds 4] [--factor 1.1] [--neighbour] [--keep DIR]
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

PKG = '''\
"""A tiny package with three kernels; SCALE_* set how much work each does."""

SCALE_SUM = {sum}
SCALE_SORT = {sort}
SCALE_STR = {str}


def sum_squares(n):
    total = 0
    for i in range(int(n * SCALE_SUM)):
        total += i * i
    return total


def sort_words(n):
    words = [str((i * 7919) % 10007) for i in range(int(n * SCALE_SORT))]
    return sorted(words)


def join_text(n):
    return "-".join(str(i) for i in range(int(n * SCALE_STR)))
'''

SUITE = '''\
import time

import mmtrack
from mmtrack import BenchSampleResult, MetricValue

import tinypkg


class Kernels:
    # TIMER: "wall" keeps asv's default (perf_counter); "cpu" is asv's per-benchmark `timer` attribute
    # set to process time, which a shared, loaded machine disturbs far less.
    timer = {timer}

    def time_sum_squares(self):
        tinypkg.sum_squares(40000)

    def time_sort_words(self):
        tinypkg.sort_words(8000)

    def time_join_text(self):
        tinypkg.join_text(30000)


class Engine:
    @mmtrack.bench_sample(chunk_size=1)
    def track_sum_engine(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            total = tinypkg.sum_squares(20000)
        return BenchSampleResult(chunk_size).push_metric(MetricValue.integer("digits", len(str(total)), "count"))
'''

CONF = {
    "version": 1, "project": "tinypkg", "repo": ".", "branches": ["main"], "environment_type": "existing",
    "benchmark_dir": "benchmarks", "results_dir": ".asv/results", "html_dir": ".asv/html", "env_dir": ".asv/env",
}
SETUP = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n' \
        '[project]\nname = "tinypkg"\nversion = "0.1"\n'
MACHINE = "evalbox"


def git(repo: Path, env: dict, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def base_env(home: Path) -> dict:
    env = dict(os.environ, HOME=str(home), GIT_AUTHOR_NAME="e", GIT_AUTHOR_EMAIL="e@x", GIT_COMMITTER_NAME="e",
               GIT_COMMITTER_EMAIL="e@x", GIT_CONFIG_NOSYSTEM="1", MMTRACK_MACHINE=MACHINE, COLUMNS="200")
    for name in ("MMTRACK_SPOOL", "MMTRACK_COMMIT", "MMTRACK_RUN_ID", "MMTRACK_DB", "PYTHONPATH"):
        env.pop(name, None)
    return env


TIMERS = {"wall": "time.perf_counter", "cpu": "time.process_time"}
TIMER = "wall"


def make_repo(root: Path, env: dict, scales: list[dict]) -> tuple[Path, list[str]]:
    """One commit per entry of ``scales`` (kernel -> work factor); returns the repo and the shas."""
    repo = root / "tinyproj"
    (repo / "tinypkg").mkdir(parents=True)
    (repo / "benchmarks").mkdir()
    (repo / "pyproject.toml").write_text(SETUP)
    (repo / "asv.conf.json").write_text(json.dumps(CONF, indent=2))
    (repo / ".gitignore").write_text(".asv/\n.mmtrack/\n__pycache__/\n*.egg-info/\nbuild/\n")
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench_tiny.py").write_text(SUITE.replace("{timer}", TIMERS[TIMER]))
    git(repo, env, "init", "-q", "-b", "main")
    shas = []
    for i, s in enumerate(scales):
        (repo / "tinypkg" / "__init__.py").write_text(PKG.format(**{"sum": 1.0, "sort": 1.0, "str": 1.0, **s}))
        (repo / "NOTES").write_text(f"commit {i}\n")
        git(repo, env, "add", "-A")
        git(repo, env, "commit", "-q", "-m", f"commit {i}")
        shas.append(git(repo, env, "rev-parse", "HEAD"))
    return repo, shas


def mmtrack(repo: Path, env: dict, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=repo, env=env, capture_output=True, text=True)
    return proc, time.perf_counter() - t


def continuous_runs(repo: Path, env: dict, base: str, head: str, runs: int, extra: list[str]) -> list[dict]:
    out = []
    for i in range(runs):
        proc, wall = mmtrack(repo, env, "continuous", base, head, "--format", "json", "--no-save", *extra)
        if proc.returncode not in (0, 1):
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"continuous failed with exit {proc.returncode}")
        data = json.loads(proc.stdout)
        (repo.parent / f"run{i + 1}.json").write_text(proc.stdout)  # the rounds behind each verdict
        flagged = sorted({(r["benchmark"], r["metric"]["name"]) for r in data["rows"] if r["verdict"] == "regressed"})
        other = sorted({(r["benchmark"], r["metric"]["name"], r["verdict"]) for r in data["rows"]
                        if r["verdict"] not in ("unchanged", "regressed")})
        ratios = {r["benchmark"].rsplit(".", 1)[-1]: round(r["ratio"], 3) for r in data["rows"]
                  if r["metric"]["name"] == "time_per_op" and r["ratio"]}
        changed = sorted({(r["benchmark"], r["metric"]["name"]) for r in data["rows"]
                          if r["verdict"] in ("regressed", "improved")})
        out.append({"flagged": flagged, "changed": changed, "rounds": data["ab"]["rounds"], "other": other, "wall": wall, "measuring": data["ab"]["measuring_seconds"],
                    "build": sum(s["build_seconds"] for s in data["ab"]["sides"].values()), "ratios": ratios})
        out[-1]["load"] = os.getloadavg()[0]
        print(f"  run {i + 1}: wall {wall:.1f} s (measuring {out[-1]['measuring']:.1f} s, builds "
              f"{out[-1]['build']:.1f} s, load {out[-1]['load']:.1f}, {out[-1]['rounds']} rounds) regressed={[b.rsplit('.', 1)[-1] + ':' + m for b, m in flagged]} "
              f"ambiguous={len([o for o in other if o[2] == 'ambiguous'])} ratios={ratios}", flush=True)
    return out


#: The benchmarks that call the slowed kernel: flagging them is right, flagging any other is a false alarm.
SLOWED = ("time_sum_squares", "track_sum_engine")


def summary(name: str, rows: list[dict], target: str | None) -> None:
    hits = sum(1 for r in rows if any(target and target in b for b, _ in r["flagged"])) if target else 0
    slowed = SLOWED if target else ()
    # A false alarm: any other benchmark flagged either way (regressed or improved).
    false = sum(1 for r in rows if any(not any(s in b for s in slowed) for b, _ in r["changed"]))
    walls = [r["wall"] for r in rows]
    loads = [r["load"] for r in rows]
    print(f"{name}: {len(rows)} runs; target {target or '-'} flagged in {hits}/{len(rows)}; runs flagging another "
          f"benchmark (either way): {false}/{len(rows)}; rounds {min(r['rounds'] for r in rows)}-"
          f"{max(r['rounds'] for r in rows)}; wall median {statistics.median(walls):.1f} s; load average "
          f"{min(loads):.1f}-{max(loads):.1f}")


NEIGHBOUR = """
import random, sys, time
import numpy as np
rng = random.Random(int(sys.argv[1]))
block = np.ones(25_000_000)  # 200 MB: streaming it contends for the memory bus and the shared cache
while True:
    end, stream = time.monotonic() + rng.uniform(0.3, 4.0), rng.random() < 0.5
    while time.monotonic() < end:
        if stream:
            block *= 1.0000001
        else:
            sum(i * i for i in range(200_000))
    time.sleep(rng.uniform(0.3, 4.0))
"""


def start_neighbour(seed: int) -> subprocess.Popen:
    """A bursty tenant on the machine (:data:`NEIGHBOUR`) until the experiments end."""
    return subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(seed)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("experiments", nargs="+", choices=["aa", "slow10", "slow5", "asv", "bisect"])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=None, help="--rounds of every run (default: mmtrack's; slow5: 12)")
    ap.add_argument("--factor", type=float, default=None, help="--factor for the slow5 experiment")
    ap.add_argument("--tries", type=int, default=5, help="bisect tries")
    ap.add_argument("--keep", type=Path, help="Keep the repos under this folder.")
    ap.add_argument("--bench", help="-b REGEX for the continuous runs (default: the whole suite)")
    ap.add_argument("--neighbour", action="store_true", help="run a bursty neighbour process beside the experiments")
    ap.add_argument("--timer", choices=sorted(TIMERS), default="wall", help="asv timer of the Kernels benchmarks")
    args = ap.parse_args()
    global TIMER
    TIMER = args.timer
    root = args.keep or Path(tempfile.mkdtemp(prefix="mmtrack-eval-ab-"))
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = base_env(home)
    print(f"python {sys.version.split()[0]}, cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, timer {TIMER}; "
          f"repos in {root}" + ("; with a bursty neighbour" if args.neighbour else ""))
    neighbour = start_neighbour(len(args.experiments)) if args.neighbour else None
    try:
        for exp in args.experiments:
            folder = root / exp
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            if exp in ("aa", "slow10", "slow5"):
                slow = {"aa": 1.0, "slow10": 1.10, "slow5": 1.05}[exp]
                repo, shas = make_repo(folder, env, [{}, {"sum": slow}])
                extra = ["-b", args.bench] if args.bench else []
                if exp == "slow5":
                    extra += ["--rounds", str(args.rounds or 12), "--factor", str(args.factor or 1.03)]
                elif args.rounds:
                    extra += ["--rounds", str(args.rounds)]
                print(f"{exp}: A {shas[0][:8]} B {shas[1][:8]}, kernel sum_squares x{slow}, extra args {extra}")
                rows = continuous_runs(repo, env, shas[0], shas[1], args.runs, extra)
                summary(exp, rows, None if exp == "aa" else "time_sum_squares")
            elif exp == "asv":
                compare_asv(folder, env, args.runs)
            elif exp == "bisect":
                run_bisect(folder, env, args.tries)
    finally:
        if neighbour is not None:
            neighbour.kill()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def _running_env_pth() -> str:
    """An asv install command that appends the running environment's packages to a virtualenv's path, as
    mmtrack's environments do with a .pth file: the suite imports mmtrack (its engine benchmark)."""
    import sysconfig

    import mmtrack

    paths = "\\n".join([sysconfig.get_paths()["purelib"], str(Path(mmtrack.__file__).parents[1])])
    return f"python -c \"import site; open(site.getsitepackages()[0] + '/running-env.pth', 'w').write('{paths}')\""



def asv_virtualenv_config(folder: Path, repo: Path, base: dict) -> Path:
    """``base`` for asv's own virtualenv environments (its builds, its cache), written beside the repository:
    every path in it points into ``folder``."""
    conf = dict(base, environment_type="virtualenv", pythons=[f"{sys.version_info.major}.{sys.version_info.minor}"],
                matrix={"req": {}}, build_command=["python -m pip wheel --no-deps --no-build-isolation "
                                                    "-w {build_cache_dir} {build_dir}"],
                install_command=["in-dir={env_dir} python -mpip install {wheel_file}", _running_env_pth()],
                repo=str(repo), benchmark_dir=str(repo / "benchmarks"), results_dir=str(folder / "asv-results"),
                html_dir=str(folder / "asv-html"), env_dir=str(folder / "asv-env"))
    path = folder / "asv.virtualenv.json"
    path.write_text(json.dumps(conf))
    return path


def compare_asv(folder: Path, env: dict, runs: int) -> None:
    """`asv continuous` (virtualenv envs, its own builds) and `mmtrack continuous`, alternating."""
    repo, shas = make_repo(folder, env, [{}, {"sum": 1.10}])
    conf = asv_virtualenv_config(folder, repo, CONF)
    asv_cmd = [sys.executable, "-m", "asv", "continuous", "--config", str(conf),
               "--machine", MACHINE, "-b", "Kernels", shas[0], shas[1]]
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE], cwd=repo, env=env,
                   capture_output=True)
    for i in range(runs):
        t = time.perf_counter()
        proc = subprocess.run(asv_cmd, cwd=repo, env=env, capture_output=True, text=True)
        asv_wall = time.perf_counter() - t
        # asv's compare table marks a regression with "+" in its first column (a "|" table in newer asv).
        flagged = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().lstrip("|").strip().startswith("+")]
        mm, mm_wall = mmtrack(repo, env, "continuous", shas[0], shas[1], "-b", "Kernels", "--format", "json",
                              "--no-save")
        data = json.loads(mm.stdout) if mm.returncode in (0, 1) else {}
        builds = sum(s["build_seconds"] for s in data.get("ab", {}).get("sides", {}).values())
        print(f"  pair {i + 1}: asv continuous {asv_wall:.1f} s (exit {proc.returncode}, flagged {len(flagged)}) | "
              f"mmtrack continuous {mm_wall:.1f} s (builds {builds:.1f} s, measuring "
              f"{data.get('ab', {}).get('measuring_seconds', float('nan')):.1f} s, exit {mm.returncode}, regressed "
              f"{sorted({r['benchmark'].rsplit('.', 1)[-1] for r in data.get('rows', []) if r['verdict'] == 'regressed'})})",
              flush=True)
        if proc.returncode not in (0, 1):
            print(proc.stdout[-1500:], proc.stderr[-1500:])


def run_bisect(folder: Path, env: dict, tries: int) -> None:
    for t in range(tries):
        sub = folder / f"try{t}"
        sub.mkdir()
        repo, shas = make_repo(sub, env, [{} if i < 37 else {"sum": 1.10} for i in range(64)])
        proc, wall = mmtrack(repo, env, "bisect", shas[0], shas[-1], "-b", "time_sum_squares", "--format", "json")
        if proc.returncode not in (0, 1):
            print(proc.stdout[-2000:], proc.stderr[-2000:])
            continue
        data = json.loads(proc.stdout)
        found = data.get("culprit")
        index = shas.index(found) if found in shas else None
        print(f"  try {t + 1}: culprit index {index} (want 37), builds {data['builds']}, steps {len(data['path'])}, "
              f"ratio {data.get('ratio')}, wall {wall:.1f} s", flush=True)


if __name__ == "__main__":
    main()
