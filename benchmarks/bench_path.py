"""Benchmark of the whole path from asv results to published pages, against ``asv publish``.

Run as a script (each step takes seconds to minutes, which does not fit the engine's
calibrate/warm-up/many-samples model)::

    python3 benchmarks/bench_path.py                    # 100 benchmarks x 1,000 commits x 5 metrics
    python3 benchmarks/bench_path.py --quick            # 10 x 60 x 5, a smoke run
    python3 benchmarks/bench_path.py --baseline DIR     # also time the cold path of another mmtrack source tree
    TMPDIR=/var/tmp python3 benchmarks/bench_path.py --no-asv --settle 65 --baseline DIR  # nightly update, side by side

One asv project (results in asv's format version 2 with samples, benchmarks.json, a real
git repository) holds the history but its last commit. Every step is the real CLI in a
fresh process, timed from outside:

* **cold**: ``mmtrack import-asv``, then ``mmtrack detect``, then ``mmtrack publish`` into
  an empty folder, and ``mmtrack update`` into an empty store and site (the three in one process);
  beside them, ``asv publish`` on the same results (asv keeps one number per
  benchmark: each (benchmark, metric) pair is one asv benchmark, the same values);
* **warm**: the last commit's results file lands, then ``mmtrack update`` (import, detect
  on the touched series, republish);
* **nothing new**: ``mmtrack publish`` and ``mmtrack update`` again, ``--noop-repeat`` times each (medians);
* with ``--baseline DIR``: the cold path of that source tree (e.g. ``git archive`` of an
  earlier commit) into its own store and site, in the same run, for results/s and the ratio side by side; and
  the warm update of that tree, alternating with this one's, each on a site its own code published (a
  nightly's site is its own code's: a site of other analysis code is rebuilt whole).

Cold steps and ``asv publish`` alternate ``--repeat`` times; medians are reported, and the
ratios the issue asks for are printed at the end. The children cache their bytecode, as an installed
package does (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment). Nothing runs at import.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


CPU: dict[str, float] = {}  # label -> CPU seconds (user + sys) of the child: wall time on a loaded machine lies


def _run(cmd: list[str], env: dict[str, str], cwd: Path, label: str = "") -> tuple[float, str]:
    """(wall seconds, stdout) of one command; stops the benchmark when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if label:
        CPU.setdefault(label, 0.0)
        CPU[label] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):  # 1: detect/import found something to report, still done
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return secs, proc.stdout


def _time_asv_publish(skip: bool, conf: Path, env: dict[str, str], work: Path, cold: dict[str, list[float]],
                      cpu: dict[str, list[float]]) -> float:
    """``asv publish`` of the history, its wall and CPU seconds added to ``cold`` and ``cpu``: the wall seconds (NaN
    with ``skip``)."""
    if skip:
        return math.nan
    shutil.rmtree(work / "asv" / "html", ignore_errors=True)
    secs, _ = _run([sys.executable, "-m", "asv", "publish", "--config", str(conf), "--no-pull"], env, work / "asv",
                   "asv")
    cold["asv"].append(secs)
    cpu["asv"].append(CPU["asv"])
    return secs


