#!/usr/bin/env python3
"""The analysis judged on real asv histories: what ``mmtrack detect`` and the gate say, measured without labels.

Each history is imported with the CLI (``python -m mmtrack import-asv``) into a SQLite store cached under
``--cache`` (default ``/tmp/mmtrack-eval``), keyed by the history and the git hash of the mmtrack that Python
imports (its diff hashed in when the checkout is dirty), and ``python -m mmtrack detect --format json`` is read
back. The evidence each figure is judged against is read from the asv results files themselves, never from the
store, so that a change to the store or the analysis cannot move the yardstick. See docs/design/evaluation.md for
what each column measures.

It evaluates whichever mmtrack Python finds: ``PYTHONPATH=/work/wt/<other> python scripts/eval_histories.py``
judges that worktree's code (subprocesses get the same package).

Usage: python scripts/eval_histories.py [--histories a,b,c] [--quick] [--json PATH] [--cache DIR]
"""

from __future__ import annotations

import argparse
import calendar
import collections
import hashlib
import importlib.util
import itertools
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: The twelve real histories and where they live (see /work/shared/data/asv-results/README.md).
SHARED = Path(os.environ.get("MMTRACK_SHARED", "/work/shared")) / "data" / "asv-results"
UNPACKED = Path(os.environ.get("MMTRACK_HISTORIES", "/work/data/histories"))
HISTORIES = {
    "metpy": SHARED / "metpy", "conda": SHARED / "conda", "openblas": SHARED / "openblas",
    **{name: UNPACKED / name for name in ("casabench", "cvxpy", "flowkit", "flowkit-runs", "kedro", "numba",
                                           "sunpy", "sunpy-runs", "thematrix")},
}
#: A regression this large (either way of better) is judged for run-date following.
BIG_STEP = math.log(1.10)
#: A re-measurement counts as one only when it ran at least this long (ms) after the step's first run: the same
#: sitting's later commits (a backfill measures many commits in one sitting) are not a re-run.
RERUN_GAP = 6 * 3600 * 1000.0
#: Commits each side of a change point whose medians another machine compares.
SIDE = 3
NOT_RESULTS = ("machine.json", "benchmarks.json", "asv.conf.json")


# --------------------------------------------------------------------------- the code under test


def mmtrack_root() -> Path:
    """The folder holding the ``mmtrack`` package Python imports (normal resolution: PYTHONPATH first)."""
    spec = importlib.util.find_spec("mmtrack")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("error: no mmtrack package importable; set PYTHONPATH to a checkout")
    return Path(list(spec.submodule_search_locations)[0]).resolve().parent


#: What the stores and verdicts depend on: the package and its schema migrations.
CODE_PATHS = ("mmtrack", "migrations")


