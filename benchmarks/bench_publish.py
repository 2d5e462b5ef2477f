"""Benchmark of ``mmtrack publish`` against ``asv publish`` on the same results.

Run as a script (a full build takes seconds, which does not fit the engine's
calibrate/warm-up/many-samples model)::

    python3 benchmarks/bench_publish.py                 # 100 benchmarks x 1,000 commits x 5 metrics
    python3 benchmarks/bench_publish.py --quick         # 10 x 100 x 5, a smoke run

It measures, each ``--repeat`` times, median reported:

* the full mmtrack build into an empty folder (target: <= 20 s);
* the incremental rebuild after one new commit (and the files/bytes it wrote);
* a rebuild with nothing new;
* ``mmtrack publish --db`` as a CLI process reading the same values from a
  SQLite store (once the store is present: the asv folder below is imported
  with ``mmtrack import-asv`` first, untimed);
* ``asv publish`` on an equivalent asv results folder (benchmarks.json,
  machine.json, one result file per commit in asv's format version 2, an
  asv.conf.json and a real git repository holding the same commits). asv keeps
  one number per benchmark, so each (benchmark, metric) pair becomes one asv
  benchmark: the same 500,000 values.

Nothing runs at import (``mmtrack bench benchmarks`` and asv import this folder).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _git_history(repo: Path, commits) -> list[str]:
    """A real git repository with one commit per synthetic commit (git fast-import: fast)."""
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.org",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.org"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    lines: list[bytes] = []
    for i, c in enumerate(commits):
        ts = int(c.date.timestamp())
        msg = (c.message or "").encode()
        data = f"{i}\n".encode()
        lines += [b"commit refs/heads/main", f"mark :{i + 1}".encode(),
                  f"author bench <b@example.org> {ts} +0000".encode(),
                  f"committer bench <b@example.org> {ts} +0000".encode(),
                  f"data {len(msg)}".encode(), msg]
        if i:
            lines.append(f"from :{i}".encode())
        lines += [b"M 644 inline counter.txt", f"data {len(data)}".encode(), data, b""]
    subprocess.run(["git", "fast-import", "--quiet"], input=b"\n".join(lines) + b"\n", cwd=repo, check=True, env=env)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True, env=env)
    out = subprocess.run(["git", "log", "--reverse", "--format=%H", "main"], cwd=repo, check=True,
                         capture_output=True, text=True, env=env).stdout.split()
    return out


def write_asv_folder(root: Path, model, machine: str = "ci-linux-x86") -> Path:
    """An asv project folder (config, results, git repo) holding the model's values."""
    from benchmarks.synthetic_history import write_asv_project

    return write_asv_project(root, model, machine)


def _has_store() -> bool:
    try:
        import mmtrack.store.reads  # noqa: F401
    except ImportError:
        return False
    return True


