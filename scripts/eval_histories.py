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
import contextlib
import hashlib
import importlib.util
import itertools
import json
import math
import os
import re
import shutil
import statistics
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
#: A measurement of an old commit counts when it ran this long (ms) after the step's first run (--rerun-gap-hours).
#: 0: any later run, the same sitting's included: an old commit measured after the step, in a backfill's sitting or
#: a re-run days later, at the old level says the code stepped; at the new level, the run.
RERUN_GAP = 0.0
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
#: What an import does not depend on: a change there re-detects on the stores already imported.
ANALYSIS_PATHS = ("mmtrack/analysis",)


@dataclass(frozen=True)
class Code:
    """The mmtrack under test: where it lives, the key of its whole code, and of the code an import runs."""

    root: Path
    key: str
    import_key: str


def code_of(root: Path) -> Code:
    return Code(root, tree_key(root, ()), tree_key(root, ANALYSIS_PATHS))


def tree_key(root: Path, exclude: tuple[str, ...]) -> str:
    """A hash of the code's files at HEAD (:data:`CODE_PATHS` less ``exclude``) and of their uncommitted changes,
    untracked files included: a commit that leaves the code alone keeps the cache."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True).stdout

    def kept(path: str) -> bool:
        return not any(path == e or path.startswith(e + "/") for e in exclude)

    listing = [line for line in git("ls-tree", "-r", "HEAD", "--", *CODE_PATHS).splitlines()
               if kept(line.split("\t", 1)[-1])]
    if not listing:
        return "nogit"
    dirty = hashlib.sha1(git("diff", "HEAD", "--", *CODE_PATHS, *(f":(exclude){e}" for e in exclude)).encode())
    untracked = [f for f in git("ls-files", "--others", "--exclude-standard", "--", *CODE_PATHS).splitlines()
                 if kept(f) and not f.endswith(".pyc")]
    for f in sorted(untracked):
        dirty.update(f.encode() + (root / f).read_bytes())
    changed = dirty.hexdigest() != hashlib.sha1(b"").hexdigest()
    key = hashlib.sha1("\n".join(listing).encode()).hexdigest()[:12]
    return key + ("-" + dirty.hexdigest()[:8] if changed else "")


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


def import_and_detect(results: Path, imported: Path, detected: Path, root: Path,
                      bench: str | None = None) -> Detected:
    """Import ``results`` into ``imported/store.db`` and detect on a copy of it in ``detected`` (only benchmarks
    matching ``bench``, a regex, where given), reusing what an earlier run cached in either. Each folder is written
    beside its place and renamed into it, so two evaluations sharing the cache never see half of one."""
    log, out = imported / "import.log", detected / "detect.json"
    if out.exists() and log.exists():
        return Detected(json.loads(out.read_text()), log.read_text().strip())
    t0 = time.monotonic()
    if not log.exists():
        with _building(imported, "import.log") as tmp:
            imp = cli(root, "import-asv", "--db", str(tmp / "store.db"), "--no-progress", str(results))
            summary = " ".join((imp.stdout + imp.stderr).split())[:400]
            if imp.returncode not in (0, 1) or not (tmp / "store.db").exists():
                return Detected(None, summary, f"import-asv exit {imp.returncode}: {summary}", time.monotonic() - t0)
            (tmp / "import.log").write_text(summary)
    summary = log.read_text().strip()
    with _building(detected, "detect.json") as tmp:
        shutil.copy(imported / "store.db", tmp / "store.db")
        det = cli(root, "detect", "--db", str(tmp / "store.db"), "--no-progress", "--format", "json",
                  *(["-b", bench] if bench else []))
        if det.returncode not in (0, 1):
            err = " ".join(det.stderr.split())[-300:]
            return Detected(None, summary, f"detect exit {det.returncode}: {err}", time.monotonic() - t0)
        (tmp / "detect.json").write_text(det.stdout)
    return Detected(json.loads(out.read_text()), summary, None, time.monotonic() - t0)


@contextlib.contextmanager
def _building(final: Path, product: str):
    """A fresh folder beside ``final``, renamed to it when the block ends with ``product`` written in it (a
    ``return`` inside the block also ends it normally, so the product, not the exit, says it is complete); left
    out otherwise, or when another evaluation got there first."""
    tmp = final.with_name(f"{final.name}.{os.getpid()}.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    finally:
        if (tmp / product).exists() and not final.exists():
            try:
                tmp.rename(final)
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


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
    files: dict = field(default_factory=dict)  # results file -> its commit

    def order(self) -> dict[str, int]:
        """Each commit's place in the history, by commit date (as detect orders commits without a repository)."""
        ranked = sorted(self.commit_dates, key=lambda c: (self.commit_dates[c], c))
        return {c: i for i, c in enumerate(ranked)}


def param_combos(bench: dict) -> list[tuple]:
    """The parameter combinations of one benchmark, in asv's result order."""
    params = bench.get("params") or []
    return list(itertools.product(*params)) if params else [()]


