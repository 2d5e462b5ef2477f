#!/usr/bin/env python3
"""Evaluation of the per-commit gate: ``compare`` of commit i-1 vs i with its history.

This is what ``mmtrack run`` and ``mmtrack compare`` do on every commit. Scored on two
noise scenarios:

* **CI runners** (``scripts/ci_noise.py``): runner levels, heavy-tailed drift,
  autocorrelation and ties, calibrated on real GitHub-hosted asv histories;
* **MetPy/conda bootstrap** (``scripts/eval_detect.py``): residuals of the recorded
  asv results in ``../shared/data/asv-results``, much quieter.

Figures, per gate:

* false alarms per 100 commits per series on A/A series: any commit flagged
  (regressed or improved) and, for mmtrack, the ones later commits confirm;
* recall of +20% steps (the step commit flagged regressed), overall and on quiet
  series (commit-to-commit robust CV < 3%), and the share confirmed by the next commits.

Gates side by side, on the same series:

* ``mmtrack``: the gate of this checkout (:func:`mmtrack.analysis.compare.compare_pair`
  with ``window`` commits of history and the next commits for confirmation);
* ``mmtrack@REV``: the same function as it was at git revision ``--baseline`` (today's gate);
* ``asv compare``: asv's rule, factor 1.1 plus ``asv._stats.is_different`` on the two
  commits' samples (what ``asv compare`` does).

Usage: python scripts/eval_gate.py [--series N] [--seed S] [--baseline REV] [--json PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from ci_noise import ci_series, inject_step, tier_of  # noqa: E402
from eval_detect import load_noise_sources, make_history, measurement, shared_dir  # noqa: E402

from mmtrack.analysis import compare as gate_now  # noqa: E402
from mmtrack.results import Measurement  # noqa: E402

WINDOW = 30  # commits of history, as mmtrack compare's default
LATER = 3  # commits after the judged one that may confirm it

# (verdict, state) of the judged commit; state None where a gate has no states.
Judgement = tuple[str, "str | None"]
Gate = Callable[[Sequence[Measurement], Sequence[float], int], Judgement]


# --------------------------------------------------------------------------- the gates


def load_compare_at(rev: str) -> ModuleType:
    """mmtrack/analysis/compare.py as it was at git revision ``rev``, importable beside today's."""
    src = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:mmtrack/analysis/compare.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    name = "mmtrack.analysis._compare_at_" + rev.replace("-", "_").replace("~", "_").replace("^", "_")
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "mmtrack.analysis"
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(src, f"{rev}:mmtrack/analysis/compare.py", "exec"), module.__dict__)
    return module


def mmtrack_gate(module: ModuleType, later: bool) -> Gate:
    def judge(ms: Sequence[Measurement], medians: Sequence[float], t: int) -> Judgement:
        history = list(medians[max(0, t - WINDOW) : t])  # ends with the before commit, t-1
        if later:
            row = module.compare_pair(ms[t - 1], ms[t], None, history, list(medians[t + 1 : t + 1 + LATER]))
        else:  # a revision without states
            row = module.compare_pair(ms[t - 1], ms[t], None, history)
        return row.verdict, getattr(row, "state", None)

    return judge


def asv_gate(factor: float = 1.1) -> Gate:
    """asv compare's rule on the two commits: beyond ``factor`` and ``_stats.is_different``."""
    from asv import _stats
    from asv_runner.statistics import compute_stats

    def judge(ms: Sequence[Measurement], medians: Sequence[float], t: int) -> Judgement:
        a, b = list(ms[t - 1].samples), list(ms[t].samples)
        va, sa = compute_stats(a, 1)
        vb, sb = compute_stats(b, 1)
        if not _stats.is_different(a, b, sa, sb):
            return "unchanged", None
        if vb > va * factor:
            return "regressed", None
        if vb < va / factor:
            return "improved", None
        return "unchanged", None

    return judge


# --------------------------------------------------------------------------- populations


@dataclass
class Series:
    medians: np.ndarray
    samples: list[np.ndarray]
    tier: str  # by the A/A series' measured commit-to-commit CV
    step_at: int | None = None
    _ms: list[Measurement] = field(default_factory=list)

    @property
    def measurements(self) -> list[Measurement]:
        if not self._ms:
            self._ms = [measurement(s) for s in self.samples]
        return self._ms


def ci_population(rng: np.random.Generator, n: int, length: int, step: float | None) -> list[Series]:
    out = []
    for _ in range(n):
        values, samples = ci_series(rng, length)
        tier = tier_of(values)
        at = None
        if step is not None:
            at = int(rng.integers(WINDOW, length - LATER))
            values, samples = inject_step(values, samples, at, step)
        out.append(Series(values, samples, tier, at))
    return out


def bootstrap_population(
    rng: np.random.Generator, sources: list, n: int, length: int, step: float | None
) -> list[Series]:
    out = []
    for _ in range(n):
        h = make_history(rng, sources[int(rng.integers(len(sources)))], length, "aa", 0.0)
        values, samples = h.medians, h.samples
        tier = tier_of(values)
        at = None
        if step is not None:
            at = int(rng.integers(WINDOW, length - LATER))
            values, samples = inject_step(values, samples, at, step)
        out.append(Series(values, samples, tier, at))
    return out