def _timed(fn):
    """(seconds, result) of one call."""
    t = time.perf_counter()
    result = fn()
    return time.perf_counter() - t, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--benchmarks", type=int, default=100)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="10 x 100 x 5, one repeat")
    ap.add_argument("--no-asv", action="store_true", help="skip asv publish")
    ap.add_argument("--no-store", action="store_true", help="skip the end-to-end run through a SQLite store")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    if args.quick:
        args.benchmarks, args.commits, args.repeat = 10, 100, 1
    sys.path.insert(0, str(ROOT))
    from mmtrack.publish import SiteConfig, build_site
    from benchmarks.synthetic_history import synthetic_commits, synthetic_model

    work = Path(tempfile.mkdtemp(prefix="mmtrack-bench-publish-"))
    try:
        commits = synthetic_commits(args.commits, seed=1)
        shas = _git_history(work / "asv" / "repo", commits)
        commits = [dataclasses.replace(c, sha=s) for c, s in zip(commits, shas)]
        t0 = time.perf_counter()
        cfg = SiteConfig(title="bench", commit_url="https://example.org/commit/")
        model = synthetic_model(args.benchmarks, args.commits, args.metrics, seed=1, commits=commits, config=cfg)
        n_values = sum(len(v) for v in model.series.values())
        print(f"model: {args.benchmarks} benchmarks x {args.commits} commits x {args.metrics} metrics = "
              f"{n_values:,} values ({time.perf_counter() - t0:.1f} s to generate)")
        keep = {c.sha for c in commits[:-1]}
        before = dataclasses.replace(
            model, commits=commits[:-1],
            series={k: [p for p in v if p.commit.sha in keep] for k, v in model.series.items()},
            change_points=[cp for cp in model.change_points if cp.after_sha in keep])

        full, incr, noop, asv_times = [], [], [], []
        incr_files = incr_bytes = full_files = full_bytes = 0
        for r in range(args.repeat):
            out = work / f"site{r}"
            secs, rep = _timed(lambda: build_site(model, out))
            full.append(secs)
            full_files, full_bytes = len(rep.written), rep.bytes_written
            noop.append(_timed(lambda: build_site(model, out))[0])
            build_site(before, out)  # back to the state before the last commit (not timed)
            secs, rep = _timed(lambda: build_site(model, out))
            incr.append(secs)
            incr_files, incr_bytes = len(rep.written), rep.bytes_written
            shutil.rmtree(out)
            print(f"  run {r + 1}: full {full[-1]:.2f} s, one new commit {incr[-1]:.2f} s, nothing new {noop[-1]:.2f} s")

        if not args.no_asv:
            conf = write_asv_folder(work / "asv", model)
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            for r in range(args.repeat):
                shutil.rmtree(work / "asv" / "html", ignore_errors=True)
                t = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "asv", "publish", "--config", str(conf), "--no-pull"],
                                      cwd=work / "asv", capture_output=True, text=True, env=env)
                asv_times.append(time.perf_counter() - t)
                if proc.returncode != 0:
                    print(proc.stdout[-2000:], proc.stderr[-2000:])
                    raise SystemExit("asv publish failed")
                graphs = len(list((work / "asv" / "html" / "graphs").rglob("*.json")))
                print(f"  asv publish run {r + 1}: {asv_times[-1]:.2f} s ({graphs} graph files)")

        store_times: list[float] = []
        if not args.no_store and _has_store():
            # End to end through the store: the same asv folder imported into SQLite, then the CLI.
            conf = work / "asv" / "asv.conf.json"
            if not conf.exists():
                write_asv_folder(work / "asv", model)
            url = f"sqlite:///{work / 'store.db'}"
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "mmtrack", "import-asv", str(work / "asv" / "results"), "--db", url],
                           check=True, capture_output=True, env=env)
            print(f"  import-asv into SQLite (not part of publish): {time.perf_counter() - t:.1f} s")
            for r in range(args.repeat):
                out = work / f"store-site{r}"
                t = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "mmtrack", "publish", "-o", str(out), "--db", url],
                                      capture_output=True, text=True, env=env)
                store_times.append(time.perf_counter() - t)
                if proc.returncode != 0:
                    raise SystemExit(f"mmtrack publish --db failed: {proc.stderr[-2000:]}")
                print(f"  mmtrack publish --db (CLI, store read + build) run {r + 1}: {store_times[-1]:.2f} s")
                shutil.rmtree(out)

        med = statistics.median
        fig = {
            "benchmarks": args.benchmarks, "commits": args.commits, "metrics": args.metrics, "values": n_values,
            "repeat": args.repeat,
            "full_build_s": med(full), "full_files": full_files, "full_bytes": full_bytes,
            "one_new_commit_s": med(incr), "one_new_commit_files": incr_files, "one_new_commit_bytes": incr_bytes,
            "nothing_new_s": med(noop),
            "asv_publish_s": med(asv_times) if asv_times else None,
            "asv_publish_runs_s": asv_times,
            "cli_from_store_s": med(store_times) if store_times else None,
        }
        print()
        print(f"mmtrack publish, full build        : {fig['full_build_s']:.2f} s median of {args.repeat}"
              f" ({full_files} files, {full_bytes / 1e6:.1f} MB)   target <= 20 s:"
              f" {'met' if fig['full_build_s'] <= 20 else 'MISSED'}")
        print(f"mmtrack publish, one new commit    : {fig['one_new_commit_s']:.2f} s"
              f" ({incr_files} files rewritten, {incr_bytes / 1e6:.2f} MB)"
              f"  = {fig['one_new_commit_s'] / fig['full_build_s']:.2f} x full build")
        print(f"mmtrack publish, nothing new       : {fig['nothing_new_s']:.2f} s (0 files rewritten)")
        if asv_times:
            print(f"asv publish (same values, {args.metrics * args.benchmarks} asv benchmarks): {fig['asv_publish_s']:.2f} s"
                  f"  = {fig['asv_publish_s'] / fig['full_build_s']:.1f} x mmtrack full build,"
                  f" {fig['asv_publish_s'] / fig['one_new_commit_s']:.1f} x mmtrack one-new-commit")
        if store_times:
            print(f"mmtrack publish --db (CLI process, SQLite store read + build): {fig['cli_from_store_s']:.2f} s"
                  f"   target <= 20 s: {'met' if fig['cli_from_store_s'] <= 20 else 'MISSED'}")
            if asv_times:
                print(f"asv publish / mmtrack publish --db: {fig['asv_publish_s'] / fig['cli_from_store_s']:.1f} x")
        if args.json:
            args.json.write_text(json.dumps(fig, indent=1))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