def results_files(results: Path):
    """Each readable results file of an asv results folder (machine folders only), with its parsed JSON."""
    for path in sorted(results.rglob("*.json")):
        if path.name in NOT_RESULTS or path.parent == results:
            continue
        try:
            yield path, json.loads(path.read_text())
        except (OSError, ValueError):
            continue


def read_raw(results: Path) -> Raw:
    """Every result in an asv results folder (both file formats), keyed as detect names series."""
    benchmarks = json.loads((results / "benchmarks.json").read_text())
    raw = Raw()
    for path, d in results_files(results):
        commit, date = d.get("commit_hash"), float(d.get("date") or 0)
        if not commit or not isinstance(d.get("results"), dict):
            continue
        raw.commit_dates.setdefault(commit, date)
        raw.files[path] = commit
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


def is_big_change(c: dict) -> bool:
    return c["kind"] in ("regression", "improvement") and abs(log_ratio(c)) >= BIG_STEP


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
    after the event's date read the before level (contradicted). The same of improvements >= 10%, in the JSON."""
    order = raw.order()
    events = {e["id"]: e for e in detect.get("events", [])}
    t = collections.Counter()
    for s in detect["series"]:
        runs = raw.series.get(series_id(s))
        if not runs:
            continue
        since = None
        for c in s["changes"]:
            if is_big_change(c):
                first = step_first_run(runs, c)
                if c.get("event") in events:
                    day = events[c["event"]].get("first_run_date")
                    first = _day_ms(day) if day else first
                if first is not None:
                    late = old_reruns(runs, order, c, since, first)
                    kind = ("event" if c.get("event") else "code") + ("" if c["kind"] == "regression" else "_imp")
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
        "code_big_improvements": t["code_imp_big"], "code_improvements_testable": t["code_imp_testable"],
        "code_improvements_follow_run_date": t["code_imp_follow"],
        "event_big_improvements": t["event_imp_big"], "event_improvements_testable": t["event_imp_testable"],
        "event_improvements_contradicted": t["event_imp_contradicted"],
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


# --------------------------------------------------------------------------- the gate, by noise tier


#: Between-commit robust CV cut points of the noise tiers (as scripts/ci_noise.py's ``tier_of``).
TIER_CUTS = (("quiet", 0.03), ("mid", 0.10), ("noisy", math.inf))
#: Commits of history before the first commit the gate judges (scripts/eval_real.py's --start).
GATE_START = 20
#: Commits the gate judges per series at most (its newest): numba's 2,700-commit series would take hours.
GATE_COMMITS = 300
#: Series the gate judges per history (sampled); --quick takes fewer.
GATE_SERIES, GATE_SERIES_QUICK = 400, 60


def robust_cv(values: list[float]) -> float:
    """Commit-to-commit robust CV: the robust sigma of consecutive log differences over sqrt(2) (scripts/ci_noise.py's
    ``robust_cv``, kept here so that the script judges another checkout without importing its scripts)."""
    d = np.diff(np.log(values))
    return float(1.4826 * np.median(np.abs(d)) / math.sqrt(2)) if d.size else 0.0


def tier_of(values: list[float]) -> str:
    cv = robust_cv(values)
    return next(name for name, cut in TIER_CUTS if cv < cut)


