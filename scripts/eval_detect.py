#!/usr/bin/env python3
"""Evaluation harness for ``mmtrack detect`` and ``mmtrack compare``.

It builds synthetic per-commit histories whose noise is bootstrapped from the real
asv results in ``../shared/data/asv-results`` (MetPy and conda), injects changes of
known size and position, and scores:

* ``mmtrack detect`` (each candidate method) against asv's own step detection
  (``asv.step_detect.detect_steps`` + ``detect_regressions``, with asv's default
  regression threshold 0.05 and its CI-based weights) on the *same* series:
  precision, recall and F1 of the regressions found;
* the false-alarm rate of ``compare`` on A/A data (no change), consecutive commits,
  with and without the series' own history.

Noise model (what the real files hold):
  The asv files store no raw samples (no ``samples`` column), only per-commit
  medians with quartiles and a 99% CI. So:
  - between-commit level noise = residuals of the log medians of a real series around
    its rolling median (window 9, so real lasting changes are removed but the
    short-lived level jumps between runners stay), resampled in blocks of 4
    consecutive commits to keep those runs;
  - within-commit noise = per commit, ``repeat`` samples (10 by default) drawn
    log-normally with the spread of one real commit's interquartile range.

Injected changes (a regression is an increase: the metric is a duration):
  steps of ±5/10/20/50% (half regressions, half improvements), two-step series,
  gradual creep (+10..30% spread over 10..20 commits) and A/A series.
A regression found within ``--tolerance`` commits of the injected position counts as
a hit (anywhere in the ramp for creep). Everything else it reports is a false alarm.

Usage: python3 -m scripts.eval_detect [--series N] [--length L] [--seed S]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from mmtrack.analysis.compare import ComparePolicy, compare_measurements
from mmtrack.analysis.detect import DetectPolicy
from mmtrack.measure.metrics import Direction, MetricSummary
from mmtrack.results import Measurement, MetricKey, SeriesKey
from scripts import ci_noise

# The series layer moved out of detect.py with the newest-commit rule; older code (a before run) has it there.
if importlib.util.find_spec("mmtrack.analysis.series") is not None:
    from mmtrack.analysis.series import detect_values
else:
    from mmtrack.analysis.detect import detect_values  # type: ignore[attr-defined,no-redef]

ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    return Path(os.environ.get("MMTRACK_SHARED") or ROOT.parent / "shared")


# --------------------------------------------------------------------------- real noise


@dataclass(frozen=True)
class NoiseSource:
    name: str
    residuals: np.ndarray  # log-space level deviations, commit order
    rel_sigma: np.ndarray  # per-commit within-commit sigma (log space), from the IQR


def _rolling_median(x: np.ndarray, w: int) -> np.ndarray:
    h = w // 2
    return np.array([np.median(x[max(0, i - h) : i + h + 1]) for i in range(x.size)])


def _asv_points(path: Path) -> Iterable[tuple[str, float, int, float, float, float]]:
    """(series name, date, value, q25, q75) of every result in one asv results file."""
    d = json.loads(path.read_text())
    date = d.get("date") or 0
    env = d.get("env_name", "")
    if "result_columns" in d:  # asv >= 0.5 format
        cols = d["result_columns"]
        for name, row in d["results"].items():
            r = dict(zip(cols, row))
            res, q25, q75 = r.get("result"), r.get("stats_q_25"), r.get("stats_q_75")
            if not isinstance(res, list) or not q25 or not q75:
                continue
            for i, v in enumerate(res):
                yield f"{path.parent.name}/{env}/{name}#{i}", date, v, q25[i], q75[i]
    else:  # version 1 format: {"result": [...], "stats": [{...}]}
        for name, v in d["results"].items():
            if not isinstance(v, dict) or not v.get("stats"):
                continue
            for i, (x, st) in enumerate(zip(v["result"], v["stats"])):
                if st:
                    yield f"{path.parent.name}/{env}/{name}#{i}", date, x, st.get("q_25"), st.get("q_75")


def load_noise_sources(root: Path, min_commits: int = 20) -> list[NoiseSource]:
    series: dict[str, list[tuple[float, float, float]]] = {}
    for path in sorted(root.rglob("*.json")):
        if path.name in ("machine.json", "benchmarks.json", "asv.conf.json"):
            continue
        for name, date, v, q25, q75 in _asv_points(path):
            if v is None or q25 is None or q75 is None or not (v > 0) or not math.isfinite(v):
                continue
            series.setdefault(name, []).append((date, v, max(q75 - q25, 0.0) / v))
    out = []
    for name, pts in sorted(series.items()):
        if len(pts) < min_commits:
            continue
        pts.sort()
        logv = np.log([p[1] for p in pts])
        resid = logv - _rolling_median(logv, 9)
        sig = np.array([p[2] for p in pts]) / 1.349
        out.append(NoiseSource(name, resid, np.clip(sig, 1e-4, None)))
    if not out:
        raise SystemExit(f"no asv results with >= {min_commits} commits under {root}")
    return out


def noise_figures(sources: list[NoiseSource]) -> dict[str, float]:
    within = [float(np.median(s.rel_sigma)) for s in sources]
    between = [1.4826 * float(np.median(np.abs(np.diff(s.residuals)))) / math.sqrt(2) for s in sources]
    jumps = [float(np.mean(np.abs(np.diff(s.residuals)) > math.log(1.1))) for s in sources]
    return {
        "series": len(sources),
        "within_median": float(np.median(within)),
        "within_p90": float(np.percentile(within, 90)),
        "between_median": float(np.median(between)),
        "between_p90": float(np.percentile(between, 90)),
        "pairs_over_10pct": float(np.mean(jumps)),
    }


# --------------------------------------------------------------------------- synthetic histories


@dataclass
class History:
    kind: str  # "step", "two-steps", "creep", "aa"
    size: float  # relative size of the largest injected change (0 for A/A)
    samples: list[np.ndarray]  # per commit
    truth: list[tuple[int, int]] = field(default_factory=list)  # regression windows [lo, hi] (first new commit)
    improvements: list[int] = field(default_factory=list)

    @property
    def medians(self) -> np.ndarray:
        return np.array([float(np.median(s)) for s in self.samples])


def _block_bootstrap(rng: np.random.Generator, resid: np.ndarray, n: int, block: int = 4) -> np.ndarray:
    out: list[float] = []
    while len(out) < n:
        start = int(rng.integers(0, max(1, resid.size - block + 1)))
        out.extend(resid[start : start + block])
    x = np.array(out[:n])
    return x - np.median(x)


def make_history(
    rng: np.random.Generator, src: NoiseSource, n: int, kind: str, size: float, repeat: int = 10, tol: int = 2
) -> History:
    level = np.zeros(n)
    truth: list[tuple[int, int]] = []
    improvements: list[int] = []
    margin = 8
    if kind in ("step", "two-steps"):
        k = 1 if kind == "step" else 2
        if k == 1:
            positions = [int(rng.integers(margin, n - margin))]
        else:
            a = int(rng.integers(margin, n // 2 - margin // 2))
            positions = [a, int(rng.integers(a + margin, n - margin))]
        for pos in positions:
            sign = 1 if rng.random() < 0.5 else -1
            level[pos:] += sign * math.log1p(size)
            if sign > 0:
                truth.append((pos - tol, pos + tol))
            else:
                improvements.append(pos)
    elif kind == "creep":
        length = int(rng.integers(10, 21))
        start = int(rng.integers(margin, n - margin - length))
        ramp = np.clip((np.arange(n) - start + 1) / length, 0, 1)
        level += ramp * math.log1p(size)
        truth.append((start - tol, start + length + tol))
    base = float(np.exp(rng.uniform(math.log(1e-5), math.log(1.0))))
    noise = _block_bootstrap(rng, src.residuals, n)
    sig = rng.choice(src.rel_sigma, size=n)
    samples = [base * np.exp(level[i] + noise[i] + rng.normal(0, sig[i], repeat)) for i in range(n)]
    return History(kind, size, samples, truth, improvements)


# --------------------------------------------------------------------------- scoring


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: "Score") -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def score(found: list[int], truth: list[tuple[int, int]], ramp: bool = False) -> Score:
    """Greedy one-to-one matching of reported regression starts to truth windows.

    For a ramp (creep), further regressions inside an already matched window split
    the same creep into steps: they count neither as hits nor as false alarms.
    """
    s = Score()
    unmatched = list(truth)
    for idx in sorted(found):
        hit = next((w for w in unmatched if w[0] <= idx <= w[1]), None)
        if hit is None:
            if not (ramp and any(w[0] <= idx <= w[1] for w in truth)):
                s.fp += 1
        else:
            s.tp += 1
            unmatched.remove(hit)
    s.fn = len(unmatched)
    return s


#: What a detector reports of one history: (index of the first commit of the new level, whether it is a regression).
Found = list[tuple[int, bool]]
Detector = Callable[[History], Found]
_KEY = SeriesKey("eval", "env", "bench", "{}", MetricKey("timing", "time_per_op", "s"))


def regressions(found: Found) -> list[int]:
    return [i for i, worse in found if worse]


def mmtrack_detector(policy: DetectPolicy) -> Detector:
    def run(h: History) -> Found:
        values = [float(v) for v in h.medians]
        report = detect_values(_KEY, [str(i) for i in range(len(values))], values, [None] * len(values),
                               Direction.LOWER, policy)  # as mmtrack detect reports them, newest commits included
        return [(int(c.extra["index"]), c.kind == "regression") for c in report.changes]  # type: ignore[call-overload]

    return run


def otava_detector(python: str) -> Detector:
    """Apache Otava 0.8.0 (``otava analyze``'s defaults) on the medians, run in its own environment
    (``scripts/otava_steps.py``): each batch of histories goes to one process, the first call of each history asks
    for the whole batch (:func:`prepare`)."""
    import subprocess

    cache: dict[int, Found] = {}

    def prepare(histories: list[History]) -> None:
        todo = [h for h in histories if id(h) not in cache]
        payload = json.dumps([[float(v) for v in h.medians] for h in todo])
        proc = subprocess.run([python, str(Path(__file__).resolve().parent / "otava_steps.py")], input=payload,
                              capture_output=True, text=True, check=True)
        for h, points in zip(todo, json.loads(proc.stdout)):
            cache[id(h)] = [(int(i), after > before) for i, before, after in points]

    def run(h: History) -> Found:
        if id(h) not in cache:
            prepare([h])
        return cache[id(h)]

    run.prepare = prepare  # type: ignore[attr-defined]
    return run


def asv_detector(threshold: float = 0.05) -> Detector:
    from asv import step_detect
    from asv_runner.statistics import compute_stats

    def run(h: History) -> Found:
        y, w = [], []
        for s in h.samples:
            value, st = compute_stats(list(map(float, s)), 1)
            y.append(value)
            span = abs(st["ci_99_b"] - st["ci_99_a"])
            w.append(2 / span if span and math.isfinite(span) else None)
        steps = step_detect.detect_steps(y, w)
        _, _, regs = step_detect.detect_regressions(steps, threshold)
        return [(after, True) for _before, after, _vb, _va in (regs or [])]  # asv reports regressions only

    return run


# --------------------------------------------------------------------------- compare A/A


def measurement(samples: np.ndarray) -> Measurement:
    from asv_runner.statistics import compute_stats

    summ = MetricSummary.from_values("timing", "time_per_op", "s", [float(v) for v in samples], direction=Direction.LOWER)
    m = Measurement.from_summary("bench", {}, summ, version="v1")
    _, st = compute_stats(list(summ.values), 1)
    import dataclasses

    return dataclasses.replace(m, ci_low=st["ci_99_a"], ci_high=st["ci_99_b"])


def compare_aa(histories: list[History], window: int = 30, policy: ComparePolicy | None = None) -> dict[str, float]:
    """Flag rate of compare on consecutive commits of A/A series, without and with history."""
    policy = policy or ComparePolicy()
    rows = flagged_plain = flagged_hist = 0
    for h in histories:
        ms = [measurement(s) for s in h.samples]
        meds = h.medians
        for t in range(window, len(ms) - 1):
            rows += 1
            plain = compare_measurements([ms[t]], [ms[t + 1]], policy)
            hist = compare_measurements([ms[t]], [ms[t + 1]], policy, history={ms[t].case: list(meds[t - window + 1 : t + 1])})
            flagged_plain += plain.rows[0].verdict in ("regressed", "improved")
            flagged_hist += hist.rows[0].verdict in ("regressed", "improved")
    return {"rows": rows, "plain": flagged_plain / max(rows, 1), "history": flagged_hist / max(rows, 1)}


def compare_steps(histories: list[History], window: int = 30, policy: ComparePolicy | None = None) -> dict[str, float]:
    """How often compare catches a step on the pair of commits that straddles it (right verdict)."""
    policy = policy or ComparePolicy()
    rows = hit_plain = hit_hist = 0
    for h in histories:
        pos_up = [w[0] + (w[1] - w[0]) // 2 for w in h.truth]
        for pos, want in [(p, "regressed") for p in pos_up] + [(p, "improved") for p in h.improvements]:
            ms = [measurement(h.samples[pos - 1]), measurement(h.samples[pos])]
            hist = list(h.medians[max(0, pos - window) : pos])
            rows += 1
            hit_plain += compare_measurements([ms[0]], [ms[1]], policy).rows[0].verdict == want
            hist_row = compare_measurements([ms[0]], [ms[1]], policy, history={ms[0].case: hist}).rows[0]
            hit_hist += hist_row.verdict == want
    return {"rows": rows, "plain": hit_plain / max(rows, 1), "history": hit_hist / max(rows, 1)}


# --------------------------------------------------------------------------- CI-runner scenario (scripts/ci_noise.py)

CI_SIZES = (0.05, 0.10, 0.20, 0.50)


def ci_history(rng: np.random.Generator, n: int, tier: str | None, kind: str, size: float = 0.0,
               at: int | None = None, tol: int = 3) -> History:
    """One CI-noise series with one injected change; ``at`` fixes the step position (else random, 10 from the ends).

    ``tier=None`` draws one with the real mix. ``History.tier`` is the tier *measured* on the series before
    the change went in (its commit-to-commit robust CV: quiet < 3%, mid 3-10%, noisy >= 10%), the way a
    real series is classed by its noise, whatever drew it.
    """
    values, samples = ci_noise.ci_series(rng, n, tier, base=float(np.exp(rng.uniform(math.log(1e-5), 0.0))))
    measured = ci_noise.tier_of(values)
    truth: list[tuple[int, int]] = []
    improvements: list[int] = []
    if kind == "step":
        pos = at if at is not None else int(rng.integers(10, n - 10))
        sign = 1.0 if at is not None or rng.random() < 0.5 else -1.0
        values, samples = ci_noise.inject_step(values, samples, pos, sign * size)
        if sign > 0:
            truth.append((pos - tol, pos + tol))
        else:
            improvements.append(pos)
    elif kind == "revert":  # a step, and back to the level before 10-30 commits later: one of the two a regression
        span = min(30, (n - 20) // 2)  # short histories (a test's 50 commits) still hold both steps
        pos = int(rng.integers(10, n - 10 - span))
        back = pos + int(rng.integers(min(10, span), span + 1))
        sign = 1.0 if rng.random() < 0.5 else -1.0
        values, samples = ci_noise.inject_step(values, samples, pos, sign * size)
        values, samples = ci_noise.inject_step(values, samples, back, -sign * size / (1 + sign * size))
        up, down = (pos, back) if sign > 0 else (back, pos)
        truth.append((up - tol, up + tol))
        improvements.append(down)
    elif kind == "creep":
        length = 30
        start = int(rng.integers(10, n - length - 5))
        values, samples = ci_noise.inject_creep(values, samples, start, size, length)
        truth.append((start - tol, start + length + tol))
    h = History(kind, size, samples, truth, improvements)
    h.tier = measured  # type: ignore[attr-defined]
    return h


def build_ci_suite(rng: np.random.Generator, per_cell: int, length: int, tol: int) -> dict[str, list[History]]:
    """Steps of each size and A/A series drawn with the real tier mix, grouped by measured tier; creep and
    newest-commit steps with the same mix. ``per_cell`` series per tier and size on average (3x per size)."""
    groups: dict[str, list[History]] = {f"{t} {k}": [] for k in [f"step {s:.0%}" for s in CI_SIZES] + ["A/A"]
                                        for t in ci_noise.TIERS}
    for size in CI_SIZES:
        for _ in range(3 * per_cell):
            h = ci_history(rng, length, None, "step", size, tol=tol)
            groups[f"{h.tier} step {size:.0%}"].append(h)  # type: ignore[attr-defined]
    for _ in range(6 * per_cell):
        h = ci_history(rng, length, None, "aa", tol=tol)
        groups[f"{h.tier} A/A"].append(h)  # type: ignore[attr-defined]
    groups["creep 0.2%/commit x30"] = [
        ci_history(rng, length, None, "creep", 0.002, tol=tol) for _ in range(3 * per_cell)
    ]
    for k in range(1, 6):
        groups[f"newest {k} up 20%"] = [ci_history(rng, length, None, "step", 0.20, at=length - k, tol=tol)
                                        for _ in range(per_cell)]
    # drawn last, so that every group above holds the same series as before reverts were added
    groups["revert 20%"] = [ci_history(rng, length, None, "revert", 0.20, tol=tol) for _ in range(3 * per_cell)]
    return groups


#: The groups of a 20% step 2-5 commits before the newest commit (issue 46's target).
NEWEST_2_5 = tuple(f"newest {k} up 20%" for k in range(2, 6))


def evaluate_ci(groups: dict[str, list[History]], detectors: dict[str, Detector]) -> dict[str, dict[str, dict]]:
    """Per detector: F1 by size, by measured tier and overall; A/A rate; creep and newest found; time."""
    out: dict[str, dict[str, dict]] = {}
    for name, det in detectors.items():
        cells: dict[str, Score] = {}
        found: dict[str, float] = {}
        newest_by_tier: dict[str, list[bool]] = {t: [] for t in ci_noise.TIERS}
        seconds = 0.0
        calls = 0
        aa_points = aa_either = aa_commits = 0
        if hasattr(det, "prepare"):  # a batch in another process (Otava): timed as part of the calls
            t0 = time.perf_counter()
            det.prepare([h for hs in groups.values() for h in hs])
            seconds += time.perf_counter() - t0
        for g, hs in groups.items():
            s = Score()
            hits = 0
            for h in hs:
                t0 = time.perf_counter()
                reported = det(h)
                seconds += time.perf_counter() - t0
                idx = regressions(reported)
                calls += 1
                if h.kind == "aa":
                    aa_points += len(idx)  # regressions reported on A/A: all false (asv reports only these)
                    aa_either += len(reported)
                    aa_commits += len(h.samples)
                sc = score(idx, h.truth, ramp=h.kind == "creep")
                hits += sc.tp > 0
                if g in NEWEST_2_5:
                    newest_by_tier[h.tier].append(sc.tp > 0)  # type: ignore[attr-defined]
                s.add(sc)
            cells[g] = s
            found[g] = hits / max(len(hs), 1)
        table: dict[str, dict] = {}
        for size in CI_SIZES:
            # the series were drawn with the real tier mix, so pooling the tiers keeps it
            tp = sum(cells[f"{t} step {size:.0%}"].tp for t in ci_noise.TIERS)
            fp = sum(cells[f"{t} step {size:.0%}"].fp for t in ci_noise.TIERS)
            fn = sum(cells[f"{t} step {size:.0%}"].fn for t in ci_noise.TIERS)
            table[f"F1 at {size:.0%}"] = {"f1": _f1(tp, fp, fn), "tp": tp, "fp": fp, "fn": fn}
        for tier in ci_noise.TIERS:
            tot = Score()
            for size in CI_SIZES:
                tot.add(cells[f"{tier} step {size:.0%}"])
            table[f"F1 {tier}"] = {"f1": tot.f1, "tp": tot.tp, "fp": tot.fp, "fn": tot.fn}
        tp = sum(table[f"F1 at {s:.0%}"]["tp"] for s in CI_SIZES)
        fp = sum(table[f"F1 at {s:.0%}"]["fp"] for s in CI_SIZES)
        fn = sum(table[f"F1 at {s:.0%}"]["fn"] for s in CI_SIZES)
        table["F1 all steps"] = {"f1": _f1(tp, fp, fn)}
        table["A/A false per 100 commits"] = {"value": 100 * aa_points / max(aa_commits, 1)}
        table["A/A either way per 100"] = {"value": 100 * aa_either / max(aa_commits, 1)}
        table["creep found"] = {"value": found["creep 0.2%/commit x30"]}
        for k in range(1, 6):
            table[f"newest {k} found"] = {"value": found[f"newest {k} up 20%"]}
        table["newest 2-5 found"] = {"value": float(np.mean([found[f"newest {k} up 20%"] for k in range(2, 6)]))}
        for tier, hit in newest_by_tier.items():  # the tier measured before the step: where the misses are
            table[f"newest 2-5 {tier}"] = {"value": float(np.mean(hit)) if hit else float("nan"), "of": len(hit)}
        table["F1 reverts 20%"] = {"f1": cells["revert 20%"].f1}
        table["revert regression found"] = {"value": found["revert 20%"]}
        table["ms per series"] = {"value": 1000 * seconds / max(calls, 1)}
        out[name] = table
    return out


def _f1(tp: float, fp: float, fn: float) -> float:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return 2 * p * r / (p + r) if p + r else 0.0


def print_ci(table: dict[str, dict[str, dict]]) -> None:
    names = list(table)
    width = max(14, *(len(n) + 2 for n in names))
    print("".ljust(28) + "".join(n.rjust(width) for n in names))
    for row in next(iter(table.values())):
        cells = []
        for n in names:
            c = table[n][row]
            v = c.get("f1", c.get("value"))
            text = f"{v:.3f}" if row.startswith(("F1", "A/A", "newest 2-5 found")) else f"{v:.3f} ({c['of']})" if "of" in c else f"{v:.2f}"
            cells.append(text.rjust(width))
        print(row.ljust(28) + "".join(cells))


# --------------------------------------------------------------------------- main


CANDIDATES: dict[str, DetectPolicy] = {
    # the default: rank-CUSUM binary segmentation, Mann-Whitney pruning, L1 refinement, tail rule
    "rankseg": DetectPolicy(),
    # the previous default: E-Divisive candidates down to min_segment, pruned by Mann-Whitney U
    "edivisive+mannwhitney": DetectPolicy(method="edivisive", alpha=3e-4, min_effect=0.05, main_level=False),
    # Hunter-like: binary segmentation that stops at the first split failing a t-test
    "edivisive-binseg+ttest": DetectPolicy(method="edivisive", split_all=False, test="ttest", alpha=1e-3, min_effect=0.05),
    "pelt": DetectPolicy(method="pelt", alpha=3e-4, min_effect=0.05),
}
DEFAULT_METHODS = "rankseg,edivisive+mannwhitney"


def build_suite(rng: np.random.Generator, sources: list[NoiseSource], per_group: int, length: int, tol: int):
    groups: dict[str, list[History]] = {}
    for size in (0.05, 0.10, 0.20, 0.50):
        groups[f"step {size:.0%}"] = [make_history(rng, sources[int(rng.integers(len(sources)))], length, "step", size, tol=tol) for _ in range(per_group)]
    groups["two steps 20%"] = [make_history(rng, sources[int(rng.integers(len(sources)))], length, "two-steps", 0.20, tol=tol) for _ in range(per_group)]
    groups["creep 10-30%"] = [
        make_history(rng, sources[int(rng.integers(len(sources)))], length, "creep", float(rng.uniform(0.10, 0.30)), tol=tol)
        for _ in range(per_group)
    ]
    groups["A/A"] = [make_history(rng, sources[int(rng.integers(len(sources)))], length, "aa", 0.0, tol=tol) for _ in range(2 * per_group)]
    return groups


def evaluate(groups: dict[str, list[History]], detectors: dict[str, Detector]) -> dict[str, dict[str, Score]]:
    table: dict[str, dict[str, Score]] = {}
    for name, det in detectors.items():
        table[name] = {}
        for g, hs in groups.items():
            s = Score()
            for h in hs:
                s.add(score(regressions(det(h)), h.truth, ramp=h.kind == "creep"))
            table[name][g] = s
        big = Score()
        for g in ("step 10%", "step 20%", "step 50%", "two steps 20%", "A/A"):
            big.add(table[name][g])
        table[name]["steps >= 10% + A/A"] = big
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=150, help="histories per group (A/A gets twice as many)")
    ap.add_argument("--length", type=int, default=60, help="commits per history")
    ap.add_argument("--seed", type=int, default=20260)
    ap.add_argument("--tolerance", type=int, default=3, help="commits of slack on the reported position")
    ap.add_argument("--methods", default=DEFAULT_METHODS,
                    help=f"mmtrack methods to score, comma-separated, from {', '.join(CANDIDATES)}")
    ap.add_argument("--no-asv", action="store_true", help="skip asv's step detection")
    ap.add_argument("--noisy-scale", type=float, default=2.0, help="scale of the residuals in the noisy scenario (0: skip)")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    ap.add_argument("--ci-series", type=int, default=40, help="CI-noise scenario: series per tier and step size (0: skip)")
    ap.add_argument("--ci-length", type=int, default=100, help="CI-noise scenario: commits per series")
    ap.add_argument("--ci-only", action="store_true", help="only the CI-noise scenario (no shared asv results needed)")
    ap.add_argument("--otava-python", help="a Python with apache-otava installed: score Otava beside asv "
                    "(default: $OTAVA_PYTHON; see scripts/otava_steps.py)")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    detectors: dict[str, Detector] = {m: mmtrack_detector(CANDIDATES[m]) for m in args.methods.split(",") if m}
    if not args.no_asv:
        detectors["asv.step_detect"] = asv_detector()
    otava = args.otava_python or os.environ.get("OTAVA_PYTHON")
    if otava:
        detectors["otava"] = otava_detector(otava)
    else:
        print("Otava left out: give --otava-python (a Python with apache-otava, see scripts/otava_steps.py)")
    results: dict[str, dict] = {}
    if args.ci_series > 0:
        groups = build_ci_suite(np.random.default_rng(args.seed), args.ci_series, args.ci_length, tol=args.tolerance)
        ci_table = evaluate_ci(groups, detectors)
        print(
            f"== CI-runner noise (scripts/ci_noise.py): {3 * args.ci_series} series per step size, "
            f"{6 * args.ci_series} A/A, drawn with the real tier mix and grouped by measured tier ("
            + ", ".join(f"{t} {sum(len(groups[f'{t} step {s:.0%}']) for s in CI_SIZES)}" for t in ci_noise.TIERS)
            + f" step series); {args.ci_length} commits, +-{args.tolerance} commits, seed {args.seed}"
        )
        print_ci(ci_table)
        results["ci"] = {"detect": ci_table}
    if args.ci_only:
        if args.json:
            args.json.write_text(json.dumps({"seconds": time.perf_counter() - t0, "ci": results["ci"]}, indent=2))
        return 0
    data = shared_dir() / "data" / "asv-results"
    sources = load_noise_sources(data)
    nf = noise_figures(sources)
    print(
        f"noise: {nf['series']} real series from {data}; within-commit sigma median {nf['within_median']:.2%} "
        f"(p90 {nf['within_p90']:.2%}); between-commit robust sigma median {nf['between_median']:.2%} "
        f"(p90 {nf['between_p90']:.2%}); consecutive pairs >10% apart: {nf['pairs_over_10pct']:.1%}"
    )
    for scenario, scale in (("recorded", 1.0), ("noisy", args.noisy_scale)):
        if scale <= 0:
            continue
        srcs = sources if scale == 1.0 else [NoiseSource(s.name, s.residuals * scale, s.rel_sigma) for s in sources]
        fig = noise_figures(srcs)
        rng = np.random.default_rng(args.seed)
        groups = build_suite(rng, srcs, args.series, args.length, args.tolerance)
        table = evaluate(groups, detectors)
        print(
            f"\n== {scenario} noise (between-commit residuals x{scale:g}: robust sigma median {fig['between_median']:.2%}, "
            f"p90 {fig['between_p90']:.2%}; consecutive pairs >10% apart {fig['pairs_over_10pct']:.1%})"
        )
        print(f"regressions found, P/R/F1; {args.series} histories per group, {args.length} commits, seed {args.seed}")
        width = max(len(n) for n in detectors) + 2
        print("group".ljust(22) + "".join(n.rjust(width) for n in detectors))
        for g in next(iter(table.values())):
            line = g.ljust(22)
            for n in detectors:
                s = table[n][g]
                cell = f"{s.precision:.2f}/{s.recall:.2f}/{s.f1:.2f}" if g != "A/A" else f"{s.fp} false in {len(groups[g])}"
                line += cell.rjust(width)
            print(line)
        aa = compare_aa(groups["A/A"])
        print(
            f"compare on A/A consecutive commits ({aa['rows']} rows): flagged {aa['plain']:.2%} on the two commits' "
            f"samples alone, {aa['history']:.2%} with the series' last 30 commits"
        )
        caught = {g: compare_steps(groups[g]) for g in ("step 10%", "step 20%")}
        print(
            "compare on the two commits around an injected step (right verdict): "
            + "; ".join(f"{g}: {c['plain']:.0%} alone, {c['history']:.0%} with history" for g, c in caught.items())
        )
        results[scenario] = {"noise": fig, "table": table, "compare_aa": aa, "compare_steps": caught}
    elapsed = time.perf_counter() - t0
    print(f"\ndone in {elapsed:.1f} s")
    if args.json:
        out = {
            "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "seconds": elapsed,
        }
        if "ci" in results:
            out["ci"] = results.pop("ci")
        for scenario, r in results.items():
            out[scenario] = {
                "noise": r["noise"],
                "compare_aa": r["compare_aa"],
                "compare_steps": r["compare_steps"],
                "detect": {
                    n: {
                        g: {"tp": s.tp, "fp": s.fp, "fn": s.fn, "precision": s.precision, "recall": s.recall, "f1": s.f1}
                        for g, s in gs.items()
                    }
                    for n, gs in r["table"].items()
                },
            }
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