def _warm_rounds(codes: dict[str, tuple[dict[str, str], Path]], repeat: int, update: list[str], work: Path,
                 fresh: Any, settle: float = 0.0) -> tuple[dict[str, list[tuple[float, float, float]]], str]:
    """Each code's warm update ``repeat`` times, the codes alternating (both see the same load), each from ``fresh``
    copies of its own site, ``settle`` seconds after the copy: (wall s, CPU s, load) per round by label, and the
    output of this tree's last round."""
    rounds: dict[str, list[tuple[float, float, float]]] = {k: [] for k in codes}
    out_warm = ""
    for _ in range(repeat):
        for label, (code_env, before_site) in codes.items():
            fresh(before_site)
            time.sleep(settle)
            load = os.getloadavg()[0]
            t_round, out = _run(update, code_env, work, label)
            out_warm = out if label == "warm" else out_warm
            rounds[label].append((t_round, CPU[label], load))
    return rounds, out_warm


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--benchmarks", type=int, default=100)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1, help="cold runs (and asv publish runs), alternated")
    ap.add_argument("--warm-repeat", type=int, default=5, help="warm updates, each on a fresh copy (median reported)")
    ap.add_argument("--noop-repeat", type=int, default=5, help="publishes and updates with nothing new (medians)")
    ap.add_argument("--quick", action="store_true", help="10 x 60 x 5")
    ap.add_argument("--baseline", type=Path, help="another mmtrack source tree whose cold path is timed beside")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--no-asv", action="store_true", help="leave asv publish out (for the warm update's figures)")
    ap.add_argument("--settle", type=float, default=0.0, metavar="S",
                    help="wait S seconds between a warm round's fresh copy of the site and its update (65: an ext4"
                         " without a journal skips inodes freed in the last minute when it creates a file, so removing"
                         " the last round's site slowed the page writes; docs/design/archive/nightly-update-profile.md)")
    args = ap.parse_args(argv)
    if args.quick:
        args.benchmarks, args.commits = 10, 60
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_publish import _git_history
    from mmtrack.publish import SiteConfig
    from benchmarks.synthetic_history import synthetic_commits, synthetic_model, write_asv_project, write_asv_results

    work = Path(tempfile.mkdtemp(prefix="mmtrack-bench-path-"))
    home = work / "home"  # no user state: asv and mmtrack see an empty HOME
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("MMTRACK_DB", None)
    # An installed mmtrack runs from cached bytecode (pip compiles it): a child that compiles every module each
    # time (PYTHONDONTWRITEBYTECODE set) would time the compiler, about 0.1 s of CPU per command here.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    mm = [sys.executable, "-m", "mmtrack"]
    try:
        commits = synthetic_commits(args.commits, seed=1)
        shas = _git_history(work / "asv" / "repo", commits)
        commits = [dataclasses.replace(c, sha=s) for c, s in zip(commits, shas)]
        model = synthetic_model(args.benchmarks, args.commits, args.metrics, seed=1, commits=commits,
                                config=SiteConfig(title="bench"))
        conf = write_asv_project(work / "asv", model, commits=commits[:-1])  # every commit but the last
        results = work / "asv" / "results"
        n_results = sum(len(v) for v in model.series.values()) - len(model.series)
        print(f"history: {args.benchmarks} benchmarks x {args.metrics} metrics x {args.commits - 1} commits"
              f" = {n_results:,} results in {len(list(results.rglob('*.json'))) - 2} files")

        cold: dict[str, list[float]] = {"import": [], "detect": [], "publish": [], "path": [], "asv": [],
                                        "baseline_import": [], "baseline_path": [], "update": []}
        cpu: dict[str, list[float]] = {k: [] for k in cold}
        loads: list[float] = []  # the 1-minute load average after each cold run: the machine is shared
        for r in range(args.repeat):
            asv_s = _time_asv_publish(args.no_asv, conf, env, work, cold, cpu)
            url = f"sqlite:///{work / f'store{r}.db'}"
            site = work / f"site{r}"
            t_imp, _ = _run([*mm, "import-asv", str(results), "--db", url], env, work, "import")
            t_det, _ = _run([*mm, "detect", "--db", url, "--format", "json"], env, work, "detect")
            t_pub, _ = _run([*mm, "publish", "-o", str(site), "--db", url, "--no-progress", "--title", "bench"],
                            env, work, "publish")
            for k in ("import", "detect", "publish"):
                cpu[k].append(CPU[k])
            cpu["path"].append(CPU["import"] + CPU["detect"] + CPU["publish"])
            cold["import"].append(t_imp)
            cold["detect"].append(t_det)
            cold["publish"].append(t_pub)
            cold["path"].append(t_imp + t_det + t_pub)
            # The cold path: one `update` into an empty store and site.
            t_upd, _ = _run([*mm, "update", str(results), "-o", str(work / f"update-site{r}"), "--db",
                             f"sqlite:///{work / f'update{r}.db'}", "--title", "bench"], env, work, "update")
            cold["update"].append(t_upd)
            cpu["update"].append(CPU["update"])
            if args.baseline:
                base_env = {**env, "PYTHONPATH": str(args.baseline.resolve())}
                base_url = f"sqlite:///{work / f'base{r}.db'}"
                secs, _ = _run([*mm, "import-asv", str(results), "--db", base_url], base_env, work, "baseline_import")
                rest = [_run([*mm, "detect", "--db", base_url, "--format", "json"], base_env, work, "baseline_detect"),
                        _run([*mm, "publish", "-o", str(work / f"base-site{r}"), "--db", base_url, "--no-progress",
                              "--title", "bench"], base_env, work, "baseline_publish")]
                cold["baseline_import"].append(secs)
                cold["baseline_path"].append(secs + sum(t for t, _ in rest))
                cpu["baseline_import"].append(CPU["baseline_import"])
                cpu["baseline_path"].append(CPU["baseline_import"] + CPU["baseline_detect"] + CPU["baseline_publish"])
            ratio = (f" (ratio {cold['path'][-1] / asv_s:.2f}, CPU {cpu['path'][-1]:.1f} / {cpu['asv'][-1]:.1f} s ="
                     f" {cpu['path'][-1] / cpu['asv'][-1]:.2f})" if not args.no_asv else "")
            print(f"  cold run {r + 1}: asv publish {asv_s:.1f} s; mmtrack import {t_imp:.1f} s +"
                  f" detect {t_det:.1f} s + publish {t_pub:.1f} s = {cold['path'][-1]:.1f} s{ratio};"
                  f" mmtrack update into an empty store {t_upd:.1f} s [CPU {cpu['update'][-1]:.1f}]"
                  + (f"; baseline import {cold['baseline_import'][-1]:.1f} s, path {cold['baseline_path'][-1]:.1f} s"
                     if args.baseline else "") + f"; load {os.getloadavg()[0]:.1f}")
            loads.append(os.getloadavg()[0])

        # Warm: the last commit lands in the results folder of the first cold run's store and site.
        url, site = f"sqlite:///{work / 'store0.db'}", work / "site0"
        update = [*mm, "update", str(results), "-o", str(site), "--db", url, "--title", "bench"]
        noop_publish = [(*_run([*mm, "publish", "-o", str(site), "--db", url, "--no-progress", "--title", "bench"],
                               env, work, "noop_publish"), CPU["noop_publish"], os.getloadavg()[0])
                        for _ in range(args.noop_repeat)]
        t_noop_pub, out_noop_pub = statistics.median(w for w, _, _, _ in noop_publish), noop_publish[-1][1]
        CPU["noop_publish"] = statistics.median(c for _, _, c, _ in noop_publish)
        # Each warm round updates a fresh copy of the store and site as they stood before the commit landed.
        def copy_store(src: str, dst: str) -> None:  # with SQLite's side files, if a process left any
            for suffix in ("", "-wal", "-shm"):
                (work / f"{dst}{suffix}").unlink(missing_ok=True)
                if (work / f"{src}{suffix}").exists():
                    shutil.copyfile(work / f"{src}{suffix}", work / f"{dst}{suffix}")

        copy_store("store0.db", "before.db")
        shutil.copytree(site, work / "site-before", symlinks=True)
        codes = {}
        if args.baseline:
            base_env = {**env, "PYTHONPATH": str(args.baseline.resolve())}
            shutil.copytree(site, work / "site-before-base", symlinks=True)
            copy_store("before.db", "store0.db")
            _run([*mm, "publish", "-o", str(work / "site-before-base"), "--db", url, "--no-progress", "--title",
                  "bench"], base_env, work)
            codes["baseline_warm"] = (base_env, work / "site-before-base")
        codes["warm"] = (env, work / "site-before")  # last in each round: "nothing new" then updates its own site
        write_asv_results(results, model, commits=[commits[-1]])

        def fresh(before_site: Path) -> None:  # the store and site as they stood before the commit landed
            copy_store("before.db", "store0.db")
            shutil.rmtree(site)
            shutil.copytree(before_site, site, symlinks=True)

        rounds, out_warm = _warm_rounds(codes, args.warm_repeat, update, work, fresh, args.settle)
        for label, runs in rounds.items():
            CPU[label] = statistics.median(c for _, c, _ in runs)
        warm = [w for w, _, _ in rounds["warm"]]
        t_warm = statistics.median(warm)
        _run(update, env, work)  # the commit's results are in now: what follows has nothing new
        noop_update = [(_run(update, env, work, "noop_update")[0], CPU["noop_update"], os.getloadavg()[0])
                       for _ in range(args.noop_repeat)]
        t_noop_upd = statistics.median(w for w, _, _ in noop_update)
        CPU["noop_update"] = statistics.median(c for _, c, _ in noop_update)
        t_start, _ = _run([*mm, "--help"], env, work, "start")  # what a process start and the CLI cost here
        print(f"  warm, one new commit: mmtrack update {', '.join(f'{w:.2f}' for w in warm)} s (median {t_warm:.2f} s)"
              "\n    " + out_warm.strip().replace("\n", "\n    "))
        print(f"  nothing new: mmtrack publish {t_noop_pub:.2f} s ({out_noop_pub.splitlines()[0][:120]}...),"
              f" mmtrack update {t_noop_upd:.2f} s")

        med = statistics.median
        fig = {
            "benchmarks": args.benchmarks, "commits": args.commits - 1, "metrics": args.metrics,
            "results": n_results, "repeat": args.repeat,
            **{f"cold_{k}_s": med(v) for k, v in cold.items() if v},
            "cold_runs_s": cold, "cold_runs_cpu_s": cpu, "load_after_cold_runs": loads,
            "one_new_commit_update_s": t_warm, "one_new_commit_update_runs_s": warm, "nothing_new_publish_s": t_noop_pub, "nothing_new_update_s": t_noop_upd,
            "import_results_per_s": n_results / med(cold["import"]),
            "cpu_s": {**{f"cold_{k}": med(v) for k, v in cpu.items() if v},
                      **{k: CPU[k] for k in ("warm", "noop_publish", "noop_update", "start", *rounds)}},
            "one_new_commit_update_rounds": rounds,
            "nothing_new_runs": {"publish": [(w, c, ld) for w, _, c, ld in noop_publish], "update": noop_update},
            "cli_start_s": t_start,
        }
        if cold["baseline_import"]:
            fig["baseline_import_results_per_s"] = n_results / med(cold["baseline_import"])
        c = fig["cpu_s"]
        print()
        print(f"(wall seconds; CPU seconds of the child in brackets. `mmtrack --help` alone: {t_start:.2f} s"
              f" [{c['start']:.2f}])")
        fig.setdefault("cold_asv_s", math.nan)  # --no-asv
        c.setdefault("cold_asv", math.nan)
        print(f"cold path (import + detect + publish): {fig['cold_path_s']:.1f} s;"
              f" asv publish: {fig['cold_asv_s']:.1f} s;"
              f" ratio {fig['cold_path_s'] / fig['cold_asv_s']:.2f} (target <= 0.33)"
              f" [CPU {c['cold_path']:.1f} vs {c['cold_asv']:.1f}: {c['cold_path'] / c['cold_asv']:.2f}]")
        print(f"cold path as one mmtrack update into an empty store and site: {fig['cold_update_s']:.1f} s;"
              f" ratio to asv publish {fig['cold_update_s'] / fig['cold_asv_s']:.2f} (target <= 0.33)"
              f" [CPU {c['cold_update']:.1f} vs {c['cold_asv']:.1f}: {c['cold_update'] / c['cold_asv']:.2f}]")
        print(f"  of which import {fig['cold_import_s']:.1f} s, detect {fig['cold_detect_s']:.1f} s,"
              f" publish {fig['cold_publish_s']:.1f} s [CPU {c['cold_import']:.1f}, {c['cold_detect']:.1f},"
              f" {c['cold_publish']:.1f}]")
        print(f"one new commit, mmtrack update: {t_warm:.2f} s [CPU {c['warm']:.2f}] (target <= 2.0 s of CPU with no"
              f" pause between updates: --settle {args.settle:g}; process start included)")
        for label, runs in rounds.items():
            each = ", ".join(f"({w:.2f}, {u:.2f}, {ld:.1f})" for w, u, ld in runs)
            print(f"  {label}: runs (wall s, CPU s, load) {each}"
                  f"; median wall {statistics.median(w for w, _, _ in runs):.2f} s, CPU {CPU[label]:.2f} s")
        print(f"nothing new (medians of {args.noop_repeat}): mmtrack publish {t_noop_pub:.2f} s"
              f" [CPU {c['noop_publish']:.2f}], mmtrack update {t_noop_upd:.2f} s [CPU {c['noop_update']:.2f}]"
              f" (target <= 0.3 s wall at load <= 1; loads {', '.join(f'{ld:.1f}' for _, _, ld in noop_update)})")
        line = f"import: {fig['import_results_per_s']:,.0f} results/s [CPU {n_results / c['cold_import']:,.0f}]"
        if cold["baseline_path"]:
            print(f"baseline cold path: {fig['cold_baseline_path_s']:.1f} s; ratio to asv publish"
                  f" {fig['cold_baseline_path_s'] / fig['cold_asv_s']:.2f}"
                  f" [CPU {c['cold_baseline_path']:.1f}: {c['cold_baseline_path'] / c['cold_asv']:.2f}]")
            line += (f"; baseline {fig['baseline_import_results_per_s']:,.0f} results/s"
                     f" [CPU {n_results / c['cold_baseline_import']:,.0f}];"
                     f" ratio {fig['import_results_per_s'] / fig['baseline_import_results_per_s']:.2f}x (target >= 3)")
        print(line)
        if args.json:
            args.json.write_text(json.dumps(fig, indent=1))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