def code_key(root: Path) -> str:
    """The git hash of the code (the trees of :data:`CODE_PATHS` at HEAD), plus a hash of their uncommitted
    changes: a commit that leaves the code alone keeps the cache."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True).stdout
    trees = " ".join(git("rev-parse", f"HEAD:{p}").strip() for p in CODE_PATHS)
    tree = hashlib.sha1(trees.encode()).hexdigest()[:12] if trees.strip() else "nogit"
    dirty = git("diff", "HEAD", "--", *CODE_PATHS) + git("ls-files", "--others", "--exclude-standard", *CODE_PATHS)
    return tree + ("-" + hashlib.sha1(dirty.encode()).hexdigest()[:8] if dirty.strip() else "")


def code_head(root: Path) -> str:
    """The commit checked out where mmtrack lives, for the report."""
    return subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def cli(root: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    """``python -m mmtrack ARGS`` under ``nice -n 10``, importing the same mmtrack as this process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    return subprocess.run(["nice", "-n", "10", sys.executable, "-m", "mmtrack", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def results_folder(history: Path) -> Path:
    """The folder holding ``benchmarks.json`` nearest the history's top."""
    found = sorted(history.rglob("benchmarks.json"), key=lambda p: len(p.parts))
    if not found:
        raise FileNotFoundError(f"no benchmarks.json under {history}")
    return found[0].parent


@dataclass
class Detected:
    """What the CLI made of one results folder: the detect JSON, or why there is none."""

    detect: dict | None
    import_line: str
    error: str | None = None
    seconds: float = 0.0


def import_and_detect(results: Path, store_dir: Path, root: Path) -> Detected:
    """Import ``results`` into ``store_dir/store.db`` and detect, reusing what an earlier run cached there."""
    store_dir.mkdir(parents=True, exist_ok=True)
    db, out, log = store_dir / "store.db", store_dir / "detect.json", store_dir / "import.log"
    if out.exists() and log.exists():
        return Detected(json.loads(out.read_text()), log.read_text().strip())
    t0 = time.monotonic()
    db.unlink(missing_ok=True)
    imp = cli(root, "import-asv", "--db", str(db), "--no-progress", str(results))
    summary = " ".join((imp.stdout + imp.stderr).split())[:400]
    if imp.returncode not in (0, 1) or not db.exists():
        return Detected(None, summary, f"import-asv exit {imp.returncode}: {summary}", time.monotonic() - t0)
    det = cli(root, "detect", "--db", str(db), "--no-progress", "--format", "json")
    if det.returncode not in (0, 1):
        err = " ".join(det.stderr.split())[-300:]
        return Detected(None, summary, f"detect exit {det.returncode}: {err}", time.monotonic() - t0)
    out.write_text(det.stdout)
    log.write_text(summary)
    return Detected(json.loads(det.stdout), summary, None, time.monotonic() - t0)


# --------------------------------------------------------------------------- the evidence: asv's own files


@dataclass(frozen=True)
class Run:
    """One measurement of one series: its commit, the commit's date, when it ran (ms since the epoch), its value."""

    commit: str
    commit_date: float
    run_date: float
    value: float


SeriesId = tuple  # (machine, environment, benchmark, ((param name, value), ...) sorted)


@dataclass
class Raw:
    """Every measurement of a history, by series; each commit's date."""

    series: dict = field(default_factory=lambda: collections.defaultdict(list))
    commit_dates: dict = field(default_factory=dict)

    def order(self) -> dict[str, int]:
        """Each commit's place in the history, by commit date (as detect orders commits without a repository)."""
        ranked = sorted(self.commit_dates, key=lambda c: (self.commit_dates[c], c))
        return {c: i for i, c in enumerate(ranked)}


def param_combos(bench: dict) -> list[tuple]:
    """The parameter combinations of one benchmark, in asv's result order."""
    params = bench.get("params") or []
    return list(itertools.product(*params)) if params else [()]


def read_raw(results: Path) -> Raw:
    """Every result in an asv results folder (both file formats), keyed as detect names series."""
    benchmarks = json.loads((results / "benchmarks.json").read_text())
    raw = Raw()
    for path in sorted(results.rglob("*.json")):
        if path.name in NOT_RESULTS or path.parent == results:
            continue
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        commit, date = d.get("commit_hash"), float(d.get("date") or 0)
        if not commit or not isinstance(d.get("results"), dict):
            continue
        raw.commit_dates.setdefault(commit, date)
        env = d.get("env_name") or path.stem.split("-", 1)[-1].split("@")[0]
        machine = (d.get("params") or {}).get("machine") if isinstance(d.get("params"), dict) else None
        machine = machine or path.parent.name
        for name, values, params, started in _results_of(d):
            bench = benchmarks.get(name, {})
            combos = list(itertools.product(*params)) if params else param_combos(bench)
            names = bench.get("param_names") or [f"param{i + 1}" for i in range(len(combos[0]) if combos else 0)]
            for i, v in enumerate(values):
                if isinstance(v, (int, float)) and v > 0 and math.isfinite(v):
                    combo = tuple(sorted(zip(names, combos[i]))) if i < len(combos) else (("#", str(i)),)
                    key = (machine, env, name, combo)
                    raw.series[key].append(Run(commit, date, float(started or date), float(v)))
    for key, runs in raw.series.items():  # a results file kept unchanged across versions is one run
        raw.series[key] = sorted(set(runs), key=lambda r: (r.commit_date, r.run_date))
    return raw


def _results_of(d: dict):
    """(benchmark, values, parameter lists or None, started_at) of each result of one asv results file."""
    if "result_columns" in d:  # asv >= 0.5
        cols = d["result_columns"]
        for name, row in d["results"].items():
            r = dict(zip(cols, row))
            res = r.get("result")
            yield name, (res if isinstance(res, list) else [res]), r.get("params"), r.get("started_at")
    else:
        started = d.get("started_at") if isinstance(d.get("started_at"), dict) else {}
        for name, v in d["results"].items():
            res = v.get("result") if isinstance(v, dict) else v
            params = v.get("params") if isinstance(v, dict) else None
            yield name, (res if isinstance(res, list) else [res]), params, started.get(name)


def series_id(s: dict) -> SeriesId:
    """A detect JSON series' key in :class:`Raw`."""
    params = s.get("params") or {}
    return (s["machine"], s["environment"], s["benchmark"], tuple(sorted((k, str(v)) for k, v in params.items())))


# --------------------------------------------------------------------------- run-date following


def log_ratio(c: dict) -> float:
    return math.log(c["after_value"] / c["before_value"]) if c["before_value"] > 0 and c["after_value"] > 0 else 0.0


def is_big_regression(c: dict) -> bool:
    return c["kind"] == "regression" and abs(log_ratio(c)) >= BIG_STEP


def old_reruns(runs: list[Run], order: dict[str, int], change: dict, since_sha: str | None,
               after: float) -> list[float]:
    """Per old commit of the change's before segment (from ``since_sha`` to its before commit), the median of its
    measurements that ran after ``after`` (ms)."""
    lo = order.get(since_sha, -1) if since_sha else -1
    hi = order.get(change["before_sha"])
    if hi is None:
        return []
    late = collections.defaultdict(list)
    for r in runs:
        if lo <= order[r.commit] <= hi and r.run_date > after + RERUN_GAP:
            late[r.commit].append(r.value)
    return [float(np.median(v)) for v in late.values()]


def step_first_run(runs: list[Run], change: dict) -> float | None:
    """When the step first showed: the earliest run of its after commit that reads the new level (a commit measured
    first at the old level and again at the new one stepped with the later run), else its earliest run."""
    own = [r for r in runs if r.commit == change["after_sha"]]
    new = [r.run_date for r in own if reads_new_level([r.value], change)]
    return min(new or [r.run_date for r in own], default=None)


def reads_new_level(values: list[float], change: dict) -> bool:
    """Most of ``values`` lie nearer the change's after level than its before level (log scale)."""
    b, a = math.log(change["before_value"]), math.log(change["after_value"])
    near_new = sum(abs(math.log(v) - a) < abs(math.log(v) - b) for v in values)
    return near_new * 2 > len(values)


def run_date_evidence(detect: dict, raw: Raw) -> dict:
    """Of detect's code regressions >= 10%, those whose old commits, re-measured after the step's first run, read
    the new level; of its regressions >= 10% filed under environment events, those whose old commits re-measured
    after the event's date read the before level (contradicted)."""
    order = raw.order()
    events = {e["id"]: e for e in detect.get("events", [])}
    t = collections.Counter()
    for s in detect["series"]:
        runs = raw.series.get(series_id(s))
        if not runs:
            continue
        since = None
        for c in s["changes"]:
            if is_big_regression(c):
                first = step_first_run(runs, c)
                if c.get("event") in events:
                    day = events[c["event"]].get("first_run_date")
                    first = _day_ms(day) if day else first
                if first is not None:
                    late = old_reruns(runs, order, c, since, first)
                    kind = "event" if c.get("event") else "code"
                    t[f"{kind}_big"] += 1
                    if late:
                        t[f"{kind}_testable"] += 1
                        new = reads_new_level(late, c)
                        t[f"{kind}_follow"] += new
                        t[f"{kind}_contradicted"] += not new
            since = c["after_sha"]
    return {
        "code_big_regressions": t["code_big"], "code_testable": t["code_testable"],
        "code_follow_run_date": t["code_follow"], "code_follow_share": _share(t["code_follow"], t["code_testable"]),
        "event_big_regressions": t["event_big"], "event_testable": t["event_testable"],
        "event_contradicted": t["event_contradicted"],
        "event_contradicted_share": _share(t["event_contradicted"], t["event_testable"]),
    }


def _day_ms(day: str) -> float:
    return calendar.timegm(time.strptime(day[:10], "%Y-%m-%d")) * 1000.0


def _share(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


# --------------------------------------------------------------------------- agreement across machines


def machine_agreement(detect: dict, raw: Raw) -> dict:
    """Of change points whose benchmark another machine measured on both sides of its commit range, the share where
    most such machines show a same-direction move of at least half its size."""
    order = raw.order()
    by_bench = collections.defaultdict(list)  # (benchmark, params) -> [(machine, env, runs)]
    for (machine, env, bench, params), runs in raw.series.items():
        by_bench[(bench, params)].append((machine, env, runs))
    machines = {m for m, *_ in raw.series}
    t = collections.Counter()
    if len(machines) < 2:
        return {"machines": len(machines), "comparable": 0, "agree": 0, "agree_share": None}
    for s in detect["series"]:
        sid = series_id(s)
        for c in s["changes"]:
            lo, hi = order.get(c["before_sha"]), order.get(c["after_sha"])
            if lo is None or hi is None or abs(log_ratio(c)) < 1e-9:
                continue
            votes = [v for m, env, runs in by_bench[sid[2:]] if m != sid[0]
                     if (v := _other_move(runs, order, lo, hi)) is not None]
            if not votes:
                continue
            t["comparable"] += 1
            agree = sum(v * log_ratio(c) > 0 and abs(v) >= 0.5 * abs(log_ratio(c)) for v in votes)
            t["agree"] += agree * 2 > len(votes)
    return {"machines": len(machines), "comparable": t["comparable"], "agree": t["agree"],
            "agree_share": _share(t["agree"], t["comparable"])}


def _other_move(runs: list[Run], order: dict[str, int], lo: int, hi: int) -> float | None:
    """Another series' log move from the SIDE commits up to place ``lo`` to the SIDE from place ``hi`` on."""
    by_commit = collections.defaultdict(list)
    for r in runs:
        by_commit[order[r.commit]].append(r.value)
    before = sorted(p for p in by_commit if p <= lo)[-SIDE:]
    after = sorted(p for p in by_commit if p >= hi)[:SIDE]
    if not before or not after:
        return None
    level = lambda ps: float(np.median([math.log(v) for p in ps for v in by_commit[p]]))  # noqa: E731
    return level(after) - level(before)


# --------------------------------------------------------------------------- counts


def counts(detect: dict, raw: Raw) -> dict:
    series = detect["series"]
    analysed = [s for s in series if s.get("status") == "ok"]
    points = sum(int(s.get("points") or 0) for s in analysed)
    changes = sum(len(s["changes"]) for s in series)
    matched = sum(series_id(s) in raw.series for s in series)
    return {
        "series": len(series), "analysed": len(analysed), "commits": len(raw.commit_dates),
        "change_points": changes, "events": len(detect.get("events", [])),
        "cp_per_100_commits_per_series": round(100 * changes / points, 3) if points else None,
        "series_matched_to_files": matched,
    }


# --------------------------------------------------------------------------- one history, the table


def evaluate_history(name: str, path: Path, cache: Path, root: Path, key: str) -> dict:
    """Every figure of one history (or why there are none)."""
    try:
        results = results_folder(path)
    except FileNotFoundError as e:
        return {"history": name, "error": str(e)}
    got = import_and_detect(results, cache / f"{name}-{key}", root)
    row: dict = {"history": name, "import": got.import_line}
    if got.detect is None:
        return {**row, "error": got.error}
    raw = read_raw(results)
    row.update(counts(got.detect, raw))
    row["run_date"] = run_date_evidence(got.detect, raw)
    row["machines"] = machine_agreement(got.detect, raw)
    return row


def _fmt(x, pct: bool = False) -> str:
    if x is None:
        return "–"
    if pct:
        return f"{100 * x:.0f}%"
    return f"{x:.2f}" if isinstance(x, float) else str(x)


def markdown(rows: list[dict], key: str) -> str:
    head = ("| history | series | analysed | commits | change points | events | cp/100 commits/series "
            "| code reg ≥10% follow run date | event reg contradicted | agree across machines |")
    lines = [f"mmtrack: {key}", "", head, "|" + "---|" * 10]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['history']} | failed: {r['error'][:160]} |" + " |" * 8)
            continue
        rd, ma = r["run_date"], r["machines"]
        lines.append(
            f"| {r['history']} | {r['series']} | {r['analysed']} | {r['commits']} | {r['change_points']} "
            f"| {r['events']} | {_fmt(r['cp_per_100_commits_per_series'])} "
            f"| {rd['code_follow_run_date']}/{rd['code_testable']} ({_fmt(rd['code_follow_share'], True)}) "
            f"of {rd['code_big_regressions']} "
            f"| {rd['event_contradicted']}/{rd['event_testable']} ({_fmt(rd['event_contradicted_share'], True)}) "
            f"of {rd['event_big_regressions']} "
            f"| {ma['agree']}/{ma['comparable']} ({_fmt(ma['agree_share'], True)}), {ma['machines']} machines |")
    return "\n".join(lines)


def named_history(spec: str) -> tuple[str, Path | None]:
    """``NAME`` (one of :data:`HISTORIES`) or ``NAME=PATH`` (any folder holding an asv results folder)."""
    name, _, path = spec.partition("=")
    return name, Path(path) if path else HISTORIES.get(name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--histories", default=",".join(HISTORIES),
                    help="comma-separated names or NAME=PATH (default: all twelve)")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/mmtrack-eval"),
                    help="stores, keyed by history and code")
    ap.add_argument("--quick", action="store_true", help="subsample series for fast iteration")
    args = ap.parse_args(argv)
    chosen = dict(named_history(n) for n in args.histories.split(",") if n)
    unknown = [n for n, path in chosen.items() if path is None]
    if unknown:
        ap.error(f"unknown histories {', '.join(unknown)}; known: {', '.join(HISTORIES)} (or NAME=PATH)")
    root = mmtrack_root()
    key = code_key(root)
    print(f"judging the mmtrack in {root} ({key})", file=sys.stderr)
    rows = []
    for name, path in chosen.items():
        t0 = time.monotonic()
        rows.append(evaluate_history(name, path, args.cache, root, key))
        print(f"  {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    head = code_head(root)
    print(markdown(rows, f"code {key} (checkout {root} at {head})"))
    if args.json:
        args.json.write_text(json.dumps({"code": key, "head": head, "mmtrack": str(root), "histories": rows},
                                        indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