# --------------------------------------------------------------------------- scoring


FLAGS = ("regressed", "improved")


def false_alarms(series: list[Series], gate: Gate) -> dict[str, float]:
    """Per 100 commits per series: commits flagged on A/A, and flagged then confirmed."""
    commits = flagged = confirmed = regressions = 0
    for s in series:
        for t in range(WINDOW, len(s.medians) - LATER):
            commits += 1
            verdict, state = gate(s.measurements, s.medians, t)
            if verdict in FLAGS:
                flagged += 1
                regressions += verdict == "regressed"
                confirmed += state == "confirmed"
    per = 100.0 / max(commits, 1)
    return {"commits": commits, "any": flagged * per, "regressions": regressions * per, "confirmed": confirmed * per}


def recall(series: list[Series], gate: Gate, tier: str | None = None) -> dict[str, float]:
    """Share of step commits flagged regressed, and flagged then confirmed."""
    picked = [s for s in series if tier is None or s.tier == tier]
    hit = confirmed = 0
    for s in picked:
        assert s.step_at is not None
        verdict, state = gate(s.measurements, s.medians, s.step_at)
        hit += verdict == "regressed"
        confirmed += verdict == "regressed" and state == "confirmed"
    n = max(len(picked), 1)
    return {"steps": len(picked), "flagged": hit / n, "confirmed": confirmed / n}


def evaluate(name: str, aa: list[Series], steps: list[Series], gates: dict[str, Gate]) -> dict:
    tiers = {t: sum(s.tier == t for s in aa) for t in ("quiet", "mid", "noisy")}
    print(f"\n== {name}: {len(aa)} A/A series, {len(steps)} series with a +20% step; A/A tiers {tiers}")
    head = f"{'gate':<18}{'A/A any':>9}{'A/A regr':>9}{'A/A conf':>9}{'rec 20%':>9}{'conf':>7}{'quiet':>7}{'conf':>7}"
    print(head + f"{'mid':>7}{'noisy':>7}{'s/series':>10}")
    out = {}
    for gname, gate in gates.items():
        t0 = time.perf_counter()
        fa = false_alarms(aa, gate)
        rec = recall(steps, gate)
        per_tier = {t: recall(steps, gate, t) for t in ("quiet", "mid", "noisy")}
        secs = (time.perf_counter() - t0) / (len(aa) + len(steps))
        has_states = gname.startswith("mmtrack") and "@" not in gname
        conf = lambda v: f"{v:.2f}" if has_states else "-"  # noqa: E731
        print(
            f"{gname:<18}{fa['any']:>9.3f}{fa['regressions']:>9.3f}{conf(fa['confirmed']):>9}"
            f"{rec['flagged']:>9.2f}{conf(rec['confirmed']):>7}"
            f"{per_tier['quiet']['flagged']:>7.2f}"
            f"{conf(per_tier['quiet']['confirmed']):>7}"
            f"{per_tier['mid']['flagged']:>7.2f}{per_tier['noisy']['flagged']:>7.2f}{secs:>10.3f}"
        )
        out[gname] = {
            "false_alarms_per_100": fa,
            "recall_20pct": rec,
            "recall_by_tier": per_tier,
            "seconds_per_series": secs,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=200, help="series per population (A/A and stepped)")
    ap.add_argument("--length", type=int, default=63, help="commits per series (30 of history first)")
    ap.add_argument("--seed", type=int, default=1616)
    ap.add_argument("--baseline", default="cac3f5a", help="git revision whose gate is today's (side by side)")
    ap.add_argument("--no-bootstrap", action="store_true", help="skip the MetPy/conda bootstrap scenario")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.series < 1 or args.length < WINDOW + LATER + 2:
        ap.error(f"--series must be >= 1 and --length >= {WINDOW + LATER + 2}")

    gates: dict[str, Gate] = {"mmtrack": mmtrack_gate(gate_now, later=True)}
    if args.baseline:
        gates[f"mmtrack@{args.baseline[:8]}"] = mmtrack_gate(load_compare_at(args.baseline), later=False)
    gates["asv compare"] = asv_gate()
    print(
        f"per-commit gate: commit i-1 vs i with {WINDOW} commits of history, {LATER} later commits to confirm; "
        f"{args.series} series of {args.length} commits per population, seed {args.seed}"
    )
    print("columns: false alarms per 100 commits per series on A/A (any flag, regressions, confirmed); recall of")
    print("+20% steps (flagged at the step commit, then confirmed), and by tier; seconds per series judged")
    results: dict[str, dict] = {}
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    aa = ci_population(rng, args.series, args.length, None)
    steps = ci_population(rng, args.series, args.length, 0.20)
    results["ci"] = evaluate("CI-runner noise (scripts/ci_noise.py)", aa, steps, gates)
    if not args.no_bootstrap:
        sources = load_noise_sources(shared_dir() / "data" / "asv-results")
        rng = np.random.default_rng(args.seed)
        aa = bootstrap_population(rng, sources, args.series, args.length, None)
        steps = bootstrap_population(rng, sources, args.series, args.length, 0.20)
        results["bootstrap"] = evaluate("MetPy/conda bootstrap (scripts/eval_detect.py)", aa, steps, gates)
    elapsed = time.perf_counter() - t0
    print(f"\ndone in {elapsed:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