def find_analysis(*names: str) -> list:
    """The analysis functions and classes by name, wherever the package under test keeps them: ``compare.py``
    first, then every module of ``mmtrack.analysis`` (a refactor may move them)."""
    import importlib
    import pkgutil

    import mmtrack.analysis as pkg

    modules = ["mmtrack.analysis.compare", "mmtrack.analysis"]
    modules += [f"mmtrack.analysis.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]
    found = {}
    for mod in modules:
        try:
            module = importlib.import_module(mod)
        except ImportError:
            continue
        for n in names:
            if n not in found and hasattr(module, n):
                found[n] = getattr(module, n)
    missing = [n for n in names if n not in found]
    if missing:
        raise ImportError(f"mmtrack.analysis has no {', '.join(missing)}")
    return [found[n] for n in names]


def store_series(db: Path) -> dict:
    """Every series of a store: key -> measurements, oldest first (the store's own order)."""
    from mmtrack.store import reads as q
    from mmtrack.store.db import open_store

    store = open_store(str(db), existing=True)
    try:
        keys = q.list_series(store)
        return {k: [p.measurement for p in pts] for k, pts in q.series_many(store, keys).items()}
    finally:
        store.close()


def gate_alarms(db: Path, max_series: int, seed: int = 58) -> dict:
    """Each commit from the :data:`GATE_START`-th on (the last :data:`GATE_COMMITS` of a longer series) judged as
    ``mmtrack run`` judges its newest commit (as scripts/eval_real.py does), then with the next ``confirm_window``
    commits: flags and confirmed regressions per 100 commits judged, by the series' noise tier. Cached beside
    the store it reads."""
    cached = db.parent / f"gate-{max_series}-{GATE_COMMITS}-{seed}.json"
    if cached.exists():
        return json.loads(cached.read_text())
    out = _gate_alarms(db, max_series, seed)
    if "error" not in out:
        cached.write_text(json.dumps(out))
    return out


def _gate_alarms(db: Path, max_series: int, seed: int) -> dict:
    try:
        policy_cls, compare_pair, series_history, series_later = find_analysis(
            "ComparePolicy", "compare_pair", "series_history", "series_later")
    except ImportError as e:
        return {"error": str(e)}
    try:
        (window,) = find_analysis("HISTORY_WINDOW")
    except ImportError:  # the window ``mmtrack run`` reads today
        window = 100
    policy = policy_cls()
    series = store_series(db)
    rng = np.random.default_rng(seed)
    keys = sorted(series, key=str)
    if len(keys) > max_series:
        keys = [keys[i] for i in sorted(rng.choice(len(keys), max_series, replace=False))]
    t = {tier: collections.Counter() for tier, _ in TIER_CUTS}
    for key in keys:
        ms = series[key]
        ok = [m.median for m in ms if getattr(m, "median", None) and m.median > 0]
        if len(ms) < GATE_START + policy.confirm_window + 1 or len(ok) < GATE_START:
            continue
        tally = t[tier_of(ok)]
        tally["series"] += 1
        last = len(ms) - policy.confirm_window
        for j in range(max(GATE_START, last - GATE_COMMITS), last):
            history = series_history(ms, j - 1, window)
            if len(history) < GATE_START:
                continue
            tally["judged"] += 1
            now = compare_pair(ms[j - 1], ms[j], policy, history, p_value=False)
            if now.verdict not in ("regressed", "improved"):
                continue
            final = compare_pair(ms[j - 1], ms[j], policy, history, series_later(ms, j, policy), p_value=False)
            tally[f"flag_{now.verdict}"] += 1
            if final.state == "confirmed":
                tally[f"confirmed_{now.verdict}"] += 1
    out = {"confirm_window": policy.confirm_window, "window": window, "series_sampled": len(keys)}
    t["all"] = sum(t.values(), collections.Counter())
    for tier, tally in t.items():
        judged = tally["judged"]
        out[tier] = {"series": tally["series"], "judged": judged,
                     "confirmed_regressions": tally["confirmed_regressed"],
                     "confirmed_improvements": tally["confirmed_improved"],
                     "flags": tally["flag_regressed"] + tally["flag_improved"],
                     "alarms_per_100": round(100 * tally["confirmed_regressed"] / judged, 3) if judged else None}
    return out


# --------------------------------------------------------------------------- stability


#: Benchmarks --quick detects per history (drawn at random; the store holds them all).
QUICK_BENCHMARKS = 30
#: Cut points re-detected per history (--quick: one).
CUTS, CUTS_QUICK = 3, 1


def truncated_folder(results: Path, raw: Raw, last: int, dest: Path) -> Path:
    """A copy of ``results`` holding only the commits up to place ``last`` (hard links where the file system
    allows), as the history stood when that commit was the newest."""
    order = raw.order()
    if (dest / "benchmarks.json").exists():
        return dest
    tmp = dest.with_name(dest.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copy(results / "benchmarks.json", tmp / "benchmarks.json")
    for machine_json in results.rglob("machine.json"):
        (tmp / machine_json.parent.relative_to(results)).mkdir(parents=True, exist_ok=True)
        shutil.copy(machine_json, tmp / machine_json.relative_to(results))
    for path, commit in raw.files.items():
        if order[commit] <= last:
            target = tmp / path.relative_to(results)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy(path, target)
    tmp.rename(dest)
    return dest


def verdicts(detect: dict, order: dict[str, int], upto: int) -> set:
    """Detect's regressions and improvements at commits up to place ``upto``: (series, after commit, kind)."""
    return {(series_id(s), c["after_sha"], c["kind"]) for s in detect["series"] for c in s["changes"]
            if c["kind"] in ("regression", "improvement") and order.get(c["after_sha"], math.inf) <= upto}


def stability(results: Path, raw: Raw, full: dict, dirs: tuple[Path, Path], code: Code, cuts: int,
              confirm_window: int, bench: str | None = None) -> dict:
    """Re-detect the history cut after each of ``cuts`` commits (from half to nine tenths of it) and compare the
    verdicts on commits up to ``confirm_window`` before each cut with the whole history's."""
    order = raw.order()
    n = len(order)
    places = sorted({int(x) for x in np.linspace(0.5 * n, 0.9 * n, cuts)}) if n > 4 * confirm_window else []
    t = collections.Counter()
    per_cut = []
    for last in places:
        imported, detected = (d / f"cut{last}" for d in dirs)
        folder = truncated_folder(results, raw, last, imported.with_name(imported.name + "-results"))
        got = import_and_detect(folder, imported, detected, code.root, bench)
        if got.detect is None:
            per_cut.append({"cut": last, "error": got.error})
            continue
        upto = last - confirm_window
        then, now = verdicts(got.detect, order, upto), verdicts(full, order, upto)
        t["kept"] += len(then & now)
        t["vanished"] += len(then - now)
        t["appeared"] += len(now - then)
        per_cut.append({"cut": last, "kept": len(then & now), "vanished": len(then - now),
                        "appeared": len(now - then)})
    total = t["kept"] + t["vanished"] + t["appeared"]
    return {"cuts": per_cut, "kept": t["kept"], "vanished": t["vanished"], "appeared": t["appeared"],
            "stable_share": _share(t["kept"], total)}


# --------------------------------------------------------------------------- recall on real noise (injection)


#: The histories whose series lend their noise to the injected suites: hosted CI runners (kedro, sunpy, openblas's
#: GitHub-hosted and AWS runners), a quiet dedicated server (flowkit) and a container on a shared box (metpy).
NOISE_HISTORIES = ("openblas", "kedro", "sunpy", "flowkit", "metpy")
#: A source series needs this many commits; its code's levels are taken out by a rolling median of NOISE_WINDOW.
NOISE_MIN_COMMITS, NOISE_WINDOW = 40, 15
#: Mean block length (commits) of the stationary bootstrap: a runner's phase of a few commits stays together.
MEAN_BLOCK = 6
#: Injected step sizes, where the newest-side steps go (commits before the newest), and how far from its commit
#: a change point may lie and still find the step.
STEP_SIZES, NEWEST_STEPS, TOLERANCE = (0.10, 0.20), (2, 3, 4, 5), 1


@dataclass(frozen=True)
class NoiseSource:
    """One real series: each commit's log residual around the code's level, and its samples' spread (the log
    offsets of the 25%, 75% quantiles and the 99% interval's ends from the median)."""

    name: str
    residuals: np.ndarray
    spreads: np.ndarray  # (commits, 4)


def noise_sources(results: Path, history: str) -> list[NoiseSource]:
    """The series of one results folder with at least :data:`NOISE_MIN_COMMITS` commits, as noise sources."""
    points = collections.defaultdict(dict)  # series -> commit date -> (value, spread offsets)
    for path, d in results_files(results):
        date = float(d.get("date") or 0)
        for name, i, v, spread in _stats_of(d):
            points[(path.parent.name, d.get("env_name"), name, i)].setdefault(date, (v, spread))
    out = []
    for key, by_date in sorted(points.items(), key=lambda kv: str(kv[0])):
        if len(by_date) < NOISE_MIN_COMMITS:
            continue
        rows = [by_date[d] for d in sorted(by_date)]
        logv = np.log([r[0] for r in rows])
        h = NOISE_WINDOW // 2
        level = np.array([np.median(logv[max(0, i - h): i + h + 1]) for i in range(logv.size)])
        out.append(NoiseSource(f"{history}/{'/'.join(map(str, key))}", logv - level, np.array([r[1] for r in rows])))
    return out


def noise_pools(histories: dict[str, Path | None]) -> dict[str, list[NoiseSource]]:
    """The noise sources of each history that has a results folder and any source (the injected suites' pools)."""
    pools = {}
    for name, path in histories.items():
        try:
            sources = noise_sources(results_folder(path), name) if path else []
        except FileNotFoundError:
            continue
        if sources:
            pools[name] = sources
    return pools


def _stats_of(d: dict):
    """(benchmark, index, value, (q25, q75, ci_a, ci_b) as log offsets) of each positive result of one file."""
    def offsets(v, q25, q75, a, b):
        vals = [x if isinstance(x, (int, float)) and x > 0 else None for x in (q25, q75, a, b)]
        dflt = (-0.01, 0.01, -0.03, 0.03)
        return tuple(math.log(x / v) if x else dflt[k] for k, x in enumerate(vals))
    if "result_columns" in d:
        cols = d["result_columns"]
        for name, row in d["results"].items():
            r = dict(zip(cols, row))
            res = r.get("result")
            if not isinstance(res, list):
                continue
            for i, v in enumerate(res):
                if isinstance(v, (int, float)) and v > 0 and math.isfinite(v):
                    col = lambda c: (r.get(c) or [None] * len(res))[i] if i < len(r.get(c) or []) else None  # noqa
                    yield name, i, v, offsets(v, col("stats_q_25"), col("stats_q_75"), col("stats_ci_99_a"),
                                              col("stats_ci_99_b"))
    else:
        for name, v in d["results"].items():
            if not isinstance(v, dict) or not isinstance(v.get("result"), list):
                continue
            stats = v.get("stats") or []
            for i, x in enumerate(v["result"]):
                st = stats[i] if i < len(stats) and isinstance(stats[i], dict) else {}
                ci = st.get("ci_99") or [None, None]
                if isinstance(x, (int, float)) and x > 0 and math.isfinite(x):
                    yield name, i, x, offsets(x, st.get("q_25"), st.get("q_75"), ci[0], ci[1])


def bootstrap(rng: np.random.Generator, src: NoiseSource, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` commits of one source's noise: a stationary block bootstrap (geometric blocks of mean MEAN_BLOCK)."""
    idx: list[int] = []
    size = src.residuals.size
    while len(idx) < n:
        start = int(rng.integers(size))
        length = int(rng.geometric(1.0 / MEAN_BLOCK))
        idx.extend((start + k) % size for k in range(length))
    pick = np.array(idx[:n])
    resid = src.residuals[pick]
    return resid - np.median(resid), src.spreads[pick]


@dataclass
class Synthetic:
    """One injected series: its log values and spreads per commit, and its step (place of the first commit at the
    new level, log size; None for A/A)."""

    name: str
    source: str
    logv: np.ndarray
    spreads: np.ndarray
    step_at: int | None = None
    step: float = 0.0


def make_suite(rng: np.random.Generator, pools: dict[str, list[NoiseSource]], n: int, length: int,
               stepped: bool) -> list[Synthetic]:
    """``n`` series of real noise, each drawn from one source: tiers (by the source's noise) in turn, and within a
    tier its histories in turn, so that every tier and history is there; with ``stepped``, each
    holds one step of a size in STEP_SIZES either way, half of them 2-5 commits before the newest, the rest
    anywhere past the first fifth."""
    strata = collections.defaultdict(lambda: collections.defaultdict(list))  # tier -> history -> sources
    for history, sources in pools.items():
        for src in sources:
            strata[tier_of(list(np.exp(src.residuals)))][history].append(src)
    tiers = [t for t, _ in TIER_CUTS if strata[t]]
    out = []
    for i in range(n):
        by_history = strata[tiers[i % len(tiers)]]
        names = sorted(by_history)
        pool = by_history[names[(i // len(tiers)) % len(names)]]
        src = pool[int(rng.integers(len(pool)))]
        resid, spreads = bootstrap(rng, src, length)
        logv = math.log(1e-3) + resid
        s = Synthetic(f"inject.Suite.time_s{i:04d}", src.name, logv, spreads)
        if stepped:
            size = math.log(1 + STEP_SIZES[i % len(STEP_SIZES)]) * (1 if (i // 2) % 2 == 0 else -1)
            at = length - NEWEST_STEPS[(i // 8) % len(NEWEST_STEPS)] if i % 8 < 4 else \
                int(rng.integers(length // 5, length - max(NEWEST_STEPS) - 1))
            s.logv = logv + np.where(np.arange(length) >= at, size, 0.0)
            s.step_at, s.step = at, size
        out.append(s)
    return out


def write_suite(suite: list[Synthetic], dest: Path) -> Path:
    """The suite as an asv results folder: one machine, one environment, one file per commit, a day apart."""
    if (dest / "benchmarks.json").exists():
        return dest
    tmp = dest.with_name(dest.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    machine = tmp / "injected"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text(json.dumps(
        {"arch": "x86_64", "cpu": "real noise", "machine": "injected", "num_cpu": "1", "os": "Linux", "ram": "1",
         "version": 1}))
    (tmp / "benchmarks.json").write_text(json.dumps(
        {**{s.name: {"name": s.name, "type": "time", "unit": "seconds", "params": [], "param_names": [],
                     "version": "1", "code": ""} for s in suite}, "version": 2}))
    cols = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
            "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
    length = suite[0].logv.size
    t0 = 1.6e12
    for j in range(length):
        commit = injected_commit(j)
        date = t0 + j * 86400e3
        results = {}
        for s in suite:
            v = math.exp(s.logv[j])
            q25, q75, a, b = (v * math.exp(o) for o in s.spreads[j])
            results[s.name] = [[v], [], "1", date + 3600e3, 1.0, [a], [b], [q25], [q75], [1], [10], None, None]
        (machine / f"{commit[:8]}-virtualenv-py3.12.json").write_text(json.dumps(
            {"commit_hash": commit, "env_name": "virtualenv-py3.12", "date": date,
             "params": {"machine": "injected", "python": "3.12"}, "python": "3.12", "requirements": {},
             "env_vars": {}, "result_columns": cols, "results": results, "durations": {}, "version": 2}))
    tmp.rename(dest)
    return dest


def injected_commit(j: int) -> str:
    return hashlib.sha1(f"injected commit {j}".encode()).hexdigest()


#: False change points per commit a newest-steps test may make: issue 58's 0.05 per 100 commits, over four k.
BOUND_RATE = 0.05 / 100 / len(NEWEST_STEPS)


def gate_threshold() -> float:
    """The threshold of the gate under test at default settings (``ComparePolicy.threshold``): a move a verdict
    reports must pass it, so the bound past it is what the noise allows a tool that honours it."""
    (policy_cls,) = find_analysis("ComparePolicy")
    return float(policy_cls().threshold)


def gaussian_bound(s: Synthetic, threshold: float = 0.0) -> float:
    """The power a test told the step's place and the series' spread would have, were the noise Gaussian: the
    likelihood-ratio (one-sided z) test of the newest k commits' mean at BOUND_RATE, two-sided; with ``threshold``,
    that mean must also move past it. Real noise has heavier tails, so no detector reaches more on it: the figure says
    what the noise allows."""
    k = s.logv.size - s.step_at  # type: ignore[operator]
    d = np.diff(s.logv[: s.step_at])
    sigma = max(1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2), 1e-9)
    normal = statistics.NormalDist()
    spread = sigma / math.sqrt(k)  # of the newest k commits' mean
    bar = max(normal.inv_cdf(1 - BOUND_RATE / 2) * spread, math.log1p(threshold))
    return normal.cdf((abs(s.step) - bar) / spread)


def score_injection(aa: list[Synthetic], aa_detect: dict, steps: list[Synthetic], steps_detect: dict) -> dict:
    """Recall of the steps 2-5 commits before the newest, F1 over every step, A/A false change points per 100
    commits per series, and the whole A/A suite's false alerts per commit (its change points grouped by commit),
    each also by noise tier."""
    place = {injected_commit(j): j for j in range(aa[0].logv.size)}
    length = aa[0].logv.size
    threshold = gate_threshold()

    def found(detect: dict) -> dict[str, list[tuple[int, str]]]:
        return {s["benchmark"]: [(place[c["after_sha"]], c["kind"]) for c in s["changes"]
                                 if c["kind"] in ("regression", "improvement") and c["after_sha"] in place]
                for s in detect["series"]}

    out: dict = {"series": len(aa), "commits": length}
    got = found(aa_detect)
    by_tier = collections.defaultdict(collections.Counter)
    alert_commits = set()
    for s in aa:
        tier = tier_of(list(np.exp(s.logv)))
        points = got.get(s.name, [])
        by_tier[tier]["aa_series"] += 1
        by_tier[tier]["aa_points"] += len(points)
        alert_commits.update(p for p, _ in points)
    got = found(steps_detect)
    for s in steps:
        tier = tier_of(list(np.exp(s.logv)))
        want = "regression" if s.step > 0 else "improvement"
        points = got.get(s.name, [])
        hit = [p for p, kind in points if kind == want and abs(p - s.step_at) <= TOLERANCE]
        newest = s.step_at >= length - max(NEWEST_STEPS)
        size = f"{math.exp(abs(s.step)) - 1:.0%}"
        for k in (tier, "all"):
            c = by_tier[k]
            c["steps"] += 1
            c["tp"] += bool(hit)
            c["fp"] += len(points) - (1 if hit else 0)
            c[f"newest_{size}"] += newest
            c[f"newest_{size}_found"] += newest and bool(hit)
            c["newest_bound"] += gaussian_bound(s) if newest else 0.0
            c["newest_bound_past"] += gaussian_bound(s, threshold) if newest else 0.0
    for tier, c in by_tier.items():
        if tier != "all":
            by_tier["all"]["aa_series"] += c["aa_series"]
            by_tier["all"]["aa_points"] += c["aa_points"]
    for k, c in sorted(by_tier.items()):
        fn = c["steps"] - c["tp"]
        row = {"aa_series": c["aa_series"], "steps": c["steps"],
               "aa_false_per_100": round(100 * c["aa_points"] / (c["aa_series"] * (length - 1)), 4)
               if c["aa_series"] else None,
               "f1": round(2 * c["tp"] / (2 * c["tp"] + c["fp"] + fn), 4) if c["tp"] + c["fp"] + fn else None}
        for size in STEP_SIZES:
            lab = f"{size:.0%}"
            row[f"recall_newest_{lab}"] = _share(c[f"newest_{lab}_found"], c[f"newest_{lab}"])
        row["recall_newest"] = _share(sum(c[f"newest_{s:.0%}_found"] for s in STEP_SIZES),
                                      sum(c[f"newest_{s:.0%}"] for s in STEP_SIZES))
        newest_steps = sum(c[f"newest_{s:.0%}"] for s in STEP_SIZES)
        row["recall_newest_gaussian_bound"] = round(c["newest_bound"] / newest_steps, 4) if newest_steps else None
        row["recall_newest_bound_past_threshold"] = (round(c["newest_bound_past"] / newest_steps, 4)
                                                     if newest_steps else None)
        out[k] = row
    out["suite_false_alerts_per_commit"] = round(len(alert_commits) / (length - 1), 4)
    out["suite_false_alerts"] = len(alert_commits)
    return out


def injection(cache: Path, code: Code, noise: dict[str, Path | None], n: int, length: int, seed: int) -> dict:
    """The injected suites (A/A and stepped) on real noise, detected through the CLI; the gate on the A/A suite."""
    pools = noise_pools(noise)
    if len(pools) < 3:
        return {"error": f"real noise from {len(pools)} histories; 3 needed"}
    rng = np.random.default_rng(seed)
    aa = make_suite(rng, pools, n, length, stepped=False)
    steps = make_suite(rng, pools, n, length, stepped=True)
    digest = hashlib.sha1(b"".join(x.logv.tobytes() + x.spreads.tobytes() for x in aa + steps)).hexdigest()[:10]
    base = cache / f"injected-{n}x{length}-{digest}"  # the suites' own hash: a change to how they are drawn
    got = {}
    for label, suite in (("aa", aa), ("steps", steps)):
        folder = write_suite(suite, base / label / "results")
        det = import_and_detect(folder, base / f"{label}-import-{code.import_key}", base / f"{label}-{code.key}",
                                code.root)
        if det.detect is None:
            return {"error": f"{label}: {det.error}"}
        got[label] = det.detect
    out = score_injection(aa, got["aa"], steps, got["steps"])
    out["histories"] = {k: len(v) for k, v in pools.items()}
    by_tier = collections.defaultdict(collections.Counter)
    for history, sources in pools.items():
        for src in sources:
            by_tier[tier_of(list(np.exp(src.residuals)))][history] += 1
    out["sources_by_tier"] = {tier: dict(counts) for tier, counts in by_tier.items()}
    out["gate_aa"] = gate_alarms(base / f"aa-{code.key}" / "store.db", n, seed)
    return out


# --------------------------------------------------------------------------- counts


def counts(detect: dict, raw: Raw) -> dict:
    series = detect["series"]
    analysed = [s for s in series if s.get("status") == "ok"]
    points = sum(int(s.get("points") or 0) for s in analysed)
    changes = sum(len(s["changes"]) for s in series)
    matched = sum(series_id(s) in raw.series for s in series)
    alerts = {c["after_sha"] for s in series for c in s["changes"] if c["kind"] in ("regression", "improvement")}
    return {
        "series": len(series), "analysed": len(analysed), "commits": len(raw.commit_dates),
        "change_points": changes, "events": len(detect.get("events", [])),
        "cp_per_100_commits_per_series": round(100 * changes / points, 3) if points else None,
        "series_matched_to_files": matched,
        "alerts": len(alerts),
        "alerts_per_100_commits": round(100 * len(alerts) / len(raw.commit_dates), 3) if raw.commit_dates else None,
    }


# --------------------------------------------------------------------------- one history, the table


def quick_benchmarks(results: Path, most: int, seed: int = 58) -> str | None:
    """A regex of ``most`` of the history's benchmarks drawn at random (None: it has no more than that)."""
    names = sorted(n for n in json.loads((results / "benchmarks.json").read_text()) if n != "version")
    if len(names) <= most:
        return None
    pick = np.random.default_rng(seed).choice(len(names), most, replace=False)
    return "^(" + "|".join(re.escape(names[i]) for i in sorted(pick)) + ")$"


def evaluate_history(name: str, path: Path, cache: Path, code: Code, quick: bool = False) -> dict:
    """Every figure of one history (or why there are none)."""
    try:
        results = results_folder(path)
    except FileNotFoundError as e:
        return {"history": name, "error": str(e)}
    bench = quick_benchmarks(results, QUICK_BENCHMARKS) if quick else None
    imported = cache / "imports" / f"{name}-{code.import_key}"
    store_dir = cache / (f"{name}-{code.key}" + ("-quick" if bench else ""))
    got = import_and_detect(results, imported, store_dir, code.root, bench)
    row: dict = {"history": name, "import": got.import_line, "benchmarks_sampled": bool(bench)}
    if got.detect is None:
        return {**row, "error": got.error}
    raw = read_raw(results)
    row.update(counts(got.detect, raw))
    row["run_date"] = run_date_evidence(got.detect, raw)
    row["machines"] = machine_agreement(got.detect, raw)
    row["gate"] = gate_alarms(store_dir / "store.db", GATE_SERIES_QUICK if quick else GATE_SERIES)
    window = row["gate"].get("confirm_window", 4)
    row["stability"] = stability(results, raw, got.detect, (imported, store_dir), code,
                                 CUTS_QUICK if quick else CUTS, window, bench)
    return row


def _fmt(x, pct: bool = False) -> str:
    if x is None:
        return "–"
    if pct:
        return f"{100 * x:.0f}%"
    return f"{x:.2f}" if isinstance(x, float) else str(x)


def markdown(rows: list[dict], key: str) -> str:
    head = ("| history | series | analysed | commits | change points | events | cp/100 commits/series "
            "| code reg ≥10% follow run date | event reg contradicted | agree across machines "
            "| gate confirmed alarms /100 quiet·mid·noisy | stable verdicts |")
    lines = [f"mmtrack: {key}", "", head, "|" + "---|" * 12]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['history']} | failed: {r['error'][:160]} |" + " |" * 10)
            continue
        rd, ma, st = r["run_date"], r["machines"], r["stability"]
        gate = r["gate"]
        alarms = "error" if "error" in gate else " · ".join(
            f"{_fmt(gate[t]['alarms_per_100'])} ({gate[t]['series']})" for t, _ in TIER_CUTS)
        lines.append(
            f"| {r['history']} | {r['series']} | {r['analysed']} | {r['commits']} | {r['change_points']} "
            f"| {r['events']} | {_fmt(r['cp_per_100_commits_per_series'])} "
            f"| {rd['code_follow_run_date']}/{rd['code_testable']} ({_fmt(rd['code_follow_share'], True)}) "
            f"of {rd['code_big_regressions']} "
            f"| {rd['event_contradicted']}/{rd['event_testable']} ({_fmt(rd['event_contradicted_share'], True)}) "
            f"of {rd['event_big_regressions']} "
            f"| {ma['agree']}/{ma['comparable']} ({_fmt(ma['agree_share'], True)}), {ma['machines']} machines "
            f"| {alarms} | {st['kept']}/{st['kept'] + st['vanished'] + st['appeared']} "
            f"({_fmt(st['stable_share'], True)}) |")
    return "\n".join(lines)


def injection_markdown(inj: dict) -> str:
    """The injected suites' table: one row per noise tier and one for all."""
    if "error" in inj:
        return f"injection failed: {inj['error']}"
    sizes = [f"{s:.0%}" for s in STEP_SIZES]
    lines = [f"Injected steps on real noise: {inj['series']} A/A and {inj['series']} stepped series of "
             f"{inj['commits']} commits, noise from {', '.join(f'{k} ({v})' for k, v in inj['histories'].items())}; "
             f"whole A/A suite: {inj['suite_false_alerts']} false alerts, "
             f"{inj['suite_false_alerts_per_commit']:.3f} per commit", "",
             "| tier | A/A series | A/A false points /100 commits | gate confirmed false alarms /100 | steps | "
             + " | ".join(f"recall {s} 2-5 before newest" for s in sizes)
             + " | recall 2-5 | Gaussian bound 2-5 | past the threshold | F1 |",
             "|" + "---|" * (9 + len(sizes))]
    gate = inj.get("gate_aa", {})
    for tier in ("quiet", "mid", "noisy", "all"):
        r = inj.get(tier)
        if not r:
            continue
        g = gate.get(tier, {})
        alarms = f"{g.get('confirmed_regressions', '–')}/{g.get('judged', '–')}"
        lines.append(f"| {tier} | {r['aa_series']} | {_fmt(r['aa_false_per_100'])} "
                     f"| {_fmt(g.get('alarms_per_100'))} ({alarms}) "
                     f"| {r['steps']} | " + " | ".join(_fmt(r[f'recall_newest_{s}']) for s in sizes)
                     + f" | {_fmt(r['recall_newest'])} | {_fmt(r.get('recall_newest_gaussian_bound'))} "
                     f"| {_fmt(r.get('recall_newest_bound_past_threshold'))} | {_fmt(r['f1'])} |")
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
    ap.add_argument("--quick", action="store_true",
                    help=f"fast iteration: {QUICK_BENCHMARKS} benchmarks a history, {GATE_SERIES_QUICK} series through "
                         f"the gate, {CUTS_QUICK} cut, 150 injected series of 80 commits")
    ap.add_argument("--noise", default=",".join(NOISE_HISTORIES),
                    help="histories lending their noise to the injected suites (names or NAME=PATH; 3 or more)")
    ap.add_argument("--rerun-gap-hours", type=float, default=0.0,
                    help="an old commit's measurement counts against a step when it ran this long after it")
    ap.add_argument("--inject", type=int, default=None,
                    help="series per injected suite on real noise (default 500, --quick 150; 0: skip)")
    ap.add_argument("--inject-length", type=int, default=None, help="commits per injected series (default 120)")
    ap.add_argument("--seed", type=int, default=58)
    args = ap.parse_args(argv)
    global RERUN_GAP
    RERUN_GAP = args.rerun_gap_hours * 3600e3
    chosen = dict(named_history(n) for n in args.histories.split(",") if n)
    unknown = [n for n, path in chosen.items() if path is None]
    if unknown:
        ap.error(f"unknown histories {', '.join(unknown)}; known: {', '.join(HISTORIES)} (or NAME=PATH)")
    root = mmtrack_root()
    code = code_of(root)
    key = code.key
    print(f"judging the mmtrack in {root} (code {key}, import {code.import_key})", file=sys.stderr)
    rows = []
    for name, path in chosen.items():
        t0 = time.monotonic()
        rows.append(evaluate_history(name, path, args.cache, code, args.quick))
        print(f"  {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    n_inject = args.inject if args.inject is not None else (150 if args.quick else 500)
    length = args.inject_length or (80 if args.quick else 120)
    noise = dict(named_history(n) for n in args.noise.split(",") if n)
    injected = injection(args.cache, code, noise, n_inject, length, args.seed) if n_inject > 0 else None
    head = code_head(root)
    if rows:
        print(markdown(rows, f"code {key} (checkout {root} at {head})"))
    if injected:
        print()
        print(injection_markdown(injected))
    if args.json:
        args.json.write_text(json.dumps({"code": key, "head": head, "mmtrack": str(root), "histories": rows,
                                         "injection": injected}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
